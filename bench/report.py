"""Turns Google Benchmark JSON into the METRIC/RATIO lines of bench/run.sh (medians of repeats)."""
import json
import os
import re
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


def read_metrics(path):
    """The `METRIC <name> <value> <unit>` lines of a text file, in order: {name: (line, value)}."""
    metrics = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 4 and fields[0] == "METRIC":
                metrics[fields[1]] = (line.strip(), float(fields[2]))
    return metrics


def chief_summary(path):
    """The JSON summary line of the chief (task 0) in the output of `weft launch`, which starts each
    worker's lines with "[worker <task>] ". The last such line wins; an unprefixed JSON line counts
    as the chief's too (a launcher that passes the chief's output through as is)."""
    summary = None
    with open(path, errors="replace") as f:
        for line in f:
            match = re.match(r"\s*(?:\[worker (\d+)\]\s?)?(.*)$", line.rstrip("\r\n"))
            if match.group(1) not in (None, "0"):
                continue
            text = match.group(2).split("\r")[-1].strip()  # after any progress-bar redraw
            if not text.startswith("{"):
                continue
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict) and "train_images_per_sec" in record:
                summary = record
    if summary is None:
        raise SystemExit(f"{path}: no JSON summary line from the chief ([worker 0])")
    return summary


def code_lines(path):
    """The lines of a C++ source that are neither blank nor `//` comments."""
    with open(path) as f:
        return sum(1 for line in f if line.strip() and not line.strip().startswith("//"))


def print_against_ddp(label, weft, ddp, accuracy=False):
    """METRIC lines of a Weft summary and a PyTorch DDP one, then their images/s RATIO."""
    print(f"METRIC {label}_weft_images_per_sec {weft['train_images_per_sec']:.0f} images/s")
    print(f"METRIC {label}_torch_ddp_images_per_sec {ddp['train_images_per_sec']:.0f} images/s")
    print(f"METRIC {label}_weft_final_loss {weft['final_loss']:.4f} loss")
    print(f"METRIC {label}_torch_ddp_final_loss {ddp['final_loss']:.4f} loss")
    if accuracy:
        print(f"METRIC {label}_weft_test_accuracy {weft['test_accuracy']:.4f} accuracy")
    print(f"RATIO {label}_vs_torch_ddp2 "
          f"{weft['train_images_per_sec'] / ddp['train_images_per_sec']:.3f}")


def conv_table(weft_path, torch_path):
    """`bench/run.sh conv`: per W2 layer and pass, Weft's two algorithms, the one it chooses, and
    PyTorch's time; GFLOP/s of the chosen one as a fraction of the SGEMM rate of the same run."""
    runs = medians(weft_path)
    with open(torch_path) as f:
        torch = json.load(f)
    sgemm = runs["BM_OpenBlasSgemm1024/real_time"]["GFLOPS"]
    print(f"METRIC conv_sgemm1024_openblas_gflops {sgemm:.1f} GFLOP/s")
    passes = {0: "forward", 1: "backprop_input", 2: "backprop_filter"}
    pools = {3: "maxpool", 4: "maxpool_grad"}
    rows = []
    for layer in (0, 1):
        name = f"conv{layer + 1}"
        for op, label in {**passes, **pools}.items():
            def ms(algorithm):
                run = runs.get(f"BM_W2Layer/layer:{layer}/op:{op}/algorithm:{algorithm}/real_time")
                return None if run is None else run["real_time"]
            chosen = ms(2)
            torch_ms = torch.get(f"{name}_{label}")
            metric = f"conv_{name}_{label}"
            print(f"METRIC {metric}_weft_ms {chosen:.3f} ms")
            if torch_ms is not None:
                print(f"METRIC {metric}_torch_ms {torch_ms:.3f} ms")
                print(f"RATIO {metric}_vs_torch {torch_ms / chosen:.3f}")
            gflops = fraction = None
            if op in passes:
                gflops = runs[f"BM_W2Layer/layer:{layer}/op:{op}/algorithm:2/real_time"]["GFLOPS"]
                fraction = gflops / sgemm
                print(f"METRIC {metric}_gflops {gflops:.1f} GFLOP/s")
                print(f"METRIC {metric}_fraction_of_sgemm {fraction:.2f} fraction")
            rows.append((f"{name} {label}", ms(0), ms(1), chosen, torch_ms, gflops, fraction))
    def cell(v, fmt):
        return "-" if v is None else format(v, fmt)
    print(f"# roofline: OpenBLAS SGEMM 1024^3 on 2 threads = {sgemm:.0f} GFLOP/s")
    print("# layer/pass               im2col ms  onednn ms  chosen ms  torch ms  GFLOP/s  of SGEMM")
    for name, im2col, onednn, chosen, torch_ms, gflops, fraction in rows:
        print(f"# {name:24} {cell(im2col, '9.3f')}  {cell(onednn, '9.3f')}  {cell(chosen, '9.3f')}"
              f"  {cell(torch_ms, '8.3f')}  {cell(gflops, '7.1f')}  {cell(fraction, '8.2f')}")


