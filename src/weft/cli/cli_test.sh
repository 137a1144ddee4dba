#!/usr/bin/env bash
# Checks the exit codes and messages of `weft` for bad input. Usage: cli_test.sh path/to/weft
set -u
weft=$1
failures=0
expect() {  # expect <description> <exit code> <text in output> -- command...
  local what=$1 code=$2 text=$3
  shift 4
  local output
  output=$("$@" 2>&1)
  local actual=$?
  if [[ $actual -ne $code ]] || [[ "$output" != *"$text"* ]]; then
    echo "FAIL: $what: exit $actual (want $code), output: $output"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}
expect "no subcommand" 2 "weft" -- "$weft"
expect "unknown flag" 2 "--frobnicate" -- "$weft" train --frobnicate
expect "non-numeric epochs" 2 "epochs" -- "$weft" train --epochs banana
expect "unknown model" 2 "model" -- "$weft" train --model transformer
expect "zero batch" 2 "batch-size" -- "$weft" train --batch-size 0
expect "missing data directory" 2 "dataset-fashion-mnist" -- "$weft" train --data /nonexistent/fmnist
expect "missing data names the path" 2 "/nonexistent/fmnist" -- "$weft" train --data /nonexistent/fmnist
expect "help" 0 "--max-steps" -- "$weft" train --help
expect "help lists --devices" 0 "--devices" -- "$weft" train --help
expect "zero devices" 2 "devices" -- "$weft" train --devices 0
expect "non-numeric devices" 2 "devices" -- "$weft" train --devices two
expect "unknown strategy" 2 "strategy" -- "$weft" train --strategy ring
expect "one_device on two devices" 2 "one_device" -- "$weft" train --strategy one_device --devices 2
expect "central_storage through a target" 2 "central_storage" -- "$weft" train --strategy central_storage --target grpc://127.0.0.1:1
expect "batch not divisible by devices" 2 "128 is not divisible by the 3 devices" -- \
  "$weft" train --devices 3 --max-steps 1
expect "two-device run reports replicas" 0 '"replicas":2' -- \
  "$weft" train --devices 2 --max-steps 20 --json
expect "exactly-once input without parameter servers" 2 "(--exactly-once) is for --strategy parameter_server" -- \
  "$weft" train --exactly-once --max-steps 1
expect "exactly-once input with several steps per execution" 2 "drop --steps-per-execution 2" -- \
  env WEFT_CONFIG='{"cluster":{"chief":["127.0.0.1:0"],"worker":["127.0.0.1:1"],"ps":["127.0.0.1:2"]},"task":{"type":"chief","index":0}}' \
  "$weft" train --strategy parameter_server --exactly-once --steps-per-execution 2 --max-steps 1
expect "per-worker datasets without parameter servers" 2 "(--per-worker-dataset) are for --strategy parameter_server" -- \
  "$weft" train --per-worker-dataset --max-steps 1
expect "per-worker datasets with exactly-once input" 2 "drop --exactly-once" -- \
  env WEFT_CONFIG='{"cluster":{"chief":["127.0.0.1:0"],"worker":["127.0.0.1:1"],"ps":["127.0.0.1:2"]},"task":{"type":"chief","index":0}}' \
  "$weft" train --strategy parameter_server --per-worker-dataset --exactly-once --max-steps 1
expect "negative step breakdown" 2 "step-breakdown" -- "$weft" train --step-breakdown -3
expect "step breakdown per device" 0 "device:CPU:1: ops ran" -- \
  "$weft" train --devices 2 --max-steps 14 --step-breakdown 3
expect "a later --devices overrides an earlier one" 0 '"replicas":1' -- \
  "$weft" train --devices 2 --devices 1 --max-steps 2 --json
expect "server help" 0 "--cluster" -- "$weft" server --help
expect "server worker timeout defaults to 30 s" 0 "--worker-timeout-ms INT:POSITIVE=30000" -- \
  "$weft" server --help
expect "train help lists --worker-timeout-ms" 0 "--worker-timeout-ms" -- "$weft" train --help
expect "server bad cluster" 2 "nonsense" -- "$weft" server --cluster "worker=nonsense"
expect "server task not in cluster" 2 "task 3" -- "$weft" server --cluster "worker=127.0.0.1:0" --task 3
expect "server unknown device type" 2 "unknown device type 'NOPE'" -- \
  timeout 20 "$weft" server --cluster "worker=127.0.0.1:0" --device-type NOPE
expect "server bad WEFT_CONFIG" 2 "WEFT_CONFIG" -- env WEFT_CONFIG='{"cluster": 3}' "$weft" server
expect "multi-worker without a cluster" 2 "weft launch" -- \
  env -u WEFT_CONFIG -u TF_CONFIG -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK \
  "$weft" train --strategy multi_worker_mirrored
