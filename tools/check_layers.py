#!/usr/bin/env python3
"""Checks that each layer of src/weft includes only the layers DESIGN.md allows it to use, that the
distributed runtime's sub-layers keep their own rules (SUBLAYER_RULES), and that train/ uses a
strategy only through its policy (no reductions of its own, no downcasts).

Prints every offending include and exits 1 when there is one; run by ctest as check_layers.
"""
import pathlib
import re
import sys

ALLOWED = {
    "core": {"core"},
    "io": {"io", "core"},
    # data describes pipelines to other processes with framework's tensor protos.
    "data": {"data", "framework", "io", "core"},
    "framework": {"framework", "io", "core"},
    "ops": {"ops", "framework", "io", "core"},
    # kernels/data serves per-worker datasets' iterators from data's pipelines.
    "kernels": {"kernels", "data", "ops", "framework", "io", "core"},
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
INCLUDE_PATH = re.compile(r'#include\s+"(weft/[a-z_/.]+)')
# Sub-layers: (files whose path under src/weft starts with this, a predicate on the included
# path that is refused, why). Tests and test helpers are exempt, as above.
SUBLAYER_RULES = [
    # Only the command line binds the gRPC transport; the library reaches it through interfaces.
    ("", lambda inc: inc.startswith("weft/distributed/rpc/"), "only cli/ may include rpc/"),
    # Process-to-process transports run under any runtime: core only.
    ("distributed/collective/internal/", lambda inc: not inc.startswith(
        ("weft/core/", "weft/distributed/collective/")), "transports use core only"),
    ("distributed/collective/shm_transport", lambda inc: not inc.startswith(
        ("weft/core/", "weft/distributed/collective/")), "transports use core only"),
    ("distributed/collective/tcp_transport", lambda inc: not inc.startswith(
        ("weft/core/", "weft/distributed/collective/")), "transports use core only"),
    ("distributed/collective/hierarchical_transport", lambda inc: not inc.startswith(
        ("weft/core/", "weft/distributed/collective/")), "transports use core only"),
    ("distributed/collective/collective_transport", lambda inc: not inc.startswith(
        ("weft/core/", "weft/distributed/collective/")), "transports use core only"),
    # The cluster's description and resolution are read by everything else, so use nothing above.
    ("distributed/cluster/", lambda inc: not inc.startswith(
        ("weft/core/", "weft/io/", "weft/distributed/cluster/")) and not inc.endswith(".pb.h"),
     "cluster/ uses core and io only"),
    # The master drives workers, never the other way round.
    ("distributed/worker/", lambda inc: inc.startswith("weft/distributed/master/"),
     "worker/ may not include master/"),
]
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
        relative = path.relative_to(root).as_posix()
        is_test = (path.name.endswith(("_test.cc", "_test_util.h", "_test_util.cc")) or
                   "testing" in path.relative_to(root).parts)
        for number, line in enumerate(path.read_text().splitlines(), 1):
            # A test may register the gRPC transport (rpc/grpc_server.h) to start real servers.
            if "grpc" in line and line.startswith("#include") and not is_rpc and not is_test:
                problems.append(f"{path}:{number}: gRPC outside distributed/rpc: {line}")
            match = INCLUDE.match(line)
            if match and not is_test and match.group(1) not in allowed:
                problems.append(f"{path}:{number}: layer '{layer}' may not include {line}")
            if match and not is_test and is_rpc and match.group(1) in RPC_FORBIDDEN:
                problems.append(f"{path}:{number}: distributed/rpc may not include {line}")
            included = INCLUDE_PATH.match(line)
            if included and not is_test and layer != "cli" and not is_rpc:
                for prefix, refused, why in SUBLAYER_RULES:
                    if relative.startswith(prefix) and refused(included.group(1)):
                        problems.append(f"{path}:{number}: {why}: {line}")
            if layer == "train" and not is_test and TRAIN_FORBIDDEN.search(line):
                problems.append(f"{path}:{number}: train/ must ask Strategy::extended(): {line}")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
