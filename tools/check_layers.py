#!/usr/bin/env python3
"""Checks that each layer of src/weft includes only the layers DESIGN.md allows it to use, and
that train/ uses a strategy only through its policy (no reductions of its own, no downcasts).

Prints every offending include and exits 1 when there is one; run by ctest as check_layers.
"""
import pathlib
import re
import sys

ALLOWED = {
    "core": {"core"},
    "io": {"io", "core"},
    "data": {"data", "core"},
    "framework": {"framework", "io", "core"},
    "ops": {"ops", "framework", "io", "core"},
    "kernels": {"kernels", "ops", "framework", "io", "core"},
    "graph": {"graph", "ops", "framework", "io", "core"},
    "runtime": {"runtime", "graph", "kernels", "ops", "framework", "io", "core"},
    "distributed": {"distributed", "runtime", "graph", "kernels", "ops", "framework", "io",
                    "core"},
    "distribute": {"distribute", "data", "distributed", "runtime", "graph", "kernels", "ops",
                   "framework", "io", "core"},
    "checkpoint": {"checkpoint", "distribute", "distributed", "runtime", "graph", "kernels",
                   "ops", "framework", "io", "core"},
    "train": {"train", "checkpoint", "data", "distribute", "distributed", "runtime", "graph",
              "kernels", "ops", "framework", "io", "core"},
}
# The transport binds the transport-neutral server (distributed/server.h), which picks the op and
# kernel registries: distributed/rpc itself uses neither.
RPC_FORBIDDEN = {"kernels", "ops"}
INCLUDE = re.compile(r'#include\s+"weft/([a-z_]+)/')
# train/ reaches a strategy only through Strategy and its policy (Strategy::extended()): no
# reductions of its own, no casts to one strategy.
TRAIN_FORBIDDEN = re.compile(r"cross_device_ops\(\)|BatchReduce\(|_cast<[^>]*Strategy")


def main():
    root = pathlib.Path(__file__).resolve().parent.parent / "src" / "weft"
    problems = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        layer = path.relative_to(root).parts[0]
        allowed = ALLOWED.get(layer)
        if allowed is None:  # cli and testing may use anything
            continue
        is_rpc = "rpc" in path.relative_to(root).parts
        # Tests and their helpers link the testing layer and may include anything.
        is_test = path.name.endswith(("_test.cc", "_test_util.h", "_test_util.cc"))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            # A test may register the gRPC transport (rpc/grpc_server.h) to start real servers.
            if "grpc" in line and line.startswith("#include") and not is_rpc and not is_test:
                problems.append(f"{path}:{number}: gRPC outside distributed/rpc: {line}")
            match = INCLUDE.match(line)
            if match and not is_test and match.group(1) not in allowed:
                problems.append(f"{path}:{number}: layer '{layer}' may not include {line}")
            if match and not is_test and is_rpc and match.group(1) in RPC_FORBIDDEN:
                problems.append(f"{path}:{number}: distributed/rpc may not include {line}")
            if layer == "train" and not is_test and TRAIN_FORBIDDEN.search(line):
                problems.append(f"{path}:{number}: train/ must ask Strategy::extended(): {line}")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
