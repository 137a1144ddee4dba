"""PyTorch's side of `bench/run.sh conv`: W2's layers (batch 128, 5x5 SAME convolutions 1->32 on
28x28 and 32->64 on 14x14, 2x2 max pools) one op at a time, as a PyTorch user runs them (NCHW,
oneDNN underneath), at 1 and 2 threads; prints one JSON object of each op's better median in ms."""
import json
import time

import torch
import torch.nn.functional as F

BATCH = 128
LAYERS = {"conv1": (28, 1, 32), "conv2": (14, 32, 64)}


def median_ms(fn, seconds=0.5):
    fn()
    times = []
    deadline = time.perf_counter() + seconds
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < 1000):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2]


def layer_ops(size, in_depth, out_depth):
    x = torch.randn(BATCH, in_depth, size, size)
    w = torch.randn(out_depth, in_depth, 5, 5)
    y = F.conv2d(x, w, padding=2)
    dy = torch.randn_like(y)
    pooled, indices = F.max_pool2d(y, 2, return_indices=True)
    dpooled = torch.randn_like(pooled)

    def backward(mask):
        return lambda: torch.ops.aten.convolution_backward(
            dy, x, w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1, mask)

    return {
        "forward": lambda: F.conv2d(x, w, padding=2),
        "backprop_input": backward([True, False, False]),
        "backprop_filter": backward([False, True, False]),
        "maxpool": lambda: F.max_pool2d(y, 2),
        "maxpool_grad": lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            dpooled, y, [2, 2], [2, 2], [0, 0], [1, 1], False, indices),
    }


def main():
    result = {}
    with torch.no_grad():
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for name, dims in LAYERS.items():
                for op, fn in layer_ops(*dims).items():
                    key = f"{name}_{op}"
                    ms = median_ms(fn)
                    result[key] = min(ms, result.get(key, ms))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
