#!/usr/bin/env bash
# Installs what monokda needs on a fresh Debian machine (run as root). hipcc is for the AMD
# compile-only build; the CUDA toolkit, when present, is used as found (/usr/local/cuda).
set -euo pipefail
pkgs=(cmake ninja-build g++ libeigen3-dev doctest-dev libboost-program-options-dev nlohmann-json3-dev
      libomp-dev clang python3 python3-numpy python3-pytest python3-jsonschema)
[ "${MONOKDA_WITH_HIP:-1}" = 1 ] && pkgs+=(hipcc)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "dependencies ready"
