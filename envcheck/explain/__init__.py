"""``envcheck explain``'s engine: the pattern catalogue, the bounded scanner, the explanations, and
what a machine's facts add to them.

  catalogue     explain_patterns.yaml (or a --patterns file), loaded and validated
  scanner       text in, known messages out, in bounded time and memory
  explanations  found messages with their texts filled in
  machine       what the machine adds: the doctor's findings, and comparisons of the message
                with the machine
  report        the report ``envcheck explain`` renders
"""

from __future__ import annotations

from envcheck.explain.catalogue import (
    MAX_REPEAT,
    Pattern,
    PatternsError,
    cuda_library_version,
    repeat_problem,
)
from envcheck.explain.explanations import Explanation, explain
from envcheck.explain.scanner import MAX_LINE_BYTES, Catalogue, Occurrence, ScanResult, load_patterns, parse_patterns

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_REPEAT",
    "Catalogue",
    "Explanation",
    "Occurrence",
    "Pattern",
    "PatternsError",
    "ScanResult",
    "cuda_library_version",
    "explain",
    "load_patterns",
    "parse_patterns",
    "repeat_problem",
]
