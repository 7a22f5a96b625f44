"""The machine's chain: the first broken link, and the errors further down that depend on it.

A rule marks the consequences it knows (a failed import caused by a missing DLL), and only where
its cause's fix clears them too. Here the later errors of the GPU stack (driver, compute capability,
libraries, placement) are grouped under the first broken link as well, and keep their own fix when
they have one; after a Python failure everything is. Installation and environment errors are no
consequence of a missing driver and stay causes of their own.
"""

from __future__ import annotations

import dataclasses

from envcheck.findings import LINK_NAMES, Finding, Severity

# Links that only work when the links before them do: their errors are consequences.
DEPENDENT_LINKS = ("gpu", "driver", "compute", "libraries", "placement")
# A link whose errors only report the symptom (TF lists no GPU) of what is broken before them.
SYMPTOM_LINKS = ("placement",)


def group(findings: list[Finding]) -> tuple[list[Finding], frozenset[int]]:
    """(the findings with their causes marked, the positions of consequences that still need a fix
    of their own: cuDNN missing as well as the driver being too old)."""
    findings = known_causes(findings)
    first = first_root(findings)
    own_fix: set[int] = set()
    if first is None:
        return findings, frozenset()
    rank = LINK_NAMES.index(first.link)
    grouped = DEPENDENT_LINKS if first.link != "python" else tuple(n for n in LINK_NAMES if n != "environment")
    for position, f in enumerate(findings):
        if f is first or f.severity is not Severity.ERROR or f.caused_by is not None:
            continue
        if f.link in grouped and LINK_NAMES.index(f.link) > rank:
            findings[position] = dataclasses.replace(f, caused_by=first.id)
            if f.link not in SYMPTOM_LINKS:
                own_fix.add(position)
    return findings, frozenset(own_fix)


def first_root(findings: list[Finding]) -> Finding | None:
    """The first error that is nobody's consequence: the first broken link."""
    return next((f for f in findings if f.severity is Severity.ERROR and f.caused_by is None), None)


def root_of(finding: Finding, findings: list[Finding]) -> Finding:
    """Follow ``caused_by`` back to the cause."""
    by_id = {f.id: f for f in findings}
    seen = {finding.id}
    while finding.caused_by in by_id and finding.caused_by not in seen:
        finding = by_id[finding.caused_by]
        seen.add(finding.id)
    return finding


def known_causes(findings: list[Finding]) -> list[Finding]:
    """Drop a ``caused_by`` that names no finding of this report (that rule did not fire, or was
    deselected with --select/--ignore): a consequence of nothing is a cause."""
    ids = {f.id for f in findings}
    return [
        dataclasses.replace(f, caused_by=None)
        if f.caused_by is not None and (f.caused_by not in ids or f.caused_by == f.id)
        else f
        for f in findings
    ]
