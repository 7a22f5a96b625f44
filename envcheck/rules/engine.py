"""The rule registry, the context rules read, and the walk that turns findings into a verdict.

A rule is a small function registered with ``@rule(...)``. It reads ``ctx.facts`` (and the matrix
through ``ctx.matrix``) and yields ``Hit``s; the engine turns each hit into a ``Finding`` carrying
the rule's stable id, severity and chain link. Rules never raise into the doctor: a rule that
crashes becomes an internal-warning finding so one bad rule cannot hide the others.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional

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
    caused_by: Optional[str] = None


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


def rule(id: str, title: str, severity: Severity | str, link: str) -> Callable[[RuleFunc], RuleFunc]:
    """Register a rule. Ids are stable and never reused; ``link`` is a chain link name."""
    sev = Severity(severity)
    if link not in LINK_NAMES:
        raise ValueError(f"rule {id}: unknown chain link {link!r}")

    def register(func: RuleFunc) -> RuleFunc:
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
    "envcheck.rules.placement",
    "envcheck.rules.environment",
)


def load_rule_modules() -> None:
    """Import every rule module so its rules register (idempotent)."""
    import importlib

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
        )
