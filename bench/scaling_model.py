#!/usr/bin/env python3
"""Alpha-beta model of Weft's all-reduce, and what it predicts for W2 beyond one machine.

Fits a latency (alpha) and a per-byte cost (beta) to each collective transport's measured
all-reduce times (`bench/run.sh collective`), then predicts the step time and scaling efficiency
of W2 (the Fashion-MNIST CNN) under weak scaling for 8 to 1,024 workers on 25 and 100 Gbit/s
networks: a flat ring over all workers, a hierarchical all-reduce (shared memory inside a host, a
ring across host leaders) and a 2D variant (8 rings across hosts, one per local rank), each with
and without overlap of communication with the backward pass. docs/scaling.md explains the model.

Standard library only; deterministic. Usage: python3 bench/scaling_model.py [--compute-ms MS]
[--alpha-us US] [--workers-per-host N] [--overlap-share S]
"""
import argparse

KB = 1024
MB = 1024 * 1024

# Median time (microseconds) of one float32 sum all-reduce, `bench/run.sh collective` on a
# 2-core machine, 2026-12-03. The 4-process runs put 4 processes on 2 cores.
SIZES = [4 * KB, 256 * KB, 4 * MB, 64 * MB]
MEASURED_US = {
    ("shm", 2): [1, 17, 677, 11653],
    ("shm", 4): [27, 119, 1647, 23552],
    ("tcp", 2): [37, 70, 1760, 28319],
    ("tcp", 4): [100, 371, 5899, 87945],
    ("gloo", 2): [269, 361, 2799, 41235],
    ("gloo", 4): [6963, 5016, 8793, 100789],
}
# Largest message each transport sends through its one-exchange path.
SHM_SMALL_MAX = 256 * KB
TCP_SMALL_MAX = 64 * KB
# Cost of summing one byte into a buffer: one pass at the measured memcpy speed. Not fitted
# (a 2-process run cannot tell it apart from beta); used by every ring formula.
MEMCPY_BYTES_PER_S = 11.5e9
GAMMA = 1.0 / MEMCPY_BYTES_PER_S

WORKER_COUNTS = [8, 16, 32, 64, 128, 256, 512, 1024]
BATCH_PER_WORKER = 64
BUCKET_BYTES = 4 * MB


# ---------------------------------------------------------------------------------------------
# Cost formulas (seconds; n in bytes, p members)


def ring_time(n, p, alpha, beta):
    """Reduce-scatter + all-gather ring: 2(p-1) messages of n/p bytes, (p-1)/p n bytes summed."""
    if p <= 1:
        return 0.0
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * GAMMA


def shm_small_time(n, p, alpha_s, beta_s):
    """One exchange through shared memory: everyone posts, everyone sums all inputs."""
    return alpha_s + (p - 1) * n * beta_s


def tcp_small_time(n, p, alpha_s, beta):
    """One exchange over TCP: every member sends its whole input to every peer and sums them."""
    return alpha_s + (p - 1) * n * (beta + GAMMA)


# ---------------------------------------------------------------------------------------------
# Fitting


def fit_two(rows):
    """Least squares for y = a*alpha + b*beta over rows (a, b, y, measured), minimising relative
    residuals (each row weighted by 1/measured), with alpha, beta >= 0. Returns (alpha, beta)."""
    weighted = [(a / m, b / m, y / m) for a, b, y, m in rows]
    saa = sum(a * a for a, _, _ in weighted)
    sab = sum(a * b for a, b, _ in weighted)
    sbb = sum(b * b for _, b, _ in weighted)
    say = sum(a * y for a, _, y in weighted)
    sby = sum(b * y for _, b, y in weighted)
    det = saa * sbb - sab * sab
    if det > 0:
        alpha = (say * sbb - sby * sab) / det
        beta = (saa * sby - sab * say) / det
        if alpha >= 0 and beta >= 0:
            return alpha, beta
    # The unconstrained optimum has a negative latency: pin alpha at 0 and fit beta alone.
    return 0.0, max(0.0, sby / sbb)


def fit_ring(sizes_us):
    """alpha, beta of the ring formula from 2-process (bytes, microseconds) points."""
    rows = []
    for n, t_us in sizes_us:
        t = t_us * 1e-6
        p = 2
        rows.append((2 * (p - 1), 2 * (p - 1) / p * n, t - (p - 1) / p * n * GAMMA, t))
    return fit_two(rows)


