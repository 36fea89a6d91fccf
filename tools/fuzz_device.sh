#!/usr/bin/env bash
# Differential fuzzing on the device (docs/testing.md): COUNT random queries, each run by the CPU
# engine and the GPU engine and compared (a fresh seed block unless SEED is given; the block is
# printed first: `--seed S --count N` reproduces it; each case's GPU side runs one of the f32
# maths ieee / tf32x3 / tf32); then the fuzzer's regression cases on the GPU.
# Failing cases are written to $OUT/fuzz-cases (query, .npy inputs, case.json, run.sh).
# Exit 1 when either part failed, when no GPU was found (GAMUT_REQUIRE_GPU=1), or when fewer than
# MIN_CASES (default COUNT) cases ran before the time limit (MAX_SECONDS, default 420).
# usage: tools/fuzz_device.sh [GAMUT] [COUNT] [SEED] [extra differential.py args, e.g. --gpu-args '--f32-math tf32x3']
# (GAMUT defaults to build-dev/gamut, which tools/device_run.sh builds; SEED '' or 'fresh': a fresh block.)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export GAMUT_REQUIRE_GPU=1
gamut=${1:-build-dev/gamut}; count=${2:-1000}; seed=${3:-}
shift $(( $# < 3 ? $# : 3 ))
seedargs=()
[ -n "$seed" ] && [ "$seed" != fresh ] && seedargs=(--seed "$seed")
jobs=$(nproc)
${PYTHON:-python3} tests/fuzz/differential.py --gamut "$gamut" --backend-pair cpu,gpu --count "$count" "${seedargs[@]}" \
  --device-sizes --jobs "$jobs" --threads 2 --max-seconds "${MAX_SECONDS:-420}" --min-cases "${MIN_CASES:-$count}" \
  --keep "$OUT/fuzz-cases" "$@" 2>&1 | tee "$OUT/fuzz.txt"
rc_diff=${PIPESTATUS[0]}
${PYTHON:-python3} tests/fuzz/run_cases.py "$gamut" --backend gpu 2>&1 | tee "$OUT/fuzz_cases.txt"
rc_cases=${PIPESTATUS[0]}
echo "fuzz_device: differential rc=$rc_diff, regression cases rc=$rc_cases"
[ "$rc_diff" -eq 0 ] && [ "$rc_cases" -eq 0 ]
