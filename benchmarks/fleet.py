"""How long `envcheck fleet` takes over many node snapshots, run as a user runs it (a subprocess over
a folder of files), median of several runs. Target: seconds, not minutes, for 1,000 nodes.

Two fleets are generated from the 4x V100 server's snapshot (tests/fixtures/facts):
  alike     what a healthy cluster looks like: every node its own host name, GPU UUIDs and serial
            numbers, time stamps and probe times, and a few odd ones out (an old driver, a lost
            GPU, a stale cuDNN on LD_LIBRARY_PATH, another TensorFlow)
  distinct  the worst case: the memory in use differs on every GPU of every node, which the busy-GPU
            rule reads, so no two nodes can share a judgement

    python benchmarks/fleet.py [--nodes 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "fixtures" / "facts" / "multi_gpu_server.json"


def snapshot(base: dict, index: int, rnd: random.Random, distinct: bool) -> dict:
    node = copy.deepcopy(base)
    node["platform"]["hostname"] = f"gpu-node-{index:04d}"
    node["created"] = f"2026-11-30T10:{index // 60 % 60:02d}:{index % 60:02d}+00:00"
    for section in ("python", "platform", "env", "packages", "pci", "driver", "nvml", "libraries", "tensorflow"):
        node[section]["seconds"] = round(rnd.uniform(0.001, 2.5), 4)
    for gpu in node["nvml"]["gpus"]:
        a, b, c, d, e = (rnd.getrandbits(n) for n in (32, 16, 16, 16, 48))
        gpu["uuid"] = f"GPU-{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}"
        gpu["serial"] = str(rnd.randrange(10**12, 10**13))
        if distinct:
            gpu["memory_used_mb"] = rnd.randrange(0, 2000)
    if index % 97 == 5:  # an old driver
        node["nvml"]["driver_version"] = node["driver"]["version"] = node["driver"]["module_version"] = "470.57.02"
        node["nvml"]["cuda_driver_version"] = "11.4"
    if index == 333:  # a GPU fell off the bus
        node["nvml"]["gpus"] = node["nvml"]["gpus"][:3]
        node["pci"]["devices"] = node["pci"]["devices"][:3]
    if index == 512:  # a stale cuDNN earlier on the loader's path
        node["env"]["variables"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.0/lib64"
        for lib in node["libraries"]["libraries"]:
            if lib["family"] == "cudnn":
                stale = {
                    **lib["copies"][0],
                    "path": "/usr/local/cuda-11.0/lib64/libcudnn.so.8",
                    "directory": "/usr/local/cuda-11.0/lib64",
                    "origin": "LD_LIBRARY_PATH",
                    "reported_version": "8.0.5",
                    "realpath": "/usr/local/cuda-11.0/lib64/libcudnn.so.8.0.5",
                }
                lib["copies"].insert(0, stale)
                lib["winner"] = stale["path"]
                lib["winners"] = {"libcudnn.so.8": stale["path"]}
    if index in (700, 701):  # another TensorFlow
        for dist in node["packages"]["distributions"]:
            if dist["name"] == "tensorflow":
                dist["version"] = "2.14.1"
        node["tensorflow"]["version"] = "2.14.1"
    return node


def generate(folder: Path, nodes: int, distinct: bool) -> None:
    base = json.loads(SERVER.read_text())
    rnd = random.Random(nodes)
    for i in range(1, nodes + 1):
        (folder / f"node-{i}.json").write_text(json.dumps(snapshot(base, i, rnd, distinct), indent=2))


def time_fleet(folder: Path, runs: int, *extra: str) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    times, data = [], {}
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "envcheck", "fleet", str(folder), "--json", *extra],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        times.append(time.perf_counter() - started)
        if done.returncode not in (0, 1):
            raise SystemExit(f"envcheck fleet failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        data = json.loads(done.stdout)
    return statistics.median(times), data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{args.nodes} snapshots per fleet, median of {args.runs} runs of `envcheck fleet FOLDER --json`; {os.cpu_count()} CPUs"
    )
    print(f"{'fleet':10} {'jobs':>5} {'seconds':>8} {'per node':>9} {'judged':>7} {'odd':>4}  verdicts")
    with tempfile.TemporaryDirectory() as tmp:
        for name, distinct in (("alike", False), ("distinct", True)):
            folder = Path(tmp) / name
            folder.mkdir()
            generate(folder, args.nodes, distinct)
            size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
            for jobs in ("1", str(min(8, os.cpu_count() or 1))):
                seconds, data = time_fleet(folder, args.runs, "--jobs", jobs)
                verdicts = ", ".join(f"{v['count']} {v['status']}" for v in data["verdicts"])
                print(
                    f"{name:10} {jobs:>5} {seconds:>8.2f} {seconds / args.nodes * 1000:>7.2f}ms {data['judged']:>7} "
                    f"{len(data['odd_ones_out']):>4}  {verdicts}  ({size:.0f} MB of JSON)"
                )


if __name__ == "__main__":
    main()
