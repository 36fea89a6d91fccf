#!/usr/bin/env bash
# Builds here, for the device machine, what tools/device_run.sh runs with PREBUILT=build-device,
# so that a device call spends no time compiling: the CLI, the test binaries and bench_gpu
# (sm_90a; cudart static, driver and NVRTC loaded there), and the Python package for the
# device's Python (PY, default 3.12) into .devcarry/site (with WITH_DASK=1 also Dask). The compiled-in paths are this
# checkout's: on the device, link this absolute path to the repo root before running.
# Carry: build-device/gamut build-device/tests/gamut_gpu_tests build-device/tests/gamut_tests
#        build-device/bench/bench_gpu build-device/bench/host_overhead .devcarry
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/work/py312/bin/python}
cxx=clang++; command -v clang++ >/dev/null 2>&1 || cxx=g++
launcher=(); command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DGAMUT_BENCH=ON \
  -DCUDAToolkit_ROOT=/usr/local/cuda "${launcher[@]}" >/dev/null
cmake --build build-device -j"$(nproc)" --target gamut gamut_tests gamut_gpu_tests bench_gpu host_overhead
grep -qx ".devcarry/" .git/info/exclude 2>/dev/null || echo ".devcarry/" >> .git/info/exclude
rm -rf .devcarry/site
pyargs=(-C build-dir=build-py-device -C cmake.define.CMAKE_CXX_COMPILER="$cxx" -C cmake.define.CUDAToolkit_ROOT=/usr/local/cuda)
command -v ccache >/dev/null 2>&1 && pyargs+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -C cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
"$PY" -m pip install -q --no-build-isolation --no-deps "${pyargs[@]}" --target .devcarry/site .
# WITH_DASK=1: Dask too (dask[array], distributed and what they import, but not NumPy, which the
# device has), for tests/python/test_dask_gpu.py and bench/dask_scale.py (the device has no PyPI).
if [ "${WITH_DASK:-0}" = 1 ]; then
  "$PY" -m pip install -q --no-deps --target .devcarry/site dask distributed toolz cloudpickle partd fsspec locket \
    msgpack psutil tornado zict tblib sortedcontainers pyyaml click jinja2 markupsafe urllib3 packaging importlib_metadata zipp
  # (Their own test suites and byte code are not needed there: ~20 MB carried instead of ~46.)
  find .devcarry/site \( -name tests -o -name __pycache__ \) -type d -prune -exec rm -rf {} +
fi
du -sh build-device/gamut build-device/tests/gamut_gpu_tests build-device/tests/gamut_tests build-device/bench/bench_gpu build-device/bench/host_overhead .devcarry
