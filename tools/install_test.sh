#!/usr/bin/env bash
# install_test: installs a built Weft into a temporary prefix, builds the examples against it as an
# outside project (find_package(Weft) + Weft::weft), runs two of them, and compiles one with
# pkg-config alone. Usage: tools/install_test.sh BUILD_DIR EXAMPLES_DIR
set -euo pipefail
build_dir=$1
examples_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
for header in weft/train/model.h weft/data/dataset.h weft/graph/builder/ops.h weft/tensor.pb.h; do
  [[ -f "$work/prefix/include/$header" ]] || { echo "install_test: $header not installed"; exit 1; }
done

echo "== find_package(Weft): the examples as an outside project"
cmake -S "$examples_dir" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" -j 1 >/dev/null
"$work/examples/hello_graph" >/dev/null
"$work/examples/regression"

echo "== pkg-config weft: hello_graph compiled by hand"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
read -r -a flags <<<"$(pkg-config --cflags --libs weft)"
g++ -O1 "$examples_dir/hello_graph/main.cc" -o "$work/hello_graph_pkgconfig" "${flags[@]}"
"$work/hello_graph_pkgconfig" >/dev/null
echo "install_test: passed"
