"""A full `envcheck doctor --json` against the TensorFlow import it cannot avoid, side by side.

The doctor runs every probe while its TensorFlow worker imports TF, so its wall time should stay
close to that of the smallest TF program. The commands run interleaved (round robin) with the same
interpreter, so machine noise hits them alike; the script prints medians, spreads and the ratio,
and `doctor --quick` (no TensorFlow) for reference.

    python benchmarks/doctor.py [--runs 7] [--quick-runs 15]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TF_BASELINE = "import tensorflow as tf; tf.matmul(tf.ones((2, 2)), tf.ones((2, 2)))"
TARGET_RATIO = 1.2
QUICK_TARGET_S = 0.4


def time_once(cmd: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - started


def measure(commands: dict[str, list[str]], runs: int, env: dict) -> dict[str, list[float]]:
    for cmd in commands.values():  # warm the file cache: the first TF import reads ~1 GB
        time_once(cmd, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            samples[name].append(time_once(cmd, env))
    return samples


def report(samples: dict[str, list[float]], baseline: str) -> float:
    base = statistics.median(samples[baseline])
    print(f"{'command':<34}{'median':>10}{'min':>10}{'max':>10}{'ratio':>8}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"{name:<34}{med:>9.3f}s{min(values):>9.3f}s{max(values):>9.3f}s{med / base:>8.2f}")
    return base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each TensorFlow command")
    parser.add_argument("--quick-runs", type=int, default=15, help="runs of doctor --quick")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    doctor = [sys.executable, "-m", "envcheck", "doctor"]

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()}"
    )
    print(f"interpreter: {sys.executable}")
    print(f"\nfull doctor vs the smallest TensorFlow program ({args.runs} runs each, interleaved)")
    full = measure(
        {
            "python -c 'import tensorflow ...'": [sys.executable, "-c", TF_BASELINE],
            "envcheck doctor --json": doctor + ["--json"],
        },
        args.runs,
        env,
    )
    report(full, "python -c 'import tensorflow ...'")
    ratio = statistics.median(full["envcheck doctor --json"]) / statistics.median(
        full["python -c 'import tensorflow ...'"]
    )
    print(
        f"target: doctor within {TARGET_RATIO}x of the TF import -> {'met' if ratio <= TARGET_RATIO else 'NOT met'} ({ratio:.2f}x)"
    )

    print(f"\ndoctor --quick ({args.quick_runs} runs each, interleaved)")
    quick = measure(
        {
            "python -c pass": [sys.executable, "-c", "pass"],
            "envcheck doctor --quick --json": doctor + ["--quick", "--json"],
        },
        args.quick_runs,
        env,
    )
    report(quick, "python -c pass")
    median_quick = statistics.median(quick["envcheck doctor --quick --json"])
    print(
        f"target: doctor --quick under {QUICK_TARGET_S * 1000:.0f} ms median -> "
        f"{'met' if median_quick < QUICK_TARGET_S else 'NOT met'} ({median_quick * 1000:.0f} ms)"
    )


if __name__ == "__main__":
    main()
