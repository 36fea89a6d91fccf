#!/usr/bin/env bash
# Copies the header-only dependencies and GoogleTest's sources from this machine's Debian
# packages into .deps/ (git-ignored), for the device machine, which can install nothing; Dask's
# wheels from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/include
cp -r /usr/include/CLI /usr/include/nlohmann .deps/include/
cp -r /usr/src/googletest .deps/googletest
# Dask's wheels for the device's Python 3.12 (tools/device_run.sh installs them there for
# test_dask_gpu.py and bench/dask_scale.py: issue 40). NumPy is the device's own.
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --no-deps \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  -d .deps/dask-wheels "dask[array]" distributed toolz cloudpickle partd fsspec locket msgpack psutil tornado \
  zict tblib sortedcontainers pyyaml click jinja2 markupsafe urllib3 packaging importlib_metadata zipp \
  || echo "stage_deps: no Dask wheels (PyPI unreachable?): the device's Dask checks will skip"
du -sh .deps
