#!/usr/bin/env bash
# The README's test command: install, build, run every CPU test (GPU tests need a GPU: -LE gpu).
# Then a bounded fuzz (scripts/fuzz-ci.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build && ctest -LE gpu --output-on-failure -j"$(nproc)"
cd .. && bash scripts/fuzz-ci.sh
