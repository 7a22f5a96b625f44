"""Walk the causal chain: the first broken link is the verdict, later errors are its consequences."""

from __future__ import annotations

import dataclasses

from envcheck.facts import ERROR, MISSING, OK, SKIPPED, Facts
from envcheck.findings import BROKEN, CPU_ONLY, GPU_READY, LINK_NAMES, Finding, Severity, Verdict
from envcheck.rules.engine import Context
from envcheck.rules.paths import cpu_path, gpu_path

# TF error kinds after which TensorFlow cannot run at all (a timeout may only be a slow first start).
_TF_UNUSABLE_KINDS = ("not_installed", "import_failed", "crashed", "bad_output", "worker_failed")
# Findings that mean no TensorFlow runs in this interpreter, on any device.
_TF_UNUSABLE_RULES = ("EC-PY-001", "EC-PY-002", "EC-TF-001", "EC-TF-006")


def walk_chain(ctx: Context, findings: list[Finding]) -> tuple[list[Finding], Verdict]:
    """Name the first broken link and group the errors it causes under it.

    Rules mark the consequences they know (a failed import caused by a missing DLL); here every
    later error of the dependency chain becomes a consequence of the first broken link too. The
    environment link is not a dependency of the others, so its errors stay causes of their own.
    """
    findings = _known_causes(findings)
    steps = gpu_path(findings)
    roots = [f for f in findings if f.severity is Severity.ERROR and f.caused_by is None]
    first = roots[0] if roots else None
    if first is not None:
        rank = LINK_NAMES.index(first.link)
        findings = [
            dataclasses.replace(f, caused_by=first.id)
            if f is not first
            and f.severity is Severity.ERROR
            and f.caused_by is None
            and f.link != "environment"
            and LINK_NAMES.index(f.link) > rank
            else f
            for f in findings
        ]
    facts = ctx.facts
    gpus = usable_gpu_count(facts)
    unusable = tensorflow_unusable(facts) or any(f.id in _TF_UNUSABLE_RULES for f in findings)
    plural = "s" if gpus != 1 else ""
    if gpus > 0 and not unusable and (first is None or facts.tensorflow.status == OK):
        reason = f"GPU ready ({gpus} GPU{plural})"
        if facts.quick or facts.tensorflow.status == SKIPPED:
            reason += "; TensorFlow itself not tested (--quick)"
        if first is not None:
            reason += f"; but {first.title}"
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
        return findings, Verdict(
            status=CPU_ONLY, reason="no GPU usable by TensorFlow was found", gpus=0, gpu_path=steps, cpu_path=cpu
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


def _known_causes(findings: list[Finding]) -> list[Finding]:
    """Drop a ``caused_by`` that names no finding of this report (that rule did not fire, or was
    deselected with --select/--ignore): a consequence of nothing is a cause."""
    ids = {f.id for f in findings}
    return [
        dataclasses.replace(f, caused_by=None) if f.caused_by is not None and (f.caused_by not in ids or f.caused_by == f.id) else f
        for f in findings
    ]


def tensorflow_unusable(facts: Facts) -> bool:
    tf = facts.tensorflow
    if facts.python.bits and facts.python.bits != 64:
        return True
    return tf.status in (ERROR, MISSING) and tf.error_kind in _TF_UNUSABLE_KINDS


def usable_gpu_count(facts: Facts) -> int:
    """GPUs TensorFlow used in the placement test; without a TF probe, the GPUs NVML sees."""
    tf = facts.tensorflow
    if tf.status == OK:
        gpus = {p.requested for p in tf.placement if p.ok and p.device and "GPU" in p.device.upper()}
        return len(gpus)
    if tf.status == SKIPPED:
        return sum(1 for g in facts.nvml.gpus if g.status == OK)
    return 0
