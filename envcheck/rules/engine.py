"""The rule registry, the context rules read, and the walk that turns findings into a verdict.

A rule is a small function registered with ``@rule(...)``. It reads ``ctx.facts`` (and the matrix
through ``ctx.matrix``) and yields ``Hit``s; the engine turns each hit into a ``Finding`` carrying
the rule's stable id, severity and chain link. Rules never raise into the doctor: a rule that
crashes becomes an internal-warning finding so one bad rule cannot hide the others.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional

from envcheck.facts import Facts
from envcheck.findings import LINK_NAMES, Finding, Fix, Severity

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix


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


@dataclass
class Context:
    """What rules read. The matrix is loaded on first use so rules that do not need it stay cheap."""

    facts: Facts
    matrix_loader: Callable[[], "Matrix"] | None = None
    _matrix: Optional["Matrix"] = field(default=None, repr=False)
    # Answers shared between rules (which TF is installed, its matrix row...); see rules.common.
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def matrix(self) -> "Matrix":
        if self._matrix is None:
            if self.matrix_loader is None:
                from envcheck.matrix import load_matrix

                self._matrix = load_matrix()
            else:
                self._matrix = self.matrix_loader()
        return self._matrix

    @cached_property
    def os(self) -> str:
        """"linux", "windows", "macos" or "wsl" (WSL counts as Linux for TF builds)."""
        return self.facts.platform.os or "linux"

    @cached_property
    def build_os(self) -> str:
        """The OS whose TF builds apply: WSL runs the Linux wheels."""
        return "linux" if self.os == "wsl" else self.os

    @property
    def shell(self) -> str:
        return "powershell" if self.os == "windows" else "bash"


def load_rule_modules() -> None:
    """Import every rule module so its rules register (idempotent)."""
    from envcheck.rules import RULE_MODULES  # noqa: PLC0415 - avoids an import cycle

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
