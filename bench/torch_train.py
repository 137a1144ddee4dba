"""PyTorch side of `bench/run.sh train`: trains the same model as `weft train` (W1 MLP or W2 CNN)
with the same batch, optimizer and learning rate, data preloaded as tensors, and prints one JSON
line with training images/s (training steps only) and the final loss.

Usage: torch_train.py --model mlp|cnn --threads N [--epochs E] [--max-steps S] [--data DIR]
"""
import argparse
import gzip
import json
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def build(model):
    if model == "mlp":
        return torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 10))
    return torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 28, 28)),
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))


def load_training_data(data_dir):
    images = torch.from_numpy(read_idx(f"{data_dir}/train-images-idx3-ubyte.gz")
                              .reshape(-1, 784).astype(np.float32) / 255.0)
    labels = torch.from_numpy(read_idx(f"{data_dir}/train-labels-idx1-ubyte.gz").astype(np.int64))
    return images, labels


def train(net, images, labels, args, shard=slice(None), generator=None):
    """Momentum SGD over shuffled global batches of args.batch_size; each step trains on
    `shard` of the batch (all of it by default). Returns (steps, images/s over the global batch,
    final loss), timing training steps only."""
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    steps, trained, seconds, loss_value = 0, 0, 0.0, float("nan")
    batch = args.batch_size
    for _ in range(args.epochs):
        order = torch.randperm(images.shape[0], generator=generator)
        for start in range(0, images.shape[0] - batch + 1, batch):
            began = time.perf_counter()
            index = order[start:start + batch][shard]
            x, y = images[index], labels[index]
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            loss_value = loss.item()
            seconds += time.perf_counter() - began
            trained += batch
            steps += 1
            if 0 <= args.max_steps <= steps:
                return steps, trained / seconds, loss_value
    return steps, trained / seconds, loss_value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=-1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    images, labels = load_training_data(args.data)
    steps, images_per_sec, loss_value = train(build(args.model), images, labels, args)
    print(json.dumps({"model": args.model, "threads": args.threads, "steps": steps,
                      "train_images_per_sec": images_per_sec, "final_loss": loss_value}))


if __name__ == "__main__":
    main()
