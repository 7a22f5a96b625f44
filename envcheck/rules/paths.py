"""The two ways forward when the GPU cannot be used: what fixes the GPU path, in chain order, and
how to run on the CPU today with the probed interpreter."""

from __future__ import annotations

from envcheck.findings import Finding, PathStep, Severity
from envcheck.rules.common import (
    ABSENT,
    GPU_ONLY_DISTRIBUTIONS,
    build_for,
    cpu_requirement,
    gpu_presence,
    installed_tf,
    independent_distributions,
    is_cuda_tf,
    newest_release,
    pip_command,
    shell_command,
)
from envcheck.rules.engine import Context


def gpu_path(findings: list[Finding], also: frozenset[int] = frozenset()) -> tuple[PathStep, ...]:
    """The fixes of the errors that are causes, in chain order, each once. ``also`` holds the
    positions of consequences that still need their own fix (cuDNN missing as well as the driver
    being too old); a consequence a rule marked itself is solved by its cause."""
    steps: list[PathStep] = []
    seen: set[str] = set()
    for position, f in enumerate(findings):
        if f.severity is not Severity.ERROR or f.fix is None or f.fix.text in seen:
            continue
        if f.caused_by is not None and position not in also:
            continue
        seen.add(f.fix.text)
        steps.append(PathStep(text=f"{f.id}: {f.fix.text}", commands=f.fix.commands, link=f.fix.link))
    return tuple(steps)


def cpu_path(ctx: Context, findings: list[Finding]) -> tuple[PathStep, ...]:
    facts = ctx.facts
    steps: list[PathStep] = []
    python_root = next((f for f in findings if f.link == "python" and f.severity is Severity.ERROR and f.fix), None)
    if python_root is not None:
        # No TensorFlow runs in this interpreter, CPU or GPU: the Python fix comes first.
        steps.append(PathStep(text=python_root.fix.text, commands=python_root.fix.commands, link=python_root.fix.link))
        return tuple(steps) + (_hide_gpu(ctx),)

    installed = [d.name for d in independent_distributions(facts)]
    tf = installed_tf(ctx)
    remove = [d for d in installed if d in GPU_ONLY_DISTRIBUTIONS]
    cpu_capable = [d for d in installed if d not in GPU_ONLY_DISTRIBUTIONS]
    if len(cpu_capable) > 1:
        # A mix (tensorflow + tensorflow-cpu): keep none of it, reinstall one below.
        remove += cpu_capable
        cpu_capable = []
    if remove:
        steps.append(
            PathStep(
                text=f"Remove {', '.join(remove)}: {'it is' if len(remove) == 1 else 'they are'} GPU-only or mixed and in the way of a CPU build.",
                commands=(pip_command(ctx, "uninstall", "-y", *remove),),
            )
        )
    if not cpu_capable:
        requirement = _cpu_requirement(ctx, tf.version if tf else None)
        steps.append(
            PathStep(
                text=f"Install the CPU-capable TensorFlow ({requirement}); it runs on the CPU when no GPU is usable.",
                commands=(pip_command(ctx, "install", requirement),),
            )
        )
    elif facts.tensorflow.error_kind == "import_failed" and tf is not None:
        steps.append(
            PathStep(
                text=f"Reinstall {tf.distribution} {tf.version}, which does not import.",
                commands=(pip_command(ctx, "install", "--force-reinstall", f"{tf.distribution}=={tf.version}"),),
            )
        )
    if is_cuda_tf(ctx) is not False or gpu_presence(facts) != ABSENT or remove:
        steps.append(_hide_gpu(ctx))
    return tuple(steps)


def _cpu_requirement(ctx: Context, version: str | None) -> str:
    """The same release's CPU-capable wheel when it exists for this OS and Python, else the newest
    release for this Python; plain "tensorflow" when the matrix cannot tell."""
    python = ctx.facts.python.version or None
    if version:
        build = build_for(ctx, version)
        if build is not None and (python is None or build.supports_python(python)):
            return cpu_requirement(build, version if _exact_exists(version) else None)
    newest = newest_release(ctx, gpu=False, python=python)
    return cpu_requirement(newest) if newest is not None else "tensorflow"


def _exact_exists(version: str) -> bool:
    # A nightly or pre-release number has no CPU twin of the same number; a plain release does.
    return all(part.isdigit() for part in version.split("."))


def _hide_gpu(ctx: Context) -> PathStep:
    return PathStep(
        text="Hide the GPU so TensorFlow does not try CUDA (and warn about it) at start-up.",
        commands=(shell_command(ctx, 'export CUDA_VISIBLE_DEVICES=""', '$env:CUDA_VISIBLE_DEVICES = "-1"'),),
    )

