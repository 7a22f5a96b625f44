"""The rule catalogue (one module per area) and ``judge``: facts in, report out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Optional

from envcheck import __version__
from envcheck.facts import Facts
from envcheck.findings import Report, exit_code_for
from envcheck.rules.engine import RULES, Context, Hit, Rule, evaluate, rule

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix

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

__all__ = ["RULES", "RULE_MODULES", "Context", "Hit", "Rule", "evaluate", "judge", "rule"]


def judge(
    facts: Facts,
    matrix_loader: Optional[Callable[[], "Matrix"]] = None,
    fail_on: str = "error",
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    notes: tuple[str, ...] = (),
) -> Report:
    """Run the rules over a snapshot and walk the chain to a verdict."""
    from envcheck.rules.links import link_statuses
    from envcheck.rules.verdict import walk_chain

    ctx = Context(facts=facts, matrix_loader=matrix_loader)
    findings = evaluate(ctx, select=select, ignore=ignore)
    findings, verdict = walk_chain(ctx, findings)
    return Report(
        facts=facts,
        findings=tuple(findings),
        verdict=verdict,
        links=link_statuses(ctx, findings, verdict),
        exit_code=exit_code_for(findings, fail_on),
        envcheck_version=__version__,
        notes=notes,
    )
