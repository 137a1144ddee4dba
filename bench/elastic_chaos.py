#!/usr/bin/env python3
"""Runs `weft launch --elastic` and kills workers on a schedule, for bench/run.sh elastic.

Starts `weft launch --workers N --elastic [--restart-failed] -- weft train ... --json`, and every
--kill-every seconds (after the first step) SIGKILLs a worker chosen by a seeded generator, --kills
times. Prints one JSON object: the launch's exit code, the kills (worker, seconds after start),
and the summary of the worker that took part in most generations (every worker of an elastic job
prints one), with the longest recovery any survivor reported.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

START = re.compile(r"^weft launch: started worker:(\d+) pid (\d+) at ")
SUMMARY = re.compile(r"^\[worker (\d+)\] (\{.*\})$")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", default="build/bin/weft")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=0)
    parser.add_argument("--kill-every", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--elastic", action="store_true")
    parser.add_argument("--restart-failed", action="store_true")
    parser.add_argument("--log", help="write the launch's whole output here")
    parser.add_argument("train", nargs=argparse.REMAINDER, help="weft train's flags, after --")
    args = parser.parse_args()
    train = [a for a in args.train if a != "--"]
    launch = [args.weft, "launch", "--workers", str(args.workers)]
    if args.elastic:
        launch.append("--elastic")
    if args.restart_failed:
        launch.append("--restart-failed")
    launch += ["--", args.weft, "train", "--strategy", "multi_worker_mirrored", "--json"] + train

    pids = {}
    lines = []
    first_step = threading.Event()
    lock = threading.Lock()
    started = time.monotonic()
    process = subprocess.Popen(launch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def read():
        for line in process.stdout:
            line = line.rstrip("\n")
            with lock:
                lines.append(line)
                match = START.match(line)
                if match:
                    pids[int(match.group(1))] = int(match.group(2))
            if "took its first step" in line:
                first_step.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    kills = []
    rng = random.Random(args.seed)
    if args.kills > 0 and first_step.wait(timeout=600):
        began = time.monotonic()
        for k in range(args.kills):
            deadline = began + (k + 1) * args.kill_every
            while time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.05)
            if process.poll() is not None:
                break
            worker = rng.randrange(args.workers)
            with lock:
                pid = pids.get(worker)
            try:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    kills.append({"worker": worker, "seconds": round(time.monotonic() - started, 3)})
            except ProcessLookupError:
                pass
    code = process.wait()
    reader.join(timeout=10)
    if args.log:
        with open(args.log, "w") as log:
            log.write("\n".join(lines) + "\n")
    summaries = {}
    for line in lines:
        match = SUMMARY.match(line)
        if match:
            summaries[int(match.group(1))] = json.loads(match.group(2))
    if code != 0 or not summaries:
        sys.stderr.write("\n".join(lines[-60:]) + "\n")
    best = max(summaries.values(), key=lambda s: s.get("generations", 0), default={})
    recovery = max((s.get("elastic_recovery_seconds", 0) for s in summaries.values()), default=0)
    heal = max((s.get("elastic_heal_seconds", 0) for s in summaries.values()), default=0)
    print(json.dumps({"exit_code": code, "kills": kills, "summary": best,
                      "longest_recovery_seconds": recovery, "longest_heal_seconds": heal,
                      "wall_seconds": round(time.monotonic() - started, 3)}))


if __name__ == "__main__":
    main()
