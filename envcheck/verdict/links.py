"""One status line per link of the chain: what was seen there, and ok / warning / error / skipped."""

from __future__ import annotations

import re

from envcheck.facts import OK, SKIPPED, Facts
from envcheck.findings import (
    LINK_ERROR,
    LINK_NAMES,
    LINK_OK,
    LINK_SKIPPED,
    LINK_WARNING,
    Finding,
    LinkStatus,
    Severity,
    Verdict,
)
from envcheck.machine import ABSENT, GPU_VARIABLES, UNKNOWN, counted, short_device, telling_line
from envcheck.machine.libraries import all_needed
from envcheck.machine.speed import multigpu_summary, shows_multigpu_line
from envcheck.matrix.libraries import basename
from envcheck.rules.engine import Context

# Links that only mean something when there is a GPU.
_GPU_LINKS = ("gpu", "driver", "compute", "libraries")


def link_statuses(ctx: Context, findings: list[Finding], verdict: Verdict) -> tuple[LinkStatus, ...]:
    out = []
    absent = ctx.gpu_presence == ABSENT
    for name in LINK_NAMES:
        here = [f for f in findings if f.link == name]
        if name == "multigpu" and not (here or shows_multigpu_line(ctx)):
            continue  # one GPU or none: the line would say nothing
        summary, seconds, probed = _summary(ctx, name)
        if any(f.severity is Severity.ERROR for f in here):
            status = LINK_ERROR
        elif any(f.severity is Severity.WARNING for f in here):
            status = LINK_WARNING
        elif not probed or (absent and name in _GPU_LINKS and all(f.severity is Severity.INFO for f in here)):
            status = LINK_SKIPPED
        else:
            status = LINK_OK
        out.append(LinkStatus(name=name, status=status, summary=summary, seconds=seconds))
    return tuple(out)


def _summary(ctx: Context, name: str) -> tuple[str, float | None, bool]:
    """(what was seen, probe seconds, whether the probe behind this link ran)."""
    return _SUMMARIES[name](ctx, ctx.facts)


def _python(ctx: Context, facts: Facts):
    p = facts.python
    venv = " (virtualenv)" if p.in_virtualenv else " (conda)" if p.in_conda else ""
    return f"{p.implementation} {p.version}, {p.bits}-bit{venv}", p.seconds, p.status != SKIPPED


def _gpu(ctx: Context, facts: Facts):
    probed = facts.pci.status != SKIPPED or facts.nvml.status != SKIPPED
    seconds = (facts.pci.seconds or 0) + (facts.nvml.seconds or 0)
    names = ctx.gpu_names
    if names:
        return ", ".join(counted(names)), seconds, probed
    presence = ctx.gpu_presence
    if presence == UNKNOWN:
        return "unknown: no driver to ask and no PCI bus to read", seconds, probed
    return "none on this machine: TensorFlow uses the CPU", seconds, probed


def _driver(ctx: Context, facts: Facts):
    n = facts.nvml
    probed = n.status != SKIPPED or facts.driver.status != SKIPPED
    if n.driver_version:
        cuda = f" (supports CUDA up to {n.cuda_driver_version})" if n.cuda_driver_version else ""
        return f"driver {n.driver_version}{cuda}", n.seconds, True
    if facts.driver.loaded and facts.driver.version:
        return f"kernel module {facts.driver.version}", facts.driver.seconds, True
    if ctx.gpu_presence == ABSENT:
        return "none (no GPU to drive)", n.seconds, probed
    return n.error or facts.driver.error or "no NVIDIA driver found", n.seconds, probed


def _compute(ctx: Context, facts: Facts):
    ccs = sorted({g.compute_capability for g in ctx.gpus if g.compute_capability}, key=_capability_order)
    if ccs:
        return "compute capability " + ", ".join(ccs), None, True
    if ctx.gpu_presence == ABSENT:
        return "none (no GPU)", None, True
    return "unknown (no GPU seen through the driver)", None, bool(facts.nvml.gpus)


