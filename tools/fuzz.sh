#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) and runs each for a while on a
# scratch copy of its seed corpus; see docs/fuzzing.md.
#   tools/fuzz.sh [--build-dir DIR] [--no-build] [--seconds N] [TARGET...]
# DIR defaults to build-fuzz, N to 20 s per target, the targets to all of them. New corpus entries
# stay in DIR/fuzz-corpus/ (never in the repository); crash, leak, timeout and out-of-memory inputs
# go to DIR/fuzz-findings/TARGET/. Exits 1 naming each target that found something and its input.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(graph_def_import tensor_proto worker_service master_service bulk_protocol idx_reader
             dataset_def
             weft_config checkpoint_reader)
build_dir=build-fuzz
build=1
seconds=20
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --seconds) seconds="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
  if [[ ! -f "fuzz/${target}_fuzzer.cc" ]]; then
    echo "fuzz.sh: no target '$target' (targets: ${all_targets[*]})" >&2
    exit 2
  fi
done

if [[ $build -eq 1 ]]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # The same flags as the ASan suite of tools/test.sh, plus the fuzzing instrumentation.
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DWEFT_SANITIZE=ON -DWEFT_FUZZ=ON \
    -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_EXAMPLES=OFF "${launcher[@]}" >/dev/null
  cmake --build "$build_dir" --target "${targets[@]/%/_fuzzer}"
fi

# A 2-core, 8 GB machine runs the targets one at a time: 2.5 GB of RSS (ASan's shadow included)
# is far more than any input needs and leaves room for the build. -timeout catches a hung input.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
failed=()
for target in "${targets[@]}"; do
  binary="$build_dir/fuzz/${target}_fuzzer"
  corpus="$build_dir/fuzz-corpus/$target"
  findings="$build_dir/fuzz-findings/$target"
  log="$build_dir/fuzz-logs/$target.log"
  rm -rf "$corpus"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  cp fuzz/corpus/"$target"/* "$corpus"/
  dict=()
  [[ -f "fuzz/$target.dict" ]] && dict=("-dict=fuzz/$target.dict")
  echo "== $target: ${seconds} s"
  before="$(ls "$findings" | wc -l)"
  status=0
  "$binary" "$corpus" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=2560 -timeout=30 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::new_units_added' \
    "$log" | sed 's/^/   /' || true
  if [[ $status -ne 0 || "$(ls "$findings" | wc -l)" -ne "$before" ]]; then
    finding=""
    if [[ "$(ls "$findings" | wc -l)" -ne "$before" ]]; then
      finding="$(ls -t "$findings"/* | head -n 1)"
    fi
    tail -n 40 "$log"
    echo "fuzz.sh: $target found a problem: ${finding:-(no input saved; see $log)}"
    echo "         reproduce with: $binary ${finding:-}"
    failed+=("$target")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in: ${failed[*]}"
  exit 1
fi
echo "fuzz.sh: no findings in ${targets[*]}"
