"""A validation check's result, the report of a run, and how both are shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck.errors import EXIT_FINDINGS, EXIT_OK


@dataclass(frozen=True)
class Check:
    level: int
    name: str  # e.g. "matmul on GPU:0"
    passed: bool
    summary: str  # one line: what was measured, or what went wrong
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "name": self.name,
            "passed": self.passed,
            "summary": self.summary,
            "figures": self.figures,
            "seconds": None if self.seconds is None else round(self.seconds, 4),
        }


@dataclass
class ValidationReport:
    level: int
    devices: list[str]
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed else EXIT_FINDINGS

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "devices": self.devices,
            "checks": [c.to_dict() for c in self.checks],
            "notes": self.notes,
        }


def render_terminal(report: ValidationReport, console) -> None:
    """One line per check with its figures, then the verdict line; colour only here."""
    for check in report.checks:
        mark = "[green]PASS[/]" if check.passed else "[bold red]FAIL[/]"
        took = f" [dim]({check.seconds:.1f} s)[/]" if check.seconds is not None else ""
        console.print(f"{mark}  level {check.level}  {check.name}: {check.summary}{took}", soft_wrap=True)
    for note in report.notes:
        console.print(f"[dim]note: {note}[/]", soft_wrap=True)
    failed = [c for c in report.checks if not c.passed]
    if failed:
        console.print(f"[bold red]validation failed[/]: {len(failed)} of {len(report.checks)} checks", soft_wrap=True)
    else:
        console.print(f"[bold green]validation passed[/]: {len(report.checks)} checks up to level {report.level}",
                      soft_wrap=True)
