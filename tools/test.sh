#!/usr/bin/env bash
# The README's second command (and CI's): installs dependencies, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
