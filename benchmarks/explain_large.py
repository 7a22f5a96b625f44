"""How fast, and in how much memory, ``envcheck explain`` reads large and hostile input.

Generates, in a temporary folder:
  log      a training log of --mb MB: TensorFlow start-up noise, progress lines, and a known error
           every few thousand lines (the realistic case);
  errors   --mb MB where every line is a known message (the most regex work per byte);
  oneline  --mb MB of 'a' with no newline at all (one giant line);
  binary   --mb MB of random bytes.
For each it runs ``envcheck explain --no-probe --json --file FILE`` as a fresh process and prints
the median wall time over --repeat runs, MB/s and the peak RSS of that process, next to
``grep -c -i -F`` with the same needles over the same file as the reference. Also prints the
in-process scan time (no interpreter start-up) for the realistic log.

    python benchmarks/explain_large.py            # 100 MB, 3 runs each
    python benchmarks/explain_large.py --mb 20 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOISE = [
    "2024-05-02 10:11:12.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1871] Adding visible gpu devices: 0",
    "Epoch 12/70",
    "781/781 [==============================] - 63s 81ms/step - loss: 0.6124 - accuracy: 0.7855 - val_loss: 0.6630 - val_accuracy: 0.7710",
    "2024-05-02 10:11:13.000001: I tensorflow/core/common_runtime/executor.cc:1197] [/device:CPU:0] (DEBUG INFO) Executor start aborting (this does not indicate an error and you can ignore this message)",
    "[INFO] saving checkpoint to output/minigooglenet_cifar10.keras",
    '  File "/usr/lib/python3.10/site-packages/keras/src/engine/training.py", line 1807, in fit',
]
ERRORS = [
    "2024-05-02 10:11:14.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory",
    "E0000 00:00:1796056754.682237    7566 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[256,64,160,160] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
    "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your %PATH% environment variable.",
]


def write_log(path: Path, size: int, every: int, seed: int = 7) -> None:
    """Noise lines with a known error every ``every`` lines (every=1: errors only)."""
    rng = random.Random(seed)
    written = 0
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        batch = []
        while written < size:
            line = rng.choice(ERRORS) if n % every == 0 else rng.choice(NOISE)
            batch.append(line)
            written += len(line) + 1
            n += 1
            if len(batch) >= 10_000:
                out.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            out.write("\n".join(batch) + "\n")


def write_repeated(path: Path, size: int, block: bytes) -> None:
    with open(path, "wb") as out:
        left = size
        while left > 0:
            piece = block[: min(len(block), left)]
            out.write(piece)
            left -= len(piece)


def measure(command: list[str]) -> dict:
    """Run ``command`` under a small Python parent that reports the child's wall time and peak RSS."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "proc = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
        "seconds = time.perf_counter() - start\n"
        "rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'seconds': seconds, 'rss_mb': rss_kb / 1024, 'rc': proc.returncode, 'out': proc.stdout.decode(errors='replace')[:2000]}))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-c", probe, *command], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(result.stdout)


def interleaved(commands: list[list[str]], repeat: int) -> list[dict]:
    """Median time and highest peak RSS of each command, the commands taking turns so that load
    from elsewhere on the machine hits them alike."""
    runs: list[list[dict]] = [[] for _ in commands]
    for _ in range(repeat):
        for i, command in enumerate(commands):
            runs[i].append(measure(command))
    return [
        {
            "seconds": statistics.median(r["seconds"] for r in these),
            "rss_mb": max(r["rss_mb"] for r in these),
            "rc": these[-1]["rc"],
            "out": these[-1]["out"],
        }
        for these in runs
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100.0, help="size of each generated input (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is printed")
    args = parser.parse_args()
    size = int(args.mb * 1024 * 1024)

    from envcheck.explain import load_patterns

    catalogue = load_patterns()
    needles = sorted({n for p in catalogue.patterns for n in p.needles})
    grep = shutil.which("grep")

    with tempfile.TemporaryDirectory(prefix="envcheck-explain-bench-") as tmp:
        folder = Path(tmp)
        needle_file = folder / "needles.txt"
        needle_file.write_text("\n".join(needles) + "\n")
        inputs = {
            "log": folder / "train.log",
            "errors": folder / "errors.log",
            "oneline": folder / "oneline.log",
            "binary": folder / "binary.log",
        }
        write_log(inputs["log"], size, every=5000)
        write_log(inputs["errors"], size, every=1)
        write_repeated(inputs["oneline"], size, b"a" * (1 << 20))
        write_repeated(inputs["binary"], size, random.Random(3).randbytes(1 << 20))

        env_cmd = [sys.executable, "-m", "envcheck", "explain", "--no-probe", "--json", "--file"]
        print(
            f"envcheck explain on {args.mb:g} MB inputs, median of {args.repeat} runs (fresh process each, taking turns with grep)"
        )
        print(
            f"{'input':<9} {'envcheck s':>10} {'MB/s':>7} {'peak RSS MB':>11} {'found':>6}   "
            f"{'grep -ciF s':>12} {'MB/s':>7} {'peak RSS MB':>11} {'lines':>9}   ratio"
        )
        for name, path in inputs.items():
            mb = path.stat().st_size / (1024 * 1024)
            commands = [[*env_cmd, str(path)]]
            if grep:
                commands.append([grep, "-c", "-a", "-i", "-F", "-f", str(needle_file), str(path)])
            mine, *reference = interleaved(commands, args.repeat)
            hit = re.search(r'"found": (\d+)', mine["out"])
            found = hit.group(1) if hit and mine["rc"] in (0, 1) else f"rc={mine['rc']}"
            if reference:
                ref = reference[0]
                ref_cols = f"{ref['seconds']:>12.2f} {mb / ref['seconds']:>7.0f} {ref['rss_mb']:>11.1f} {ref['out'].strip():>9}"
                ratio = f"{mine['seconds'] / ref['seconds']:.1f}x"
            else:
                ref_cols, ratio = f"{'(no grep)':>12}", "-"
            print(
                f"{name:<9} {mine['seconds']:>10.2f} {mb / mine['seconds']:>7.0f} {mine['rss_mb']:>11.1f} {found!s:>6}   {ref_cols}   {ratio}"
            )

        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            with open(inputs["log"], "rb") as fh:
                result = catalogue.scan(fh)
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        mb = inputs["log"].stat().st_size / (1024 * 1024)
        print(
            f"\nin-process scan of 'log' (no start-up): {seconds:.2f} s, {mb / seconds:.0f} MB/s, "
            f"{result.lines} lines, {len(result.occurrences)} distinct messages, "
            f"{sum(o.count for o in result.occurrences)} occurrences"
        )
        print(f"{len(catalogue.patterns)} patterns, {len(needles)} needles; grep counts lines holding any needle.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
