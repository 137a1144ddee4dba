#!/usr/bin/env bash
# Runs Weft's benchmarks and prints `METRIC <name> <value> <unit>` and `RATIO <name> <value>` lines
# (a RATIO above 1 means Weft is better). Usage: bench/run.sh [executor] [matmul] [conv] [train]
# [allreduce] [mirrored] [rpc] [cluster] [collective] [multiworker] [checkpoint] [libtorch]
# [trace] [ps] [transformer] [elastic] (all of these when none) [transformer_quality] (only when named). `train`, `mirrored`, `conv`, `cluster`, `multiworker`, `ps` and
# `transformer` need PyTorch (Debian's python3-torch) for the peer side, `collective` needs Gloo (libgloo-dev),
# `libtorch` libtorch's C++ frontend (libtorch-dev, installed when missing). A benchmark whose Weft side is missing from the
# build says so on stderr; the others still run, and the script then exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's OpenBLAS misdetects newer Xeons; pick its kernels as the weft binary does.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  if grep -q -w avx512bw /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  else export OPENBLAS_CORETYPE=Haswell; fi
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target executor_bench matmul_bench weft >/dev/null
names=("$@")
known=(executor matmul conv train allreduce mirrored rpc cluster collective multiworker checkpoint
  libtorch trace ps transformer elastic)
