#!/usr/bin/env bash
# Runs the whole test suite (GPU tests report "skipped" where no GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
