"""How long judging a snapshot takes (every rule, the verdict, the link lines), without loading the
matrix, side by side for the named snapshots. Target: well under 50 ms each.

    python benchmarks/rules_judge.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envcheck.facts import load_facts  # noqa: E402
from envcheck.matrix import load_matrix  # noqa: E402
from envcheck.verdict import judge  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    started = time.perf_counter()
    matrix = load_matrix()
    load_ms = (time.perf_counter() - started) * 1000
    print(f"matrix load (once, not counted below): {load_ms:.1f} ms")
    print(f"{'snapshot':32} {'findings':>8} {'median ms':>10} {'max ms':>8}")
    for path in sorted((ROOT / "tests" / "fixtures" / "facts").glob("*.json")):
        facts = load_facts(path)
        judge(facts, matrix_loader=lambda: matrix)  # imports the rule modules
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            report = judge(facts, matrix_loader=lambda: matrix)
            times.append((time.perf_counter() - t) * 1000)
        print(f"{path.stem:32} {len(report.findings):>8} {statistics.median(times):>10.2f} {max(times):>8.2f}")


if __name__ == "__main__":
    main()
