#!/usr/bin/env bash
# Configures and builds the CPU tree in build/ (extra arguments go to cmake). MONOKDA_BUILD_DIR names
# another folder; CC/CXX choose the compiler, as for any CMake build (scripts/test.sh builds build-clang
# with clang 14 this way).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${MONOKDA_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
