#!/usr/bin/env bash
# The committed PTX ordering summaries (docs/kernel.md, "Memory ordering"), made with nvcc:
#   update: regenerates them in the source tree (CMake target ptx-ordering-update)
#   fresh:  regenerates them in OUT_DIR and fails if any differs from the committed one (CTest
#           ordering/fresh); without nvcc it says so and exits 77 (ctest: skipped)
# Usage: ptx_ordering.sh update|fresh SOURCE_DIR OUT_DIR NVCC TOOL "NVCC_FLAGS"
# The PTX is the build's (the same flags) with -lineinfo, which adds only the .loc directives that
# name each site's inline chain. For the check's own test (tests/ordering/check_fresh_fires.sh):
# MONOKDA_ORDERING_COMMITTED=DIR compares against DIR's copies, MONOKDA_ORDERING_ONLY=SOURCE
# regenerates that source's summary alone.
set -uo pipefail
mode=$1 src=$2 out=$3 nvcc=$4 tool=$5 flags=$6
committed=${MONOKDA_ORDERING_COMMITTED:-$src} only=${MONOKDA_ORDERING_ONLY:-}
# source -> committed summary
summaries=(
  "kernels/kda_pre.cu kernels/ordering/kda_pre.sm_90a.ordering"
  "tests/ordering/planted_relaxed_poll.cu tests/ordering/planted_relaxed_poll.sm_90a.ordering"
  "tests/ordering/planted_ring_short.cu tests/ordering/planted_ring_short.sm_90a.ordering"
)
if [ "$mode" != update ] && [ "$mode" != fresh ]; then echo "usage: $0 update|fresh SOURCE_DIR OUT_DIR NVCC TOOL FLAGS"; exit 2; fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "nvcc not found: the PTX ordering summaries are NOT regenerated (the committed ones are still checked)"
  [ "$mode" = fresh ] && exit 77
  exit 1
fi
mkdir -p "$out"
# shellcheck disable=SC2086
if ! "$nvcc" $flags -lineinfo -I"$src" --ptx "$src/kernels/ordering/layout_probe.cu" -o "$out/layout.ptx" 2>"$out/layout.log"; then
  cat "$out/layout.log"; echo "FAIL: nvcc layout_probe.cu"; exit 1
fi
status=0
for pair in "${summaries[@]}"; do
  set -- $pair
  cu=$1 summary=$2 name=$(basename "$2")
  if [ -n "$only" ] && [ "$only" != "$cu" ]; then continue; fi
  # shellcheck disable=SC2086
  if ! "$nvcc" $flags -lineinfo -I"$src" --ptx "$src/$cu" -o "$out/${name%.ordering}.ptx" 2>"$out/$name.log"; then
    cat "$out/$name.log"; echo "FAIL: nvcc $cu"; status=1; continue
  fi
  "$tool" summarize "$out/${name%.ordering}.ptx" --layout "$out/layout.ptx" --source "$cu" -o "$out/$name" || { status=1; continue; }
  if [ "$mode" = update ]; then
    if cmp -s "$out/$name" "$src/$summary"; then echo "unchanged: $summary"; else cp "$out/$name" "$src/$summary" && echo "updated: $summary"; fi
  elif ! diff -u "$committed/$summary" "$out/$name"; then
    echo "FAIL: $summary is not what nvcc makes of $cu now: run \`ninja -C BUILD ptx-ordering-update\` and commit it"
    status=1
  else
    echo "fresh: $summary"
  fi
done
exit $status
