"""The rule registry, the context rules read, and the walk that turns findings into a verdict.

A rule is a small function registered with ``@rule(...)``. It reads ``ctx.facts`` (and the matrix
through ``ctx.matrix``) and yields ``Hit``s; the engine turns each hit into a ``Finding`` carrying
the rule's stable id, severity and chain link. Rules never raise into the doctor: a rule that
crashes becomes an internal-warning finding so one bad rule cannot hide the others.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Optional

from envcheck.findings import LINK_NAMES, Finding, Fix, Severity
from envcheck.machine import Machine


@dataclass(frozen=True)
class Hit:
    """What a rule reports; the engine adds id, link and (unless overridden) severity."""

    title: str
    detail: str = ""
    evidence: tuple[tuple[str, str], ...] = ()
    fix: Optional[Fix] = None
    severity: Optional[Severity] = None  # override the rule's default (e.g. info instead of warning)
    caused_by: Optional[str] = None  # only where that finding's fix clears this one too
    gpus: tuple[str, ...] = ()  # the GPUs it is about (GpuView.key); () when about the machine


RuleFunc = Callable[["Context"], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: Severity
    link: str
    func: RuleFunc
    doc: str = ""


RULES: dict[str, Rule] = {}

# Every rule id ever issued, in order. An id is never reused: a rule that goes away moves to
# RETIRED with the reason, and a new rule takes the next free number of its prefix. The tests
# check both lists against the registered rules.
ISSUED = (
    "EC-PY-001", "EC-PY-002", "EC-PY-003",
    "EC-GPU-001", "EC-GPU-002", "EC-GPU-003", "EC-GPU-004",
    "EC-DRV-001", "EC-DRV-002", "EC-DRV-003", "EC-DRV-004", "EC-DRV-005", "EC-DRV-006", "EC-DRV-007", "EC-DRV-008", "EC-DRV-009",
    "EC-CC-001", "EC-CC-002", "EC-CC-003", "EC-CC-004",
    "EC-LIB-001", "EC-LIB-002", "EC-LIB-003", "EC-LIB-004", "EC-LIB-005", "EC-LIB-006", "EC-LIB-007", "EC-LIB-008", "EC-LIB-009",
    "EC-TF-001", "EC-TF-002", "EC-TF-003", "EC-TF-004", "EC-TF-005", "EC-TF-006", "EC-TF-007", "EC-TF-008", "EC-TF-009", "EC-TF-010", "EC-TF-011", "EC-TF-012",
    "EC-PLC-001", "EC-PLC-002", "EC-PLC-003", "EC-PLC-004", "EC-PLC-005",
    "EC-ENV-001", "EC-ENV-002", "EC-ENV-003", "EC-ENV-004", "EC-ENV-005", "EC-ENV-006", "EC-ENV-007", "EC-ENV-008", "EC-ENV-009",
    "EC-INT-001",
    "EC-PERF-001", "EC-PERF-002", "EC-PERF-003", "EC-PERF-004", "EC-PERF-005", "EC-PERF-006", "EC-PERF-007",
    "EC-PERF-008", "EC-PERF-009", "EC-PERF-010", "EC-PERF-011",
)  # fmt: skip
RETIRED: dict[str, str] = {}  # id -> why it was retired (its number is never given out again)


def rule(id: str, title: str, severity: Severity | str, link: str) -> Callable[[RuleFunc], RuleFunc]:
    """Register a rule. Ids are stable and never reused; ``link`` is a chain link name."""
    sev = Severity(severity)
    if link not in LINK_NAMES:
        raise ValueError(f"rule {id}: unknown chain link {link!r}")

    def register(func: RuleFunc) -> RuleFunc:
        if id in RETIRED:
            raise ValueError(f"rule id {id} is retired ({RETIRED[id]}); take the next free number")
        if id in RULES and RULES[id].func.__qualname__ != func.__qualname__:
            raise ValueError(f"rule id {id} registered twice")
        RULES[id] = Rule(id=id, title=title, severity=sev, link=link, func=func, doc=(func.__doc__ or "").strip())
        return func

    return register


# Rules read one machine's facts through the machine view (envcheck.machine).
Context = Machine


# Every module that registers rules. Order does not matter: findings are sorted by chain link.
RULE_MODULES = (
    "envcheck.rules.python",
    "envcheck.rules.gpu",
    "envcheck.rules.driver",
    "envcheck.rules.compute",
    "envcheck.rules.libraries",
    "envcheck.rules.tensorflow",
    "envcheck.rules.stack",
    "envcheck.rules.placement",
    "envcheck.rules.environment",
    "envcheck.rules.gpu_speed",
)


def load_rule_modules() -> None:
    """Import every rule module so its rules register (idempotent)."""
    for name in RULE_MODULES:
        importlib.import_module(name)


def evaluate(ctx: Context, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Finding]:
    """Run every registered rule (filtered by id prefix) and return findings in chain order."""
    load_rule_modules()
    select = tuple(select)
    ignore = tuple(ignore)
    findings: list[Finding] = []
    for r in sorted(RULES.values(), key=lambda r: (LINK_NAMES.index(r.link), r.id)):
        if select and not r.id.startswith(select):
            continue
        if ignore and r.id.startswith(ignore):
            continue
        findings.extend(_run_rule(r, ctx))
    return findings


def _run_rule(r: Rule, ctx: Context) -> Iterator[Finding]:
    try:
        hits = list(r.func(ctx) or ())
    except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the doctor
        yield Finding(
            id="EC-INT-001",
            severity=Severity.WARNING,
            title=f"rule {r.id} could not run: {type(exc).__name__}: {exc}",
            link=r.link,
            detail="This is a bug in envcheck; the other checks ran. Please report it with --traceback output.",
            evidence=(("traceback", traceback.format_exc(limit=3)),),
        )
        return
    for hit in hits:
        yield Finding(
            id=r.id,
            severity=hit.severity or r.severity,
            title=hit.title,
            link=r.link,
            detail=hit.detail,
            evidence=hit.evidence,
            fix=hit.fix,
            caused_by=hit.caused_by,
            gpus=hit.gpus,
        )
