#!/usr/bin/env bash
# `weft` with TLS and tokens: refused configurations, and training over two servers whose every
# port wants mutual TLS and a token. Usage: security_test.sh path/to/weft path/to/testdata
set -u
weft=$1
certs=$2
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
unset WEFT_TOKEN WEFT_TOKEN_FILE WEFT_TLS_CERT WEFT_TLS_KEY WEFT_TLS_CA WEFT_INSECURE
expect "public bind without TLS or token" 2 "refusing to listen on 0.0.0.0" -- \
  timeout 20 "$weft" server --bind 0.0.0.0
expect "public metrics without a token" 2 "refusing to serve metrics on 0.0.0.0" -- \
  timeout 20 "$weft" server --metrics-port 0 --metrics-bind 0.0.0.0
expect "TLS needs all three files" 2 "missing: --tls-key --tls-ca" -- \
  timeout 20 "$weft" server --tls-cert "$certs/task.pem"
expect "a missing token file is named" 2 "--token-file /nonexistent/token" -- \
  timeout 20 "$weft" server --token-file /nonexistent/token
expect "a bad WEFT_TLS_CA is named" 2 "WEFT_TLS_CA" -- env WEFT_TLS_CERT="$certs/task.pem" \
  WEFT_TLS_KEY="$certs/task.key" WEFT_TLS_CA=/nonexistent/ca.pem timeout 20 "$weft" server

logs=$(mktemp -d)
echo "a shared secret" >"$logs/token"
tls=(--tls-cert "$certs/task.pem" --tls-key "$certs/task.key" --tls-ca "$certs/ca.pem")
for task in 0 1; do
  "$weft" server --cluster "worker=127.0.0.1:0,127.0.0.1:0" --task $task "${tls[@]}" \
    --token-file "$logs/token" >"$logs/$task" 2>/dev/null &
  eval "server$task=\$!"
done
trap 'kill -9 $server0 $server1 2>/dev/null; rm -rf "$logs"' EXIT
for _ in $(seq 100); do  # at most 10 s
  grep -q listening "$logs/0" && grep -q listening "$logs/1" && break
  sleep 0.1
done
address0=$(sed -n 's/^weft server listening on //p' "$logs/0")
address1=$(sed -n 's/^weft server listening on //p' "$logs/1")
cluster=(--target "grpc://$address0" --cluster "worker=$address0,$address1")
expect "training over TLS and a token on two servers" 0 '"replicas":2' -- \
  timeout 120 "$weft" train "${cluster[@]}" --max-steps 5 --json "${tls[@]}" \
  --token-file "$logs/token"
expect "the token may come from WEFT_TOKEN" 0 '"replicas":2' -- \
  env WEFT_TOKEN="a shared secret" timeout 120 "$weft" train "${cluster[@]}" --max-steps 2 \
  --json "${tls[@]}"
expect "a wrong token is refused" 1 "UNAUTHENTICATED" -- env WEFT_TOKEN="guess" \
  timeout 60 "$weft" train "${cluster[@]}" --max-steps 2 --worker-timeout-ms 5000 "${tls[@]}"
expect "a plaintext client is refused" 1 "$address0" -- env WEFT_TOKEN="a shared secret" \
  timeout 60 "$weft" train "${cluster[@]}" --max-steps 2 --worker-timeout-ms 5000
expect "a certificate of another CA is refused" 1 "$address0" -- \
  env WEFT_TOKEN="a shared secret" timeout 60 "$weft" train "${cluster[@]}" --max-steps 2 \
  --worker-timeout-ms 5000 --tls-cert "$certs/other_task.pem" --tls-key "$certs/other_task.key" \
  --tls-ca "$certs/ca.pem"
kill -TERM $server0 $server1
wait $server0
code0=$?
wait $server1
code1=$?
expect "secured servers stop cleanly on SIGTERM" 0 "" -- test "$code0" -eq 0 -a "$code1" -eq 0
exit $((failures > 0))
