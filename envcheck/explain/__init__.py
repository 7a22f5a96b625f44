"""``envcheck explain``'s engine: the pattern catalogue, the bounded scanner, the explanations, and
what a machine's facts add to them.

  catalogue     explain_patterns.yaml (or a --patterns file), loaded and validated
  scanner       text in, known messages out, in bounded time and memory
  explanations  found messages with their texts filled in and their causes ranked (an optional
                ``assess`` hook marks causes confirmed or ruled out on a machine)
  machine       what the machine adds: the doctor's findings, and comparisons of the message
                with the machine
  report        the report ``envcheck explain`` renders
"""

from __future__ import annotations

from envcheck.explain.catalogue import (
    Pattern,
    PatternsError,
    cuda_library_version,
    repeat_problem,
)
from envcheck.explain.explanations import CONFIRMED, RULED_OUT, Cause, Explanation, explain, rank_causes, with_status
from envcheck.explain.regex_guard import MAX_REPEAT
from envcheck.explain.scanner import MAX_LINE_BYTES, Catalogue, Occurrence, ScanResult, load_patterns, parse_patterns

__all__ = [
    "CONFIRMED",
    "MAX_LINE_BYTES",
    "MAX_REPEAT",
    "Catalogue",
    "Cause",
    "Explanation",
    "Occurrence",
    "Pattern",
    "PatternsError",
    "RULED_OUT",
    "ScanResult",
    "cuda_library_version",
    "explain",
    "load_patterns",
    "parse_patterns",
    "rank_causes",
    "repeat_problem",
    "with_status",
]
