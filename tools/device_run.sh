#!/usr/bin/env bash
# One device call: build for the local GPU (sm_90a on Hopper), run the GPU test suite, the
# sanitizers on one query of each family, and the benchmarks. Logs go to $OUT (or ./device-out).
# usage: tools/device_run.sh [tests] [sanitize] [bench] [demo] [relbench] [semibench] [tc] [fuzz] [py] [sweep] [profile]
#                            [shards] [api] [reach] [cold] [tq] [verify] [pyoverhead] [sanitizers]
#                            [hostoverhead] [multigpu] [qprofile] [userbuild] [userbuild-clang] [dask] [sanq] [hist] [tccold] [tuneab]
#                            [perfsmoke] [focus]
#                            (default: tests sanitize bench)
# PREBUILT=DIR: binaries built elsewhere (a build folder of this checkout at the same absolute
# path, carried along; tools/device_prebuild.sh): no build here. Else build-dev is built here
# (not for the userbuild steps alone: they build the way a user does, below).
#
# Gating: every check's exit status is recorded (gate); the script prints one line per failed
# check and exits 1 when any failed. A gtest run counts as passed only when it ran to its end, ran
# as many tests as --gtest_list_tests expects, failed none and skipped none for want of a GPU;
# a shard that timed out or was cut short fails. GAMUT_REQUIRE_GPU=1 (exported here) turns the GPU
# tests' "no GPU" skips into failures (tests/gpu/gpu_skip.h, tests/python/conftest.py).
#
# userbuild: the user's build on this machine with its own compilers (its CXX / CC; nothing carried
# but .deps): `pip install .`, then `cmake -S . -B build-user` and a build, then build-user's GPU
# suite (sharded), the library's device tests and the Python device tests against the installed
# package (pip's build folder is build-py-user, so that a second call builds incrementally).
# userbuild-clang: the same with CXX=clang++-16 CC=clang-16 CUDAHOSTCXX=clang++-16 (build-user-clang,
# build-py-clang, the package installed into /tmp/gamut-user-clang).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}; mkdir -p "$OUT"; export OUT PREBUILT="${PREBUILT:-}"
export GAMUT_REQUIRE_GPU=1
steps="${*:-tests sanitize bench}"
export PATH=/usr/local/cuda/bin:$PATH
NPROC=$(nproc)
FAILED=()   # "check: why" of every failed check

