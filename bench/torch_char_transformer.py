"""PyTorch peer of Weft's workload W6 for `bench/run.sh transformer`: a byte-level decoder-only
transformer trained on Debian's fortunes, with the same corpus, split, model, initialisation,
optimizer, schedule and batches as Weft's side. run.sh runs it at fp32 and bf16, in one process or
DDP (gloo, 2 processes on loopback), and reads the JSON on its last stdout line: the global
training tokens/s (the first --warmup-steps-excluded steps untimed), the mean loss of the last 10
steps and, with --validate, the held-out loss in nats per byte. Progress goes to stderr.

W6: corpus = every regular file (not a symlink) of /usr/share/games/fortunes without a '.' in its
name, sorted by name, concatenated; bytes are tokens; the last int(size * 0.1) bytes are held out.
4 pre-LayerNorm blocks (width 256, 4 heads of 64, causal attention written out, MLP 1024 with
exact GELU), learned positions (context 128), final LayerNorm, untied Linear(256, 256) head, no
dropout, GPT-2 init. AdamW with warmup + cosine, clipping at global norm 1. Global batch 32 x 128
at offsets drawn by numpy.random.default_rng(seed); rank r of W takes sequences
[r * 32 / W, (r + 1) * 32 / W) of it.

Usage: torch_char_transformer.py [--steps N] [--threads T] [--precision fp32|bf16] [--world W]
                                 [--validate] [--seed S] [--warmup-steps-excluded K]
"""
import argparse
import json
import math
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

CORPUS_DIR = "/usr/share/games/fortunes"
VOCAB, CONTEXT, LAYERS, WIDTH, HEADS, MLP = 256, 128, 4, 256, 4, 1024
GLOBAL_BATCH, HELD_OUT, VALIDATION_WINDOWS, VALIDATION_BATCH = 32, 0.1, 256, 32
PEAK_LR, FINAL_LR, WARMUP_STEPS, DECAY_END = 1e-3, 1e-4, 100, 2000


def log(message):
    print(message, file=sys.stderr, flush=True)


def read_corpus(directory=CORPUS_DIR):
    """(train, validation) uint8 tensors of W6's corpus."""
    names = sorted(entry.name for entry in os.scandir(directory)
                   if entry.is_file(follow_symlinks=False) and "." not in entry.name)
    text = b"".join(open(os.path.join(directory, name), "rb").read() for name in names)
    data = torch.from_numpy(np.frombuffer(text, dtype=np.uint8).copy())
    validation_bytes = int(len(text) * HELD_OUT)
    return data[:len(text) - validation_bytes], data[len(text) - validation_bytes:]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm = nn.LayerNorm(WIDTH, eps=1e-5)
        self.q, self.k, self.v, self.o = (nn.Linear(WIDTH, WIDTH) for _ in range(4))
        self.mlp_norm = nn.LayerNorm(WIDTH, eps=1e-5)
        self.mlp_in, self.mlp_out = nn.Linear(WIDTH, MLP), nn.Linear(MLP, WIDTH)

    def forward(self, x, future):
        b, t, _ = x.shape
        h = self.attention_norm(x)
        q, k, v = (z.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2)
                   for z in (self.q(h), self.k(h), self.v(h)))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(WIDTH // HEADS)
        attended = scores.masked_fill(future[:t, :t], float("-inf")).softmax(dim=-1) @ v
        x = x + self.o(attended.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.mlp_norm(x))))  # exact (erf) GELU


class CharTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        self.positions = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.final_norm = nn.LayerNorm(WIDTH, eps=1e-5)
        self.head = nn.Linear(WIDTH, VOCAB)
        # The causal mask: a plain attribute, not a buffer (gloo cannot broadcast bool tensors).
        self.future = torch.ones(CONTEXT, CONTEXT, dtype=torch.bool).triu(1)
        for module in self.modules():  # GPT-2 init, as Weft's CharTransformer
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, tokens):
        x = self.tokens(tokens) + self.positions(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x, self.future)
        return self.head(self.final_norm(x))


def learning_rate(step):
    """The rate of update `step` (0-based), as Weft's schedule and the reference's CosineDecay with
    warmup give it: warmup 1e-3 * step / 100 for step < 100 (the first update uses 0), then the
    cosine from 1e-3 at step 100 to 1e-4 at step 2000, and 1e-4 after."""
    if step < WARMUP_STEPS:
        return PEAK_LR * step / WARMUP_STEPS
    fraction = min(step - WARMUP_STEPS, DECAY_END - WARMUP_STEPS) / (DECAY_END - WARMUP_STEPS)
    return FINAL_LR + (PEAK_LR - FINAL_LR) * 0.5 * (1 + math.cos(math.pi * fraction))


