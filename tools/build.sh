#!/usr/bin/env bash
# Configures and builds Weft (optimised, tests included) into build/. Extra arguments go to CMake.
# Uses ccache when it is installed (tools/compiler_cache.sh; tools/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/compiler_cache.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build build
