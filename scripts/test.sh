#!/usr/bin/env bash
# The README's test command: install, build, run every CPU test (GPU tests need a GPU: -LE gpu); the
# same tree built with clang 14 and its CPU tests run again, less the `kernels` label (nvcc and hipcc
# over the kernel source, the same whichever compiler built the tree; kernels/test_validate, the
# launcher's argument checks, is built but not run): docs/decisions/0021-ci-compilers-and-test-limits.md.
# Then a bounded fuzz (scripts/fuzz-ci.sh).
#   MONOKDA_CLANG=0          skip the clang build and its tests
#   MONOKDA_CLANG_EXCLUDE    the labels the clang build does not run (default 'gpu|kernels'; the quick
#                            view: 'gpu|kernels|slow')
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
echo "== gcc build (${SECONDS} s)"
bash scripts/build.sh
echo "== CPU tests, gcc build (${SECONDS} s)"
(cd build && ctest -LE gpu --output-on-failure -j"$(nproc)")
if [ "${MONOKDA_CLANG:-1}" = 1 ]; then
  echo "== clang build (${SECONDS} s)"
  cxx=$(command -v clang++-14 || command -v clang++) cc=$(command -v clang-14 || command -v clang)
  CC=$cc CXX=$cxx MONOKDA_BUILD_DIR=build-clang bash scripts/build.sh
  echo "== CPU tests, clang build (${SECONDS} s)"
  (cd build-clang && ctest -LE "${MONOKDA_CLANG_EXCLUDE:-gpu|kernels}" --output-on-failure -j"$(nproc)")
fi
echo "== fuzz (${SECONDS} s)"
bash scripts/fuzz-ci.sh
echo "== done (${SECONDS} s)"