expect "multi-worker bad WEFT_CONFIG" 2 "WEFT_CONFIG" -- \
  env WEFT_CONFIG='{"cluster": 3}' "$weft" train --strategy multi_worker_mirrored
expect "multi-worker indivisible batch" 2 "3 replicas (3 workers x 1 devices)" -- \
  env WEFT_CONFIG='{"cluster":{"worker":["127.0.0.1:1","127.0.0.1:2","127.0.0.1:3"]},"task":{"type":"worker","index":1}}' \
  "$weft" train --strategy multi_worker_mirrored --batch-size 128
expect "multi-worker with a target" 2 "no target" -- \
  env WEFT_CONFIG='{"cluster":{"worker":["127.0.0.1:1"]},"task":{"type":"worker","index":0}}' \
  "$weft" train --strategy multi_worker_mirrored --target grpc://127.0.0.1:1
expect "bf16 all-reduce outside multi-worker training is named" 2 "--all-reduce-precision bf16" -- \
  "$weft" train --all-reduce-precision bf16 --max-steps 1
expect "two workers all-reduce their gradients in bf16" 0 '"workers":2' -- \
  "$weft" launch --workers 2 -- "$weft" train --strategy multi_worker_mirrored \
  --all-reduce-precision bf16 --max-steps 3 --json
expect "bad target" 2 "grpc://host:port" -- "$weft" train --target grpc:// --max-steps 1
expect "target with --devices" 2 "--devices" -- \
  "$weft" train --target grpc://127.0.0.1:1 --devices 2 --max-steps 1

expect "launch without --workers" 2 "--workers" -- "$weft" launch -- true
expect "launch with zero workers" 2 "--workers" -- "$weft" launch --workers 0 -- true
expect "launch without a command" 2 "command" -- "$weft" launch --workers 2
expect "launch help" 0 "--devices-per-worker" -- "$weft" launch --help
expect "launch help lists --ps and --restart-failed" 0 "--restart-failed" -- "$weft" launch --help
expect "launch of a missing program is 127" 127 "cannot start" -- \
  "$weft" launch --workers 2 -- /nonexistent/weft-program
expect "server reads TF_CONFIG, chief as worker 0" 2 "worker:2 is not in the cluster" -- \
  env TF_CONFIG='{"cluster": {"chief": ["127.0.0.1:0"], "worker": ["127.0.0.1:0"]},
  "task": {"type": "worker", "index": 1}}' timeout 20 "$weft" server --task 2
expect "server bad TF_CONFIG" 2 "TF_CONFIG" -- env TF_CONFIG='{"cluster": []}' timeout 20 "$weft" server
expect "server Slurm without a coordinator" 2 "WEFT_COORDINATOR" -- \
  env SLURM_PROCID=0 SLURM_NTASKS=2 timeout 20 "$weft" server
expect "server Open MPI rank with --task" 2 "--task come from the Open MPI rank" -- \
  env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 WEFT_COORDINATOR=127.0.0.1:1 \
  timeout 20 "$weft" server --task 1
expect "server --coordinator without a rank" 2 "--coordinator needs a rank" -- \
  timeout 20 "$weft" server --coordinator 127.0.0.1:1
expect "server bad WEFT_DEVICES_PER_WORKER" 2 "WEFT_DEVICES_PER_WORKER" -- \
  env WEFT_DEVICES_PER_WORKER=none timeout 20 "$weft" server

# WEFT_DEVICES_PER_WORKER gives `weft server` its devices when --devices is not given.
devices_log=$(mktemp)
WEFT_DEVICES_PER_WORKER=3 "$weft" server >/dev/null 2>"$devices_log" &
devices_server=$!
for _ in $(seq 100); do  # at most 10 s
  grep -q "device(s)" "$devices_log" && break
  sleep 0.1
done
kill -TERM $devices_server
wait $devices_server
expect "server takes WEFT_DEVICES_PER_WORKER" 0 "" -- grep -q "with 3 CPU device(s)" "$devices_log"
rm -f "$devices_log"

# `weft launch`: each worker sees its own task of one cluster, its output prefixed.
launch_out=$("$weft" launch --workers 3 --devices-per-worker 2 -- \
  sh -c 'echo "cfg $WEFT_CONFIG"; echo "dev $WEFT_DEVICES_PER_WORKER" >&2' 2>&1)
for i in 0 1 2; do
  expect "launch: worker $i sees task $i" 0 "" -- \
    grep -q "^\[worker $i\] cfg .*\"task\":{\"index\":$i,\"type\":\"worker\"}" <<<"$launch_out"
  expect "launch: worker $i's stderr prefixed, 2 devices" 0 "" -- \
    grep -qx "\[worker $i\] dev 2" <<<"$launch_out"
