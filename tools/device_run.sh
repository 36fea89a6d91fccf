#!/usr/bin/env bash
# One device call: build for the local GPU (sm_90a on Hopper), run the GPU test suite, the
# sanitizers on one query of each family, and the benchmarks. Logs go to $OUT (or ./device-out).
# usage: tools/device_run.sh [tests] [sanitize] [bench] [demo] [relbench] [semibench] [tc] [fuzz] [py] [sweep] [profile]
#                            [shards] [api] [reach] [cold] [tq] [verify] [pyoverhead] [sanitizers]
#                            [hostoverhead] [kunroll] [multigpu] [qprofile]   (default: tests sanitize bench)
# PREBUILT=DIR: binaries built elsewhere (a build folder of this checkout at the same absolute
# path, carried along; tools/device_prebuild.sh): no build here. Else build-dev is built here.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}; mkdir -p "$OUT"; export OUT PREBUILT="${PREBUILT:-}"
steps="${*:-tests sanitize bench}"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
if [ -n "${PREBUILT:-}" ]; then
  B=$PREBUILT
  [ -x "$B/gamut" ] || { echo "PREBUILT=$B has no gamut binary"; exit 2; }
else
  B=build-dev
  [ -d .deps ] || { echo "run tools/stage_deps.sh here first and carry .deps"; exit 2; }
  cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGAMUT_BENCH=ON > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  cmake --build build-dev -j16 > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
  echo "build ok"
