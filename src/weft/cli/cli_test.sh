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
expect "batch not divisible by devices" 2 "128 is not divisible by the 3 devices" -- \
  "$weft" train --devices 3 --max-steps 1
expect "two-device run reports replicas" 0 '"replicas":2' -- \
  "$weft" train --devices 2 --max-steps 20 --json
expect "a later --devices overrides an earlier one" 0 '"replicas":1' -- \
  "$weft" train --devices 2 --devices 1 --max-steps 2 --json
exit $((failures > 0))
