"""PyTorch DistributedDataParallel side of `bench/run.sh mirrored`, `cluster` and `multiworker`: W1
(MLP) or W2 (CNN) with a global batch split across `--world` processes on the gloo backend over
loopback, one thread each, data preloaded as tensors in every process, each rank taking its slice
of every global batch. Rank 0 prints one JSON line with the global training images/s (training
steps only) and the final loss.

Usage: torch_ddp_train.py --world 2 [--model mlp|cnn] [--epochs E] [--max-steps S]
                          [--batch-size GLOBAL]
"""
import argparse
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch_train import build, load_training_data, train


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, queue):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.manual_seed(1)
    images, labels = load_training_data(args.data)
    net = torch.nn.parallel.DistributedDataParallel(build(args.model))
    per_rank = args.batch_size // args.world
    # The same shuffle in every rank; each takes its slice of every global batch.
    steps, images_per_sec, loss_value = train(
        net, images, labels, args, shard=slice(rank * per_rank, (rank + 1) * per_rank),
        generator=torch.Generator().manual_seed(1))
    if rank == 0:
        queue.put({"model": args.model, "world": args.world, "steps": steps,
                   "train_images_per_sec": images_per_sec, "final_loss": loss_value})
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=-1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    if args.batch_size % args.world:
        raise SystemExit(f"global batch {args.batch_size} is not divisible by {args.world}")
    context = mp.get_context("spawn")
    queue = context.Queue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.world, join=True)
    print(json.dumps(queue.get(timeout=60)))


if __name__ == "__main__":
    main()
