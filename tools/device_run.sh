#!/usr/bin/env bash
# One device call: build for the local GPU (sm_90a on Hopper), run the GPU test suite, the
# sanitizers on one query of each family, and the benchmarks. Logs go to $OUT (or ./device-out).
# usage: tools/device_run.sh [tests] [sanitize] [bench] [bench-args...]   (default: all three)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}; mkdir -p "$OUT"
steps="${*:-tests sanitize bench}"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
[ -d .deps ] || { echo "run tools/stage_deps.sh here first and carry .deps"; exit 2; }
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGAMUT_BENCH=ON > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build build-dev -j16 > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
echo "build ok"
export GAMUT_CACHE_DIR=$PWD/build-dev/kcache
for step in $steps; do
  case $step in
    tests)
      ctest --test-dir build-dev -L gpu --output-on-failure -j4 --timeout 400 > "$OUT/gpu_tests.log" 2>&1
      grep -E "tests passed|tests failed|\*\*\*|Failed" "$OUT/gpu_tests.log" | head -40 ;;
    sanitize)
      python3 tools/sanitize_queries.py build-dev/gamut "$OUT" 2>&1 | tail -20 ;;
    bench)
      build-dev/bench/bench_gpu --json "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt" ;;
    demo)
      build-dev/gamut demo --backend gpu --size 2048 2>&1 | tee "$OUT/demo.txt" ;;
  esac
done
