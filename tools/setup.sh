#!/usr/bin/env bash
# Installs Weft's build and run dependencies from Debian's packages. Idempotent: installs only what is missing.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config clang-format python3 ccache
  python3-numpy python3-crc32c
  clang libclang-rt-14-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libeigen3-dev libopenblas-dev libdnnl-dev ocl-icd-opencl-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev libgloo-dev
  libcli11-dev nlohmann-json3-dev libcpp-httplib-dev libgoogle-perftools-dev
  dataset-fashion-mnist fortunes
)
if [[ "${WEFT_WITH_PEERS:-0}" == 1 ]]; then packages+=(python3-torch); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
