"""Findings, fixes, verdicts and the report the renderers draw.

A fix is data (text, commands per shell, a page's ``url``), so every renderer can show it and ``--apply`` can
run the pip steps of it; nothing here runs anything.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from envcheck.facts import Facts, to_dict
from envcheck.shell import Command


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


# The causal chain, in dependency order (DESIGN.md). Each finding belongs to one link.
CHAIN: tuple[tuple[str, str], ...] = (
    ("python", "Python interpreter"),
    ("gpu", "NVIDIA GPU present"),
    ("driver", "NVIDIA driver"),
    ("compute", "GPU compute capability"),
    ("libraries", "CUDA and cuDNN libraries"),
    ("tensorflow", "TensorFlow installation"),
    ("placement", "Ops placed on the GPU"),
    ("environment", "Environment variables"),
    # What slows the GPUs down once they work (links, clocks, topology, other processes): last,
    # since nothing before it depends on it, and its findings are warnings, never the verdict.
    ("multigpu", "Multi-GPU"),
)
LINK_NAMES = tuple(name for name, _ in CHAIN)
LINK_TITLES = dict(CHAIN)

# Link statuses shown one per line by the terminal renderer.
LINK_OK = "ok"
LINK_WARNING = "warning"
LINK_ERROR = "error"
LINK_SKIPPED = "skipped"

# Verdict statuses.
GPU_READY = "gpu-ready"  # every GPU left visible is usable
DEGRADED = "degraded"  # some are usable; the others are named with their first broken link
CPU_ONLY = "cpu-only"  # no NVIDIA GPU, or the user hid them all: a finished state
BROKEN = "broken"  # NVIDIA GPUs there and none usable, or TensorFlow cannot run at all
NOT_INSTALLED = "not-installed"  # no TensorFlow yet: the verdict carries the plan for this machine
VERDICT_STATUSES = (GPU_READY, DEGRADED, CPU_ONLY, BROKEN, NOT_INSTALLED)


@dataclass(frozen=True)
class Fix:
    """What to do about a finding, or one step of a way forward: text, commands, a page."""

    text: str
    commands: tuple[Command, ...] = ()
    url: Optional[str] = None  # the download or documentation page for the exact version
    # The TensorFlow release (major.minor) this fix is computed for: the one it installs, or the
    # installed one whose CUDA and cuDNN it fetches; None when the fix does not depend on the
    # release (a driver, a variable). A way forward keeps only the steps of its one target release.
    release: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "commands": [c.to_dict() for c in self.commands], "url": self.url}


@dataclass(frozen=True)
class Finding:
    id: str  # stable, e.g. "EC-DRV-001", never reused
    severity: Severity
    title: str  # one line, specific to this machine
    link: str  # which link of the chain (LINK_NAMES)
    detail: str = ""  # why, in a sentence or two
    evidence: tuple[tuple[str, str], ...] = ()  # (fact or matrix row, value) pairs
    fix: Optional[Fix] = None
    # Id of the finding this one is a consequence of. A rule sets it only where the cause's fix
    # clears this one too; the verdict sets it for errors further down the chain (which keep their
    # own fix when they have one).
    caused_by: Optional[str] = None
    gpus: tuple[str, ...] = ()  # the GPUs it is about (their bus ids); () when about the machine

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "link": self.link,
            "detail": self.detail,
            "evidence": [{"what": k, "value": v} for k, v in self.evidence],
            "fix": fix_to_dict(self.fix),
            "caused_by": self.caused_by,
            "gpus": list(self.gpus),
        }


def fix_to_dict(fix: Optional[Fix]) -> Optional[dict[str, Any]]:
    return None if fix is None else fix.to_dict()


@dataclass(frozen=True)
class Verdict:
    status: str  # one of VERDICT_STATUSES
    reason: str  # one line
    first_broken_link: Optional[str] = None
    finding_id: Optional[str] = None  # the finding that is the first broken link
    gpus: int = 0  # GPUs TensorFlow can use
    gpu_path: tuple[Fix, ...] = ()  # how to make the GPU work, in order
    cpu_path: tuple[Fix, ...] = ()  # how to run on the CPU today
    plan: Optional[dict[str, Any]] = None  # not-installed: the plan's recommendation (release, install line, ...)
    # A state to stay in: every visible GPU works, or there is no NVIDIA GPU (or the user hid
    # them), or nothing is installed yet. False while a GPU that is there does not work.
    finished: bool = False

    @property
    def line(self) -> str:
        if self.status in (GPU_READY, DEGRADED):
            return self.reason or f"GPU ready ({self.gpus} GPU{'s' if self.gpus != 1 else ''})"
        if self.status == CPU_ONLY:
            return f"CPU only: {self.reason}"
        if self.status == NOT_INSTALLED:
            return f"not installed: {self.reason}"
        return f"broken: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "line": self.line,
            "first_broken_link": self.first_broken_link,
            "finding_id": self.finding_id,
            "gpus": self.gpus,
            "finished": self.finished,
            "gpu_path": [s.to_dict() for s in self.gpu_path],
            "cpu_path": [s.to_dict() for s in self.cpu_path],
            "plan": self.plan,
        }


@dataclass(frozen=True)
class LinkStatus:
    name: str
    status: str  # LINK_OK / LINK_WARNING / LINK_ERROR / LINK_SKIPPED
    summary: str  # one line: what was seen
    seconds: Optional[float] = None  # the probe time behind this link

    @property
    def title(self) -> str:
        return LINK_TITLES.get(self.name, self.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status,
            "summary": self.summary,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class Report:
    facts: Facts
    findings: tuple[Finding, ...]
    verdict: Verdict
    links: tuple[LinkStatus, ...]
    exit_code: int = 0
    envcheck_version: str = ""
    notes: tuple[str, ...] = field(default=())  # e.g. "judged from a saved snapshot: FILE"
    gpus: tuple[Any, ...] = ()  # one entry per NVIDIA GPU (machine.GpuView), in nvidia-smi order, with its chain
    gpu_presence: str = ""  # "present", "absent" or "unknown": whether an NVIDIA GPU is there, as plan reads it too

    def to_dict(self) -> dict[str, Any]:
        return {
            "envcheck_version": self.envcheck_version,
            "exit_code": self.exit_code,
            "verdict": self.verdict.to_dict(),
            "gpu_presence": self.gpu_presence,
            "gpus": [g.to_dict() for g in self.gpus],
            "links": [link.to_dict() for link in self.links],
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
            "facts": to_dict(self.facts),
        }


def exit_code_for(findings: tuple[Finding, ...] | list[Finding], fail_on: str = "error") -> int:
    """0, or 1 when a finding reaches the --fail-on threshold ("error", "warning", "never")."""
    if fail_on == "never":
        return 0
    threshold = Severity.ERROR.rank if fail_on == "error" else Severity.WARNING.rank
    return 1 if any(f.severity.rank >= threshold for f in findings) else 0


def shown_once(findings: tuple[Finding, ...] | list[Finding]) -> list[Finding]:
    """The findings to show a person: those the same rule raised in the same words about several
    GPUs (four identical cards, each only PTX-covered) become one, about all of them, its title
    saying how many; the evidence each GPU has of its own comes first, then what they share. The
    report and its JSON keep one finding per GPU; only the reading is merged."""
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        key = (f.id, f.severity, f.title, f.link, f.detail, f.fix, f.caused_by)
        groups.setdefault(key if f.gpus else (*key, len(groups)), []).append(f)
    out = []
    for same in groups.values():
        first = same[0]
        if len(same) == 1:
            out.append(first)
            continue
        shared = [e for e in first.evidence if all(e in f.evidence for f in same)]
        own = [e for f in same for e in f.evidence if e not in shared]
        gpus = tuple(dict.fromkeys(g for f in same for g in f.gpus))
        evidence = tuple(dict.fromkeys(own)) + tuple(shared)
        out.append(replace(first, title=f"{first.title}; the same on {len(gpus)} GPUs", evidence=evidence, gpus=gpus))
    return out
