"""Small helpers for the words of envcheck's sentences."""

from __future__ import annotations

from collections.abc import Iterable


def plural(count: int, word: str, many: str = "") -> str:
    """ "1 GPU", "2 GPUs", "1 replica", "3 replicas" ("many" for irregular plurals)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def counted(names: Iterable[str]) -> list[str]:
    """["V100", "V100", "T4"] -> ["2x V100", "T4"], first-seen order."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [f"{c}x {n}" if c > 1 else n for n, c in counts.items()]
