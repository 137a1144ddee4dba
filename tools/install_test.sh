#!/usr/bin/env bash
# install_test: installs a built Weft into a temporary prefix, builds the examples against it as an
# outside project (find_package(Weft) + Weft::weft), runs two of them, and compiles one with
# pkg-config alone; with static or shared libraries alike (tools/test.sh checks both). Usage:
# tools/install_test.sh BUILD_DIR EXAMPLES_DIR
set -euo pipefail
build_dir=$1
examples_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
prefix_bin="$work/prefix/bin"
include="$work/prefix/include"
for header in weft/train/model.h weft/data/dataset.h weft/graph/builder/ops.h weft/tensor.pb.h \
              weft/distribute/central_storage_strategy.h; do
  [[ -f "$include/$header" ]] || { echo "install_test: $header not installed"; exit 1; }
done
# Only the public surface: no internal/ folder, nothing that includes gRPC, and every Weft header
# an installed header includes is installed too.
if find "$include/weft" -path '*/internal/*' | grep -q .; then
  echo "install_test: internal headers installed:"; find "$include/weft" -path '*/internal/*'; exit 1
fi
if grep -rlE '^#include [<"](grpc|weft/.*\.grpc\.pb\.h)' "$include/weft"; then
  echo "install_test: the headers above include gRPC"; exit 1
fi
missing=0
while IFS= read -r included; do
  [[ -f "$include/$included" ]] || { echo "install_test: $included is included but not installed"; missing=1; }
done < <(grep -rhoE '^#include "weft/[^"]+"' "$include/weft" | sed -E 's/^#include "(.*)"/\1/' | sort -u)
((missing == 0)) || exit 1
echo "install_test: $(find "$include/weft" -name '*.h' | wc -l) headers installed"

echo "== find_package(Weft): the examples as an outside project"
cmake -S "$examples_dir" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" -j 1 >/dev/null
"$work/examples/hello_graph" >/dev/null
"$prefix_bin/weft" --help >/dev/null
"$work/examples/regression"

echo "== pkg-config weft: hello_graph compiled by hand"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
read -r -a flags <<<"$(pkg-config --cflags --libs weft)"
g++ -O1 "$examples_dir/hello_graph/main.cc" -o "$work/hello_graph_pkgconfig" "${flags[@]}"
LD_LIBRARY_PATH="$work/prefix/lib" "$work/hello_graph_pkgconfig" >/dev/null
echo "install_test: passed"