def loss_of(net, inputs, targets, precision, reduction="mean"):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        logits = net(inputs)
        return F.cross_entropy(logits.reshape(-1, VOCAB).float(), targets.reshape(-1),
                               reduction=reduction)


def validation_loss(net, validation, precision):
    """Mean cross-entropy (nats per byte) over the first 256 consecutive 128-byte windows."""
    count = min(VALIDATION_WINDOWS, (len(validation) - 1) // CONTEXT)
    index = torch.arange(count)[:, None] * CONTEXT + torch.arange(CONTEXT + 1)
    windows = validation[index].long()
    total = 0.0
    with torch.no_grad():
        for start in range(0, count, VALIDATION_BATCH):
            batch = windows[start:start + VALIDATION_BATCH]
            total += loss_of(net, batch[:, :-1], batch[:, 1:], precision, "sum").item()
    return total / (count * CONTEXT)


def worker(rank, args, port, queue):
    torch.set_num_threads(args.threads)
    if args.world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.manual_seed(args.seed)
    train, validation = read_corpus()
    model = CharTransformer()
    net = nn.parallel.DistributedDataParallel(model) if args.world > 1 else model
    params = list(model.parameters())
    # Weight decay on matrices and embeddings only, not on biases and LayerNorm parameters.
    # eps 1e-7 is Keras' default, which Weft's AdamW uses (PyTorch's default is 1e-8).
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=PEAK_LR, betas=(0.9, 0.95), eps=1e-7)
    rng = np.random.default_rng(args.seed)  # every rank draws the same global batches
    per_rank = GLOBAL_BATCH // args.world
    span = torch.arange(CONTEXT + 1)
    excluded = min(args.warmup_steps_excluded, args.steps - 1)
    losses, started = [], time.perf_counter()
    began = started
    for step in range(args.steps):
        if step == excluded:
            began = time.perf_counter()
        offsets = rng.integers(0, len(train) - CONTEXT - 1, size=GLOBAL_BATCH, endpoint=True)
        mine = torch.from_numpy(offsets[rank * per_rank:(rank + 1) * per_rank])
        windows = train[mine[:, None] + span].long()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(net, windows[:, :-1], windows[:, 1:], args.precision)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        losses.append(loss.item())
        if rank == 0 and ((step + 1) % 10 == 0 or step + 1 == args.steps):
            log(f"step {step + 1}/{args.steps}: loss {losses[-1]:.4f} "
                f"(lr {learning_rate(step):.2e}, {time.perf_counter() - started:.1f} s)")
    seconds = time.perf_counter() - began
    last = torch.tensor(losses[-10:], dtype=torch.float64)
    if args.world > 1:  # the global batch's loss: the mean of the ranks' equal shares
        dist.all_reduce(last)
        last /= args.world
    if rank == 0:
        timed = args.steps - excluded
        result = {"framework": "pytorch", "precision": args.precision, "threads": args.threads,
                  "world": args.world, "steps": args.steps, "timed_steps": timed,
                  "train_tokens_per_sec": GLOBAL_BATCH * CONTEXT * timed / seconds,
                  "final_loss": last.mean().item()}
        if args.validate:
            result["validation_loss"] = validation_loss(model, validation, args.precision)
            log(f"validation loss {result['validation_loss']:.4f} nats/byte")
        queue.put(result)
    if args.world > 1:
        dist.barrier()
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--world", type=int, default=1, help="1: one process; >1: DDP over gloo")
    parser.add_argument("--validate", action="store_true", help="held-out loss at the end")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--warmup-steps-excluded", type=int, default=10,
                        help="untimed first steps (at most steps - 1)")
    args = parser.parse_args()
    if args.steps < 1 or args.world < 1 or GLOBAL_BATCH % args.world:
        raise SystemExit(f"need steps >= 1 and a world dividing {GLOBAL_BATCH}")
    # Debian's torch runs its GEMMs on OpenBLAS (pthreads), which reads these when it loads: the
    # workers are fresh processes (spawned, even for world 1), so they see them. run.sh's win.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    if "OPENBLAS_CORETYPE" not in os.environ:  # as run.sh: OpenBLAS misdetects newer Xeons
        with open("/proc/cpuinfo") as cpuinfo:
            avx512bw = "avx512bw" in cpuinfo.read().split()
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX" if avx512bw else "Haswell"
    queue = mp.get_context("spawn").Queue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.world, join=True)
    print(json.dumps(queue.get(timeout=60)))


if __name__ == "__main__":
    main()
