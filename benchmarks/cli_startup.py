"""CLI start-up: `envcheck --version`, `envcheck doctor --quick` and `python -c pass`, side by side,
and `doctor --quick` in a real terminal (the live display on) against a pipe (off).

The commands run interleaved (round robin), so machine noise hits them alike; the script prints
each one's median and spread and the ratios to a bare interpreter start.

    python benchmarks/cli_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def envcheck_command() -> list[str]:
    script = shutil.which("envcheck", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "envcheck"]


def time_once(cmd: list[str], env: dict, tty: bool = False) -> float:
    started = time.perf_counter()
    if tty:
        import pty

        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env)
        os.close(slave)
        while True:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break
        proc.wait()
        os.close(master)
    else:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    base = envcheck_command()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "envcheck --version": base + ["--version"],
        "envcheck doctor --quick": base + ["doctor", "--quick"],
    }
    live_env = {k: v for k, v in env.items() if k != "NO_COLOR"}
    live_env["TERM"] = "xterm-256color"
    # name -> (argv, environment, in a terminal)
    runs = {name: (cmd, env, False) for name, cmd in commands.items()}
    runs["doctor --quick, terminal (live)"] = (base + ["doctor", "--quick"], live_env, True)
    # The same terminal with the live display off (NO_COLOR: plain marks, no animation): what
    # the live display itself costs, apart from writing to a terminal instead of a pipe.
    runs["doctor --quick, terminal (no live)"] = (base + ["doctor", "--quick"], dict(live_env, NO_COLOR="1"), True)
    for cmd, run_env, tty in runs.values():  # warm the file cache
        time_once(cmd, run_env, tty)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.runs):
        for name, (cmd, run_env, tty) in runs.items():
            samples[name].append(time_once(cmd, run_env, tty))

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()}"
    )
    print(f"runs per command: {args.runs} (interleaved)")
    bare = statistics.median(samples["python -c pass"])
    print(f"{'command':<36}{'median':>10}{'min':>10}{'max':>10}{'x bare':>9}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(
            f"{name:<36}{med * 1000:>8.1f}ms{min(values) * 1000:>8.1f}ms{max(values) * 1000:>8.1f}ms{med / bare:>9.2f}"
        )
    quick = statistics.median(samples["envcheck doctor --quick"])
    live = statistics.median(samples["doctor --quick, terminal (live)"])
    print(
        f"target: doctor --quick under 400 ms median -> {'met' if quick < 0.4 else 'NOT met'} ({quick * 1000:.0f} ms)"
    )
    still = statistics.median(samples["doctor --quick, terminal (no live)"])
    print(f"live display: {live * 1000:.0f} ms in a terminal vs {quick * 1000:.0f} ms to a pipe ({live / quick:.2f}x)")
    print(
        f"live display alone: {live * 1000:.0f} ms vs {still * 1000:.0f} ms in the same terminal without it "
        f"({live / still:.2f}x, {1000 * (live - still):+.0f} ms)"
    )


if __name__ == "__main__":
    main()
