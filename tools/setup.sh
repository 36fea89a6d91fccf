#!/usr/bin/env bash
# Installs what is missing (Debian packages), then configures and builds gamut into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs="cmake ninja-build g++ clang libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev python3-numpy"
if command -v dpkg >/dev/null 2>&1; then
  missing=""
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    echo "setup: installing$missing"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
  fi
fi
# clang builds everything so that the libFuzzer target exists; the CUDA toolkit, when present
# (/usr/local/cuda), adds the GPU backend (NVRTC + static cudart; nvcc, with the same clang as
# its host compiler, builds only the CUB list sort in src/cuda/*.cu).
cxx=clang++; command -v clang++ >/dev/null 2>&1 || cxx=g++
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCUDAToolkit_ROOT=/usr/local/cuda >/dev/null
cmake --build build -j"$(nproc)"
