#!/usr/bin/env bash
# Runs the whole test suite (GPU tests report "skipped" where no GPU is present), then pytest on
# the Python package that tools/setup.sh installed into build/venv. A package that is missing or
# does not import is a failure, not a reason to skip pytest (GAMUT_NO_PYTHON=1 skips it on
# purpose, and says so).
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"

if [ "${GAMUT_NO_PYTHON:-0}" != 0 ]; then
  echo "test: GAMUT_NO_PYTHON=$GAMUT_NO_PYTHON: pytest not run"
  exit 0
fi
py=build/venv/bin/python
if [ ! -x "$py" ]; then
  echo "test: FAILED: no build/venv (run tools/setup.sh, which installs the Python package there)" >&2
  exit 1
fi
if ! err=$("$py" -c "import gamut" 2>&1); then
  echo "test: FAILED: the Python package does not import in build/venv:" >&2
  echo "$err" | tail -5 >&2
  exit 1
fi
(cd tests/python && ../../build/venv/bin/python -m pytest -q -p no:cacheprovider .)
