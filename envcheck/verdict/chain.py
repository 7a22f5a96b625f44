"""Walk the causal chain: the first broken link is the verdict, later errors are its consequences."""

from __future__ import annotations

import dataclasses

from envcheck.facts import OK, SKIPPED
from envcheck.findings import BROKEN, CPU_ONLY, GPU_READY, LINK_NAMES, NOT_INSTALLED, Finding, Severity, Verdict
from envcheck.machine import ABSENT
from envcheck.rules.engine import Context
from envcheck.verdict.ways_forward import cpu_path, gpu_path

# Findings that mean no TensorFlow runs in this interpreter, on any device.
_TF_UNUSABLE_RULES = ("EC-PY-001", "EC-PY-002", "EC-TF-006")
# A convolution that fails on the GPUs TensorFlow lists is no fall-back to the CPU: a model with a
# convolution stops there. With no GPU left that works, TensorFlow is broken, not "CPU only".
_BREAKS_WITHOUT_A_WORKING_GPU = ("EC-PLC-003",)


# Links that only work when the links before them do: their errors are consequences.
_DEPENDENT_LINKS = ("gpu", "driver", "compute", "libraries", "placement")


def walk_chain(ctx: Context, findings: list[Finding]) -> tuple[list[Finding], Verdict]:
    """Name the first broken link and group the errors it causes under it.

    Rules mark the consequences they know (a failed import caused by a missing DLL). Here the later
    errors of the GPU stack (driver, compute capability, libraries, placement) become consequences
    of the first broken link too; after a Python failure everything does. Installation and
    environment errors are no consequence of a missing driver and stay causes of their own.
    """
    findings = _known_causes(findings)
    roots = [f for f in findings if f.severity is Severity.ERROR and f.caused_by is None]
    first = roots[0] if roots else None
    own_fix: set[int] = set()
    if first is not None:
        rank = LINK_NAMES.index(first.link)
        grouped = _DEPENDENT_LINKS if first.link != "python" else tuple(n for n in LINK_NAMES if n != "environment")
        for position, f in enumerate(findings):
            if (
                f is not first
                and f.severity is Severity.ERROR
                and f.caused_by is None
                and f.link in grouped
                and LINK_NAMES.index(f.link) > rank
            ):
                findings[position] = dataclasses.replace(f, caused_by=first.id)
                # A later broken link still needs its own fix, unless it only reports the symptom
                # (TF lists no GPU) of what is broken before it.
                if f.link != "placement":
                    own_fix.add(position)
    steps = gpu_path(findings, frozenset(own_fix))
    facts = ctx.facts
    usable = ctx.usable_gpus
    gpus = len(usable)
    if _not_installed(ctx, findings):
        return findings, not_installed_verdict(ctx, findings, steps)
    breaking = [
        f
        for f in findings
        if f.severity is Severity.ERROR
        and (f.id in _TF_UNUSABLE_RULES or (f.id in _BREAKS_WITHOUT_A_WORKING_GPU and not gpus))
    ]
    unusable = ctx.tf_unusable or bool(breaking)
    if unusable:
        # "broken" names what stops TensorFlow running at all (followed back to its cause), not
        # an earlier GPU problem that would only send it to the CPU.
        breaking = breaking or [f for f in findings if f.link == "tensorflow" and f.severity is Severity.ERROR]
        if breaking:
            first = _root_of(breaking[0], findings)
    if gpus > 0 and not unusable and (first is None or facts.tensorflow.status == OK):
        seen = len(ctx.gpus)
        counted = f"{gpus} GPU{'s' if gpus != 1 else ''}" if gpus == seen else f"{gpus} of {seen} GPUs"
        reason = f"GPU ready ({counted})"
        if facts.quick or facts.tensorflow.status == SKIPPED:
            reason += "; TensorFlow itself not tested (--quick)"
        if first is not None:
            reason += f"; but {_lower_first(first.title)}"
        return findings, Verdict(
            status=GPU_READY,
            reason=reason,
            first_broken_link=first.link if first else None,
            finding_id=first.id if first else None,
            gpus=gpus,
            gpu_path=steps if first else (),
        )
    cpu = cpu_path(ctx, findings)
    if first is None:
        if ctx.gpu_presence == ABSENT:
            return findings, Verdict(
                status=CPU_ONLY,
                reason="no NVIDIA GPU on this machine; TensorFlow runs on the CPU (nothing to fix)",
                first_broken_link="gpu",
                finding_id="EC-GPU-001" if any(f.id == "EC-GPU-001" for f in findings) else None,
                gpus=0,
                gpu_path=steps,
                cpu_path=cpu,
            )
        warning = next((f for f in findings if f.severity is Severity.WARNING), None)
        return findings, Verdict(
            status=CPU_ONLY,
            reason=warning.title if warning else "no GPU usable by TensorFlow was found",
            first_broken_link=warning.link if warning else None,
            finding_id=warning.id if warning else None,
            gpus=0,
            gpu_path=steps,
            cpu_path=cpu,
        )
    return findings, Verdict(
        status=BROKEN if unusable else CPU_ONLY,
        reason=first.title,
        first_broken_link=first.link,
        finding_id=first.id,
        gpus=gpus,
        gpu_path=steps,
        cpu_path=cpu,
    )


def _not_installed(ctx: Context, findings: list[Finding]) -> bool:
    """No TensorFlow in this interpreter yet, and nothing else stops it from running there later."""
    return any(f.id == "EC-TF-001" for f in findings)


def not_installed_verdict(ctx: Context, findings: list[Finding], steps) -> Verdict:
    """Before TensorFlow is installed: the plan's recommendation for this machine, as the next step."""
    from envcheck.rules.recommendation import recommend

    plan = recommend(ctx)
    if plan is None:
        reason = "TensorFlow is not installed; run `envcheck plan` for the release that fits this machine"
        return Verdict(
            status=NOT_INSTALLED,
            reason=reason,
            first_broken_link="tensorflow",
            finding_id="EC-TF-001",
            gpu_path=steps,
            cpu_path=cpu_path(ctx, findings),
        )
    return Verdict(
        status=NOT_INSTALLED,
        reason=plan.reason,
        first_broken_link="tensorflow",
        finding_id="EC-TF-001",
        gpus=0,
        gpu_path=plan.gpu_steps,
        cpu_path=plan.cpu_steps,
        plan=plan.to_dict(),
    )


def _root_of(finding: Finding, findings: list[Finding]) -> Finding:
    by_id = {f.id: f for f in findings}
    seen = {finding.id}
    while finding.caused_by in by_id and finding.caused_by not in seen:
        finding = by_id[finding.caused_by]
        seen.add(finding.id)
    return finding


def _lower_first(title: str) -> str:
    """ "Driver 450 is too old" -> "driver 450 is too old"; "CUDA ..." stays."""
    word = title.split(" ", 1)[0]
    if len(word) > 1 and word[0].isupper() and word[1:].isalpha() and word[1:].islower():
        return title[0].lower() + title[1:]
    return title


def _known_causes(findings: list[Finding]) -> list[Finding]:
    """Drop a ``caused_by`` that names no finding of this report (that rule did not fire, or was
    deselected with --select/--ignore): a consequence of nothing is a cause."""
    ids = {f.id for f in findings}
    return [
        dataclasses.replace(f, caused_by=None)
        if f.caused_by is not None and (f.caused_by not in ids or f.caused_by == f.id)
        else f
        for f in findings
    ]
