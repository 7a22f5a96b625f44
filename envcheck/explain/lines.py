"""The lines of a text that hold a literal: where the context readers run their regexes, so a
regex meets only the lines that can match it."""

from __future__ import annotations


def lines_with(hints: tuple[str, ...], text: str, lowered: str, more: int = 0) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` holding one of ``hints`` (and of the ``more`` lines
    after it), in order; ``lowered`` is the text in lower case. Where lower-casing changed the
    text's length (positions no longer line up), the whole text, if it holds a hint at all."""
    if len(lowered) != len(text):
        return [(0, len(text))] if any(hint in lowered for hint in hints) else []
    starts: set[int] = set()
    for hint in hints:
        at = lowered.find(hint)
        while at >= 0:
            starts.add(text.rfind("\n", 0, at) + 1)
            line_end = text.find("\n", at)
            if line_end < 0:
                break
            at = lowered.find(hint, line_end + 1)  # the next line that holds it
    spans = []
    for start in sorted(starts):
        end = start - 1
        for _ in range(more + 1):
            end = text.find("\n", end + 1)
            if end < 0:
                end = len(text)
                break
        spans.append((start, end))
    return spans
