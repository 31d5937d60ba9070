#!/usr/bin/env bash
# Compiles SOURCE (default bench/probes/v2_inproj_probe.cu, which holds kernel v2's in_proj kernel and
# the tail kernel) to PTX for sm_90a and fails where one of its kernels reads or writes memory through
# a generic address (an ld or st that names no state space). Beside the weight stream such an access
# is a memory load that waits a round behind the copies in flight; the compiler emits them where a
# view of the kernel's arguments lost its provenance (stored to local memory, as a pointer that may be
# null did: docs/results/2026-12-07-h100-v2-publish-cost.md). Out-of-line functions are not counted.
# Each kernel's generic and local accesses are printed. Usage: check_probe_ptx.sh SOURCE_DIR OUT_DIR NVCC [SOURCE]; no NVCC: exit 77.
set -uo pipefail
src=$1 out=$2 nvcc=$3 file=${4:-bench/probes/v2_inproj_probe.cu}
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then echo "nvcc not found: probe PTX NOT checked"; exit 77; fi
mkdir -p "$out"
if ! "$nvcc" -std=c++17 -O3 --fmad=false -Xcompiler=-ffp-contract=off -gencode=arch=compute_90a,code=sm_90a \
     -I"$src" -isystem /usr/include/eigen3 -x cu -ptx "$src/$file" -o "$out/probe.ptx" >"$out/nvcc.log" 2>&1; then
  cat "$out/nvcc.log"; echo "FAIL: nvcc -ptx $file"; exit 1
fi
awk '
  /^\.(visible )?\.?entry / || /^\.entry / { name = $0; sub(/\(.*/, "", name); sub(/.* /, "", name); cur = name; kernels[cur] = 1; next }
  /^\.(visible )?\.func/ { cur = ""; next }
  cur != "" && $1 ~ /^(ld|st)\./ {
    n = split($1, q, "."); space = 0
    for (i = 2; i <= n; ++i) if (q[i] ~ /^(global|shared|local|param|const)/) { space = q[i]; break }
    if (!space) generic[cur]++
    else if (space == "local") local[cur]++
  }
  END {
    bad = 0
    for (k in kernels) {
      printf "  %s: %d generic, %d local accesses\n", k, generic[k] + 0, local[k] + 0
      if (generic[k] > 0) bad = 1
    }
    if (length(kernels) == 0) { print "FAIL: no kernel in the PTX"; exit 1 }
    exit bad
  }' "$out/probe.ptx"
rc=$?
if [ $rc != 0 ]; then echo "FAIL: a kernel of $file accesses memory through generic addresses"; exit 1; fi
echo "probe PTX: no generic loads or stores in $file"