fi
export GAMUT_CACHE_DIR=$PWD/$B/kcache
# GPU tests that read the whole device's free memory or peak rates: run alone (verify).
export ALONE='GpuSizes.OutOfMemoryReportsWhatIsReallyFree:PeakDevice.*'
for step in $steps; do
  case $step in
    tests)
      # The GPU suite, run directly: the device image's newer CMake cannot read the test lists
      # that gtest_discover_tests writes there (seen 2026-11-21), so ctest is not used here.
      $B/tests/gamut_gpu_tests > "$OUT/gpu_tests.log" 2>&1; echo "gamut_gpu_tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED  \]" "$OUT/gpu_tests.log" | head -40
      # (The NVRTC compile checks, Codegen.* and the like, need no GPU: CI runs them.)
      $B/tests/gamut_tests --gtest_filter='Cli.*:CudaRuntime.*:CudaCache.*' > "$OUT/unit_tests.log" 2>&1; echo "gamut_tests (cli, runtime) rc=$?"
      grep -E "^\[  (PASSED|FAILED) |tests ran" "$OUT/unit_tests.log" | head -10
      for q in sgemm q1_amplify q2_zip_aggregate q3_count_pairs q4_join_area q5_select q6_complementary q7_top128 knn maxplus minplus_batched reachability; do
        python3 tests/e2e/reference_queries.py $B/gamut $q --backend gpu 2>&1 | tail -3
      done | tee "$OUT/e2e_gpu.log" ;;
    sanitize)
      python3 tools/sanitize_queries.py $B/gamut "$OUT" 2>&1 | tail -20 ;;
    bench)
      $B/bench/bench_gpu --json "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt" ;;
    demo)
      $B/gamut demo --backend gpu --size 2048 2>&1 | tee "$OUT/demo.txt" ;;
    relbench)
      # Q2-Q7 and kNN at M = N = 16384, K = 256 and 1024 against cuBLAS SGEMM and PyTorch (issue 4).
      timeout ${REL_TIMEOUT:-600} python3 bench/relational.py --gamut $B/gamut --json "$OUT/relbench.json" ${RELBENCH_ARGS:-} 2>&1 | tee "$OUT/relbench.txt" ;;
    profile)
      # Nsight Compute on single kernels (bench/profile.sh).
      OUT="$OUT" GAMUT=$B/gamut bash bench/profile.sh 2>&1 | tee "$OUT/profile.txt" ;;
    sweep)
      # Tile searches (bench/sweeps.sh): timings only, no checks.
      GAMUT=$B/gamut bash bench/sweeps.sh 2>&1 | tee "$OUT/sweeps.txt" ;;
    tc)
      # Tensor-core mainloops alone (issue 12): GPU checks against the reference, then the product
      # benchmark against torch (bf16/f16 matmul, _int_mm, TF32, SGEMM) in the same run.
      if [ "${TC_TESTS:-1}" = 1 ]; then   # (TC_TESTS=0: the benchmark alone, after verify)
        $B/tests/gamut_gpu_tests --gtest_filter='*Tensor*' > "$OUT/tc_tests.log" 2>&1; echo "tensor tests rc=$?"
        grep -E "^\[  (PASSED|FAILED) |tc-compile|\[ tensor|^\[  FAILED  \]" "$OUT/tc_tests.log" | head -60
      fi
      GAMUT_TC_BENCH=1 python3 bench/tensor_core.py --tests $B/tests/gamut_gpu_tests --json "$OUT/tc.json" ${TC_ARGS:-} 2>&1 | tee "$OUT/tc.txt" | tail -40 ;;
    fuzz)
      # Differential fuzzing (issue 11): random queries, GPU engine against the CPU engine.
      python3 tests/fuzz/differential.py --gamut $B/gamut --count ${FUZZ_COUNT:-1000} --backend-pair cpu,gpu \
        --jobs 16 --keep "$OUT/fuzz-failing" > "$OUT/fuzz.txt" 2>&1; echo "differential fuzz rc=$?"; tail -15 "$OUT/fuzz.txt" ;;
    py)
      # The Python package (issue 13): built against the image's nanobind and scikit-build-core (no
      # network there), its tests with torch and CuPy on the GPU, and the call-overhead benchmark.
      CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install --no-build-isolation --no-deps -q . > "$OUT/pip.log" 2>&1; echo "pip install rc=$?"; tail -5 "$OUT/pip.log"
      (cd /tmp && python3 -m pytest -q -x -p no:cacheprovider "$OLDPWD/tests/python" 2>&1 | tee "$OUT/pytest.txt" | tail -15)
      (cd /tmp && python3 "$OLDPWD/bench/python_overhead.py" 2>&1 | tee "$OUT/py_overhead.txt" | tail -20) ;;
    semibench)
      # Tropical products (i32, i16, f32, batched) in GOPS against `gamut peak` and PyTorch (issue 5).
      timeout ${SEMI_TIMEOUT:-600} python3 bench/semiring.py --gamut $B/gamut --json "$OUT/semibench.json" ${SEMIBENCH_ARGS:-} 2>&1 | tee "$OUT/semibench.txt" ;;
    shards)
      # The GPU suite in ${SHARDS:-8} processes at once (most of its time is NVRTC on the CPU),
      # each with its own kernel cache. (TensorMainloopSim.* is the host emulation: CI runs it.)
      n=${SHARDS:-8}
      for ((k = 0; k < n; ++k)); do
        GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$k GAMUT_CACHE_DIR=$PWD/$B/kcache$k \
          $B/tests/gamut_gpu_tests --gtest_filter="${GPU_FILTER:--TensorMainloopSim.*:TensorMainloop.EveryVariantCompilesForSm90a:$ALONE}" > "$OUT/gpu_shard$k.log" 2>&1 &
      done
      wait
      cat "$OUT"/gpu_shard*.log > "$OUT/gpu_tests.log"
      echo "gpu suite: $(cat "$OUT"/gpu_shard*.log | grep -c '^\[       OK \]') passed, $(grep -h '^\[  FAILED  \] [A-Za-z]' "$OUT"/gpu_shard*.log | sed 's/ (.*//' | sort -u | wc -l) failed, $(cat "$OUT"/gpu_shard*.log | grep -c '^\[  SKIPPED \]') skipped"
      grep -h '^\[  FAILED  \] [A-Za-z]' "$OUT"/gpu_shard*.log | sed 's/ (.*//' | sort -u | head -30 ;;
    api)
      # The library's device path (issue 13) and the CLI/runtime tests that need a device.
      $B/tests/gamut_tests --gtest_filter='ApiDevice.*:Cli.*:CudaRuntime.*:CudaCache.*' > "$OUT/api_tests.log" 2>&1; echo "gamut_tests (api device, cli, runtime) rc=$?"
      grep -E "^\[  (PASSED|FAILED) |tests ran" "$OUT/api_tests.log" | head -10 ;;
    reach)
      python3 tests/e2e/reference_queries.py $B/gamut reachability --backend gpu 2>&1 | tail -3 | tee "$OUT/e2e_reach.log" ;;
    cold)
      # Cold compile (issue 10): NVRTC alone on this host (idle), then the engine's cold path.
      python3 bench/nvrtc_cost.py --repeats 5 tests/golden/tiles/sgemm.128x256x16_8x16.cu 2>&1 | tail -8 | tee "$OUT/nvrtc_cost.txt"
      $B/bench/bench_gpu --json "$OUT/bench.json" ${BENCH_ARGS:---sizes 4096,8192 --q1-sizes 4096} 2>&1 | tee "$OUT/bench.txt" ;;
    tq)
      # Tensor-core kernels through the Python package against PyTorch (issue 12, bench/tensor_queries.py).
      (export PYTHONPATH=$PWD/.devcarry/site; timeout ${TQ_TIMEOUT:-240} python3 bench/tensor_queries.py --json "$OUT/tensor_queries.json" ${TQ_ARGS:-} 2>&1 | tee "$OUT/tensor_queries.txt") ;;
    verify)
      # Every correctness check at once (they share the GPU; none is timed): the sharded GPU suite,
      # the library's device tests, reachability end to end and the Python package's tests, each
      # under VERIFY_TIMEOUT seconds.
      T=${VERIFY_TIMEOUT:-150}
      (SHARDS=${SHARDS:-6} timeout $T "$0" shards > "$OUT/verify_shards.txt" 2>&1) &
      (timeout $T "$0" api reach > "$OUT/verify_api.txt" 2>&1) &
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout $T python3 -m pytest -q -p no:cacheprovider \
         "$OLDPWD/tests/python/test_device.py" "$OLDPWD/tests/python/test_frameworks.py" "$OLDPWD/tests/python/test_devices.py" > "$OUT/verify_pytest.txt" 2>&1) &
      wait
      # Tests that need the device to themselves (free memory, peak rates), after the others.
      timeout 120 $B/tests/gamut_gpu_tests --gtest_filter="$ALONE" > "$OUT/verify_alone.txt" 2>&1
      echo "alone ($ALONE): rc=$? $(grep -c '^\[       OK \]' "$OUT/verify_alone.txt") passed"
      grep -h '^\[  FAILED  \] [A-Za-z]' "$OUT/verify_alone.txt" | head
      cat "$OUT/verify_shards.txt" "$OUT/verify_api.txt"; tail -5 "$OUT/verify_pytest.txt" ;;
    sanitizers)
      # compute-sanitizer memcheck, racecheck and synccheck on the tensor-core query tests (issue 12),
      # at once, each with its own kernel cache.
      for tool in memcheck racecheck synccheck; do
        (GAMUT_CACHE_DIR=$PWD/$B/kcache-$tool timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 9 \
           $B/tests/gamut_gpu_tests --gtest_filter="${SAN_FILTER:-GpuTensorQueries.*}" > "$OUT/san_$tool.txt" 2>&1
         echo "compute-sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.txt" | tail -1) $(grep -c '^\[       OK \]' "$OUT/san_$tool.txt") tests ok") &
      done
      wait ;;
    hostoverhead)
      # The host cost of a cached library call, phase by phase (issue 13, bench/host_overhead.cpp).
      for n in 64 256; do $B/bench/host_overhead --n $n --iters 2000; done 2>&1 | tee "$OUT/host_overhead.txt" ;;
    kunroll)
      # Experiment (issue 10): steps unrolled per k slice of the SIMT mainloop: cold compile and speed.
      for u in 0 8 4; do
        echo "== GAMUT_EXPERIMENT_K_UNROLL=$u"
        GAMUT_EXPERIMENT_K_UNROLL=$u GAMUT_CACHE_DIR=$PWD/$B/kcache-u$u $B/bench/bench_gpu ${KU_ARGS:---sizes 4096,8192 --q1-sizes 4096} 2>&1
      done | tee "$OUT/kunroll.txt" ;;
    multigpu)
      # Several GPUs (issue 14), on a kind with several: the multi-device GPU tests (NCCL across
      # the visible GPUs), then bench/multi_gpu.py on 1, 2, 4, 8 GPUs (those visible). NVLink
      # multicast stays off (the device tool's KINDS.md).
      export NCCL_NVLS_ENABLE=0
      nvidia-smi -L | tee "$OUT/gpus.txt"
      # The CLI finds NCCL on the loader's path or in the toolkit; on an image where only pip's
      # nvidia-nccl package (PyTorch's) has it, point GAMUT_NCCL_LIBRARY there.
      if [ -z "${GAMUT_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
        lib=$(python3 -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"); print(d if os.path.exists(d) else "")' 2>/dev/null)
        [ -n "$lib" ] && export GAMUT_NCCL_LIBRARY=$lib
      fi
      echo "NCCL: ${GAMUT_NCCL_LIBRARY:-(loader path)}"
      $B/tests/gamut_gpu_tests --gtest_filter='GpuMultiDevice.*' > "$OUT/multi_tests.log" 2>&1; echo "GpuMultiDevice rc=$?"
      grep -E "^\[ +(OK|FAILED|SKIPPED) \]" "$OUT/multi_tests.log" | head -12
      timeout ${MG_TIMEOUT:-480} python3 bench/multi_gpu.py --gamut $B/gamut --json "$OUT/multi_gpu.json" ${MG_ARGS:-} 2>&1 | tee "$OUT/multi_gpu.txt" ;;
    qprofile)
      # Nsight Compute on the fused query kernels through the Python package (issue 12,
      # bench/query_ncu.py): ${QPROFILE:-"knn:bf16:256 areas:bf16:256"}, each a report, the key
      # metrics and the per-SASS-instruction counts and stall samples as CSV.
      for spec in ${QPROFILE:-knn:bf16:256 areas:bf16:256}; do
        IFS=: read -r q d k n <<< "$spec"; name=$q-$d-$k${n:+-$n}   # (q:data:K[:N], N = 16384 unless given)
        (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${QP_TIMEOUT:-240} ncu --clock-control none -k regex:gamut_main --launch-skip 1 -c 1 \
           --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
           --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters --section InstructionStats \
           -f -o "/tmp/ncu-$name" python3 "$OLDPWD/bench/query_ncu.py" $q $d ${n:-16384} $k > "$OUT/ncu_run_$name.txt" 2>&1; echo "== ncu $name rc=$?")
        ncu -i "/tmp/ncu-$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
        ncu -i "/tmp/ncu-$name.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_src_$name.csv" 2>/dev/null
        grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Executed Ipc A|Executed Instructions  |Theoretical Occ|Block Limit" "$OUT/ncu_$name.txt" | head -16
      done ;;
    pyoverhead)
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${PYO_TIMEOUT:-60} python3 "$OLDPWD/bench/python_overhead.py" --iters 1000 \
         --json "$OUT/py_overhead.json" 2>&1 | tee "$OUT/py_overhead.txt" | tail -20) ;;
  esac
done
