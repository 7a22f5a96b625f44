"""A validation check's result and the report of a run (render/validate.py shows them)."""

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