done
expect "launch: one cluster of three workers" 0 "" -- test "$(sed -n \
  's/^\[worker [0-9]\] cfg {"cluster":{"worker":\[\("[^]]*"\)\].*/\1/p' <<<"$launch_out" |
  sort -u | tr ',' '\n' | wc -l)" -eq 3

# A failing worker's code is returned and the others (sleeping 30 s) are stopped at once.
start=$(date +%s)
expect "launch returns the failed worker's code" 7 "[worker 1] exited with code 7" -- \
  "$weft" launch --workers 3 -- \
  sh -c 'case "$WEFT_CONFIG" in *"\"index\":1"*) exit 7;; esac; exec sleep 30'
expect "launch stops the others quickly" 0 "" -- test $(($(date +%s) - start)) -lt 15

# SIGTERM to `weft launch` reaches every worker.
launch_log=$(mktemp)
"$weft" launch --workers 3 -- \
  sh -c 'trap "echo got TERM; exit 0" TERM; echo ready; sleep 30 & wait' >"$launch_log" 2>&1 &
launcher=$!
for _ in $(seq 100); do  # at most 10 s
  [[ $(grep -c ready "$launch_log") -eq 3 ]] && break
  sleep 0.1
done
start=$(date +%s)
kill -TERM $launcher
wait $launcher
launch_code=$?
expect "launch forwards SIGTERM and exits with the workers' code" 0 "" -- test $launch_code -eq 0
expect "launch stops promptly on SIGTERM" 0 "" -- test $(($(date +%s) - start)) -lt 15
for i in 0 1 2; do
  expect "worker $i got the forwarded SIGTERM" 0 "" -- grep -qx "\[worker $i\] got TERM" "$launch_log"
done
rm -f "$launch_log"

# Ranks as Open MPI starts them (no cluster given): they meet at a coordinator that rank 0 serves
# and learn each other's addresses; a client then trains over them without sending a cluster.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mpi_logs=$(mktemp -d)
coordinator=127.0.0.1:$(free_port)
mpi_pids=()
for rank in 0 1 2; do
  env OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_SIZE=3 WEFT_COORDINATOR=$coordinator \
    WEFT_HOST=127.0.0.1 "$weft" server --bind 127.0.0.1 --worker-timeout-ms 20000 \
    >"$mpi_logs/$rank" 2>"$mpi_logs/err$rank" &
  mpi_pids+=($!)
done
for _ in $(seq 200); do  # at most 20 s
  [[ $(cat "$mpi_logs"/[012] | grep -c listening) -eq 3 ]] && break
  sleep 0.1
done
expect "Open MPI ranks agree on one three-worker cluster" 0 "" -- test "$(grep -ho \
  'in cluster worker=[^ ]*' "$mpi_logs"/err[012] | sort -u | tr ',' '\n' | wc -l)" -eq 3
mpi_address0=$(sed -n 's/^weft server listening on //p' "$mpi_logs/0")
expect "training over ranks that met at the coordinator" 0 '"replicas":3' -- \
  timeout 120 "$weft" train --target "grpc://$mpi_address0" --batch-size 120 --max-steps 3 --json
kill -TERM "${mpi_pids[@]}" 2>/dev/null
wait "${mpi_pids[@]}"
# Slurm ranks: the coordinator ":PORT" is on the step's first node, each rank's host its own node.
# They listen on every interface, which needs a token (or TLS, or --insecure).
slurm_port=$(free_port)
for rank in 0 1; do
  env SLURM_PROCID=$rank SLURM_NTASKS=2 SLURM_NODEID=0 SLURM_STEP_NODELIST='localhost' \
    WEFT_COORDINATOR=:$slurm_port WEFT_TOKEN=slurm-test-token "$weft" server \
    --worker-timeout-ms 20000 \
    >"$mpi_logs/slurm$rank" 2>"$mpi_logs/slurm_err$rank" &
  mpi_pids[$rank]=$!
done
for _ in $(seq 200); do  # at most 20 s
  [[ $(cat "$mpi_logs"/slurm[01] | grep -c listening) -eq 2 ]] && break
  sleep 0.1
done
expect "Slurm ranks agree on a cluster of their nodes" 0 "" -- test "$(grep -ho \
  'in cluster worker=localhost:[0-9]*,localhost:[0-9]*$' "$mpi_logs"/slurm_err[01] |
  sort -u | wc -l)" -eq 1 -a "$(grep -c 'in cluster' "$mpi_logs"/slurm_err[01] |
  grep -c ':1$')" -eq 2
