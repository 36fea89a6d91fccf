#!/usr/bin/env bash
# Installs what is missing (Debian packages), then configures and builds gamut into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs="cmake ninja-build g++ clang libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev python3-numpy"
# The Python package: its virtual environment (build/venv); ccache lets its build reuse objects.
pkgs="$pkgs python3-venv ccache"
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
# ccache (first configure only): the Python package's build (build-py) then reuses these objects.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCUDAToolkit_ROOT=/usr/local/cuda >/dev/null
cmake --build build -j"$(nproc)"

# The Python package (docs/python.md): a virtual environment in build/venv with NumPy, pytest,
# nanobind and scikit-build-core from PyPI, and Dask (dask[array], distributed: the optional
# extra `gamut[dask]` that tests/python/test_dask.py runs), then `pip install .` of this checkout
# into it (the extension is built in build-py with the same compiler and flags as build/).
if [ ! -x build/venv/bin/python ]; then
  python3 -m venv build/venv
fi
if ! build/venv/bin/python -c "import numpy, pytest, nanobind, scikit_build_core" >/dev/null 2>&1; then
  echo "setup: installing numpy pytest nanobind scikit-build-core into build/venv"
  build/venv/bin/pip install -q "numpy>=1.22" "pytest>=7" "nanobind>=2.2" "scikit-build-core>=0.10"
fi
if ! build/venv/bin/python -c "import dask.array, distributed" >/dev/null 2>&1; then
  echo "setup: installing dask[array] distributed into build/venv"
  build/venv/bin/pip install -q "dask[array]>=2023.1" "distributed>=2023.1"
fi
pyargs=(-C build-dir=build-py -C cmake.define.CMAKE_CXX_COMPILER="$cxx" -C cmake.define.CUDAToolkit_ROOT=/usr/local/cuda)
if command -v ccache >/dev/null 2>&1; then
  pyargs+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -C cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
build/venv/bin/pip install -q --no-build-isolation --no-deps "${pyargs[@]}" .
build/venv/bin/python -c "import gamut; print('setup: python package gamut', gamut.__version__, 'in build/venv')"
