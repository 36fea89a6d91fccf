#!/usr/bin/env bash
# Copies the header-only dependencies and GoogleTest's sources from this machine's Debian
# packages into .deps/ (git-ignored), for the device machine, which can install nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/include
cp -r /usr/include/CLI /usr/include/nlohmann .deps/include/
cp -r /usr/src/googletest .deps/googletest
du -sh .deps
