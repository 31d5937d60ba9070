#!/usr/bin/env bash
# CI's bounded fuzzing, after the tests (scripts/test.sh): the shape fuzzer on the small preset
# against the reference (and the emulator, when this build has it), then against a program it did
# not write (--target exec: the Python reference of examples/, as a user's kernel would be run),
# then the libFuzzer target over the fixture reader with ASan and UBSan. About five minutes on two
# cores, the libFuzzer build included. A failure leaves its fixture and replay line in
# build/fuzz-failures/ (the exec run's report: build/fuzz-exec.json) or a crash input in
# build-libfuzzer/artifacts/, and fails the script.
#   MONOKDA_FUZZ_SEED      shape fuzzer seed (default: from the commit hash; printed, so a failure can be rerun)
#   MONOKDA_FUZZ_SECONDS   shape fuzzing budget a target (default 45)
#   MONOKDA_EXEC_SECONDS   exec target budget (default 120)
#   MONOKDA_PYTHON         the python3 with numpy (default: the one the build configured, build/CMakeCache.txt)
#   MONOKDA_LIBFUZZER_SECONDS  libFuzzer budget (default 60)
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

echo "== libFuzzer: fixture reader, ${lf_secs} s"
cxx=$(command -v clang++-14 || command -v clang++ || true)
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cxx" ]; then
  echo "clang is needed for the libFuzzer target (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
CC=$cc CXX=$cxx cmake -S . -B "$lfb" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMONOKDA_TESTS=OFF \
  -DMONOKDA_LIBFUZZER=ON >/dev/null
cmake --build "$lfb" --target fuzz_fixture_reader -j"$(nproc)"
work=$lfb/corpus-work
mkdir -p "$work" "$lfb/artifacts"
# new inputs go to the work folder; the committed seed corpus is only read
rc=0
"$lfb/fuzz/fuzz_fixture_reader" -max_total_time="$lf_secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -dict=fuzz/fixture_reader.dict -artifact_prefix="$lfb/artifacts/" \
  "$work" fuzz/corpus > "$lfb/libfuzzer.log" 2>&1 || rc=$?
grep -E '^(#[0-9]+ +(INITED|DONE)|stat::|Done )' "$lfb/libfuzzer.log" || true
if [ "$rc" != 0 ]; then
  tail -60 "$lfb/libfuzzer.log"
  echo "libFuzzer failed (exit $rc); the input is in $lfb/artifacts/" >&2
fi
exit "$rc"
