"""PyTorch peer of Weft's W7 parameter-server benchmark: DLRM on synthetic Criteo-shaped data,
trained by asynchronous trainers against parameter servers over torch.distributed.rpc.

Data: the spec of src/weft/data/synthetic_criteo.{h,cc}, re-implemented in numpy. The hidden model
is bit-identical to the C++ one (SplitMix64 keys: dense weights normal * 0.3, one uniform weight in
[-0.7, 0.7] per (table, row), bias -1.6) and so is the scattering of Zipf ranks over each table
(row = ((k - 1) * stride + offset) mod rows, same stride and offset). The per-example streams
differ: each block of examples [first, first + count) is drawn by numpy's PCG64 seeded with
(seed, 4, first), ids by the same rejection-inversion Zipf(1.05) sampler, vectorised. Tables: 4 x
2,000,000, 8 x 100,000, 14 x 10,000 rows. Trainer r's step s uses examples starting at
(s * trainers + r) * batch; held-out examples start at 2^40 as in bench/w7_dlrm.cc (after all
training ones). Each trainer pre-generates its batches (up to --pool of them, then cycles)
before the timed part, so input generation is not timed.

Model (as bench/w7_dlrm.cc): 26 tables of dimension 16 (uniform [-0.05, 0.05]), bottom MLP
13-64-16 (relu, relu), the 351 pairwise dot products (i < j) of the 27 vectors [bottom, emb_0..25],
top MLP input = concat(bottom output [16], pairs [351]) = 367, top MLP 256-128-1 (relu, relu,
none), Glorot-uniform kernels and zero biases, mean BCE on the logit, Adagrad lr 0.05 (initial
accumulator 0.1, epsilon 1e-7, per-element accumulators; sparse for tables: only rows looked up
in the step are read and moved).

Processes (spawned by this launcher, which is not part of the RPC world): ps0..ps{P-1},
trainer0..trainer{T-1}, one torch thread and 4 RPC worker threads each. TensorPipe, the only RPC
backend in torch 1.13, with TP_SOCKET_IFNAME=lo (its shm/uv transports and cma channel work here);
its rendezvous is tcp://127.0.0.1:port, though c10d's TCPStore server binds every address.
- Tables are placed table-wise round-robin (table t on ps t % P, so the four 2M-row tables split
  two per ps); dense layers also round-robin by layer (layer l's weight and bias on ps l % P).
- Each trainer step: torch.unique per table; then ONE rpc_async "pull" per ps (unique ids of its
  tables -> their rows plus its dense parameters), all ps in parallel; forward/backward locally
  with F.embedding on the gathered rows (row gradients are [unique, 16]); then ONE rpc_async
  "push" per ps (unique ids, row gradients, dense gradients), where the ps applies Adagrad with
  index_select/index_copy_/index_add_ under a per-ps lock (reads take no lock, as TF's PS). The
  trainer waits for its pushes just before its next pulls (after preparing that batch's ids).
- Trainers never synchronise with each other during training (like TF's ParameterServerStrategy),
  except a barrier after the warm-up steps (the timed start) and one after the timed steps.
- examples_per_sec = trainers * steps * batch / (max over trainers of the end of the timed part
  minus min over trainers of its start), CLOCK_MONOTONIC, which all processes share.
- Held-out (--heldout > 0): after training, trainer 0 pulls rows/params for the held-out batches
  and reports their mean log loss and the base-rate log loss.

Usage: /usr/bin/python3 bench/torch_rpc_ps_w7.py --steps N --warmup W [--batch 512] [--seed 1]
           [--trainers 2] [--ps 2] [--heldout 100000] [--port P]
Prints one JSON line on stdout; diagnostics go to stderr.
"""
import argparse
import json
import math
import os
import queue as queue_module
import socket
import sys
import threading
import time
import traceback

import numpy as np
import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
import torch.nn.functional as F

