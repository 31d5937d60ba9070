#!/usr/bin/env bash
# The README's first command: install, build, and run the main job: the CPU emulator's default run
# (the mono kernel's CTA plan on a built-in k3 fixture, R 2, L 4, nb 4, 132 CTAs; docs/emulator.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build/monokda emulate
