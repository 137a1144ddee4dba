"""Turns Google Benchmark JSON into the METRIC/RATIO lines of bench/run.sh (medians of repeats)."""
import json
import sys


def medians(path):
    with open(path) as f:
        data = json.load(f)
    result = {}
    for bench in data["benchmarks"]:
        if bench.get("aggregate_name") == "median":
            result[bench["run_name"]] = bench
    return result


def load_json(path):
    with open(path) as f:
        return json.loads(f.read().strip().splitlines()[-1])


def main():
    kind, path = sys.argv[1], sys.argv[2]
    runs = medians(path) if kind not in ("train", "mirrored", "cluster") else {}
    if kind == "executor":
        for metric, run in (("executor_overhead_us_per_node", "BM_ExecutorChain"),
                            ("executor_fan_us_per_node", "BM_ExecutorFan")):
            bench = runs[run]
            assert bench["time_unit"] == "us"
            print(f"METRIC {metric} {bench['real_time'] / bench['nodes']:.3f} us")
    elif kind == "matmul":
        # One RATIO per shape: Weft's MatMul op against cblas_sgemm on OpenBLAS's own threads.
        for name, run in runs.items():
            if not name.startswith("BM_WeftMatMul/"):
                continue
            shape = name[len("BM_WeftMatMul/"):-len("/real_time")]
            dims = "x".join(part.split(":")[1] for part in shape.split("/")[1:])
            label = "matmul1024" if dims == "1024x1024x1024" else f"matmul_{dims}"
            weft = run["GFLOPS"]
            blas = runs[name.replace("BM_WeftMatMul", "BM_OpenBlasSgemm")]["GFLOPS"]
            print(f"METRIC {label}_weft_gflops {weft:.1f} GFLOP/s")
            print(f"METRIC {label}_openblas_gflops {blas:.1f} GFLOP/s")
            print(f"RATIO {label}_vs_openblas {weft / blas:.3f}")
    elif kind == "train":
        for model in ("mlp", "cnn"):
            weft = load_json(f"{path}/weft_{model}.json")["train_images_per_sec"]
            torch = max(load_json(f"{path}/torch_{model}_{t}.json")["train_images_per_sec"]
                        for t in (1, 2))
            print(f"METRIC train_{model}_weft_images_per_sec {weft:.0f} images/s")
            print(f"METRIC train_{model}_torch_images_per_sec {torch:.0f} images/s")
            print(f"RATIO train_{model}_vs_torch {weft / torch:.3f}")
    elif kind == "allreduce":
        # W3: median time and bus bandwidth per size and participant count, and the 64 MB, 4-device
        # all-reduce against one thread summing four 64 MB buffers.
        def size_label(size):
            return f"{size >> 20}mb" if size >= 1 << 20 else f"{size >> 10}kb"
        for name, run in runs.items():
            if not name.startswith("BM_AllReduce/"):
                continue
            fields = dict(part.split(":") for part in name.split("/")[1:] if ":" in part)
            label = f"allreduce_{size_label(int(fields['bytes']))}_{fields['devices']}dev"
            assert run["time_unit"] == "us"
            print(f"METRIC {label}_us {run['real_time']:.1f} us")
            print(f"METRIC {label}_busbw_gbps {run['bus_bytes_per_second'] / 1e9:.2f} GB/s")
        plain = runs["BM_PlainSum/real_time"]["real_time"]
        allreduce = runs["BM_AllReduce/bytes:67108864/devices:4/real_time"]["real_time"]
        print(f"METRIC plain_sum_64mb_x4_us {plain:.1f} us")
        print(f"RATIO allreduce64mb_4dev_vs_plain_sum {plain / allreduce:.3f}")
    elif kind == "mirrored":
        # W1 on 2 replicas: global training images/s of Weft's MirroredStrategy and PyTorch DDP.
        weft = load_json(f"{path}/weft_mirrored2.json")
        ddp = load_json(f"{path}/torch_ddp2.json")
        print(f"METRIC mirrored2_mlp_weft_images_per_sec {weft['train_images_per_sec']:.0f} images/s")
        print(f"METRIC mirrored2_mlp_torch_ddp_images_per_sec {ddp['train_images_per_sec']:.0f} "
              "images/s")
        print(f"METRIC mirrored2_mlp_weft_final_loss {weft['final_loss']:.4f} loss")
        print(f"METRIC mirrored2_mlp_torch_ddp_final_loss {ddp['final_loss']:.4f} loss")
        print(f"RATIO mirrored2_mlp_vs_torch_ddp2 "
              f"{weft['train_images_per_sec'] / ddp['train_images_per_sec']:.3f}")
    elif kind == "cluster":
        # W1 on 2 replicas in 2 processes: `weft train --target` over two `weft server`s against
        # PyTorch DDP (gloo), both with one thread per process.
        weft = load_json(f"{path}/weft_cluster2.json")
        ddp = load_json(f"{path}/torch_ddp2.json")
        print(f"METRIC cluster2_mlp_weft_images_per_sec {weft['train_images_per_sec']:.0f} images/s")
        print(f"METRIC cluster2_mlp_torch_ddp_images_per_sec {ddp['train_images_per_sec']:.0f} "
              "images/s")
        print(f"RATIO cluster2_mlp_vs_torch_ddp2 "
              f"{weft['train_images_per_sec'] / ddp['train_images_per_sec']:.3f}")
    else:
        raise SystemExit(f"unknown kind {kind}")


if __name__ == "__main__":
    main()
