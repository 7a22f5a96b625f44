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


def bracketed(text: str) -> str | None:
    """What the first non-empty pair of square brackets holds: "GP106 [GeForce GTX 1060 6GB]" ->
    "GeForce GTX 1060 6GB". By str.find: re.search(r"\\[([^\\]]+)\\]") is quadratic on "[[[[..."."""
    start = text.find("[")
    while start >= 0:
        end = text.find("]", start + 1)
        if end < 0:
            return None
        if end > start + 1:
            return text[start + 1 : end]
        start = text.find("[", end)
    return None
