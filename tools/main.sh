#!/usr/bin/env bash
# The README's first command: installs dependencies, builds, and runs Weft's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
build/bin/hello_graph
# Data-parallel on two devices with MirroredStrategy (arguments after these override them).
build/bin/weft train --devices 2 "$@"
