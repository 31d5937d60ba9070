#!/usr/bin/env bash
# Issue 6's GPU measurements on the device machine, from the carried CUDA build (the folder
# $MONOKDA_BUILD, default .bench-build, built here with -DMONOKDA_CUDA=ON -DMONOKDA_STATIC_BOOST=ON):
# finds the machine's cuBLASLt 13, falls
# back to the carried libgomp, records the card's state, then runs `monokda bench ARGS...`, its
# output appended to OUTDIR/LOGNAME (one log for several runs: few files come back).
# Usage: bench/h200-run.sh OUTDIR LOGNAME bench-args...
# A sweep (`--commit SHA -o OUTDIR/perf-h200.json`, log perf-h200-run.log) is recorded under the stable
# names docs/results/perf-h200.{md,json,svg}, -detail.json, -run.log (docs/results/INDEX.md, "Adding a record").
set -uo pipefail
out=$1 log=$2
shift 2
build=${MONOKDA_BUILD:-.bench-build}  # the carried CUDA build folder
bin=$build/monokda
lt=$(find /usr/local /opt /usr/lib -name libcublasLt.so.13 2>/dev/null | head -1)
[ -n "$lt" ] && export LD_LIBRARY_PATH="$(dirname "$lt")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build/devlib"
if ldd "$bin" | grep -q "not found"; then ldd "$bin" | tee -a "$out/$log"; exit 3; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv 2>&1 | tee -a "$out/$log"
echo "+ monokda bench $*" | tee -a "$out/$log"
"$bin" bench "$@" 2>&1 | tee -a "$out/$log"
rc=${PIPESTATUS[0]}
echo "exit $rc" | tee -a "$out/$log"
exit "$rc"