def _capability_order(cc: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", cc))


def _libraries(ctx: Context, facts: Facts):
    lib = facts.libraries
    probed = lib.status != SKIPPED
    if ctx.is_cuda_tf is False:
        return "not needed by a CPU-only TensorFlow build", lib.seconds, probed
    if ctx.gpu_presence == ABSENT:
        return "not needed without a GPU", lib.seconds, probed
    build = ctx.tf_build
    if probed and build is not None and build.libraries:
        wanted = all_needed(ctx)
        gone = [n.name for n in wanted if not n.usable]
        if not gone:
            origins = sorted({n.winner.origin for n in wanted if n.winner is not None})
            return f"all {len(wanted)} libraries TensorFlow loads found ({', '.join(origins)})", lib.seconds, True
        more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
        return f"missing: {gone[0]}{more}", lib.seconds, True
    winners = [f"{x.family}: {basename(x.winner)}" for x in lib.libraries if x.winner]
    if winners:
        return ", ".join(winners[:4]) + (" ..." if len(winners) > 4 else ""), lib.seconds, probed
    return ("no CUDA runtime or cuDNN library found" if probed else "not probed"), lib.seconds, probed


def _tensorflow(ctx: Context, facts: Facts):
    tf = facts.tensorflow
    installed = ctx.installed_tf
    if tf.status == SKIPPED:
        seen = f"{installed.distribution} {installed.version} installed; " if installed else ""
        if tf.error:
            return f"{seen}not checked: {tf.error}", None, False
        return f"{seen}not imported (--quick)", None, False
    if tf.version:
        build = (
            "a CUDA build" if tf.is_cuda_build else "a CPU-only build" if tf.is_cuda_build is False else "build unknown"
        )
        cuda = f" (CUDA {tf.cuda_version}, cuDNN {tf.cudnn_version})" if tf.is_cuda_build and tf.cuda_version else ""
        return f"{tf.version}, {build}{cuda}", tf.seconds, True
    last = [telling_line(tf.error)] if (tf.error or "").strip() else [tf.error_kind or "failed"]
    what = f"{installed.distribution} {installed.version}: " if installed else ""
    if tf.error_kind == "not_installed" and not installed:
        return "not installed yet", tf.seconds, True
    kind = {"import_failed": "does not import", "crashed": "crashed", "timeout": "timed out"}.get(
        tf.error_kind or "", (tf.error_kind or "error").replace("_", " ")
    )
    return _clip(f"{what.rstrip(': ')} {kind}: {_first_sentence(last[0])}"), tf.seconds, True


def _placement(ctx: Context, facts: Facts):
    tf = facts.tensorflow
    if tf.status == SKIPPED:
        return ("not tested: " + tf.error) if tf.error else "not tested (--quick)", None, False
    if not tf.placement:
        why = {"not_installed": "no TensorFlow", "import_failed": "TensorFlow does not import"}.get(
            tf.error_kind or "", ""
        )
        return ("not run: " + why) if why else "not run", None, tf.status == OK
    if all(p.ok for p in tf.placement):
        ops = " and ".join(dict.fromkeys(p.op for p in tf.placement))
        devices = ", ".join(dict.fromkeys(short_device(p.device) for p in tf.placement))
        if not any(short_device(p.device).startswith("GPU") for p in tf.placement):
            return f"no GPU to test: {ops} ran on the CPU", None, False
        return f"{ops} ran on {devices}", None, True
    ran = [p for p in tf.placement if p.ok]
    failed = [p for p in tf.placement if not p.ok]
    parts = []
    if ran:
        ops = " and ".join(dict.fromkeys(p.op for p in ran))
        parts.append(f"{ops} ran on {', '.join(dict.fromkeys(short_device(p.device) for p in ran))}")
    by_device: dict[str, list[str]] = {}
    for p in failed:
        by_device.setdefault(short_device(p.requested), []).append(p.op)
    parts.append("failed: " + ", ".join(f"{' and '.join(ops)} on {device}" for device, ops in by_device.items()))
    return "; ".join(parts), None, True


def _environment(ctx: Context, facts: Facts):
    keys = [k for k in GPU_VARIABLES if k in facts.env.variables]
    shown = ", ".join(f"{k}={facts.env.variables[k]!r}" for k in keys)
    return shown or "nothing that changes GPU use", facts.env.seconds, facts.env.status != SKIPPED


def _first_sentence(line: str) -> str:
    """ "ImportError: Could not find 'x.dll'. TensorFlow requires ..." -> "ImportError: Could not find 'x.dll'"."""
    return re.split(r"(?<=[.!?'\"])\s+(?=[A-Z])", line.strip(), maxsplit=1)[0].rstrip(".")


def _clip(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _multigpu(ctx: Context, facts: Facts):
    return multigpu_summary(ctx), None, facts.nvml.status != SKIPPED or facts.pci.status != SKIPPED


_SUMMARIES = {
    "python": _python,
    "gpu": _gpu,
    "driver": _driver,
    "compute": _compute,
    "libraries": _libraries,
    "tensorflow": _tensorflow,
    "placement": _placement,
    "environment": _environment,
    "multigpu": _multigpu,
}