kill -TERM ${mpi_pids[0]} ${mpi_pids[1]} 2>/dev/null
wait ${mpi_pids[0]} ${mpi_pids[1]}
# A rank that never comes is named when the others give up.
coordinator=127.0.0.1:$(free_port)
for rank in 0 1; do
  env OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_SIZE=3 WEFT_COORDINATOR=$coordinator \
    WEFT_HOST=127.0.0.1 timeout 60 "$weft" server --bind 127.0.0.1 --worker-timeout-ms 1000 \
    >/dev/null 2>"$mpi_logs/late$rank" &
  mpi_pids[$rank]=$!
done
wait ${mpi_pids[0]}
late0=$?
wait ${mpi_pids[1]}
late1=$?
expect "a missing rank fails the others (exit 1)" 0 "" -- test $late0 -eq 1 -a $late1 -eq 1
expect "the missing rank is named" 0 "" -- grep -q "rank(s) 2 of 3 did not register" \
  "$mpi_logs/late0"
rm -rf "$mpi_logs"

# W6 (the character transformer): a few steps with a checkpoint, then text drawn from it; bad
# requests and a checkpoint of another model are named.
text_dir=$(mktemp -d)
mkdir -p "$text_dir/corpus"
for i in $(seq 200); do echo "A fortune of the day number $i, read it twice."; done >"$text_dir/corpus/fortunes"
expect "a text corpus that is missing is named" 2 "no directory /nonexistent/corpus" -- \
  "$weft" train --model char_transformer --data /nonexistent/corpus --max-steps 1
mkdir -p "$text_dir/empty" && : >"$text_dir/empty/blank"
expect "an empty text corpus is named" 2 "holds no text" -- \
  "$weft" train --model char_transformer --data "$text_dir/empty" --max-steps 1
expect "W6 trains and reports tokens and validation loss" 0 '"validation_loss"' -- \
  "$weft" train --model char_transformer --data "$text_dir/corpus" --max-steps 2 \
  --checkpoint-dir "$text_dir/w6" --json
expect "W6 trains under mixed_bfloat16" 0 '"precision":"bf16"' -- \
  "$weft" train --model char_transformer --data "$text_dir/corpus" --max-steps 2 --precision bf16 \
  --json
expect "an unknown precision is named" 2 "--precision" -- \
  "$weft" train --model char_transformer --data "$text_dir/corpus" --max-steps 1 --precision fp8
expect "generate continues the prompt" 0 "A fortune" -- \
  "$weft" generate --checkpoint-dir "$text_dir/w6" --prompt "A fortune" --tokens 5 --seed 3
expect "generate past the context is named" 2 "more than the model's context of 128" -- \
  "$weft" generate --checkpoint-dir "$text_dir/w6" --prompt "A fortune" --tokens 200
expect "generate without a checkpoint is named" 2 "no checkpoint in $text_dir/empty" -- \
  "$weft" generate --checkpoint-dir "$text_dir/empty" --prompt "A" --tokens 5
"$weft" train --model mlp --max-steps 1 --checkpoint-dir "$text_dir/mlp" >/dev/null 2>&1
expect "generate from another model's checkpoint names the variable" 2 "token_embedding/embeddings" -- \
  "$weft" generate --checkpoint-dir "$text_dir/mlp" --prompt "A" --tokens 5
rm -rf "$text_dir"

# Two servers on ephemeral ports, joined by the cluster the client sends: training over them.
logs=$(mktemp -d)
"$weft" server --cluster "worker=127.0.0.1:0,127.0.0.1:0" --task 0 >"$logs/0" 2>/dev/null &
server0=$!
"$weft" server --cluster "worker=127.0.0.1:0,127.0.0.1:0" --task 1 >"$logs/1" 2>/dev/null &
server1=$!
trap 'kill -9 $server0 $server1 2>/dev/null; rm -rf "$logs"' EXIT
for _ in $(seq 100); do  # at most 10 s
  grep -q listening "$logs/0" && grep -q listening "$logs/1" && break
  sleep 0.1
done
address0=$(sed -n 's/^weft server listening on //p' "$logs/0")
address1=$(sed -n 's/^weft server listening on //p' "$logs/1")
expect "training over two servers reports two replicas" 0 '"replicas":2' -- \
  "$weft" train --target "grpc://$address0" --cluster "worker=$address0,$address1" \
  --max-steps 20 --json
# A worker that is alive but silent (SIGSTOP): training fails within the worker timeout, naming it.
kill -STOP $server1
expect "a stopped worker fails training, named" 1 "/job:worker/replica:0/task:1 at $address1" -- \
  timeout 60 "$weft" train --target "grpc://$address0" --cluster "worker=$address0,$address1" \
  --max-steps 20 --worker-timeout-ms 2000
kill -CONT $server1
kill -TERM $server0 $server1
wait $server0
code0=$?
wait $server1
code1=$?
expect "servers stop cleanly on SIGTERM" 0 "" -- test "$code0" -eq 0 -a "$code1" -eq 0
exit $((failures > 0))
