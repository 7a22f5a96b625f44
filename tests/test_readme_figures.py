"""The README's figures are the code's: how many messages explain knows, the range of rule ids,
the TensorFlow releases the matrix covers. A figure that goes stale fails here, not in front of a
reader."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def figure(pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, " ".join(README.split()))
    assert found, f"the README no longer says {pattern!r}: update this test with it"
    return found.groups()


def test_the_number_of_messages_explain_knows():
    from envcheck.explain import load_patterns

    (count,) = figure(r"for every message it knows \((\d[\d,]*) of them")
    assert int(count.replace(",", "")) == len(load_patterns().patterns)


def test_the_range_of_rule_ids():
    from envcheck.rules.engine import RULES, load_rule_modules

    first, last = figure(r"stable id \(`(EC-[A-Z]+-\d+)` … `(EC-[A-Z]+-\d+)`")
    load_rule_modules()
    prefix_first, prefix_last = first.rsplit("-", 1)[0], last.rsplit("-", 1)[0]
    assert first == min(r for r in RULES if r.startswith(prefix_first + "-"))
    assert last == max(r for r in RULES if r.startswith(prefix_last + "-"))


def test_the_releases_the_matrix_covers():
    from envcheck.matrix import load_matrix

    oldest, newest = figure(r"for every TensorFlow release from (\d+\.\d+) to (\d+\.\d+), on Linux")
    matrix = load_matrix()
    releases = sorted(
        {b.tf for os in ("linux", "windows", "macos") for b in matrix.tf_releases(os)},
        key=lambda v: tuple(int(p) for p in str(v).split(".")),
    )
    assert (str(releases[0]), str(releases[-1])) == (oldest, newest)
