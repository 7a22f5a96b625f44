"""Small helpers for the words of envcheck's sentences."""

from __future__ import annotations


def plural(count: int, word: str, many: str = "") -> str:
    """ "1 GPU", "2 GPUs", "1 replica", "3 replicas" ("many" for irregular plurals)."""
    return f"{count} {word if count == 1 else many or word + 's'}"
