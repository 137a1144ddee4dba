#!/usr/bin/env bash
# Runs Weft's benchmarks and prints `METRIC <name> <value> <unit>` and `RATIO <name> <value>` lines
# (a RATIO above 1 means Weft is better). Usage: bench/run.sh [executor] [matmul] (all when none).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target executor_bench matmul_bench >/dev/null
names=("$@")
[[ ${#names[@]} -eq 0 ]] && names=(executor matmul)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for name in "${names[@]}"; do
  case "$name" in
    executor)
      build/bench/executor_bench --benchmark_format=json --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true >"$out/executor.json"
      python3 bench/report.py executor "$out/executor.json"
      ;;
    matmul)
      build/bench/matmul_bench --benchmark_format=json --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true >"$out/matmul.json"
      python3 bench/report.py matmul "$out/matmul.json"
      ;;
    *) echo "unknown benchmark '$name' (known: executor matmul)" >&2; exit 2 ;;
  esac
done
