#!/usr/bin/env bash
# Makes the TLS files the tests use (src/weft/distributed/rpc/testdata/): a CA, a certificate it
# signs for 127.0.0.1 and localhost (every test task, as server and as client), and a second CA
# with its own such certificate, which the first CA's peers must refuse. For tests only: the keys
# are in the repository. Valid for 100 years; rerun to replace them.
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/src/weft/distributed/rpc/testdata"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/leaf.ext" <<'EXT'
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
EXT
for name in ca other_ca; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
    -subj "/CN=weft test $name" -keyout "$work/$name.key" -out "$out/$name.pem" 2>/dev/null
  leaf="${name%ca}task"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=weft test ${leaf}" -keyout "$out/${leaf}.key" -out "$work/${leaf}.csr" 2>/dev/null
  openssl x509 -req -in "$work/${leaf}.csr" -CA "$out/$name.pem" -CAkey "$work/$name.key" \
    -CAserial "$work/$name.srl" -CAcreateserial -days 36500 -extfile "$work/leaf.ext" -out "$out/${leaf}.pem" 2>/dev/null
done
echo "wrote $out"
