#!/usr/bin/env bash
# Runs the whole test suite (GPU tests report "skipped" where no GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"

# The Python package that tools/setup.sh installed into build/venv: pytest (GPU tests skip
# where there is no GPU).
if [ -x build/venv/bin/python ] && build/venv/bin/python -c "import gamut" >/dev/null 2>&1; then
  (cd tests/python && ../../build/venv/bin/python -m pytest -q -p no:cacheprovider .)
else
  echo "test: the Python package is not installed (run tools/setup.sh); pytest skipped"
fi
