#!/usr/bin/env bash
# Configures and builds Weft (optimised, tests included) into build/. Extra arguments go to CMake.
# Uses ccache when it is installed (rebuilds of unchanged files then cost nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build build
