#!/usr/bin/env bash
# The freshness check must fire on a stale summary: the kernel's committed summary with its ring wait
# count changed stands in for a kernel edited without `ninja ptx-ordering-update`; ptx_ordering.sh
# fresh must fail and name the file. Usage: check_fresh_fires.sh SOURCE_DIR OUT_DIR NVCC TOOL "NVCC_FLAGS"
# (77, ctest "skipped", without nvcc).
set -uo pipefail
src=$1 out=$2
summary=kernels/ordering/kda_pre.sm_90a.ordering
rm -rf "$out" && mkdir -p "$out/committed/kernels/ordering"
sed 's/pending=15/pending=14/' "$src/$summary" > "$out/committed/$summary"
cmp -s "$src/$summary" "$out/committed/$summary" && { echo "FAIL: the planted change did not apply"; exit 1; }
log=$(MONOKDA_ORDERING_COMMITTED=$out/committed MONOKDA_ORDERING_ONLY=kernels/kda_pre.cu \
      bash "$src/kernels/ordering/ptx_ordering.sh" fresh "$src" "$out/ptx" "$3" "$4" "$5" 2>&1)
rc=$?
echo "$log" | tail -5
[ $rc = 77 ] && exit 77
if [ $rc = 1 ] && echo "$log" | grep -q "FAIL: $summary is not what nvcc makes"; then
  echo "the freshness check fired on the stale summary"; exit 0
fi
echo "FAIL: the freshness check did not report the stale summary (exit $rc)"; exit 1
