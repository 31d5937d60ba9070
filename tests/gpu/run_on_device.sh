#!/usr/bin/env bash
# The GPU checks on a machine with a device, from a build folder made elsewhere (carried), logs
# and per-tensor tables to $OUT. Usage: tests/gpu/run_on_device.sh BUILD_DIR STEP...
#   STEP: smoke | quick | sweep | launch | sanitize | bench | stress | ctest
# stress: the MONOKDA_STRESS kernel's graph replays (tests/gpu/test_stress.cpp), its table in
# $OUT/stress.md, its output in $OUT/stress.log; MONOKDA_STRESS_REPLAYS replays a case and profile.
set -uo pipefail
B=$1; shift
OUT=${OUT:-/tmp/monokda-out}
mkdir -p "$OUT"
ROOT=$(pwd)
# the build folder's ctest files and test binaries name the checkout by its absolute path
src=$(grep -m1 '^CMAKE_HOME_DIRECTORY' "$B/CMakeCache.txt" | cut -d= -f2)
if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$ROOT" "$src"; fi
export MONOKDA_GPU_RESULTS=$OUT
# a monokda linked against cuBLASLt (bench/) finds it in the toolkit or in the Python wheels
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
done
{ date -u; cat "$B/provenance.txt" 2>/dev/null;
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
rc=0
for step in "$@"; do
  echo "=== $step"
  case $step in
    smoke)
      "$B/monokda" fixture --config k3 --R 2 --L 4 --nb 4 --block-write -o /tmp/k3.safetensors >/dev/null &&
      timeout 120 "$B/monokda" gpu /tmp/k3.safetensors -o /tmp/k3-gpu.safetensors 2>&1 | tee -a "$OUT/smoke.log" &&
      "$B/monokda" reference /tmp/k3.safetensors -o /tmp/k3-ref.safetensors >/dev/null &&
      "$B/monokda" compare /tmp/k3-gpu.safetensors /tmp/k3-ref.safetensors 2>&1 | tee -a "$OUT/smoke.log" || rc=1 ;;
    quick)
      MONOKDA_GPU_SWEEP=quick timeout 580 "$B/tests/test_gpu" --source-file='*test_differential.cpp' 2>&1 | tail -60 | tee -a "$OUT/quick.log"; rc=$((rc | ${PIPESTATUS[0]})) ;;
    sweep)
      timeout 580 "$B/tests/test_gpu" --source-file='*test_differential.cpp' > "$OUT/sweep.log" 2>&1; r=$?; tail -40 "$OUT/sweep.log"; rc=$((rc | r)) ;;
    launch)
      timeout 300 "$B/tests/test_gpu" --source-file='*test_launch.cpp' 2>&1 | tail -40 | tee -a "$OUT/launch.log"; rc=$((rc | ${PIPESTATUS[0]})) ;;
    sanitize)
      # S = 1, the production step 2 x 4 (chunk tasks: QK and ONRM across CTAs), 3 x 8 (chunk tasks two a
      # CTA, in two teams), 4 x 4 (16 rows, the fewest with bands over every CTA and two attn parts),
      # S = 64 as 8 x 8 (nb 8), S = 64 as 64 x 1 (block-write, ds layout)
      i=0
      for shape in "--R 1 --L 1 --nb 1" "--R 2 --L 4 --nb 4 --block-write" "--R 3 --L 8 --nb 2" "--R 4 --L 4 --nb 5" \
                   "--R 8 --L 8 --nb 8" "--R 64 --L 1 --nb 3 --block-write --layout ds"; do
        i=$((i + 1)); f=/tmp/san$i.safetensors
        "$B/monokda" fixture --config k3 $shape -o $f >/dev/null
        for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
          echo "--- compute-sanitizer --tool $tool: monokda gpu ($shape)" | tee -a "$OUT/sanitize.log"
          timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 9 "$B/monokda" gpu $f \
            -o /tmp/san-out.safetensors --timeout-ms 600000 > /tmp/san.txt 2>&1
          r=$?; tail -4 /tmp/san.txt | tee -a "$OUT/sanitize.log"; echo "exit $r" | tee -a "$OUT/sanitize.log"
          [ $r = 0 ] || rc=1
        done
      done ;;
    bench)
      # issue 6's harness (bench/), fused kda_pre against the unfused chain and the floor
      timeout 300 "$B/monokda" bench ${BENCH_ARGS:---shapes 1x1,2x4,8x8,64x1 --reps 50 --no-stages} -o "$OUT/perf.json" \
        2>&1 | tail -30 | tee -a "$OUT/bench.log"; rc=$((rc | ${PIPESTATUS[0]})) ;;
    stress)
      t0=$(date +%s)
      MONOKDA_STRESS_REPLAYS=${MONOKDA_STRESS_REPLAYS:-48} timeout 300 "$B/tests/test_gpu_stress" > "$OUT/stress.log" 2>&1; r=$?
      tail -30 "$OUT/stress.log"
      echo "stress: exit $r after $(( $(date +%s) - t0 )) s, MONOKDA_STRESS_REPLAYS=${MONOKDA_STRESS_REPLAYS:-48}" | tee -a "$OUT/stress.md"
      rc=$((rc | r)) ;;
    ctest)
      (cd "$B" && timeout 580 ctest -L gpu --output-on-failure) 2>&1 | tail -30 | tee -a "$OUT/ctest.log"; rc=$((rc | ${PIPESTATUS[0]})) ;;
    *) echo "unknown step $step"; rc=2 ;;
  esac
done
exit $rc
