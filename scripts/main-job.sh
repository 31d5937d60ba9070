#!/usr/bin/env bash
# The README's first command: install, build, and run the main job on the built-in k3 fixture.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p build/run
build/monokda fixture --config k3 --R 2 --L 4 --nb 4 -o build/run/k3.safetensors
build/monokda reference build/run/k3.safetensors -o build/run/k3-reference.safetensors