# Dask for test_dask_gpu.py and bench/dask_scale.py (issue 40): the wheels tools/stage_deps.sh put
# in .deps/dask-wheels (the device has no PyPI), installed once into /tmp/dasksite.
DASK_SITE=""
if ! python3 -c "import dask.array, distributed" >/dev/null 2>&1 && ls .deps/dask-wheels/*.whl >/dev/null 2>&1; then
  [ -d /tmp/dasksite ] || python3 -m pip install -q --no-index --no-deps --target /tmp/dasksite .deps/dask-wheels/*.whl \
    > "$OUT/dask_pip.log" 2>&1 || rm -rf /tmp/dasksite
  [ -d /tmp/dasksite ] && DASK_SITE=/tmp/dasksite
fi

# gate NAME RC [WHY]: record a check's exit status.
gate() {
  local name=$1 rc=$2 why=${3:-}
  if [ "$rc" -ne 0 ]; then
    FAILED+=("$name: rc=$rc${why:+ ($why)}")
    echo "FAILED $name rc=$rc${why:+ ($why)}"
  else
    echo "ok     $name"
  fi
}

# gtest_expected BIN FILTER: how many tests FILTER selects (all shards together).
gtest_expected() {
  "$1" --gtest_filter="$2" --gtest_list_tests 2>/dev/null | grep -c '^  [^ ]'
}

# gtest_check NAME RC EXPECTED LOG...: one gtest run (or the shards of one) counted. Fails when a
# log has no final "[==========] N tests ... ran." line (killed, crashed, cut short by a timeout),
# when fewer tests ran than expected, when one failed, or when one skipped for want of a GPU.
gtest_check() {
  local name=$1 rc=$2 expected=$3; shift 3
  local ran=0 passed=0 failed=0 skipped=0 short=0 noskip log n
  for log in "$@"; do
    n=$(grep -E '^\[==========\] [0-9]+ tests? from .* ran\.' "$log" | tail -1 | sed -E 's/^\[==========\] ([0-9]+) .*/\1/')
    if [ -z "$n" ]; then short=$((short + 1)); n=0; fi
    ran=$((ran + n))
    passed=$((passed + $(grep -c '^\[       OK \]' "$log")))
    failed=$((failed + $(grep -c '^\[  FAILED  \] [A-Za-z].* ([0-9]* ms)$' "$log")))
    skipped=$((skipped + $(grep -c '^\[  SKIPPED \] [A-Za-z].* ([0-9]* ms)$' "$log")))
  done
  # A skip's reason is the text between its "[ RUN      ]" and "[  SKIPPED ]" lines; those that
  # say there is no GPU / CUDA device fail (where the test has its own skip, not SKIP_WITHOUT_GPU).
  noskip=$(cat "$@" | awk '/^\[ RUN      \]/ {buf = ""; next} /^\[  SKIPPED \] [A-Za-z]/ {print $4 ": " buf; next} {buf = buf " " $0}' |
           grep -ciE 'no (usable )?(CUDA|GPU)|no NVIDIA GPU|cannot be used' || true)
  local why=()
  [ "$short" -gt 0 ] && why+=("$short log(s) cut short (timeout or crash)")
  [ "$ran" -lt "$expected" ] && why+=("ran $ran of $expected expected tests")
  [ "$failed" -gt 0 ] && why+=("$failed failed")
  [ "$noskip" -gt 0 ] && why+=("$noskip skipped for want of a GPU")
  echo "$name: $passed passed, $failed failed, $skipped skipped, $ran ran of $expected expected"
  grep -h '^\[  FAILED  \] [A-Za-z].* ([0-9]* ms)$' "$@" | sed 's/ (.*//' | sort -u | head -30
  # The first failures' own lines on stdout too: a call's logs may not all come back (file count).
  [ "$failed" -gt 0 ] && grep -h -A6 -E ': Failure$' "$@" | head -${FAILURE_LINES:-60}
  if [ ${#why[@]} -gt 0 ] && [ "$rc" -eq 0 ]; then rc=1; fi
  gate "$name" "$rc" "$(IFS=';'; echo "${why[*]}" | sed 's/;/; /g')"
}

# gtest_run NAME BIN FILTER LOG [TIMEOUT]: one gtest process, counted.
gtest_run() {
  local name=$1 bin=$2 filter=$3 log=$4 t=${5:-0} rc expected
  expected=$(gtest_expected "$bin" "$filter")
  if [ "$t" -gt 0 ]; then
    timeout "$t" "$bin" --gtest_filter="$filter" > "$log" 2>&1; rc=$?
  else
    "$bin" --gtest_filter="$filter" > "$log" 2>&1; rc=$?
  fi
  gtest_check "$name" "$rc" "$expected" "$log"
}

# run_shards NAME BIN FILTER N LOGPREFIX: the GPU suite in N processes at once (most of its time is
# NVRTC on the CPU), each with its own kernel cache and SHARD_TIMEOUT (default 600) seconds.
run_shards() {
  local name=$1 bin=$2 filter=$3 n=$4 prefix=$5 k rc=0 r expected pids=()
  expected=$(gtest_expected "$bin" "$filter")
  for ((k = 0; k < n; ++k)); do
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$k GAMUT_CACHE_DIR=$PWD/$(dirname "$(dirname "$bin")")/kcache$k \
      timeout "${SHARD_TIMEOUT:-600}" "$bin" --gtest_filter="$filter" > "$prefix$k.log" 2>&1 &
    pids+=($!)
  done
  for ((k = 0; k < n; ++k)); do
    wait "${pids[$k]}"; r=$?
    [ "$r" -ne 0 ] && { echo "$name shard $k: rc=$r$([ "$r" -eq 124 ] && echo ' (timed out)')"; rc=$r; }
  done
  local logs=()
  for ((k = 0; k < n; ++k)); do logs+=("$prefix$k.log"); done
  cat "${logs[@]}" > "${prefix}s.log"
  gtest_check "$name" "$rc" "$expected" "${logs[@]}"
}

# e2e_gpu B QUERIES...: the reference queries end to end on the GPU, each gated.
e2e_gpu() {
  local b=$1 q rc; shift
  for q in "$@"; do
    python3 tests/e2e/reference_queries.py "$b/gamut" "$q" --backend gpu > "$OUT/e2e_gpu_$q.log" 2>&1; rc=$?
    tail -3 "$OUT/e2e_gpu_$q.log"
    gate "e2e gpu $q" $rc
  done
}

# pytest_device NAME LOG [PYTHONPATH]: the Python device tests from /tmp (the installed package).
pytest_device() {
  local name=$1 log=$2 pp=${3:-} rc
  local files=() f
  for f in $DEVICE_PYTEST; do files+=("$PWD/tests/python/$f"); done
  pp=$pp${DASK_SITE:+${pp:+:}$DASK_SITE}
  (cd /tmp && PYTHONPATH=$pp timeout "${PYTEST_TIMEOUT:-600}" python3 -m pytest -q -p no:cacheprovider -rfEs \
     "${files[@]}" > "$log" 2>&1); rc=$?
  # (The failures on stdout too: a call's logs may not all come back.)
  grep -E "^(FAILED|ERROR) " "$log" | head -20
  tail -5 "$log"
  gate "$name" $rc
}

# The Python test files that run on the GPU (each skips cleanly without one; test_dask_gpu.py also
# without two GPUs or without Dask, whose wheels tools/stage_deps.sh puts in .deps/dask-wheels).
DEVICE_PYTEST=${DEVICE_PYTEST:-"test_device.py test_frameworks.py test_devices.py test_interrupt_gpu.py
  test_distances_gpu.py test_int_semirings.py test_engine_reports.py test_finish_gpu.py test_histogram.py
  test_tune.py test_dask_gpu.py"}

# userbuild VARIANT: the user's build (header comment). UB_PARTS (default "pip cmake") splits it
# over two device calls: "pip" installs the package and runs the Python device tests, "cmake"
# builds build-user and runs its GPU suite and library device tests.
userbuild() {
  local variant=$1 ub=build-user site="" pipargs=(-C build-dir=build-py-user) rc
  local tag=userbuild${variant:+-$variant} line
  rm -f "$OUT/.${tag}_failed"
  (
    FAILED=()
    if [ "$variant" = clang ]; then
      export CXX=clang++-16 CC=clang-16 CUDAHOSTCXX=clang++-16
      ub=build-user-clang site=/tmp/gamut-user-clang
      pipargs=(-C cmake.define.CMAKE_CXX_COMPILER=clang++-16 -C cmake.define.CMAKE_C_COMPILER=clang-16
               -C cmake.define.CMAKE_CUDA_HOST_COMPILER=clang++-16 -C build-dir=build-py-clang --target "$site")
      rm -rf "$site"
    fi
    echo "== $tag: CXX=${CXX:-(default)} $(${CXX:-c++} --version 2>&1 | head -1); CC=${CC:-(default)}"
    if [ ! -d .deps ]; then
      gate "$tag setup" 2 "carry .deps (tools/stage_deps.sh)"
      printf '%s\n' "${FAILED[@]}" > "$OUT/.${tag}_failed"
      exit 1
    fi
    parts=" ${UB_PARTS:-pip cmake} "
    if [[ $parts == *" pip "* ]]; then
      CMAKE_BUILD_PARALLEL_LEVEL=$NPROC python3 -m pip install --no-build-isolation --no-deps "${pipargs[@]}" . \
        > "$OUT/${tag}_pip.log" 2>&1
      gate "$tag pip install" $?
    fi
    if [[ $parts == *" cmake "* ]]; then
      cmake -S . -B "$ub" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/${tag}_cmake.log" 2>&1 \
        && cmake --build "$ub" -j"$NPROC" > "$OUT/${tag}_build.log" 2>&1
      rc=$?
      [ $rc -ne 0 ] && grep -E "error" "$OUT/${tag}_cmake.log" "$OUT/${tag}_build.log" | head -20
      gate "$tag cmake build" $rc
      if [ $rc -eq 0 ]; then
        export GAMUT_CACHE_DIR=$PWD/$ub/kcache
        run_shards "$tag gpu suite" "$ub/tests/gamut_gpu_tests" "$SHARD_FILTER" "${SHARDS:-8}" "$OUT/${tag}_shard"
        gtest_run "$tag gamut_tests (api device, cli, runtime)" "$ub/tests/gamut_tests" "$API_FILTER" "$OUT/${tag}_api.log"
        gtest_run "$tag gpu alone" "$ub/tests/gamut_gpu_tests" "$ALONE" "$OUT/${tag}_alone.log" 300
      fi
    fi
    [[ $parts == *" pip "* ]] && pytest_device "$tag pytest (device files)" "$OUT/${tag}_pytest.log" "$site"
    # The subshell's failures go back to the caller through a file.
    printf '%s\n' "${FAILED[@]}" > "$OUT/.${tag}_failed"
  )
  rc=$?
  if [ -f "$OUT/.${tag}_failed" ]; then
    while IFS= read -r line; do [ -n "$line" ] && FAILED+=("$line"); done < "$OUT/.${tag}_failed"
    rm -f "$OUT/.${tag}_failed"
  elif [ $rc -ne 0 ]; then
    gate "$tag" $rc "stopped before its end"
  fi
}

# GPU tests that read the whole device's free memory or peak rates: run alone (verify).
export ALONE='GpuSizes.OutOfMemoryReportsWhatIsReallyFree:PeakDevice.*'
SHARD_FILTER="${GPU_FILTER:--TensorMainloopSim.*:TensorMainloop.EveryVariantCompilesForSm90a:$ALONE}"
API_FILTER='ApiDevice.*:CliApi.*:Cli.*:CudaRuntime.*:CudaCache.*:GpuSkip.*'

# The steps that need no build-dev: the user's builds and what runs on the installed package.
PACKAGE_STEPS='userbuild|userbuild-clang|pyoverhead|pytune|tuneab|perfsmoke|tq|tccold|hist|ktimes|qprofile|dask|sanq|focus'
# steps_only_of ALTERNATIVES: whether every step asked is one of these (an extended regex's alternatives).
steps_only_of() {
  local s
  for s in $steps; do [[ $s =~ ^($1)$ ]] || return 1; done
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
gate "nvidia-smi" "${PIPESTATUS[0]}"
if [ -n "${PREBUILT:-}" ]; then
  B=$PREBUILT
  [ -x "$B/gamut" ] || { echo "PREBUILT=$B has no gamut binary"; exit 2; }
elif steps_only_of "$PACKAGE_STEPS"; then
  B=build-user   # userbuild steps and the installed package's benchmarks alone: nothing else to build
elif [[ ( " $steps " == *" userbuild "* && " ${UB_PARTS:-pip cmake} " == *" cmake "* ) || -x build-user/gamut || " $steps " == *" sanq "* ]] \
     && steps_only_of "$PACKAGE_STEPS|fuzz|semibench"; then
  B=build-user   # fuzz, semibench after the user's cmake build (this call's or a warm machine's; sanq builds it): its gamut binary
else
  B=build-dev
  [ -d .deps ] || { echo "run tools/stage_deps.sh here first and carry .deps"; exit 2; }
  cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGAMUT_BENCH=ON > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  cmake --build build-dev -j16 > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
  echo "build ok"
fi
export GAMUT_CACHE_DIR=$PWD/$B/kcache
# gpu_quiet STEP: a timing step's figures mean nothing while another process uses the GPU (session
# 35: racecheck jobs of an earlier step went on into the benchmarks): say so as a failed check.
gpu_quiet() {
  local others
  others=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>/dev/null)
  [ -z "$others" ] || gate "$1: the GPU was not idle before it" 1 "$(echo "$others" | tr '\n' ';')"
}
for step in $steps; do
  case $step in tq|tccold|tuneab|perfsmoke|hist|pyoverhead|ktimes|bench|relbench|semibench|tc|cold|dask|pytune|hostoverhead) gpu_quiet "$step" ;; esac
  case $step in
    tests)
      # The GPU suite, run directly: the device image's newer CMake cannot read the test lists
      # that gtest_discover_tests writes there (seen 2026-11-21), so ctest is not used here.
      gtest_run "gamut_gpu_tests" $B/tests/gamut_gpu_tests '*' "$OUT/gpu_tests.log"
      # (The NVRTC compile checks, Codegen.* and the like, need no GPU: CI runs them.)
      gtest_run "gamut_tests (api device, cli, runtime)" $B/tests/gamut_tests "$API_FILTER" "$OUT/unit_tests.log"
      e2e_gpu $B sgemm q1_amplify q2_zip_aggregate q3_count_pairs q4_join_area q5_select q6_complementary q7_top128 knn maxplus minplus_batched reachability ;;
    sanitize)
      python3 tools/sanitize_queries.py $B/gamut "$OUT" > "$OUT/sanitize.txt" 2>&1; rc=$?
      tail -20 "$OUT/sanitize.txt"; gate "sanitize (one query of each family)" $rc ;;
    bench)
      $B/bench/bench_gpu --json "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt"; gate "bench_gpu" "${PIPESTATUS[0]}" ;;
    demo)
      $B/gamut demo --backend gpu --size 2048 2>&1 | tee "$OUT/demo.txt"; gate "demo" "${PIPESTATUS[0]}" ;;
    relbench)
      # Q2-Q7 and kNN at M = N = 16384, K = 256 and 1024 against cuBLAS SGEMM and PyTorch (issue 4);
      # every result checked in full (exit 1 on a wrong one).
      timeout ${REL_TIMEOUT:-600} python3 bench/relational.py --gamut $B/gamut --json "$OUT/relbench.json" ${RELBENCH_ARGS:-} 2>&1 | tee "$OUT/relbench.txt"
      gate "relbench" "${PIPESTATUS[0]}" ;;
    profile)
      # Nsight Compute on single kernels (bench/profile.sh).
      OUT="$OUT" GAMUT=$B/gamut bash bench/profile.sh 2>&1 | tee "$OUT/profile.txt"; gate "profile" "${PIPESTATUS[0]}" ;;
    sweep)
      # Tile searches (bench/sweeps.sh): timings only, no checks.
      GAMUT=$B/gamut bash bench/sweeps.sh 2>&1 | tee "$OUT/sweeps.txt"; gate "sweep" "${PIPESTATUS[0]}" ;;
    tc)
      # Tensor-core mainloops alone (issue 12): GPU checks against the reference, then the product
      # benchmark against torch (bf16/f16 matmul, _int_mm, TF32, SGEMM) in the same run.
      if [ "${TC_TESTS:-1}" = 1 ]; then   # (TC_TESTS=0: the benchmark alone, after verify)
        gtest_run "tensor tests" $B/tests/gamut_gpu_tests '*Tensor*' "$OUT/tc_tests.log"
        grep -E "tc-compile|\[ tensor" "$OUT/tc_tests.log" | head -60
      fi
      GAMUT_TC_BENCH=1 python3 bench/tensor_core.py --tests $B/tests/gamut_gpu_tests --json "$OUT/tc.json" ${TC_ARGS:-} > "$OUT/tc.txt" 2>&1
      gate "tensor_core bench" $?; tail -40 "$OUT/tc.txt" ;;
    fuzz)
      # Differential fuzzing (issue 11): random queries (a fresh seed block, printed), GPU engine
      # against the CPU engine (every f32 math), and the regression cases on the GPU.
      # FUZZ_DEADLINE (epoch seconds): start no case after it, less a minute for the regression cases.
      fmax=()
      [ -n "${FUZZ_DEADLINE:-}" ] && fmax=(--max-seconds $(( FUZZ_DEADLINE - $(date +%s) - 60 )))
      python3 tests/fuzz/differential.py --gamut $B/gamut --count ${FUZZ_COUNT:-1000} --backend-pair cpu,gpu \
        --jobs ${FUZZ_JOBS:-$NPROC} --keep "$OUT/fuzz-failing" ${FUZZ_SEED:+--seed $FUZZ_SEED} "${fmax[@]}" \
        ${FUZZ_ARGS:-} > "$OUT/fuzz.txt" 2>&1
      gate "differential fuzz cpu,gpu" $?; head -1 "$OUT/fuzz.txt"; tail -15 "$OUT/fuzz.txt"
      python3 tests/fuzz/run_cases.py $B/gamut --backend gpu > "$OUT/fuzz_cases.txt" 2>&1
      gate "fuzz regression cases (gpu)" $?; tail -5 "$OUT/fuzz_cases.txt" ;;
    py)
      # The Python package (issue 13): built against the image's nanobind and scikit-build-core (no
      # network there), its tests with torch and CuPy on the GPU, and the call-overhead benchmark.
      CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install --no-build-isolation --no-deps -q . > "$OUT/pip.log" 2>&1
      gate "pip install" $?; tail -5 "$OUT/pip.log"
      (cd /tmp && python3 -m pytest -q -x -p no:cacheprovider "$OLDPWD/tests/python" > "$OUT/pytest.txt" 2>&1)
      gate "pytest" $?; tail -15 "$OUT/pytest.txt"
      (cd /tmp && python3 "$OLDPWD/bench/python_overhead.py" > "$OUT/py_overhead.txt" 2>&1)
      gate "python_overhead" $?; tail -20 "$OUT/py_overhead.txt" ;;
    semibench)
      # Tropical products (i32, i16, f32, batched) in GOPS against `gamut peak` and PyTorch (issue 5).
      timeout ${SEMI_TIMEOUT:-600} python3 bench/semiring.py --gamut $B/gamut --json "$OUT/semibench.json" ${SEMIBENCH_ARGS:-} 2>&1 | tee "$OUT/semibench.txt"
      gate "semibench" "${PIPESTATUS[0]}" ;;
    shards)
      # The GPU suite in ${SHARDS:-8} processes at once (most of its time is NVRTC on the CPU),
      # each with its own kernel cache. (TensorMainloopSim.* is the host emulation: CI runs it.)
      run_shards "gpu suite" $B/tests/gamut_gpu_tests "$SHARD_FILTER" "${SHARDS:-8}" "$OUT/gpu_shard"
      cp "$OUT/gpu_shards.log" "$OUT/gpu_tests.log" ;;
    api)
      # The library's device path (issue 13) and the CLI/runtime tests that need a device.
      gtest_run "gamut_tests (api device, cli, runtime)" $B/tests/gamut_tests "$API_FILTER" "$OUT/api_tests.log" ;;
    reach)
      e2e_gpu $B reachability ;;
    cold)
      # Cold compile (issue 10): NVRTC alone on this host (idle), then the engine's cold path.
      python3 bench/nvrtc_cost.py --repeats 5 tests/golden/tiles/sgemm.128x256x16_8x16.cu > "$OUT/nvrtc_cost.txt" 2>&1
      gate "nvrtc_cost" $?; tail -8 "$OUT/nvrtc_cost.txt"
      $B/bench/bench_gpu --json "$OUT/bench.json" ${BENCH_ARGS:---sizes 4096,8192 --q1-sizes 4096} 2>&1 | tee "$OUT/bench.txt"
      gate "bench_gpu (cold)" "${PIPESTATUS[0]}" ;;
    tq)
      # Tensor-core kernels through the Python package against PyTorch (issue 12, bench/tensor_queries.py).
      (export PYTHONPATH=$PWD/.devcarry/site; timeout ${TQ_TIMEOUT:-240} python3 bench/tensor_queries.py --json "$OUT/tensor_queries.json" ${TQ_ARGS:-} 2>&1 | tee "$OUT/tensor_queries.txt")
      gate "tensor_queries" $? ;;
    verify)
      # Every correctness check at once (they share the GPU; none is timed): the sharded GPU suite,
      # the library's device tests, reachability end to end and the Python package's tests, each
      # under VERIFY_TIMEOUT seconds (a check cut short fails).
      T=${VERIFY_TIMEOUT:-150}
      (SHARDS=${SHARDS:-6} SHARD_TIMEOUT=$T "$0" shards > "$OUT/verify_shards.txt" 2>&1) & p1=$!
      (SHARD_TIMEOUT=$T timeout $T "$0" api reach > "$OUT/verify_api.txt" 2>&1) & p2=$!
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout $T python3 -m pytest -q -p no:cacheprovider \
         "$OLDPWD/tests/python/test_device.py" "$OLDPWD/tests/python/test_frameworks.py" "$OLDPWD/tests/python/test_devices.py" > "$OUT/verify_pytest.txt" 2>&1) & p3=$!
      wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
      cat "$OUT/verify_shards.txt" "$OUT/verify_api.txt"; tail -5 "$OUT/verify_pytest.txt"
      gate "verify: gpu suite (shards)" $r1; gate "verify: api, reach" $r2; gate "verify: pytest (device files)" $r3
      # Tests that need the device to themselves (free memory, peak rates), after the others.
      gtest_run "verify: alone ($ALONE)" $B/tests/gamut_gpu_tests "$ALONE" "$OUT/verify_alone.txt" 120 ;;
    sanitizers)
      # compute-sanitizer memcheck, racecheck and synccheck over SAN_FILTER (default: the GPU suite
      # as `shards` runs it), each tool in SAN_SHARDS gtest shards at once, spread over the GPUs.
      filter="${SAN_FILTER:-$SHARD_FILTER}"; n=${SAN_SHARDS:-1}
      ng=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU '); [ "$ng" -ge 1 ] || ng=1
      expected=$(gtest_expected $B/tests/gamut_gpu_tests "$filter"); pids=(); k=0
      for tool in memcheck racecheck synccheck; do
        for ((s = 0; s < n; ++s)); do
          CUDA_VISIBLE_DEVICES=$((k % ng)) GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$s \
            GAMUT_CACHE_DIR=$PWD/$B/kcache-$tool-$s timeout ${SAN_TIMEOUT:-300} \
            compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/gamut_gpu_tests --gtest_filter="$filter" \
            > "$OUT/san_${tool}_$s.txt" 2>&1 &
          pids+=($!); k=$((k + 1))
        done
      done
      k=0
      for tool in memcheck racecheck synccheck; do
        rc=0; logs=()
        for ((s = 0; s < n; ++s)); do
          wait "${pids[$k]}"; r=$?; k=$((k + 1))
          [ $r -ne 0 ] && { rc=$r; echo "compute-sanitizer $tool shard $s: rc=$r$([ $r -eq 124 ] && echo ' (timed out)')"; }
          logs+=("$OUT/san_${tool}_$s.txt")
        done
        echo "compute-sanitizer $tool: $(grep -hE '(ERROR|RACECHECK) SUMMARY' "${logs[@]}" | sort | uniq -c | tr '\n' ';')"
        gtest_check "compute-sanitizer $tool" $rc "$expected" "${logs[@]}"
      done ;;
    sanq)
      # compute-sanitizer over the GPU suite of the user's cmake build, one (tool, test) a job
      # (tools/san_queue.py): SANQ_FILTER (default the suite), SANQ_TOOLS, SANQ_JOBS, SANQ_TIMEOUT (one job), SANQ_DEADLINE (epoch
      # seconds: no job runs past it). The finished jobs are kept in build-user (sanq_done-<binary>.jsonl), so a
      # later call on the still-warm machine goes on where this one stopped (a copy comes back in $OUT).
      # Kernels come from the suite's shard caches, merged into one.
      # (Built here if the machine is fresh; brought up to this tree if it is not: a no-op when it is.)
      ub=build-user
      { [ -f $ub/build.ninja ] || cmake -S . -B $ub -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/sanq_cmake.log" 2>&1; } \
        && cmake --build $ub -j"$NPROC" > "$OUT/sanq_build.log" 2>&1
      gate "sanq: cmake build" $?
      mkdir -p $ub/kcache-san
      for d in $ub/kcache*/; do [ "$d" = "$ub/kcache-san/" ] || cp -rn "$d". $ub/kcache-san/ 2>/dev/null; done
      # One done file per test binary: a rebuilt suite starts over.
      done_file=$ub/sanq_done-$(md5sum $ub/tests/gamut_gpu_tests | cut -c1-12).jsonl
      secs=$(( ${SANQ_DEADLINE:-$(( $(date +%s) + 500 ))} - $(date +%s) ))
      python3 tools/san_queue.py --bin $ub/tests/gamut_gpu_tests --out /tmp/sanq-logs --filter="${SANQ_FILTER:-$SHARD_FILTER}" \
        --tools "${SANQ_TOOLS:-racecheck,memcheck,synccheck}" --jobs "${SANQ_JOBS:-15}" --seconds "$secs" \
        --timeout "${SANQ_TIMEOUT:-420}" --done "$done_file" --cache "$PWD/$ub/kcache-san" > "$OUT/sanq.txt" 2>&1
      rc=$?
      # (Nothing of the queue may run on into the next step's timings.)
      pkill -9 -f "$ub/tests/gamut_gpu_tests" 2>/dev/null
      cp "$done_file" "$OUT/sanq_done.jsonl" 2>/dev/null
      # The logs of failed or tool-failed jobs come back (in logs.tar.gz).
      mkdir -p "$OUT/sanq-failed"
      grep -E '"status": "(failed|sanitizer internal|api errors only)"' "$done_file" 2>/dev/null | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    r = json.loads(line); name = r["tool"] + "__" + r["test"].replace("/", "_") + ".log"
    try: shutil.copy("/tmp/sanq-logs/" + name, sys.argv[1])
    except OSError: pass' "$OUT/sanq-failed"
      cat "$OUT/sanq.txt" | tail -40
      gate "sanitizer queue" $rc "$([ $rc -eq 2 ] && echo 'jobs left for a later call')" ;;
    hostoverhead)
      # The host cost of a cached library call, phase by phase (issue 13, bench/host_overhead.cpp).
      for n in 64 256; do $B/bench/host_overhead --n $n --iters 2000 || exit 1; done > "$OUT/host_overhead.txt" 2>&1
      gate "host_overhead" $?; cat "$OUT/host_overhead.txt" ;;
    userbuild)
      userbuild "" ;;
    userbuild-clang)
      userbuild clang ;;
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
      gtest_run "GpuMultiDevice" $B/tests/gamut_gpu_tests 'GpuMultiDevice.*' "$OUT/multi_tests.log"
      grep -E "^\[ +(OK|FAILED|SKIPPED) \]" "$OUT/multi_tests.log" | head -12
      timeout ${MG_TIMEOUT:-480} python3 bench/multi_gpu.py --gamut $B/gamut --json "$OUT/multi_gpu.json" ${MG_ARGS:-} 2>&1 | tee "$OUT/multi_gpu.txt"
      gate "multi_gpu bench" "${PIPESTATUS[0]}" ;;
    qprofile)
      # Nsight Compute on the fused query kernels through the Python package (issue 12,
      # bench/query_ncu.py): ${QPROFILE:-"knn:bf16:256 areas:bf16:256"}, each a report, the key
      # metrics and the per-SASS-instruction counts and stall samples as CSV.
      for spec in ${QPROFILE:-knn:bf16:256 areas:bf16:256}; do
        IFS=: read -r q d k n <<< "$spec"; name=$q-$d-$k${n:+-$n}   # (q:data:K[:N], N = 16384 unless given)
        (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${QP_TIMEOUT:-240} ncu --clock-control none -k regex:gamut_main --launch-skip 1 -c 1 \
           --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
           --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters --section InstructionStats \
           -f -o "/tmp/ncu-$name" python3 "$OLDPWD/bench/query_ncu.py" $q $d ${n:-16384} $k > "$OUT/ncu_run_$name.txt" 2>&1)
        gate "ncu $name" $?
        ncu -i "/tmp/ncu-$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
        ncu -i "/tmp/ncu-$name.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_src_$name.csv" 2>/dev/null
        grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Executed Ipc A|Executed Instructions  |Theoretical Occ|Block Limit" "$OUT/ncu_$name.txt" | head -16
      done ;;
    dask)
      # gamut.dask over the GPUs (issue 40) with the installed package: the GPU workers' tests, then
      # bench/dask_scale.py (Q5, Q7, kNN at 65536^2 x 1024, one GPU / threaded runner / Dask; DASK_ARGS).
      [ -n "$DASK_SITE" ] || python3 -c "import dask.array, distributed" >/dev/null 2>&1 || gate "dask" 2 "no Dask (tools/stage_deps.sh, carry .deps)"
      export NCCL_NVLS_ENABLE=0
      (cd /tmp && PYTHONPATH=$DASK_SITE timeout ${PYTEST_TIMEOUT:-600} python3 -m pytest -q -p no:cacheprovider -rs \
         "$OLDPWD/tests/python/test_dask_gpu.py" > "$OUT/dask_pytest.log" 2>&1)
      gate "test_dask_gpu" $?; tail -5 "$OUT/dask_pytest.log"
      (cd /tmp && PYTHONPATH=$DASK_SITE timeout ${DASK_TIMEOUT:-420} python3 "$OLDPWD/bench/dask_scale.py" \
         --json "$OUT/dask_scale.json" ${DASK_ARGS:-} > "$OUT/dask_scale.txt" 2>&1)
      gate "dask_scale" $?; tail -40 "$OUT/dask_scale.txt" ;;
    ktimes)
      # The fused kernels' own device time (bench/kernel_times.py; KT_ARGS), under each of KT_VARIANTS
      # ("label:VAR=value,VAR=value ...", e.g. code-generator experiments; "base:" for none),
      # alternated over KT_ROUNDS rounds, each variant with its own kernel cache.
      for ((r = 1; r <= ${KT_ROUNDS:-1}; ++r)); do
        for v in ${KT_VARIANTS:-base:}; do
          label=${v%%:*}; envs=${v#*:}
          (export PYTHONPATH=$PWD/.devcarry/site; [ -n "$envs" ] && for kv in ${envs//,/ }; do export "$kv"; done
           cd /tmp && GAMUT_CACHE_DIR=$GAMUT_CACHE_DIR-kt-$label timeout ${KT_TIMEOUT:-300} python3 "$OLDPWD/bench/kernel_times.py" \
             --label "$label" ${KT_ARGS:---queries Q5,kNN --data bf16,f32 --ks 256 --q5-selected 1e-4,0.01,0.1}) || exit 1
        done
      done 2>&1 | grep -v -i "warn" | tee "$OUT/ktimes.txt"; gate "kernel_times" "${PIPESTATUS[0]}" ;;
    pytune)
      # gamut.tune through the installed package (issue 39): PYTUNE_FAMILY (default lists; all: every family), a search
      # of PYTUNE_SECONDS (default 150) at PYTUNE_SIZES ("M,K M,K"; default the tune's own), each
      # query's line (heuristics against the winner), the table and its plots into $OUT.
      (cd /tmp && GAMUT_CACHE_DIR=$GAMUT_CACHE_DIR-tune timeout $(( ${PYTUNE_SECONDS:-150} + 120 )) python3 -c "
import gamut
sizes = [tuple(int(x) for x in s.split(',')) for s in '${PYTUNE_SIZES:-}'.split()] or None
fam = '${PYTUNE_FAMILY:-lists}'
r = gamut.tune(family=None if fam == 'all' else fam, seconds=${PYTUNE_SECONDS:-150}, sizes=sizes, out='$OUT/tune', progress=False)
print('\\n'.join(r['lines'])); print('stopped:', r['stopped'], 'seconds:', round(r['seconds']), 'table:', r['table_path'])
" > "$OUT/pytune.txt" 2>&1)
      gate "gamut.tune" $?; tail -40 "$OUT/pytune.txt" ;;
    perfsmoke)
      # The regression guard (bench/perf_smoke.py): the reference queries against this GPU's floors
      # in bench/perf_floors.json; a query over floor x 1.25 fails the check (PERFSMOKE_ARGS).
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${PERFSMOKE_TIMEOUT:-300} python3 "$OLDPWD/bench/perf_smoke.py" \
         --json "$OUT/perf_smoke.json" ${PERFSMOKE_ARGS:-} 2>&1 | tee "$OUT/perf_smoke.txt"; exit "${PIPESTATUS[0]}")
      gate "perf_smoke" $? ;;
    tuneab)
      # The tuned table pytune stored ($GAMUT_CACHE_DIR-tune) against the heuristics, in the same
      # run (issue 39's "no reference query slower"; bench/tune_ab.py, TUNEAB_ARGS).
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && GAMUT_CACHE_DIR=$GAMUT_CACHE_DIR-tune timeout ${TUNEAB_TIMEOUT:-300} \
         python3 "$OLDPWD/bench/tune_ab.py" ${TUNEAB_ARGS:-} 2>&1 | tee "$OUT/tune_ab.txt")
      gate "tune_ab" $? ;;
    tccold)
      # First calls with an empty kernel cache, kernels compiled ahead or not (issue 39; bench/tc_cold_compile.py).
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${TCC_TIMEOUT:-300} python3 "$OLDPWD/bench/tc_cold_compile.py" \
         --ahead ${TCC_AHEAD:-both} --json "$OUT/tc_cold.json" 2>&1 | tee "$OUT/tc_cold.txt")
      gate "tc_cold_compile" $? ;;
    focus)
      # For a short device budget: the user's cmake build (the machine's compilers) of the GPU suite's
      # binary alone, then FOCUS_FILTERS (space-separated gtest filters) as parallel processes, each
      # cut at FOCUS_TIMEOUT seconds.
      ub=build-user
      cmake -S . -B $ub -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/focus_cmake.log" 2>&1 \
        && cmake --build $ub -j"$NPROC" --target gamut_gpu_tests > "$OUT/focus_build.log" 2>&1
      rc=$?; [ $rc -ne 0 ] && tail -20 "$OUT/focus_build.log"
      gate "focus build" $rc
      if [ $rc -eq 0 ]; then
        n=0; pids=()
        for f in ${FOCUS_FILTERS:-GpuTensorQueries.*}; do
          n=$((n + 1))
          (GAMUT_CACHE_DIR=$PWD/$ub/kcache timeout ${FOCUS_TIMEOUT:-150} $ub/tests/gamut_gpu_tests --gtest_filter="$f" \
             > "$OUT/focus_$n.log" 2>&1) & pids+=($!)
        done
        n=0
        for f in ${FOCUS_FILTERS:-GpuTensorQueries.*}; do
          wait "${pids[$n]}"; rc=$?; n=$((n + 1))
          grep -h "^\[  PASSED\|^\[  FAILED\|tests* ran" "$OUT/focus_$n.log" | tr '\n' ' '; echo
          gate "focus $f" $rc
        done
      fi ;;
    hist)
      # Pair counts by distance bin (issue 38): the fused histogram query against torch.cdist + histc.
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${HIST_TIMEOUT:-180} python3 "$OLDPWD/bench/histogram.py" \
         --json "$OUT/histogram.json" ${HIST_ARGS:-} 2>&1 | tee "$OUT/histogram.txt")
      gate "histogram" $? ;;
    pyoverhead)
      (export PYTHONPATH=$PWD/.devcarry/site; cd /tmp && timeout ${PYO_TIMEOUT:-60} python3 "$OLDPWD/bench/python_overhead.py" --iters 1000 \
         --json "$OUT/py_overhead.json" > "$OUT/py_overhead.txt" 2>&1)
      gate "python_overhead" $?; tail -20 "$OUT/py_overhead.txt" ;;
    *)
      gate "step $step" 2 "no such step" ;;
  esac
done
# At most 8 files come back from a call (the device tool's limits): every log goes into one
# archive, logs.tar.gz, and only the summaries named in KEEP_FILES stay beside it as files.
if [ "$(find "$OUT" -mindepth 1 -maxdepth 1 | wc -l)" -gt 8 ]; then
  keep="${KEEP_FILES:-device.txt fuzz.txt ktimes.txt py_overhead.txt tensor_queries.txt pytune.txt dask_scale.txt sanq.txt sanq_done.jsonl}"
  if (cd "$OUT" && tar czf /tmp/device-logs.tar.gz --exclude='.*' -- *); then
    for f in "$OUT"/* "$OUT"/.[!.]*; do
      [ -e "$f" ] || continue
      [[ " $keep " == *" $(basename "$f") "* ]] || rm -rf "$f"
    done
    mv /tmp/device-logs.tar.gz "$OUT/logs.tar.gz"
  fi
fi
echo "== device_run.sh ($steps): ${#FAILED[@]} check(s) failed"
for f in "${FAILED[@]}"; do echo "  FAILED $f"; done
[ ${#FAILED[@]} -eq 0 ]