[[ ${#names[@]} -eq 0 ]] && names=("${known[@]}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0

# Says on stderr why benchmark $name cannot run and marks the run failed; the caller moves on.
fail() {
  echo "bench/run.sh $name: $*" >&2
  status=1
}
# Whether the build defines target $1 (Ninja's `help` lists "NAME: phony"). grep reads it all:
# with `grep -q`, pipefail would count cmake's SIGPIPE as a miss.
have_target() { cmake --build build --target help | grep "^$1: " >/dev/null; }

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
    train)
      # W1: one epoch of the MLP; W2: a fixed 200 steps of the CNN. PyTorch at 1 and 2 threads,
      # its better figure counts; Weft free to use both cores.
      build/bin/weft train --model mlp --epochs 1 --json | tail -n 1 >"$out/weft_mlp.json"
      build/bin/weft train --model cnn --epochs 1 --max-steps 200 --json | tail -n 1 >"$out/weft_cnn.json"
      for threads in 1 2; do
        /usr/bin/python3 bench/torch_train.py --model mlp --threads $threads --epochs 1 \
          >"$out/torch_mlp_$threads.json"
        /usr/bin/python3 bench/torch_train.py --model cnn --threads $threads --max-steps 200 \
          >"$out/torch_cnn_$threads.json"
      done
      python3 bench/report.py train "$out"
      ;;
    allreduce)
      # W3: all-reduce through LocalCollectiveExecutor; BM_PlainSum is the one-thread floor.
      cmake --build build --target allreduce_bench >/dev/null
      build/bench/allreduce_bench --benchmark_format=json --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true >"$out/allreduce.json"
      python3 bench/report.py allreduce "$out/allreduce.json"
      ;;
    mirrored)
      # W1 (one epoch) and W2 (a fixed 200 steps) data-parallel on 2 replicas, global batch 128:
      # Weft's MirroredStrategy over 2 CPU devices in one process against PyTorch DDP (gloo) in 2
      # processes of 1 thread each (OpenBLAS at 1 thread); and W1 on one device of the same
      # process, the floor a second replica should cost little against.
      build/bin/weft train --model mlp --devices 2 --epochs 1 --json | tail -n 1 \
        >"$out/weft_mirrored2.json"
      build/bin/weft train --model cnn --devices 2 --epochs 1 --max-steps 200 --json | tail -n 1 \
        >"$out/weft_mirrored2_cnn.json"
      build/bin/weft train --model mlp --epochs 1 --json | tail -n 1 >"$out/weft_one_device.json"
      OPENBLAS_NUM_THREADS=1 PYTHONPATH=bench /usr/bin/python3 bench/torch_ddp_train.py --world 2 \
        --epochs 1 >"$out/torch_ddp2.json"
      OPENBLAS_NUM_THREADS=1 PYTHONPATH=bench /usr/bin/python3 bench/torch_ddp_train.py --world 2 \
        --model cnn --epochs 1 --max-steps 200 >"$out/torch_ddp2_cnn.json"
      python3 bench/report.py mirrored "$out"
      ;;
    conv)
      # W2's layers one op at a time (im2col + GEMM, oneDNN, Weft's choice; max pools) against
      # PyTorch's same layers, and OpenBLAS's 2-thread SGEMM as the roofline.
      cmake --build build --target conv_bench >/dev/null
      build/bench/conv_bench --benchmark_format=json --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true >"$out/conv.json"
      /usr/bin/python3 bench/torch_conv_layers.py >"$out/torch_conv.json"
      python3 bench/report.py conv "$out/conv.json" "$out/torch_conv.json"
      ;;
    trace)
      # W1 (one epoch of the MLP) with every step traced, untraced, and untraced by the build of
      # the commit before tracing existed (WEFT_TRACE_BASELINE, built once into build-baseline/
      # from a worktree). Nine rounds, interleaved; the median of each counts (this machine's
      # runs of one epoch vary by +-10%).
      baseline="${WEFT_TRACE_BASELINE:-ed17fc5}"
      if [[ ! -x build-baseline/bin/weft ]]; then
        rm -rf build-baseline-src
        git worktree add --detach build-baseline-src "$baseline" >/dev/null 2>&1
        cmake -S build-baseline-src -B build-baseline -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_EXAMPLES=OFF >/dev/null
        cmake --build build-baseline --target weft >/dev/null
      fi
      steps=$(build/bin/weft train --model mlp --epochs 1 --json | tail -n 1 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["steps"])')
      for round in $(seq 1 9); do
        build-baseline/bin/weft train --model mlp --epochs 1 --json | tail -n 1 \
          >"$out/trace_before_$round.json"
        build/bin/weft train --model mlp --epochs 1 --json | tail -n 1 >"$out/trace_off_$round.json"
        build/bin/weft train --model mlp --epochs 1 --json --trace "$out/trace.json" \
          --trace-steps "1:$steps" | tail -n 1 >"$out/trace_on_$round.json"
      done
      python3 bench/report.py trace "$out"
      ;;
    rpc)
      # W4/W5 between two `weft server` processes: RecvTensor against raw TCP (same script), a
      # one-float RecvTensor and a trivial RunStep against an empty gRPC call.
      cmake --build build --target rpc_bench >/dev/null
      build/bench/rpc_bench
      ;;
    cluster)
      # W1 data-parallel over 2 processes, one epoch: two `weft server`s (one thread each, on
      # ephemeral ports) trained by `weft train --target`, against PyTorch DDP in 2 processes.
      for task in 0 1; do
        build/bin/weft server --cluster "worker=127.0.0.1:0,127.0.0.1:0" --task $task \
          --intra-op-threads 1 --inter-op-threads 1 >"$out/server$task.log" 2>/dev/null &
        echo $! >>"$out/servers.pid"
      done
      for _ in $(seq 100); do
        grep -q listening "$out/server0.log" && grep -q listening "$out/server1.log" && break
        sleep 0.1
      done
      address0=$(sed -n 's/^weft server listening on //p' "$out/server0.log")
      address1=$(sed -n 's/^weft server listening on //p' "$out/server1.log")
      build/bin/weft train --model mlp --epochs 1 --json --target "grpc://$address0" \
        --cluster "worker=$address0,$address1" | tail -n 1 >"$out/weft_cluster2.json"
      kill $(cat "$out/servers.pid")
      wait $(cat "$out/servers.pid") 2>/dev/null || true
      PYTHONPATH=bench /usr/bin/python3 bench/torch_ddp_train.py --world 2 --epochs 1 \
        >"$out/torch_ddp2.json"
      python3 bench/report.py cluster "$out"
      ;;
    collective)
      # W3 across processes, 2 and 4 of them on loopback: Weft's collective transports (shared
      # memory, then TCP forced) against Gloo's ring all-reduce, which PyTorch's gloo backend runs.
      if ! have_target collective_bench; then
        fail "no build target collective_bench (Weft's side, bench/collective_bench.cc, is missing)"
        continue
      fi
      if ! have_target gloo_allreduce_bench; then
        fail "no build target gloo_allreduce_bench: Gloo not found (tools/setup.sh installs" \
          "libgloo-dev)"
        continue
      fi
      cmake --build build --target collective_bench gloo_allreduce_bench >/dev/null
      build/bench/collective_bench >"$out/collective.txt"
      build/bench/gloo_allreduce_bench >>"$out/collective.txt"
      python3 bench/report.py collective "$out/collective.txt"
      ;;
    multiworker)
      # W1 (one epoch) and W2 (a fixed 200 steps) data-parallel over 2 worker processes of 1 device
      # each: `weft launch` running MultiWorkerMirroredStrategy against PyTorch DDP (gloo, 2
      # processes of 1 thread, OpenBLAS at 1 thread); and W1 under the in-process MirroredStrategy
      # over 2 devices. weft launch prefixes each worker's lines ("[worker 0] "); report.py reads
      # the chief's JSON line.
      if [[ $(build/bin/weft train --help 2>&1) != *multi_worker_mirrored* ]]; then
        fail "build/bin/weft train has no --strategy multi_worker_mirrored" \
          "(MultiWorkerMirroredStrategy is missing)"
        continue
      fi
      for model in mlp cnn; do
        steps=()
        if [[ $model == cnn ]]; then steps=(--max-steps 200); fi
        build/bin/weft launch --workers 2 -- build/bin/weft train --strategy multi_worker_mirrored \
          --model $model --epochs 1 "${steps[@]}" --json >"$out/multiworker2_$model.log"
        OPENBLAS_NUM_THREADS=1 PYTHONPATH=bench /usr/bin/python3 bench/torch_ddp_train.py \
          --world 2 --model $model --epochs 1 "${steps[@]}" >"$out/torch_ddp2_$model.json"
      done
      build/bin/weft train --model mlp --devices 2 --epochs 1 --json | tail -n 1 \
        >"$out/weft_mirrored2.json"
      python3 bench/report.py multiworker "$out"
      ;;
    transformer)
      # W6 (the character transformer on the fortunes corpus) for 200 steps: Weft against the same
      # model in PyTorch (bench/torch_char_transformer.py) at its best of float32 and bf16 autocast
      # at 1 and 2 threads, Weft in float32 and under mixed_bfloat16; then 2 worker processes
      # (`weft launch`, MultiWorkerMirroredStrategy) against DDP in 2 processes of 1 thread, each
      # at its better precision. Both sides leave their first 10 steps out of the throughput.
      for precision in fp32 bf16; do
        build/bin/weft train --model char_transformer --max-steps 200 --precision $precision \
          --throughput-warmup-steps 10 --json | tail -n 1 >"$out/weft_transformer_$precision.json"
      done
      for threads in 1 2; do
        for precision in fp32 bf16; do
          /usr/bin/python3 bench/torch_char_transformer.py --steps 200 --threads $threads \
            --precision $precision >"$out/torch_transformer_${precision}_$threads.json"
        done
      done
      for precision in fp32 bf16; do
        build/bin/weft launch --workers 2 -- build/bin/weft train --strategy multi_worker_mirrored \
          --model char_transformer --max-steps 200 --precision $precision \
          --throughput-warmup-steps 10 --json >"$out/multiworker2_transformer_$precision.log"
        /usr/bin/python3 bench/torch_char_transformer.py --steps 200 --threads 1 --world 2 \
          --precision $precision >"$out/torch_ddp2_transformer_$precision.json"
      done
      python3 bench/report.py transformer "$out"
      ;;
    transformer_quality)
      # W6's whole schedule (2,000 steps): Weft's validation loss in float32 and under
      # mixed_bfloat16 beside PyTorch's float32 run of the same length (long: about 1.5 hours on 2
      # cores; not part of the default set).
      for precision in fp32 bf16; do
        build/bin/weft train --model char_transformer --precision $precision --json | tail -n 1 \
          >"$out/weft_transformer_quality_$precision.json"
      done
      /usr/bin/python3 bench/torch_char_transformer.py --steps 2000 --threads 2 --precision fp32 \
        --validate >"$out/torch_transformer_quality_fp32.json"
      python3 bench/report.py transformer_quality "$out"
      ;;
    ps)
      # Parameter-server training's coordinator: empty functions per second dispatched over 2
      # workers (4 in flight on each) by the chief of a `weft launch` on loopback.
      cmake --build build --target coordinator_bench w7_dlrm >/dev/null
      build/bin/weft launch --workers 2 --ps 1 -- build/bench/coordinator_bench 2>/dev/null |
        sed -n 's/^\[chief\] METRIC/METRIC/p' | sed 's/$/ functions\/s/'
      # W7 (docs/embeddings.md) on 2 workers and 2 ps tasks: 2,000 steps of 512 (the first 48
      # untimed), 8 per scheduled function (steps_per_execution), each worker generating its own
      # examples (as each PyTorch trainer does, before its timing), then the held-out log loss of
      # 100,000 examples, and the bytes sent over loopback per step; against PyTorch's parameter
      # server on torch.distributed.rpc (2 trainers and 2 ps processes, sparse row gradients, 500
      # timed steps per trainer).
      build/bin/weft launch --workers 2 --ps 2 -- build/bench/w7_dlrm --strategy parameter_server \
        --steps 1952 --warmup 48 --steps-per-execution 8 --per-worker-dataset --held-out 100000 \
        2>/dev/null |
        sed -n 's/^\[chief\] //p' >"$out/w7_ps.txt"
      OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_rpc_ps_w7.py --steps 500 --warmup 20 \
        --batch 512 --seed 1 --trainers 2 --ps 2 --heldout 0 >"$out/torch_rpc_w7.json" \
        2>"$out/torch_rpc_w7.log"
      python3 bench/report.py ps "$out"
      ;;
    elastic)
      # Elastic training (docs/elastic.md), W2 with global batches of 120 (they split over 1 to 6
      # workers). The cost of being elastic: 300 steps on 2 workers with --elastic and no failure
      # against the same without it. The chaos run: 3 epochs on 4 workers with --elastic
      # --restart-failed, a worker chosen at random (seeded) SIGKILLed every 20 s, three times,
      # against the same run without failures: its accuracy, its membership changes, the steps run
      # again and the longest time from a loss to the next completed step. The heal: a 100 MB model
      # and its optimizer state (the MLP 4,600 wide: 24.8M weights, 99 MB, and as much momentum)
      # received by a restarted worker.
      for mode in static elastic; do
        flags=()
        if [[ $mode == elastic ]]; then flags=(--elastic); fi
        python3 bench/elastic_chaos.py --workers 2 "${flags[@]}" -- --model cnn --batch-size 120 \
          --epochs 1 --max-steps 300 >"$out/elastic_ratio_$mode.json"
      done
      python3 bench/elastic_chaos.py --workers 4 --elastic -- --model cnn --batch-size 120 \
        --epochs 3 >"$out/elastic_chaos_none.json"
      python3 bench/elastic_chaos.py --workers 4 --elastic --restart-failed --kills 3 \
        --kill-every 20 -- --model cnn --batch-size 120 --epochs 3 >"$out/elastic_chaos.json"
      python3 bench/elastic_chaos.py --workers 2 --elastic --restart-failed --kills 1 \
        --kill-every 2 -- --model mlp --mlp-width 4600 --batch-size 120 --epochs 1 \
        --max-steps 120 >"$out/elastic_heal.json"
      python3 bench/report.py elastic "$out"
      ;;
    checkpoint)
      # A 256 MB model saved and restored against plain write+fsync and read of the same bytes in
      # the same directory (on disk, under build/); then W2 (200 steps) saving every 50 steps,
      # synchronously and in the background: the longest a save held training up.
      cmake --build build --target checkpoint_bench >/dev/null
      build/bench/checkpoint_bench build/checkpoint_bench_scratch
      for mode in sync async; do
        flags=()
        if [[ $mode == async ]]; then flags=(--async-save); fi
        rm -rf "build/checkpoint_bench_$mode"
        build/bin/weft train --model cnn --epochs 1 --max-steps 200 --save-every-steps 50 \
          --checkpoint-dir "build/checkpoint_bench_$mode" "${flags[@]}" --json | tail -n 1 \
          >"$out/checkpoint_$mode.json"
        rm -rf "build/checkpoint_bench_$mode"
      done
      python3 bench/report.py checkpoint "$out"
      ;;
    libtorch)
      # W2 as a user writes it, 100 steps: the fmnist_cnn example (Weft's layers and Model::Fit,
      # free to use both cores) against the same model in libtorch's C++ frontend
      # (bench/libtorch_cnn.cc) at 1 and 2 threads with OpenBLAS at 1, its better figure counts.
      # The target exists only where CMake finds libtorch: install libtorch-dev if it is missing.
      if ! have_target libtorch_cnn_bench; then
        echo "bench/run.sh libtorch: installing libtorch-dev" >&2
        sudo_cmd=()
        [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
        { "${sudo_cmd[@]}" apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq libtorch-dev; } \
          >/dev/null || true
        cmake -S . -B build >/dev/null
      fi
      if ! have_target libtorch_cnn_bench; then
        fail "no build target libtorch_cnn_bench: libtorch not found (Debian's libtorch-dev)"
        continue
      fi
      if ! have_target fmnist_cnn; then
        fail "no build target fmnist_cnn (Weft's side, examples/fmnist_cnn, is missing)"
        continue
      fi
      cmake --build build --target libtorch_cnn_bench fmnist_cnn >/dev/null
      build/bin/fmnist_cnn --max-steps 100 | tail -n 1 >"$out/weft_layers_cnn.json"
      # torch's MNIST reader wants the IDX files uncompressed (Weft's reads the .gz as they are).
      mkdir "$out/fashion-mnist"
      for file in train-images-idx3-ubyte train-labels-idx1-ubyte; do
        gzip -dc "/usr/share/datasets/fashion-mnist/$file.gz" >"$out/fashion-mnist/$file"
      done
      for threads in 1 2; do
        OPENBLAS_NUM_THREADS=1 build/bench/libtorch_cnn_bench --data "$out/fashion-mnist" \
          --max-steps 100 --threads $threads >"$out/libtorch_cnn_$threads.json"
      done
      python3 bench/report.py libtorch "$out"
      ;;
    *) echo "unknown benchmark '$name' (known: ${known[*]})" >&2
       exit 2 ;;
  esac
done
exit $status
