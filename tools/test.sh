#!/usr/bin/env bash
# The README's second command (and CI's): installs dependencies, builds, runs every test.
#   tools/test.sh              optimised build in build/, the whole suite; then the libraries built
#                              shared (build-shared/, BUILD_SHARED_LIBS=ON), installed and used
#                              by the examples as an outside project would
#   tools/test.sh --sanitize   the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#                              in a clang build (build-asan/) that also holds the libFuzzer targets
#                              of fuzz/, each then run for 20 s
#   tools/test.sh --tsan       the concurrent targets (core, input pipelines, runtime, distribute,
#                              distributed, checkpoints, cluster, elastic) under ThreadSanitizer in a clang
#                              build (build-tsan/), built in one pass
# Under both sanitizers the binaries whose cases each start several training processes run a
# subset of their cases (SANITIZED_SUBSET in their weft_test; docs/architecture.md says which).
# CI (.ci/run) runs all three. Both clang builds also check the lock annotations
# (-Wthread-safety -Werror). Every build goes through ccache when it is installed
# (tools/compiler_cache.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
mode="${1:-}"
# CI's log says how long each suite took, build included.
trap 'echo "== tools/test.sh ${mode:-(plain)}: exit $?, $SECONDS s"' EXIT

if [[ -z "$mode" ]]; then
  tools/setup.sh
  source tools/compiler_cache.sh  # after setup, which installs ccache
  tools/build.sh
  ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600
  echo "== shared libraries (build-shared/): installed, then the examples built against them"
  cmake -S . -B build-shared -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCH=OFF "${launcher[@]}" \
    >/dev/null
  cmake --build build-shared
  tools/install_test.sh build-shared examples
  exit 0
fi
if [[ "$mode" != "--sanitize" && "$mode" != "--tsan" ]]; then
  echo "usage: tools/test.sh [--sanitize | --tsan]" >&2
  exit 2
fi

tools/setup.sh
source tools/compiler_cache.sh
# -O1 keeps the sanitized suites quick to build and to run; frame pointers give whole stacks.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
                 -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_EXAMPLES=OFF)

if [[ "$mode" == "--sanitize" ]]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite and the fuzzers (build-asan/)"
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja "${sanitizer_flags[@]}" \
    -DWEFT_SANITIZE=ON -DWEFT_FUZZ=ON "${launcher[@]}" >/dev/null
  cmake --build build-asan
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 1200
  tools/fuzz.sh --build-dir build-asan --no-build --seconds 20
  exit 0
fi

echo "== ThreadSanitizer: the concurrent targets (build-tsan/, clang -Wthread-safety -Werror)"
tsan_targets=(core_test io_test data_test framework_rendezvous_test kernels_sendrecv_test
              kernels_nn_test kernels_io_test runtime_test runtime_rendezvous_test
              runtime_collective_test runtime_multi_device_test distribute_test
              distribute_parameter_server_test distributed_test
              distributed_worker_test distributed_master_test distributed_rpc_test
              distributed_collective_test distributed_collective_transport_test checkpoint_test
              cli_metrics_test cluster_test trace_test multi_worker_test elastic_test train_recovery_test
              weft)
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja "${sanitizer_flags[@]}" -DWEFT_TSAN=ON \
  "${launcher[@]}" >/dev/null
cmake --build build-tsan --target "${tsan_targets[@]}"
tsan_tests="^($(IFS='|'; echo "${tsan_targets[*]:0:${#tsan_targets[@]}-1}"))\$"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan_suppressions.txt" \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 1200 -R "$tsan_tests"
