"""CLI start-up: `envcheck --version`, `envcheck doctor --quick`, `envcheck explain` on one pasted
line and `python -c pass`, side by side, and `doctor --quick` in a real terminal (the live display
on) against a pipe (off). `--also DIR` times `explain` of another checkout (an older commit) in the
same interleaved runs, for a before/after ratio.

The commands run interleaved (round robin), so machine noise hits them alike; the script prints
each one's median and spread and the ratios to a bare interpreter start.

    python benchmarks/cli_startup.py [--runs 21] [--also ../envcheck-old]
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


# the setup post's message: the line a user pastes most often
EXPLAIN_LINE = (
    "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a "
    "directory that is named in your %PATH% environment variable."
)


def envcheck_command() -> list[str]:
    script = shutil.which("envcheck", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "envcheck"]


def time_once(cmd: list[str], env: dict, tty: bool = False, cwd: Path | None = None) -> float:
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
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False, cwd=cwd)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--also", type=Path, default=None, help="another checkout whose explain is timed beside")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    base = envcheck_command()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "envcheck --version": base + ["--version"],
        "envcheck doctor --quick": base + ["doctor", "--quick"],
        "envcheck explain (one line)": base + ["explain", "--no-probe", EXPLAIN_LINE],
    }
    live_env = {k: v for k, v in env.items() if k != "NO_COLOR"}
    live_env["TERM"] = "xterm-256color"
    # name -> (argv, environment, in a terminal, working folder)
    runs = {name: (cmd, env, False, None) for name, cmd in commands.items()}
    runs["doctor --quick, terminal (live)"] = (base + ["doctor", "--quick"], live_env, True, None)
    # The same terminal with the live display off (NO_COLOR: plain marks, no animation): what
    # the live display itself costs, apart from writing to a terminal instead of a pipe.
    runs["doctor --quick, terminal (no live)"] = (
        base + ["doctor", "--quick"],
        dict(live_env, NO_COLOR="1"),
        True,
        None,
    )
    if args.also is not None:
        other = [sys.executable, "-m", "envcheck", "explain", "--no-probe", EXPLAIN_LINE]
        # run in that checkout: `python -m` puts the working folder first on the path
        other_env = dict(env, PYTHONPATH=str(args.also.resolve()))
        runs[f"explain (one line), {args.also.name}"] = (other, other_env, False, args.also.resolve())
    for cmd, run_env, tty, cwd in runs.values():  # warm the file cache
        time_once(cmd, run_env, tty, cwd)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.runs):
        for name, (cmd, run_env, tty, cwd) in runs.items():
            samples[name].append(time_once(cmd, run_env, tty, cwd))

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
    if args.also is not None:
        mine = statistics.median(samples["envcheck explain (one line)"])
        theirs = statistics.median(samples[f"explain (one line), {args.also.name}"])
        print(
            f"explain (one line): {mine * 1000:.0f} ms here vs {theirs * 1000:.0f} ms in {args.also} ({mine / theirs:.2f}x)"
        )
    still = statistics.median(samples["doctor --quick, terminal (no live)"])
    print(f"live display: {live * 1000:.0f} ms in a terminal vs {quick * 1000:.0f} ms to a pipe ({live / quick:.2f}x)")
    print(
        f"live display alone: {live * 1000:.0f} ms vs {still * 1000:.0f} ms in the same terminal without it "
        f"({live / still:.2f}x, {1000 * (live - still):+.0f} ms)"
    )


if __name__ == "__main__":
    main()