def two_proc_points(transport, keep):
    return [(n, t) for n, t in zip(SIZES, MEASURED_US[(transport, 2)]) if keep(n)]


def fit_all():
    """Returns {transport: params} with the formula each measured size goes through."""
    fits = {}
    # Shared memory: one exchange up to 256 KB (2 points, 2 unknowns: an exact fit); chunked
    # reduce-scatter + all-gather above it, fitted with the ring formula.
    small = two_proc_points("shm", lambda n: n <= SHM_SMALL_MAX)
    (n1, t1), (n2, t2) = small
    beta_s = (t2 - t1) * 1e-6 / (n2 - n1)
    alpha_s = t1 * 1e-6 - n1 * beta_s
    alpha, beta = fit_ring(two_proc_points("shm", lambda n: n > SHM_SMALL_MAX))
    fits["shm"] = {"alpha_s": alpha_s, "beta_s": beta_s, "alpha": alpha, "beta": beta}
    # TCP: ring above 64 KB, fitted on 4 MB and 64 MB (many chunks per step: the bandwidth
    # regime; at 256 KB each step's slice is under one chunk and fits the socket buffers, a
    # different regime shown as a residual). The one-exchange path has one point per process
    # count, so it shares the ring's beta and only its latency alpha_s is fitted.
    alpha, beta = fit_ring(two_proc_points("tcp", lambda n: n >= 4 * MB))
    (n1, t1), = two_proc_points("tcp", lambda n: n <= TCP_SMALL_MAX)
    alpha_s = t1 * 1e-6 - n1 * (beta + GAMMA)
    fits["tcp"] = {"alpha_s": alpha_s, "alpha": alpha, "beta": beta}
    # Gloo's ring, for reference: the ring formula at every size.
    alpha, beta = fit_ring(two_proc_points("gloo", lambda n: True))
    fits["gloo"] = {"alpha": alpha, "beta": beta}
    return fits


def model_time(fits, transport, n, p):
    """What the fitted model says one all-reduce of n bytes over p members of `transport` takes,
    through the path that transport picks for n."""
    f = fits[transport]
    if transport == "shm" and n <= SHM_SMALL_MAX:
        return shm_small_time(n, p, f["alpha_s"], f["beta_s"])
    if transport == "tcp" and n <= TCP_SMALL_MAX:
        return tcp_small_time(n, p, f["alpha_s"], f["beta"])
    return ring_time(n, p, f["alpha"], f["beta"])


def shm_time(fits, n, p):
    return model_time(fits, "shm", n, p)


# ---------------------------------------------------------------------------------------------
# W2: layers, gradient buckets, when the backward pass produces each bucket


def w2_layers(batch):
    """(name, weight elements, bias elements, forward FLOPs, has input gradient), forward order.
    Convolutions are 3x3 with 'same' padding, each followed by ReLU and 2x2 max pooling."""
    return [
        ("conv1", 3 * 3 * 1 * 32, 32, 2 * batch * 28 * 28 * 32 * 3 * 3 * 1, False),
        ("conv2", 3 * 3 * 32 * 64, 64, 2 * batch * 14 * 14 * 64 * 3 * 3 * 32, True),
        ("dense1", 3136 * 1024, 1024, 2 * batch * 3136 * 1024, True),
        ("dense2", 1024 * 10, 10, 2 * batch * 1024 * 10, True),
    ]


def w2_schedule(batch):
    """Returns (forward FLOP share of the step, buckets), buckets as (names, bytes, ready) in the
    order the backward pass produces them, `ready` the share of the backward pass done by then.

    Backward FLOPs of a layer: one weight-gradient product of its forward size, plus one input-
    gradient product unless it is the first layer. A bias gradient is ready as the layer's
    backward starts (it is a sum over the incoming gradient); a weight gradient when the layer's
    backward ends (both products done: the conservative order)."""
    layers = w2_layers(batch)
    forward = sum(layer[3] for layer in layers)
    backward = sum(f * (2 if has_dx else 1) for _, _, _, f, has_dx in layers)
    tensors = []  # (name, bytes, ready share), in the order BatchReduce packs them: reverse
    done = 0.0
    for name, weights, bias, flops, has_dx in reversed(layers):
        tensors.append((name + "/bias", 4 * bias, done / backward))
        done += flops * (2 if has_dx else 1)
        tensors.append((name + "/kernel", 4 * weights, done / backward))
    buckets = []
    for name, size, ready in tensors:
        if buckets and buckets[-1][1] + size <= BUCKET_BYTES:
            names, total, latest = buckets[-1]
            buckets[-1] = (names + [name], total + size, max(latest, ready))
        else:
            buckets.append(([name], size, ready))
    return forward / (forward + backward), buckets