TABLE_ROWS = [2_000_000] * 4 + [100_000] * 8 + [10_000] * 14
NUM_DENSE, DIM = 13, 16
ZIPF_S, BIAS, ID_WEIGHT_SCALE, DENSE_WEIGHT_SCALE = 1.05, -1.6, 0.7, 0.3
LAYERS = [(13, 64), (64, 16), (16 + 351, 256), (256, 128), (128, 1)]  # (in, out)
INIT_ACCUMULATOR, EPSILON = 0.1, 1e-7
HELDOUT_FIRST = 1 << 40
MASK = (1 << 64) - 1
K_DENSE_WEIGHTS, K_ID_WEIGHTS, K_TABLES, K_EXAMPLES = 1, 2, 3, 4


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# ---- Data: synthetic_criteo.cc in numpy ----
def mix(x):
    """SplitMix64's finaliser on a Python int."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def mix_array(x):
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def key(seed, a, b):
    return mix(mix(mix(seed) ^ a) ^ b)


def _expm1_over_x(x):
    small = np.abs(x) < 1e-8
    safe = np.where(small, 1.0, x)
    return np.where(small, 1 + x / 2, np.expm1(safe) / safe)


def _log1p_over_x(x):
    small = np.abs(x) < 1e-8
    safe = np.where(small, 1.0, x)
    return np.where(small, 1 - x / 2, np.log1p(safe) / safe)


class Generator:
    """Blocks of examples (dense float32 [n, 13], ids int64 [n, 26], label float32 [n])."""

    def __init__(self, seed):
        self.seed = seed
        rows = np.array(TABLE_ROWS, dtype=np.float64)
        self.rows = np.array(TABLE_ROWS, dtype=np.int64)
        self.h_x1 = self._h_integral(np.full_like(rows, 1.5)) - 1
        self.h_n = self._h_integral(rows + 0.5)
        self.squeeze = 2 - self._h_inverse(self._h_integral(np.array(2.5)) - 2.0 ** -ZIPF_S)
        self.dense_weights = DENSE_WEIGHT_SCALE * np.array(
            [self._normal(key(seed, K_DENSE_WEIGHTS, j)) for j in range(NUM_DENSE)])
        strides, offsets = [], []
        for t, n in enumerate(TABLE_ROWS):
            k = key(seed, K_TABLES, t)
            stride = (mix(k) % n) | 1
            while math.gcd(stride, n) != 1:
                stride += 2
            stride %= n
            strides.append(stride if stride else 1)
            offsets.append(mix((k + 1) & MASK) % n)
        self.strides = np.array(strides, dtype=np.int64)
        self.offsets = np.array(offsets, dtype=np.int64)
        # mix(Key(seed, 2, t)): Key(Key(seed, 2, t), row, 0) = mix(mix(that ^ row) ^ 0).
        self.id_keys = np.array([mix(key(seed, K_ID_WEIGHTS, t)) for t in range(len(TABLE_ROWS))],
                                dtype=np.uint64)

    @staticmethod
    def _h_integral(x):
        log_x = np.log(x)
        return _expm1_over_x((1 - ZIPF_S) * log_x) * log_x

    @staticmethod
    def _h_inverse(u):
        t = np.maximum(u * (1 - ZIPF_S), -1.0)
        return np.exp(_log1p_over_x(t) * u)

    @staticmethod
    def _normal(k):
        u1 = 1 - (mix(k) >> 11) * 2.0 ** -53
        u2 = (mix((k + 1) & MASK) >> 11) * 2.0 ** -53
        return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)

    def _zipf(self, rng, count):
        """Ranks in [1, rows_t] for each column t: rejection-inversion, vectorised."""
        shape = (count, len(TABLE_ROWS))
        ranks = np.zeros(shape, dtype=np.int64)
        todo = np.ones(shape, dtype=bool)
        col = np.broadcast_to(np.arange(shape[1]), shape)
        while todo.any():
            c = col[todo]
            h_n, h_x1 = self.h_n[c], self.h_x1[c]
            u = h_n + rng.random(c.size) * (h_x1 - h_n)
            x = self._h_inverse(u)
            k = np.clip((x + 0.5).astype(np.int64), 1, self.rows[c])
            mass = self._h_integral(k + 0.5) - np.exp(-ZIPF_S * np.log(k))
            ok = (k - x <= self.squeeze) | (u >= mass)
            idx = np.nonzero(todo)
            ranks[idx[0][ok], idx[1][ok]] = k[ok]
            todo[idx[0][ok], idx[1][ok]] = False
        return ranks

    def block(self, first, count):
        rng = np.random.default_rng([self.seed, K_EXAMPLES, first])
        counts = np.floor(np.exp(1.0 + 1.3 * rng.standard_normal((count, NUM_DENSE))))
        dense = np.log1p(counts)
        logit = BIAS + (dense - 1.5) @ self.dense_weights
        ids = ((self._zipf(rng, count) - 1) * self.strides + self.offsets) % self.rows
        u = (mix_array(mix_array(mix_array(self.id_keys ^ ids.astype(np.uint64))))
             >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        logit += ((2 * u - 1) * ID_WEIGHT_SCALE).sum(axis=1)
        label = rng.random(count) < 1 / (1 + np.exp(-logit))
        return (torch.from_numpy(dense.astype(np.float32)), torch.from_numpy(ids),
                torch.from_numpy(label.astype(np.float32)))


# ---- Parameter server ----
class ParameterServer:
    def __init__(self, index, num_ps, seed, lr):
        self.lr, self.lock = lr, threading.Lock()
        self.tables = {}  # table -> (weight [rows, 16], accumulator [rows, 16])
        for t in range(index, len(TABLE_ROWS), num_ps):
            g = torch.Generator().manual_seed(seed * 1000 + t)
            weight = torch.rand(TABLE_ROWS[t], DIM, generator=g).mul_(0.1).sub_(0.05)
            self.tables[t] = (weight, torch.full_like(weight, INIT_ACCUMULATOR))
        self.dense = []  # [param, accumulator] for the layers l with l % num_ps == index
        for l in range(index, len(LAYERS), num_ps):
            fan_in, fan_out = LAYERS[l]
            g = torch.Generator().manual_seed(seed * 1000 + 100 + l)
            limit = math.sqrt(6 / (fan_in + fan_out))
            w = torch.rand(fan_out, fan_in, generator=g).mul_(2 * limit).sub_(limit)
            for p in (w, torch.zeros(fan_out)):
                self.dense.append((p, torch.full_like(p, INIT_ACCUMULATOR)))

    def pull(self, ids):
        rows = [self.tables[t][0].index_select(0, i) for t, i in ids]
        return rows, [p.clone() for p, _ in self.dense]

    def push(self, ids, row_grads, dense_grads):
        with self.lock:
            for (t, idx), g in zip(ids, row_grads):
                weight, acc = self.tables[t]
                a = acc.index_select(0, idx).addcmul_(g, g)
                acc.index_copy_(0, idx, a)
                weight.index_add_(0, idx, g / a.sqrt_().add_(EPSILON), alpha=-self.lr)
            for (p, acc), g in zip(self.dense, dense_grads):
                acc.addcmul_(g, g)
                p.addcdiv_(g, acc.sqrt().add_(EPSILON), value=-self.lr)


_SERVER = None


def _ps_pull(ids):
    return _SERVER.pull(ids)


def _ps_push(ids, row_grads, dense_grads):
    _SERVER.push(ids, row_grads, dense_grads)


# ---- Trainer ----
class Trainer:
    def __init__(self, num_ps):
        self.num_ps = num_ps
        self.ps_tables = [list(range(p, len(TABLE_ROWS), num_ps)) for p in range(num_ps)]
        self.ps_layers = [list(range(p, len(LAYERS), num_ps)) for p in range(num_ps)]
        n = len(TABLE_ROWS) + 1
        self.pairs = torch.triu_indices(n, n, offset=1)  # 351 pairs, row-major as in w7_dlrm.cc
        self.pending = []

    def prepare(self, ids):
        """Per ps: [(table, unique ids)]; per table: inverse indices into the unique ids."""
        requests, inverse = [], [None] * len(TABLE_ROWS)
        for tables in self.ps_tables:
            request = []
            for t in tables:
                uniq, inverse[t] = torch.unique(ids[:, t], return_inverse=True)
                request.append((t, uniq))
            requests.append(request)
        return requests, inverse

    def pull(self, requests):
        torch.futures.wait_all(self.pending)  # our previous updates are applied before we read
        self.pending = []
        futures = [rpc.rpc_async(f"ps{p}", _ps_pull, args=(requests[p],))
                   for p in range(self.num_ps)]
        rows, layers = [None] * len(TABLE_ROWS), [None] * len(LAYERS)
        flat = []
        for p, future in enumerate(futures):
            got_rows, got_dense = future.wait()
            for (t, _), r in zip(requests[p], got_rows):
                rows[t] = r.requires_grad_()
            for i, l in enumerate(self.ps_layers[p]):
                layers[l] = (got_dense[2 * i].requires_grad_(),
                             got_dense[2 * i + 1].requires_grad_())
            flat.append((got_rows, got_dense))
        return rows, layers, flat

    def forward(self, dense_x, rows, inverse, layers):
        x = dense_x
        for w, b in layers[:2]:
            x = F.relu(F.linear(x, w, b))
        vectors = torch.stack([x] + [F.embedding(inverse[t], rows[t]) for t in range(len(rows))], 1)
        products = torch.bmm(vectors, vectors.transpose(1, 2))  # [B, 27, 27]
        top = torch.cat([x, products[:, self.pairs[0], self.pairs[1]]], 1)  # [B, 367]
        for w, b in layers[2:4]:
            top = F.relu(F.linear(top, w, b))
        return F.linear(top, *layers[4]).squeeze(1)

    def step(self, batch):
        dense_x, ids, label = batch
        requests, inverse = self.prepare(ids)
        rows, layers, flat = self.pull(requests)
        logit = self.forward(dense_x, rows, inverse, layers)
        loss = F.binary_cross_entropy_with_logits(logit, label)
        leaves = [t for got_rows, got_dense in flat for t in got_rows + got_dense]
        grads = iter(torch.autograd.grad(loss, leaves))
        for p, (got_rows, got_dense) in enumerate(flat):
            row_grads = [next(grads) for _ in got_rows]
            dense_grads = [next(grads) for _ in got_dense]
            self.pending.append(rpc.rpc_async(f"ps{p}", _ps_push,
                                              args=(requests[p], row_grads, dense_grads)))
        return loss

    def evaluate(self, generator, count, batch):
        loss_sum, positives = 0.0, 0.0
        with torch.no_grad():
            for done in range(0, count, batch):
                dense_x, ids, label = generator.block(HELDOUT_FIRST + done,
                                                      min(batch, count - done))
                requests, inverse = self.prepare(ids)
                rows, layers, _ = self.pull(requests)
                logit = self.forward(dense_x, rows, inverse, layers)
                loss_sum += F.binary_cross_entropy_with_logits(logit, label, reduction="sum").item()
                positives += label.sum().item()
        p = positives / count
        base = -(p * math.log(p) + (1 - p) * math.log(1 - p)) if 0 < p < 1 else 0.0
        return loss_sum / count, base, p


# ---- Processes ----
def run_process(role, index, args, port, barrier, results):
    try:
        torch.set_num_threads(1)
        os.environ.setdefault("TP_SOCKET_IFNAME", "lo")  # TensorPipe's sockets on loopback
        options = rpc.TensorPipeRpcBackendOptions(
            num_worker_threads=4, rpc_timeout=300, init_method=f"tcp://127.0.0.1:{port}")
        world = args.ps + args.trainers
        if role == "ps":
            global _SERVER
            started = time.monotonic()
            _SERVER = ParameterServer(index, args.ps, args.seed, args.lr)
            log(f"ps{index}: tables {sorted(_SERVER.tables)} ready in "
                f"{time.monotonic() - started:.1f} s")
            rpc.init_rpc(f"ps{index}", rank=index, world_size=world, rpc_backend_options=options)
            rpc.shutdown()  # serves until every trainer has shut down too
            return
        generator, trainer = Generator(args.seed), Trainer(args.ps)
        total = args.warmup + args.steps
        started = time.monotonic()
        pool = [generator.block((s * args.trainers + index) * args.batch, args.batch)
                for s in range(min(total, args.pool))]
        log(f"trainer{index}: {len(pool)} batches generated in {time.monotonic() - started:.1f} s")
        rpc.init_rpc(f"trainer{index}", rank=args.ps + index, world_size=world,
                     rpc_backend_options=options)
        for s in range(args.warmup):
            trainer.step(pool[s % len(pool)])
        torch.futures.wait_all(trainer.pending)
        trainer.pending = []
        barrier.wait()
        start = time.monotonic()
        for s in range(args.warmup, total):
            loss = trainer.step(pool[s % len(pool)])
        torch.futures.wait_all(trainer.pending)
        trainer.pending = []
        end = time.monotonic()
        log(f"trainer{index}: {args.steps} steps in {end - start:.2f} s, "
            f"last loss {loss.item():.4f}")
        barrier.wait()
        result = {"index": index, "start": start, "end": end}
        if index == 0 and args.heldout > 0:
            result["heldout"] = trainer.evaluate(generator, args.heldout, 4096)
        results.put(result)
        rpc.shutdown()
    except BaseException:  # noqa: B902: report everything, the launcher exits non-zero
        log(f"{role}{index} failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        os._exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trainers", type=int, default=2)
    parser.add_argument("--ps", type=int, default=2)
    parser.add_argument("--heldout", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--pool", type=int, default=1000, help="pre-generated batches per trainer")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds for the whole run")
    args = parser.parse_args()
    if min(args.steps, args.batch, args.trainers, args.ps, args.pool) < 1 or args.warmup < 0 \
            or args.heldout < 0:
        parser.error("--steps, --batch, --trainers, --ps, --pool must be >= 1; --warmup, "
                     "--heldout >= 0")
    port = args.port or free_port()
    context = mp.get_context("spawn")
    barrier, results = context.Barrier(args.trainers), context.Queue()
    processes = [context.Process(target=run_process, name=f"{role}{i}",
                                 args=(role, i, args, port, barrier, results))
                 for role, count in (("ps", args.ps), ("trainer", args.trainers))
                 for i in range(count)]
    log(f"torch_rpc_ps_w7: {args.ps} ps + {args.trainers} trainers on 127.0.0.1:{port}")
    got, error = {}, None
    deadline = time.monotonic() + args.timeout
    try:
        for process in processes:
            process.start()
        while len(got) < args.trainers and error is None:
            try:
                result = results.get(timeout=0.5)
                got[result["index"]] = result
            except queue_module.Empty:
                pass
            failed = [p.name for p in processes if p.exitcode not in (None, 0)]
            if failed:
                error = f"process(es) {', '.join(failed)} failed (see above)"
            elif time.monotonic() > deadline:
                error = f"timed out after {args.timeout:.0f} s"
        if error is None:
            for process in processes:
                process.join(max(1.0, min(60.0, deadline - time.monotonic())))
            failed = [p.name for p in processes if p.exitcode != 0]
            if failed:
                error = f"process(es) {', '.join(failed)} did not exit cleanly"
    except KeyboardInterrupt:
        error = "interrupted"
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)
    if error is not None:
        log(f"torch_rpc_ps_w7: FAILED: {error}")
        sys.exit(1)
    seconds = max(r["end"] for r in got.values()) - min(r["start"] for r in got.values())
    heldout = got[0].get("heldout")
    if heldout:
        log(f"held-out log loss {heldout[0]:.5f}, base rate {heldout[1]:.5f} "
            f"(positive rate {heldout[2]:.4f}), ratio {heldout[0] / heldout[1]:.4f}")
    print(json.dumps({
        "examples_per_sec": args.trainers * args.steps * args.batch / seconds,
        "steps_per_trainer": args.steps, "trainers": args.trainers, "ps": args.ps,
        "batch": args.batch, "heldout_logloss": heldout[0] if heldout else None,
        "baserate_logloss": heldout[1] if heldout else None,
        "rpc_backend": rpc.BackendType.TENSORPIPE.name}), flush=True)


if __name__ == "__main__":
    main()
