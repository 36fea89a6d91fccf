#!/usr/bin/env bash
# One device call: build for the local GPU (sm_90a on Hopper), run the GPU test suite, the
# sanitizers on one query of each family, and the benchmarks. Logs go to $OUT (or ./device-out).
# usage: tools/device_run.sh [tests] [sanitize] [bench] [demo] [relbench] [semibench] [tc] [fuzz] [py] [sweep] [profile]   (default: tests sanitize bench)
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
      # The GPU suite, run directly: the device image's newer CMake cannot read the test lists
      # that gtest_discover_tests writes there (seen 2026-11-21), so ctest is not used here.
      build-dev/tests/gamut_gpu_tests > "$OUT/gpu_tests.log" 2>&1; echo "gamut_gpu_tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED  \]" "$OUT/gpu_tests.log" | head -40
      # (The NVRTC compile checks, Codegen.* and the like, need no GPU: CI runs them.)
      build-dev/tests/gamut_tests --gtest_filter='Cli.*:CudaRuntime.*:CudaCache.*' > "$OUT/unit_tests.log" 2>&1; echo "gamut_tests (cli, runtime) rc=$?"
      grep -E "^\[  (PASSED|FAILED) |tests ran" "$OUT/unit_tests.log" | head -10
      for q in sgemm q1_amplify q2_zip_aggregate q3_count_pairs q4_join_area q5_select q6_complementary q7_top128 knn maxplus minplus_batched reachability; do
        python3 tests/e2e/reference_queries.py build-dev/gamut $q --backend gpu 2>&1 | tail -3
      done | tee "$OUT/e2e_gpu.log" ;;
    sanitize)
      python3 tools/sanitize_queries.py build-dev/gamut "$OUT" 2>&1 | tail -20 ;;
    bench)
      build-dev/bench/bench_gpu --json "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt" ;;
    demo)
      build-dev/gamut demo --backend gpu --size 2048 2>&1 | tee "$OUT/demo.txt" ;;
    relbench)
      # Q2-Q7 and kNN at M = N = 16384, K = 256 and 1024 against cuBLAS SGEMM and PyTorch (issue 4).
      python3 bench/relational.py --gamut build-dev/gamut --json "$OUT/relbench.json" ${RELBENCH_ARGS:-} 2>&1 | tee "$OUT/relbench.txt" ;;
    profile)
      # Nsight Compute on single kernels (bench/profile.sh).
      OUT="$OUT" GAMUT=build-dev/gamut bash bench/profile.sh 2>&1 | tee "$OUT/profile.txt" ;;
    sweep)
      # Tile searches (bench/sweeps.sh): timings only, no checks.
      GAMUT=build-dev/gamut bash bench/sweeps.sh 2>&1 | tee "$OUT/sweeps.txt" ;;
    tc)
      # Tensor-core mainloops alone (issue 12): GPU checks against the reference, then the product
      # benchmark against torch (bf16/f16 matmul, _int_mm, TF32, SGEMM) in the same run.
      build-dev/tests/gamut_gpu_tests --gtest_filter='*Tensor*' > "$OUT/tc_tests.log" 2>&1; echo "tensor tests rc=$?"
      grep -E "^\[  (PASSED|FAILED) |tc-compile|\[ tensor|^\[  FAILED  \]" "$OUT/tc_tests.log" | head -60
      GAMUT_TC_BENCH=1 python3 bench/tensor_core.py --tests build-dev/tests/gamut_gpu_tests --json "$OUT/tc.json" 2>&1 | tee "$OUT/tc.txt" | tail -40 ;;
    fuzz)
      # Differential fuzzing (issue 11): random queries, GPU engine against the CPU engine.
      python3 tests/fuzz/differential.py --gamut build-dev/gamut --count ${FUZZ_COUNT:-1000} --backend-pair cpu,gpu \
        --jobs 16 --keep "$OUT/fuzz-failing" > "$OUT/fuzz.txt" 2>&1; echo "differential fuzz rc=$?"; tail -15 "$OUT/fuzz.txt" ;;
    py)
      # The Python package (issue 13): built against the image's nanobind and scikit-build-core (no
      # network there), its tests with torch and CuPy on the GPU, and the call-overhead benchmark.
      CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install --no-build-isolation --no-deps -q . > "$OUT/pip.log" 2>&1; echo "pip install rc=$?"; tail -5 "$OUT/pip.log"
      (cd /tmp && python3 -m pytest -q -x -p no:cacheprovider "$OLDPWD/tests/python" 2>&1 | tee "$OUT/pytest.txt" | tail -15)
      (cd /tmp && python3 "$OLDPWD/bench/python_overhead.py" 2>&1 | tee "$OUT/py_overhead.txt" | tail -20) ;;
    semibench)
      # Tropical products (i32, i16, f32, batched) in GOPS against `gamut peak` and PyTorch (issue 5).
      python3 bench/semiring.py --gamut build-dev/gamut --json "$OUT/semibench.json" ${SEMIBENCH_ARGS:-} 2>&1 | tee "$OUT/semibench.txt" ;;
  esac
done