# ---------------------------------------------------------------------------------------------
# All-reduce strategies across hosts. Each returns the cost of one bucket split into terms:
# latency (alpha), bytes (beta), sums (gamma), shm (the shared-memory phases inside a host).


def terms(latency=0.0, data=0.0, sums=0.0, shm=0.0):
    return {"latency": latency, "bytes": data, "sums": sums, "shm": shm}


def net_ring(n, hosts, rings, net):
    """`rings` parallel rings over `hosts` members, each reducing n bytes, sharing each host's
    NIC. A byte costs the slower of the wire (shared by the rings) and one TCP stream's host
    cost; the transport pipelines chunks, so the two overlap rather than add."""
    if hosts <= 1:
        return terms()
    beta = max(rings * net["beta_wire"], net["beta_host"])
    return terms(latency=2 * (hosts - 1) * net["alpha"],
                 data=2 * (hosts - 1) / hosts * n * beta,
                 sums=(hosts - 1) / hosts * n * GAMMA)


def flat_ring(fits, n, p, per_host, net):
    """(a) One TCP ring over all p workers, numbered host by host: 1 hop in per_host crosses the
    network, the others are loopback. The ring moves in lock step, so each of its 2(p-1) steps
    takes as long as its slowest hop."""
    hosts = max(1, p // per_host)
    beta = net["beta_host"] if hosts == 1 else max(net["beta_wire"], net["beta_host"])
    return terms(latency=2 * (p - 1) * net["alpha"],
                 data=2 * (p - 1) / p * n * beta,
                 sums=(p - 1) / p * n * GAMMA)


def hierarchical(fits, n, p, per_host, net):
    """(b) Reduce to one leader per host through shared memory (costed as one shm all-reduce:
    the leader's share of it is a full reduce-scatter + all-gather), a TCP ring over the
    leaders, then a shared-memory broadcast (costed as the all-gather half of an all-reduce)."""
    hosts = max(1, p // per_host)
    local = shm_time(fits, n, min(p, per_host))
    if hosts == 1:
        return terms(shm=local)
    cost = net_ring(n, hosts, 1, net)
    cost["shm"] = 1.5 * local
    return cost


def two_d(fits, n, p, per_host, net):
    """(c) Shared-memory reduce-scatter inside the host (each local rank owns n/per_host), one
    TCP ring across hosts per local rank (per_host rings in parallel), shared-memory all-gather.
    The two halves cost one shm all-reduce."""
    hosts = max(1, p // per_host)
    local = shm_time(fits, n, min(p, per_host))
    if hosts == 1:
        return terms(shm=local)
    cost = net_ring(n / per_host, hosts, per_host, net)
    cost["shm"] = local
    return cost


STRATEGIES = [("flat ring", flat_ring), ("hierarchical", hierarchical), ("2D", two_d)]


def step_time(compute, forward_share, buckets, bucket_costs, overlap, share=1.0):
    """Step time of one worker. Without overlap the all-reduces run after the backward pass;
    with overlap each bucket starts when the backward pass has produced it and the transport is
    free (a transport runs one operation at a time). While the backward pass still runs, an
    all-reduce progresses at `share` of its full speed (1: communication costs compute nothing)."""
    if not overlap:
        return compute + sum(bucket_costs)
    forward = compute * forward_share
    backward_end = compute
    free_at = 0.0
    for (_, _, ready), cost in zip(buckets, bucket_costs):
        start = max(forward + ready * (backward_end - forward), free_at)
        beside_compute = max(0.0, backward_end - start) * share
        if beside_compute >= cost:
            free_at = start + cost / share
        else:
            free_at = max(start, backward_end) + cost - beside_compute
    return max(compute, free_at)


# ---------------------------------------------------------------------------------------------
# Output


def us(seconds):
    return f"{seconds * 1e6:.1f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def print_fits(fits):
    shm, tcp, gloo = fits["shm"], fits["tcp"], fits["gloo"]

    def gbs(beta):
        return f"{1 / beta / 1e9:.2f}" if beta > 0 else "-"

    rows = [
        ["shm", "one exchange (<= 256 KB)", "alpha_s + (p-1) n beta_s", "4 KB, 256 KB",
         us(shm["alpha_s"]), f"{shm['beta_s'] * 1e9:.3f}", gbs(shm["beta_s"])],
        ["shm", "chunked RS + AG (> 256 KB)", "ring", "4 MB, 64 MB",
         us(shm["alpha"]), f"{shm['beta'] * 1e9:.3f}", gbs(shm["beta"])],
        ["tcp", "all-to-all (<= 64 KB)", "alpha_s + (p-1) n (beta + gamma)", "4 KB",
         us(tcp["alpha_s"]), "(ring's)", "-"],
        ["tcp", "ring, 256 KB chunks (> 64 KB)", "ring", "4 MB, 64 MB",
         us(tcp["alpha"]), f"{tcp['beta'] * 1e9:.3f}", gbs(tcp["beta"])],
        ["gloo", "ring (reference)", "ring", "all four",
         us(gloo["alpha"]), f"{gloo['beta'] * 1e9:.3f}", gbs(gloo["beta"])],
    ]
    print("### Fitted parameters (2-process points)\n")
    print(f"ring: T = 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma, "
          f"gamma = 1/({MEMCPY_BYTES_PER_S / 1e9:.1f} GB/s) = {GAMMA * 1e9:.3f} ns/B (fixed)\n")
    print(table(["transport", "path", "formula", "fitted on", "alpha (us)", "beta (ns/B)",
                 "1/beta (GB/s)"], rows))
    print()


def print_residuals(fits):
    rows = []
    for transport in ("shm", "tcp", "gloo"):
        for i, n in enumerate(SIZES):
            row = [transport, f"{n // KB} KB" if n < MB else f"{n // MB} MB"]
            for p in (2, 4):
                measured = MEASURED_US[(transport, p)][i]
                model = model_time(fits, transport, n, p) * 1e6
                row += [str(measured), f"{model:.0f}", f"{(model - measured) / measured:+.0%}"]
            rows.append(row)
    print("### Model against measurement (us; 4 processes share 2 cores, so their column is a "
          "check, not fitted)\n")
    print(table(["transport", "size", "2p measured", "2p model", "2p resid",
                 "4p measured", "4p model", "4p resid"], rows))
    print()


def print_buckets(forward_share, buckets):
    rows = [[str(i + 1), ", ".join(names), f"{size:,}", f"{ready:.0%}"]
            for i, (names, size, ready) in enumerate(buckets)]
    print(f"### W2 gradient buckets (batch {BATCH_PER_WORKER} per worker; forward = "
          f"{forward_share:.0%} of step FLOPs, backward = {1 - forward_share:.0%})\n")
    print(table(["bucket", "tensors", "bytes", "ready at (share of backward)"], rows))
    print()


def predictions(fits, net, compute, forward_share, buckets, per_host, share):
    """{p: {strategy: (no-overlap step, overlap step, per-bucket terms)}}."""
    out = {}
    for p in WORKER_COUNTS:
        out[p] = {}
        for name, strategy in STRATEGIES:
            parts = [strategy(fits, size, p, per_host, net) for _, size, _ in buckets]
            costs = [sum(part.values()) for part in parts]
            out[p][name] = (step_time(compute, forward_share, buckets, costs, False),
                            step_time(compute, forward_share, buckets, costs, True, share), parts)
    return out


def print_predictions(title, fits, net, compute, forward_share, buckets, per_host, share):
    result = predictions(fits, net, compute, forward_share, buckets, per_host, share)
    header = ["workers", "hosts"]
    for name, _ in STRATEGIES:
        header += [name, name + " + overlap"]
    rows = []
    for p in WORKER_COUNTS:
        row = [str(p), str(max(1, p // per_host))]
        for name, _ in STRATEGIES:
            for step in result[p][name][:2]:
                row.append(f"{step * 1e3:.1f} ms ({compute / step:.0%})")
        rows.append(row)
    print(f"### {title}: step time (scaling efficiency)\n")
    print(table(header, rows))
    print()
    return result


def print_breakdown(result, worker_counts):
    rows = []
    for p in worker_counts:
        for name, _ in STRATEGIES:
            parts = result[p][name][2]
            total = {key: sum(part[key] for part in parts) for key in parts[0]}
            rows.append([str(p), name] + [f"{total[key] * 1e3:.2f}" for key in
                                          ("latency", "bytes", "sums", "shm")] +
                        [f"{sum(total.values()) * 1e3:.2f}"])
    print("### Where the communication time goes, 25 Gbit/s (ms per step, all buckets)\n")
    print(table(["workers", "strategy", "latency (alpha)", "bytes (beta)", "sums (gamma)",
                 "shared memory", "total"], rows))
    print()


def print_sensitivity(fits, net, compute, forward_share, buckets, per_host, share, p):
    rows = []
    for alpha_us in (5, 10, 20, 35):
        varied = dict(net, alpha=alpha_us * 1e-6)
        result = predictions(fits, varied, compute, forward_share, buckets, per_host, share)[p]
        rows.append([f"alpha = {alpha_us:g} us, share = {share:g}"] +
                    [f"{compute / result[name][1]:.0%}" for name, _ in STRATEGIES])
    for varied_share in (0.5,):
        result = predictions(fits, net, compute, forward_share, buckets, per_host,
                             varied_share)[p]
        rows.append([f"alpha = {net['alpha'] * 1e6:g} us, share = {varied_share:g}"] +
                    [f"{compute / result[name][1]:.0%}" for name, _ in STRATEGIES])
    print(f"### Sensitivity: efficiency with overlap, {p} workers, 25 Gbit/s\n")
    print(table(["assumption"] + [name for name, _ in STRATEGIES], rows))
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compute-ms", type=float, default=60.0,
                        help="compute time of one step of one worker on its 64 examples")
    parser.add_argument("--alpha-us", type=float, default=10.0,
                        help="latency of one TCP message between hosts (and on loopback)")
    parser.add_argument("--workers-per-host", type=int, default=8)
    parser.add_argument("--overlap-share", type=float, default=1.0,
                        help="speed of an all-reduce that runs beside the backward pass, as a "
                        "share of its speed alone (1: communication takes no compute time)")
    args = parser.parse_args()
    compute = args.compute_ms * 1e-3
    per_host = args.workers_per_host

    fits = fit_all()
    print_fits(fits)
    print_residuals(fits)
    forward_share, buckets = w2_schedule(BATCH_PER_WORKER)
    print_buckets(forward_share, buckets)

    beta_host = fits["tcp"]["beta"]
    print(f"Predictions: weak scaling, {BATCH_PER_WORKER} examples per worker, "
          f"{args.compute_ms:g} ms of compute per step, {per_host} workers per host,\n"
          f"TCP alpha = {args.alpha_us:g} us per message, overlap share = "
          f"{args.overlap_share:g},\none TCP stream's host cost = the "
          f"loopback fit ({beta_host * 1e9:.3f} ns/B, {8 / beta_host / 1e9:.1f} Gbit/s) "
          f"unless said otherwise.\n")
    scenarios = [
        ("25 Gbit/s", 25e9, beta_host),
        ("100 Gbit/s", 100e9, beta_host),
        ("100 Gbit/s, TCP stream at memcpy speed", 100e9, GAMMA),
    ]
    results = {}
    for title, bits, host in scenarios:
        net = {"alpha": args.alpha_us * 1e-6, "beta_wire": 8 / bits, "beta_host": host}
        results[title] = print_predictions(title, fits, net, compute, forward_share, buckets,
                                           per_host, args.overlap_share)
    print_breakdown(results["25 Gbit/s"], [64, 1024])
    net25 = {"alpha": args.alpha_us * 1e-6, "beta_wire": 8 / 25e9, "beta_host": beta_host}
    print_sensitivity(fits, net25, compute, forward_share, buckets, per_host, args.overlap_share,
                      1024)


if __name__ == "__main__":
    main()