def main():
    kind, path = sys.argv[1], sys.argv[2]
    runs = medians(path) if kind in ("executor", "matmul", "allreduce") else {}
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
        # W1 and W2 on 2 replicas: global training images/s of Weft's MirroredStrategy and PyTorch
        # DDP; W1 on 2 replicas against 1 device in the same process.
        for model, weft_file, ddp_file in (("mlp", "weft_mirrored2", "torch_ddp2"),
                                           ("cnn", "weft_mirrored2_cnn", "torch_ddp2_cnn")):
            print_against_ddp(f"mirrored2_{model}", load_json(f"{path}/{weft_file}.json"),
                              load_json(f"{path}/{ddp_file}.json"))
        mirrored = load_json(f"{path}/weft_mirrored2.json")["train_images_per_sec"]
        one = load_json(f"{path}/weft_one_device.json")["train_images_per_sec"]
        print(f"METRIC one_device_mlp_weft_images_per_sec {one:.0f} images/s")
        print(f"RATIO mirrored2_vs_one_device_mlp {mirrored / one:.3f}")
    elif kind == "conv":
        conv_table(path, sys.argv[3])
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
    elif kind == "collective":
        # W3 across processes: echo Weft's medians (shared-memory transport, and TCP forced) and
        # Gloo's, then Gloo's time over Weft's for every size and process count.
        metrics = read_metrics(path)
        for line, _ in metrics.values():
            print(line)
        missing = []
        for procs in (2, 4):
            for size in ("4kb", "256kb", "4mb", "64mb"):
                gloo_name = f"gloo_allreduce{size}_{procs}proc"
                for transport in ("", "_tcp"):
                    weft_name = f"allreduce{size}_{procs}proc{transport}"
                    missing += [name for name in (gloo_name, weft_name) if name not in metrics]
                    if gloo_name in metrics and weft_name in metrics:
                        print(f"RATIO {weft_name}_vs_gloo "
                              f"{metrics[gloo_name][1] / metrics[weft_name][1]:.3f}")
        if missing:
            raise SystemExit(f"{path}: no METRIC {', '.join(sorted(set(missing)))}")
    elif kind == "multiworker":
        # W1 and W2 on 2 worker processes of 1 device each: Weft's MultiWorkerMirroredStrategy
        # (the chief's summary through `weft launch`) against PyTorch DDP in 2 processes, and W1's
        # multi-worker figure against the in-process MirroredStrategy over 2 devices.
        for model in ("mlp", "cnn"):
            print_against_ddp(f"multiworker2_{model}",
                              chief_summary(f"{path}/multiworker2_{model}.log"),
                              load_json(f"{path}/torch_ddp2_{model}.json"), accuracy=True)
        multiworker = chief_summary(f"{path}/multiworker2_mlp.log")
        mirrored = load_json(f"{path}/weft_mirrored2.json")
        print(f"METRIC multiworker2_mlp_mirrored_images_per_sec "
              f"{mirrored['train_images_per_sec']:.0f} images/s")
        print(f"RATIO multiworker2_vs_mirrored2_mlp "
              f"{multiworker['train_images_per_sec'] / mirrored['train_images_per_sec']:.3f}")
    elif kind == "checkpoint":
        # W2 saving every 50 steps: the longest a save held training up (its call, plus what the
        # next step took beyond the mean), in the background against synchronously.
        sync = load_json(f"{path}/checkpoint_sync.json")
        async_ = load_json(f"{path}/checkpoint_async.json")
        for label, run in (("sync", sync), ("async", async_)):
            print(f"METRIC checkpoint_w2_{label}_max_stall_ms "
                  f"{run['max_save_stall_seconds'] * 1000:.1f} ms")
            print(f"METRIC checkpoint_w2_{label}_images_per_sec "
                  f"{run['train_images_per_sec']:.0f} images/s")
        print(f"RATIO async_save_stall_vs_sync "
              f"{async_['max_save_stall_seconds'] / sync['max_save_stall_seconds']:.3f} "
              "(smaller is better)")
    elif kind == "elastic":
        # Being elastic costs nothing measurable without failures; with them, how fast the
        # survivors go on and how well the model still learns; and a joining worker's heal.
        static = load_json(f"{path}/elastic_ratio_static.json")["summary"]
        elastic = load_json(f"{path}/elastic_ratio_elastic.json")["summary"]
        print(f"METRIC elastic_w2_static_images_per_sec {static['train_images_per_sec']:.0f} "
              "images/s")
        print(f"METRIC elastic_w2_elastic_images_per_sec {elastic['train_images_per_sec']:.0f} "
              "images/s")
        print(f"RATIO elastic_vs_static_multiworker_cnn "
              f"{elastic['train_images_per_sec'] / static['train_images_per_sec']:.3f}")
        chaos = load_json(f"{path}/elastic_chaos.json")
        calm = load_json(f"{path}/elastic_chaos_none.json")
        run = chaos["summary"]
        print(f"METRIC elastic_chaos_exit_code {chaos['exit_code']} (kills: "
              f"{', '.join(str(k['worker']) + ' at ' + str(k['seconds']) + ' s' for k in chaos['kills'])})")
        print(f"METRIC elastic_chaos_membership_changes {run.get('membership_changes', 0)} changes")
        print(f"METRIC elastic_chaos_steps_recomputed {run.get('steps_recomputed', 0)} steps")
        print(f"METRIC elastic_recovery_seconds {chaos['longest_recovery_seconds']:.3f} s")
        accuracy, calm_accuracy = run.get("test_accuracy", 0), calm["summary"]["test_accuracy"]
        print(f"METRIC elastic_chaos_test_accuracy {accuracy:.4f} (without failures "
              f"{calm_accuracy:.4f}, difference {100 * (accuracy - calm_accuracy):+.2f} points)")
        heal = load_json(f"{path}/elastic_heal.json")
        print(f"METRIC elastic_heal_seconds {heal['longest_heal_seconds']:.3f} s")
    elif kind == "libtorch":
        # W2 as a user writes it: the fmnist_cnn example (Weft's layers and Model::Fit) against the
        # same model in libtorch's C++ frontend at its better thread count, and each program's
        # length in lines of code.
        weft = load_json(f"{path}/weft_layers_cnn.json")["images_per_sec"]
        libtorch = max(load_json(f"{path}/libtorch_cnn_{t}.json")["images_per_sec"] for t in (1, 2))
        print(f"METRIC layers_cnn_weft_images_per_sec {weft:.0f} images/s")
        print(f"METRIC layers_cnn_libtorch_images_per_sec {libtorch:.0f} images/s")
        print(f"RATIO layers_cnn_vs_libtorch {weft / libtorch:.3f}")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for label, source in (("weft", "examples/fmnist_cnn/main.cc"),
                              ("libtorch", "bench/libtorch_cnn.cc")):
            print(f"METRIC example_lines_{label} {code_lines(os.path.join(root, source))} lines")
    elif kind == "trace":
        # W1 with tracing off against the build before tracing existed, and with every step
        # traced against off; medians of the interleaved rounds.
        def median_rate(label):
            rates = sorted(load_json(f"{path}/trace_{label}_{r}.json")["train_images_per_sec"]
                           for r in range(1, 10))
            return rates[len(rates) // 2]
        before, off, on = (median_rate(label) for label in ("before", "off", "on"))
        print(f"METRIC trace_before_mlp_images_per_sec {before:.0f} images/s")
        print(f"METRIC trace_off_mlp_images_per_sec {off:.0f} images/s")
        print(f"METRIC trace_on_mlp_images_per_sec {on:.0f} images/s")
        print(f"RATIO trace_off_vs_before_mlp {off / before:.3f}")
        print(f"RATIO trace_on_vs_off_mlp {on / off:.3f}")
    elif kind == "ps":
        # W7 with 2 workers and 2 ps tasks: Weft (`weft launch --ps`, w7_dlrm as the chief) against
        # PyTorch's parameter server on torch.distributed.rpc (bench/torch_rpc_ps_w7.py).
        weft_rate = None
        with open(f"{path}/w7_ps.txt") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[0] in ("METRIC", "RATIO"):
                    print(line.strip().replace("METRIC w7_", "METRIC ps_w7_", 1)
                          .replace("RATIO w7_", "RATIO ps_w7_", 1).replace("ps_w7_ps_w7_", "ps_w7_"))
                    if fields[1] == "w7_examples_per_sec":
                        weft_rate = float(fields[2])
        torch = load_json(f"{path}/torch_rpc_w7.json")
        print(f"METRIC ps_w7_torch_rpc_examples_per_sec {torch['examples_per_sec']:.0f} examples/s "
              f"({torch['trainers']} trainers, {torch['ps']} ps, {torch['rpc_backend']})")
        if weft_rate is None:
            raise SystemExit("the W7 run printed no METRIC w7_examples_per_sec")
        print(f"RATIO ps_w7_vs_torch_rpc {weft_rate / torch['examples_per_sec']:.3f}")
    elif kind == "transformer":
        # W6, 200 steps: Weft's best precision against PyTorch's best of float32 and bf16 autocast
        # at 1 and 2 threads, Weft's in float32 and under mixed_bfloat16; then 2 workers each.
        weft = {p: load_json(f"{path}/weft_transformer_{p}.json") for p in ("fp32", "bf16")}
        for precision, run in weft.items():
            print(f"METRIC transformer_weft_{precision}_tokens_per_sec "
                  f"{run['train_tokens_per_sec']:.0f} tokens/s")
        torch = {}
        for precision in ("fp32", "bf16"):
            for threads in (1, 2):
                run = load_json(f"{path}/torch_transformer_{precision}_{threads}.json")
                torch[(precision, threads)] = run["train_tokens_per_sec"]
                print(f"METRIC transformer_torch_{precision}_{threads}t_tokens_per_sec "
                      f"{run['train_tokens_per_sec']:.0f} tokens/s")
        best_weft = max(run["train_tokens_per_sec"] for run in weft.values())
        print(f"RATIO transformer_vs_torch {best_weft / max(torch.values()):.3f}")
        print(f"RATIO transformer_bf16_vs_fp32 "
              f"{weft['bf16']['train_tokens_per_sec'] / weft['fp32']['train_tokens_per_sec']:.3f}")
        multiworker = max((chief_summary(f"{path}/multiworker2_transformer_{p}.log")
                           for p in ("fp32", "bf16")), key=lambda s: s["train_tokens_per_sec"])
        ddp = max(load_json(f"{path}/torch_ddp2_transformer_{p}.json")["train_tokens_per_sec"]
                  for p in ("fp32", "bf16"))
        print(f"METRIC transformer_multiworker2_weft_tokens_per_sec "
              f"{multiworker['train_tokens_per_sec']:.0f} tokens/s ({multiworker['precision']})")
        print(f"METRIC transformer_torch_ddp2_tokens_per_sec {ddp:.0f} tokens/s")
        print(f"RATIO transformer_multiworker2_vs_torch_ddp2 "
              f"{multiworker['train_tokens_per_sec'] / ddp:.3f}")
    elif kind == "transformer_quality":
        # W6 after its 2,000 steps: validation loss in nats per byte, lower is better; the RATIO is
        # PyTorch's over Weft's (at least 0.98: Weft within 2%).
        # The bf16 RATIO is Weft's float32 loss over its mixed_bfloat16 one (at least 0.98).
        weft = load_json(f"{path}/weft_transformer_quality_fp32.json")["validation_loss"]
        weft_bf16 = load_json(f"{path}/weft_transformer_quality_bf16.json")["validation_loss"]
        torch = load_json(f"{path}/torch_transformer_quality_fp32.json")["validation_loss"]
        print(f"METRIC transformer_quality_weft_fp32_validation_loss {weft:.4f} nats/byte")
        print(f"METRIC transformer_quality_weft_bf16_validation_loss {weft_bf16:.4f} nats/byte")
        print(f"METRIC transformer_quality_torch_fp32_validation_loss {torch:.4f} nats/byte")
        print(f"RATIO transformer_quality_fp32_vs_torch {torch / weft:.3f}")
        print(f"RATIO transformer_quality_bf16_vs_fp32 {weft / weft_bf16:.3f}")
    else:
        raise SystemExit(f"unknown kind {kind}")


if __name__ == "__main__":
    main()
