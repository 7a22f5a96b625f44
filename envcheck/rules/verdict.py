"""Walk the causal chain: the first broken link is the verdict, later errors are its consequences."""

from __future__ import annotations

import dataclasses

from envcheck.facts import ERROR, MISSING, OK, SKIPPED, Facts
from envcheck.findings import (
    BROKEN,
    CPU_ONLY,
    GPU_READY,
    LINK_ERROR,
    LINK_NAMES,
    LINK_OK,
    LINK_SKIPPED,
    LINK_WARNING,
    Command,
    Finding,
    LinkStatus,
    PathStep,
    Severity,
    Verdict,
)
from envcheck.rules.engine import Context

# Links whose failure means TensorFlow cannot run at all (not even on the CPU).
_TF_UNUSABLE_KINDS = ("not_installed", "import_failed", "crashed", "timeout", "bad_output", "worker_failed")


def walk_chain(ctx: Context, findings: list[Finding]) -> tuple[list[Finding], Verdict]:
    errors = [f for f in findings if f.severity is Severity.ERROR]
    first = next((f for f in errors if f.caused_by is None), None)
    if first is not None:
        # Errors further down the chain are consequences of the first broken link, not news.
        first_rank = LINK_NAMES.index(first.link)
        findings = [
            dataclasses.replace(f, caused_by=first.id)
            if f is not first
            and f.severity is Severity.ERROR
            and f.caused_by is None
            and LINK_NAMES.index(f.link) > first_rank
            else f
            for f in findings
        ]
    facts = ctx.facts
    gpus = usable_gpu_count(facts)
    gpu_path = _gpu_path(findings)
    cpu_path = cpu_path_steps(ctx)
    if first is None:
        if gpus > 0:
            reason = f"GPU ready ({gpus} GPU{'s' if gpus != 1 else ''})"
            if facts.quick or facts.tensorflow.status == SKIPPED:
                reason += "; TensorFlow itself not tested (--quick)"
            return findings, Verdict(status=GPU_READY, reason=reason, gpus=gpus)
        reason = "no GPU usable by TensorFlow was found"
        return findings, Verdict(status=CPU_ONLY, reason=reason, gpus=0, gpu_path=gpu_path, cpu_path=cpu_path)
    status = BROKEN if tensorflow_unusable(facts) or first.link == "python" else CPU_ONLY
    return findings, Verdict(
        status=status,
        reason=first.title,
        first_broken_link=first.link,
        finding_id=first.id,
        gpus=gpus,
        gpu_path=gpu_path,
        cpu_path=cpu_path if status != GPU_READY else (),
    )


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


def _gpu_path(findings: list[Finding]) -> tuple[PathStep, ...]:
    steps: list[PathStep] = []
    seen: set[str] = set()
    for f in findings:
        if f.severity is not Severity.ERROR or f.fix is None or f.fix.text in seen:
            continue
        seen.add(f.fix.text)
        steps.append(PathStep(text=f.fix.text, commands=f.fix.commands, link=f.fix.link))
    return tuple(steps)


def cpu_path_steps(ctx: Context) -> tuple[PathStep, ...]:
    """How to run on the CPU today with the probed interpreter."""
    facts = ctx.facts
    steps: list[PathStep] = []
    python = facts.python.executable or "python"
    quoted = f'"{python}"' if " " in python else python
    if facts.distribution("tensorflow-gpu") is not None:
        steps.append(
            PathStep(
                text="Remove tensorflow-gpu (it holds the GPU build and conflicts with the CPU build).",
                commands=(
                    Command(f"{quoted} -m pip uninstall -y tensorflow-gpu", pip_args=("uninstall", "-y", "tensorflow-gpu")),
                ),
            )
        )
    tf = facts.tensorflow
    if tf.status != OK and facts.distribution("tensorflow") is None and facts.distribution("tensorflow-cpu") is None:
        steps.append(
            PathStep(
                text="Install TensorFlow (the standard wheel runs on the CPU when no GPU is usable).",
                commands=(Command(f"{quoted} -m pip install tensorflow", pip_args=("install", "tensorflow")),),
            )
        )
    if ctx.os == "windows":
        hide = Command('$env:CUDA_VISIBLE_DEVICES = "-1"', shell="powershell")
    else:
        hide = Command('export CUDA_VISIBLE_DEVICES=""', shell="bash")
    steps.append(
        PathStep(
            text="Hide the GPU so TensorFlow does not try (and warn about) CUDA at start-up.",
            commands=(hide,),
        )
    )
    return tuple(steps)


# --- one status line per link --------------------------------------------------------------------


