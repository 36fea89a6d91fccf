#!/usr/bin/env bash
# Differential fuzzing on the device (docs/testing.md): COUNT random queries, each run by the CPU
# engine and the GPU engine and compared; then the fuzzer's regression cases on the GPU.
# Failing cases are written to $OUT/fuzz-cases (query, .npy inputs, case.json, run.sh).
# usage: tools/fuzz_device.sh [GAMUT] [COUNT] [SEED] [extra differential.py args, e.g. --gpu-args '--f32-math tf32x3']
# (GAMUT defaults to build-dev/gamut, which tools/device_run.sh builds.)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}; mkdir -p "$OUT"
gamut=${1:-build-dev/gamut}; count=${2:-1000}; seed=${3:-1}
shift $(( $# < 3 ? $# : 3 ))
jobs=$(nproc)
${PYTHON:-python3} tests/fuzz/differential.py --gamut "$gamut" --backend-pair cpu,gpu --count "$count" --seed "$seed" \
  --device-sizes --jobs "$jobs" --threads 2 --max-seconds 420 --keep "$OUT/fuzz-cases" "$@" 2>&1 | tee "$OUT/fuzz.txt"
rc=${PIPESTATUS[0]}
${PYTHON:-python3} tests/fuzz/run_cases.py "$gamut" --backend gpu 2>&1 | tee -a "$OUT/fuzz.txt"
exit $rc
