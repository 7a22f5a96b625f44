"""A validation check's result, the report of a run, and how both are shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck.errors import EXIT_FINDINGS, EXIT_OK
from envcheck.words import plural


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
    # The doctor's verdict on the same machine ({"status", "line", "gpus", "exit_code"}): validate
    # never says more than the doctor does (a CPU run that passes on a machine with an unusable
    # GPU is not a pass), and exits as the doctor would when the doctor finds something wrong.
    doctor: Optional[dict[str, Any]] = None
    require_gpu: bool = False

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def used_gpu(self) -> bool:
        return any(d.startswith("GPU") for d in self.devices)

    @property
    def problems(self) -> list[str]:
        """Why the run is not a pass although every check may have passed."""
        out = []
        if self.doctor is not None and self.doctor.get("exit_code"):
            out.append(f"the doctor finds: {self.doctor.get('line')}")
        if self.doctor is not None and self.doctor.get("gpus") and not self.used_gpu:
            out.append(f"the doctor finds {plural(self.doctor['gpus'], 'usable GPU')} but TensorFlow used none here")
        if self.require_gpu and not self.used_gpu:
            out.append("--require-gpu: no GPU was used")
        return out

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed and not self.problems else EXIT_FINDINGS

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "passed": self.passed and not self.problems,
            "checks_passed": self.passed,
            "exit_code": self.exit_code,
            "devices": self.devices,
            "checks": [c.to_dict() for c in self.checks],
            "doctor": self.doctor,
            "problems": self.problems,
            "notes": self.notes,
        }


def render_terminal(report: ValidationReport, console) -> None:
    """One line per check with its figures, then the verdict line; colour only here. Each line
    at the console's width, under its label (render.terminal.print_markup)."""
    from envcheck.render.terminal import print_markup

    for check in report.checks:
        mark = "[green]PASS[/]" if check.passed else "[bold red]FAIL[/]"
        took = f" [dim]({check.seconds:.1f} s)[/]" if check.seconds is not None else ""
        print_markup(console, f"{mark}  level {check.level}  {check.name}: {check.summary}{took}")
    for note in report.notes:
        print_markup(console, f"[dim]note: {note}[/]")
    failed = [c for c in report.checks if not c.passed]
    where = "on the GPU" if report.used_gpu else "on the CPU"
    if report.doctor is not None:
        print_markup(console, f"[dim]doctor: {report.doctor.get('line')}[/]")
    if failed:
        print_markup(console, f"[bold red]validation failed[/]: {len(failed)} of {len(report.checks)} checks")
    elif report.problems:
        print_markup(
            console, f"[bold red]validation not passed[/]: the checks passed {where}, but " + "; ".join(report.problems)
        )
    else:
        print_markup(
            console,
            f"[bold green]validation passed[/]: {len(report.checks)} checks up to level {report.level}, {where}",
        )
