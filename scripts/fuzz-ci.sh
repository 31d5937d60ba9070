#!/usr/bin/env bash
# CI's bounded fuzzing, after the tests (scripts/test.sh): the shape fuzzer on the small preset
# against the reference (and the emulator, when this build has it), then against a program it did
# not write (--target exec: the Python reference of examples/, as a user's kernel would be run),
# then the libFuzzer targets with ASan and UBSan: the fixture reader (seeded by fuzz/corpus/), then
# kernel v2's plan file reader (seeded by this build's own plan files: monokda plan --kernel v2 on the
# small preset, compacted by monokda_plan_v2_seeds). About six minutes on two cores, the libFuzzer
# build included. A failure leaves its fixture and replay line in build/fuzz-failures/ (the exec
# run's report: build/fuzz-exec.json) or a crash input in build-libfuzzer/artifacts/, and fails the
# script.
#   MONOKDA_FUZZ_SEED      shape fuzzer seed (default: from the commit hash; printed, so a failure can be rerun)
#   MONOKDA_FUZZ_SECONDS   shape fuzzing budget a target (default 45)
#   MONOKDA_EXEC_SECONDS   exec target budget (default 120)
#   MONOKDA_PYTHON         the python3 with numpy (default: the one the build configured, build/CMakeCache.txt)
#   MONOKDA_LIBFUZZER_SECONDS  libFuzzer budget, the fixture reader (default 60)
#   MONOKDA_LIBFUZZER_PLAN_SECONDS  libFuzzer budget, kernel v2's plan reader (default 30)
#   MONOKDA_BIN, MONOKDA_LIBFUZZER_BUILD  the CLI and the clang build folder (build/monokda, build-libfuzzer)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MONOKDA_BIN:-build/monokda}
lfb=${MONOKDA_LIBFUZZER_BUILD:-build-libfuzzer}
# default seed: the commit's, so a run is reproducible for a commit and differs between commits
commit_seed=$(( 16#$(git rev-parse --short=8 HEAD 2>/dev/null || echo 1) ))
seed=${MONOKDA_FUZZ_SEED:-$commit_seed}
secs=${MONOKDA_FUZZ_SECONDS:-45}
lf_secs=${MONOKDA_LIBFUZZER_SECONDS:-60}
lf_plan_secs=${MONOKDA_LIBFUZZER_PLAN_SECONDS:-30}
exec_secs=${MONOKDA_EXEC_SECONDS:-120}
py=${MONOKDA_PYTHON:-$(sed -n 's/^MONOKDA_PYTHON:FILEPATH=//p' build/CMakeCache.txt 2>/dev/null)}

echo "== shape fuzzer, seed $seed (rerun: MONOKDA_FUZZ_SEED=$seed bash scripts/fuzz-ci.sh)"
for t in reference emulator; do
  "$bin" fuzz --target "$t" --config small --time "$secs" --seed "$seed" --out build/fuzz-failures \
    --shrink-time 60
done

echo "== exec target: examples/kda_pre_numpy.py, ${exec_secs} s"
if [ -z "$py" ]; then
  echo "no python3 with numpy configured (scripts/install-deps.sh, then reconfigure)" >&2
  exit 1
fi
"$bin" fuzz --target exec --cmd "'$py' examples/kda_pre_numpy.py {fixture} {out}" --config small \
  --time "$exec_secs" --seed "$seed" --out build/fuzz-failures --shrink-time 60 --report build/fuzz-exec.json

echo "== libFuzzer build"
cxx=$(command -v clang++-14 || command -v clang++ || true)
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cxx" ]; then
  echo "clang is needed for the libFuzzer targets (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
CC=$cc CXX=$cxx cmake -S . -B "$lfb" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMONOKDA_TESTS=OFF \
  -DMONOKDA_LIBFUZZER=ON >/dev/null
cmake --build "$lfb" --target fuzz_fixture_reader fuzz_plan_v2_reader -j"$(nproc)"
mkdir -p "$lfb/artifacts"

# libfuzz TARGET SECONDS MAX_LEN DICT SEEDS: new inputs go to a work folder of the target's; the
# seeds are only read. A crash input lands in $lfb/artifacts/TARGET-*; the script fails at its end.
rc=0
libfuzz() {
  local target=$1 secs=$2 max_len=$3 dict=$4 seeds=$5 work=$lfb/corpus-work-$1 r=0
  echo "== libFuzzer: $target, $secs s"
  mkdir -p "$work"
  "$lfb/fuzz/fuzz_$target" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -dict="$dict" -artifact_prefix="$lfb/artifacts/$target-" \
    "$work" "$seeds" > "$lfb/libfuzzer-$target.log" 2>&1 || r=$?
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::|Done )' "$lfb/libfuzzer-$target.log" || true
  if [ "$r" != 0 ]; then
    tail -60 "$lfb/libfuzzer-$target.log"
    echo "libFuzzer $target failed (exit $r); the input is in $lfb/artifacts/" >&2
    rc=$r
  fi
}

libfuzz fixture_reader "$lf_secs" 8192 fuzz/fixture_reader.dict fuzz/corpus

plans=$lfb/plan-v2-files seeds=$lfb/plan-v2-seeds
rm -rf "$plans" "$seeds"
mkdir -p "$plans" "$seeds"
for rl in "1 1" "2 4"; do
  set -- $rl
  "$bin" plan --kernel v2 --config small --R "$1" --L "$2" -o "$plans/small-R$1-L$2.json" >/dev/null
done
"$bin" plan --kernel v2 --config small --R 1 --L 2 --tail -o "$plans/small-R1-L2-tail.json" >/dev/null  # the tail's table and steps
"$(dirname "$bin")/fuzz/monokda_plan_v2_seeds" "$seeds" "$plans"/*.json
libfuzz plan_v2_reader "$lf_plan_secs" 262144 fuzz/plan_v2_reader.dict "$seeds"
exit "$rc"