def link_statuses(ctx: Context, findings: list[Finding], verdict: Verdict) -> tuple[LinkStatus, ...]:
    facts = ctx.facts
    out = []
    for name in LINK_NAMES:
        here = [f for f in findings if f.link == name]
        summary, seconds, probed = _summary(name, facts)
        if any(f.severity is Severity.ERROR and f.caused_by is None for f in here):
            status = LINK_ERROR
        elif any(f.severity is Severity.ERROR for f in here):
            status = LINK_ERROR
        elif any(f.severity is Severity.WARNING for f in here):
            status = LINK_WARNING
        elif not probed:
            status = LINK_SKIPPED
        else:
            status = LINK_OK
        out.append(LinkStatus(name=name, status=status, summary=summary, seconds=seconds))
    return tuple(out)


def _summary(name: str, facts: Facts) -> tuple[str, float | None, bool]:
    """(what was seen, probe seconds, whether the probe behind this link ran)."""
    if name == "python":
        p = facts.python
        venv = " (virtualenv)" if p.in_virtualenv else " (conda)" if p.in_conda else ""
        return f"{p.implementation} {p.version}, {p.bits}-bit{venv}", p.seconds, p.status != SKIPPED
    if name == "gpu":
        names = [g.name for g in facts.nvml.gpus if g.name] or [
            d.name or f"NVIDIA device {d.device_id}" for d in facts.pci.devices
        ]
        probed = facts.pci.status != SKIPPED or facts.nvml.status != SKIPPED
        seconds = (facts.pci.seconds or 0) + (facts.nvml.seconds or 0)
        if names:
            return ", ".join(_count_names(names)), seconds, probed
        return "no NVIDIA GPU found", seconds, probed
    if name == "driver":
        n = facts.nvml
        if n.driver_version:
            cuda = f" (supports CUDA up to {n.cuda_driver_version})" if n.cuda_driver_version else ""
            return f"driver {n.driver_version}{cuda}", n.seconds, True
        if facts.driver.loaded and facts.driver.version:
            return f"kernel module {facts.driver.version}", facts.driver.seconds, True
        text = n.error or "no NVIDIA driver found"
        return text, n.seconds, n.status != SKIPPED or facts.driver.status != SKIPPED
    if name == "compute":
        ccs = sorted({g.compute_capability for g in facts.nvml.gpus if g.compute_capability})
        if ccs:
            return "compute capability " + ", ".join(ccs), None, True
        return "unknown (no GPU seen through the driver)", None, bool(facts.nvml.gpus)
    if name == "libraries":
        lib = facts.libraries
        winners = [f"{x.family}: {x.winner.rsplit('/', 1)[-1].rsplit(chr(92), 1)[-1]}" for x in lib.libraries if x.winner]
        if winners:
            return ", ".join(winners[:4]) + (" ..." if len(winners) > 4 else ""), lib.seconds, True
        return ("no CUDA runtime or cuDNN library found" if lib.status != SKIPPED else "not probed"), lib.seconds, lib.status != SKIPPED
    if name == "tensorflow":
        tf = facts.tensorflow
        if tf.status == SKIPPED:
            dist = next((d for d in facts.packages.distributions if d.name.startswith(("tensorflow", "tf-nightly"))), None)
            seen = f"{dist.name} {dist.version} installed; " if dist else ""
            return f"{seen}not imported (--quick)", None, False
        if tf.version:
            build = "CUDA build" if tf.is_cuda_build else "CPU-only build" if tf.is_cuda_build is False else "build unknown"
            cuda = f" for CUDA {tf.cuda_version}, cuDNN {tf.cudnn_version}" if tf.is_cuda_build and tf.cuda_version else ""
            return f"TensorFlow {tf.version}, {build}{cuda}", tf.seconds, True
        return tf.error or "TensorFlow not installed", tf.seconds, True
    if name == "placement":
        tf = facts.tensorflow
        if tf.status == SKIPPED:
            return "not tested (--quick)", None, False
        if not tf.placement:
            return "not run", None, tf.status == OK
        parts = [f"{p.op} on {p.device or '?'}" + ("" if p.ok else " (failed)") for p in tf.placement]
        return ", ".join(parts), None, True
    if name == "environment":
        keys = [k for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TF_FORCE_GPU_ALLOW_GROWTH") if k in facts.env.variables]
        shown = ", ".join(f"{k}={facts.env.variables[k]!r}" for k in keys)
        return shown or "nothing that changes GPU use", facts.env.seconds, facts.env.status != SKIPPED
    return "", None, False


def _count_names(names: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return [f"{c}x {n}" if c > 1 else n for n, c in counts.items()]
