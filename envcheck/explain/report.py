"""The report ``envcheck explain`` builds: what was read, what was found, and for which machine.
Its renderers (text, JSON, ``--list``) are in ``envcheck/render/explain.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck.explain.explanations import Explanation
from envcheck.explain.scanner import ScanResult

_NOT_FAILURES = frozenset({"KeyboardInterrupt", "GeneratorExit", "StopIteration", "StopAsyncIteration"})


@dataclass(frozen=True)
class ExplainReport:
    source: str  # "the argument", "standard input", or the file name
    scan: ScanResult
    explanations: tuple[Explanation, ...]
    machine: str = ""  # whose facts shaped the advice, in words; "" when none
    machine_os: Optional[str] = None
    shell: Optional[str] = None  # the shell whose commands to show; None: show all, by shell
    problems: tuple[str, ...] = field(default=())

    @property
    def to_act_on(self) -> int:
        return sum(1 for e in self.explanations if not e.harmless)

    @property
    def harmless_count(self) -> int:
        return len(self.explanations) - self.to_act_on

    @property
    def unexplained_error(self) -> str:
        """The exception line of a Python traceback the input ends in when no explanation found is
        something to act on: the input shows a failure none of its known messages accounts for
        (notices beside it are not its cause); "" otherwise. A KeyboardInterrupt is the user's own stop."""
        if self.to_act_on:
            return ""
        line = str(self.scan.context.get("log_exception", ""))
        return "" if line.split(":")[0].rsplit(".", 1)[-1] in _NOT_FAILURES else line

    @property
    def exit_code(self) -> int:
        # The question was "what is in this text?": answered when something known was found.
        return 0 if self.explanations else 1

    def to_dict(self) -> dict[str, Any]:
        """The report's own keys (``render.document`` puts the common envelope around them)."""
        return {
            "source": self.source,
            "lines": self.scan.lines,
            "bytes": self.scan.bytes,
            "found": len(self.explanations),
            "to_act_on": self.to_act_on,
            "harmless": self.harmless_count,
            "not_shown": self.scan.dropped,
            "machine": {"probed": bool(self.machine), "origin": self.machine or None, "os": self.machine_os},
            "log": dict(self.scan.context),
            "problems": list(self.problems),
            "unexplained_error": self.unexplained_error or None,
            "explanations": [e.to_dict() for e in self.explanations],
        }
