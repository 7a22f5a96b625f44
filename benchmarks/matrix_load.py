"""How long loading the compatibility matrix takes, next to the cost of importing PyYAML.

Prints medians over fresh interpreters (so imports and the first parse are really cold) and over
repeated in-process loads (a parse of the file, and a cache hit), side by side in one run.

    python benchmarks/matrix_load.py [--runs N] [--matrix FILE]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COLD_IMPORT_YAML = "import time; t = time.perf_counter(); import yaml; print(time.perf_counter() - t)"
COLD_LOAD = (
    "import time, sys; sys.path.insert(0, {root!r}); t = time.perf_counter();"
    " from envcheck.matrix import load_matrix; load_matrix({path}); print(time.perf_counter() - t)"
)


def cold(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        times.append(float(out.strip()))
    return statistics.median(times)


def warm(func, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--matrix", type=Path, default=None)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    import yaml

    from envcheck.matrix import clear_cache, default_matrix_path, load_matrix, parse_matrix

    path = args.matrix or default_matrix_path()
    text = path.read_text(encoding="utf-8")
    matrix = load_matrix(path)
    path_arg = repr(str(path)) if args.matrix else ""

    rows = [
        ("import yaml (fresh interpreter)", cold(COLD_IMPORT_YAML, args.runs)),
        (
            "import envcheck.matrix + load (fresh interpreter)",
            cold(COLD_LOAD.format(root=str(ROOT), path=path_arg), args.runs),
        ),
        ("parse + validate, in process", warm(lambda: parse_matrix(text, path), args.runs)),
        (
            "yaml.compose only (CSafeLoader)" if hasattr(yaml, "CSafeLoader") else "yaml.compose only (pure Python)",
            warm(lambda: yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), args.runs),
        ),
        ("load_matrix, cache hit", warm(lambda: load_matrix(path), max(args.runs, 1000))),
    ]
    clear_cache()

    print(
        f"matrix: {path.name}, {len(text) / 1024:.0f} KiB, {len(matrix.tf_releases())} TF builds, "
        f"{len(matrix.cuda_releases())} CUDA, {len(matrix.cudnn_releases())} cuDNN, {len(matrix.gpus())} GPUs; "
        f"libyaml: {'yes' if hasattr(yaml, 'CSafeLoader') else 'no'}; median of {args.runs} runs"
    )
    reference = rows[0][1]
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"  {name.ljust(width)}  {seconds * 1000:9.3f} ms  {seconds / reference:6.2f}x import yaml")


if __name__ == "__main__":
    main()
