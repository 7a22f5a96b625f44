"""The two ways forward when the GPU cannot be used: what fixes the GPU path, in chain order, and
how to run on the CPU today with the probed interpreter."""

from __future__ import annotations

import dataclasses

from envcheck.findings import Finding, Fix, Severity
from envcheck.machine import ABSENT, minor
from envcheck.rules.engine import Context
from envcheck.rules.installs import plan_for
from envcheck.rules.recommendation import other_steps


class _ANY:  # a distribution the matrix does not list: judged by its release row
    cuda = "release"


def gpu_path(ctx: Context, findings: list[Finding], also: frozenset[int] = frozenset()) -> tuple[Fix, ...]:
    """The fixes of the errors that are causes, in chain order, each once, for one TensorFlow
    release. ``also`` holds the positions of consequences that still need their own fix; a
    consequence a rule marked itself is cleared by its cause's fix.

    The path has one target release: the installed one, or the one the first step that moves to
    another release installs. Every step computed for another release is dropped, and the plan's
    own steps for the target (its driver, its CUDA and cuDNN where they are not wheels) take their
    place, so no later step undoes an earlier one."""
    steps: list[Fix] = []
    seen: set[str] = set()
    for position, f in enumerate(findings):
        if f.severity is not Severity.ERROR or f.fix is None or f.fix.text in seen:
            continue
        if f.caused_by is not None and position not in also:
            continue
        seen.add(f.fix.text)
        steps.append(dataclasses.replace(f.fix, text=f"{f.id}: {f.fix.text}"))
    installed = minor(ctx.installed_tf.version) if ctx.installed_tf is not None else None
    move = next((s for s in steps if s.release is not None and s.release != installed), None)
    if move is None:
        return tuple(steps)
    kept = [s for s in steps if s.release in (None, move.release)]
    return tuple(_with_plan_steps(ctx, kept, move))


def _with_plan_steps(ctx: Context, steps: list[Fix], move: Fix) -> list[Fix]:
    """The plan's steps for the target release around the step that installs it: the driver
    before, the rest after; a step whose commands an earlier one already gives is left out."""
    plan = plan_for(ctx, move.release)
    if plan is None:
        return steps
    before, after = other_steps(plan)
    given = {c.line for s in steps for c in s.commands}
    fresh = lambda fix: not fix.commands or not {c.line for c in fix.commands} <= given  # noqa: E731
    at = steps.index(move)
    return steps[:at] + [f for f in before if fresh(f)] + [move] + [f for f in after if fresh(f)] + steps[at + 1 :]


def cpu_path(ctx: Context, findings: list[Finding]) -> tuple[Fix, ...]:
    """How to run on the CPU today, with what was measured to work: a CPU build where one is
    published (it prints no CUDA start-up errors), TensorFlow's log level where it is not, and
    CUDA_VISIBLE_DEVICES only when there is a GPU to keep TensorFlow off."""
    facts = ctx.facts
    steps: list[Fix] = []
    python_root = next((f for f in findings if f.link == "python" and f.severity is Severity.ERROR and f.fix), None)
    if python_root is not None:
        # No TensorFlow runs in this interpreter, CPU or GPU: the Python fix comes first.
        steps.append(Fix(text=python_root.fix.text, commands=python_root.fix.commands, url=python_root.fix.url))
        return tuple(steps)

    installed = [d.name for d in ctx.independent_distributions]
    tf = ctx.installed_tf
    gpu_only = [d for d in installed if (ctx.matrix.tf_distribution(d) or _ANY).cuda == "always"]
    remove = list(gpu_only)
    cpu_capable = [d for d in installed if d not in gpu_only]
    if len(cpu_capable) > 1:
        # A mix (tensorflow + tensorflow-cpu): keep none of it, reinstall one below.
        remove += cpu_capable
        cpu_capable = []
    if remove:
        steps.append(
            Fix(
                text=f"Remove {', '.join(remove)} ({'GPU-only' if not cpu_capable and len(remove) == len(gpu_only) else 'GPU-only or mixed'}: in the way of a CPU build).",
                commands=(ctx.pip_command("uninstall", "-y", *remove),),
            )
        )
    cuda_after = ctx.is_cuda_tf is True and bool(cpu_capable)  # the TensorFlow left would still try CUDA
    if not cpu_capable:
        requirement = _cpu_requirement(ctx, tf.version if tf else None)
        cuda_after = _gpu_capable(ctx, requirement)
        steps.append(
            Fix(
                text=f"Install TensorFlow for the CPU ({requirement}).",
                commands=(ctx.pip_command("install", requirement),),
            )
        )
    elif facts.tensorflow.error_kind == "import_failed" and tf is not None:
        steps.append(
            Fix(
                text=f"Reinstall {tf.distribution} {tf.version}, which does not import.",
                commands=(ctx.pip_command("install", "--force-reinstall", f"{tf.distribution}=={tf.version}"),),
            )
        )
    elif ctx.is_cuda_tf is True and ctx.gpu_presence == ABSENT and tf is not None:
        steps.append(_quieter(ctx, tf))
    if ctx.gpu_presence != ABSENT and cuda_after:
        steps.append(_hide_gpu(ctx))
    return tuple(steps)


def _gpu_capable(ctx: Context, requirement: str) -> bool:
    """Whether the CPU requirement installs a build that still tries CUDA (plain ``tensorflow``
    2.1+ on Linux, and up to 2.10 on Windows, carries CUDA)."""
    name, _, version = requirement.partition("==")
    if name != "tensorflow" or not version:
        return False
    build = ctx.build_for(version.rstrip(".*"))
    # Before 2.1 the GPU build was the tensorflow-gpu package; plain "tensorflow" had no CUDA.
    return build is not None and build.gpu and build.tf >= ctx.matrix.platform.gpu_in_tensorflow_package_from


def _quieter(ctx: Context, tf) -> Fix:
    """A CUDA build on a machine without a GPU runs on the CPU but prints CUDA's start-up error
    (failed call to cuInit) at every start; CUDA_VISIBLE_DEVICES does not stop it (TF 2.21)."""
    build = ctx.build_for(tf.version)
    cpu = (
        ctx.pip_requirement(build, tf.version if _exact_exists(tf.version) else None, gpu=False)
        if build is not None
        else None
    )
    if cpu is not None and cpu.startswith("tensorflow-cpu=="):
        return Fix(
            text=(
                f"Optional: the same release without CUDA ({cpu}) is smaller and prints no CUDA start-up error. "
                f"{tf.distribution} {tf.version} is a CUDA build: on a machine without a GPU it runs on the CPU but "
                "reports CUDA's failed start every time."
            ),
            commands=(ctx.pip_command("uninstall", "-y", tf.distribution), ctx.pip_command("install", cpu)),
        )
    return Fix(
        text=(
            "Optional: raise TensorFlow's log level to stop CUDA's start-up error at every start. It also hides "
            "TensorFlow's other errors: unset it while debugging."
        ),
        commands=(ctx.set_variable("TF_CPP_MIN_LOG_LEVEL", "3"),),
    )


def _cpu_requirement(ctx: Context, version: str | None) -> str:
    """The same release's CPU wheel when it exists for this OS and Python, else the newest
    release for this Python; plain "tensorflow" when the matrix cannot tell."""
    python = ctx.facts.python.version or None
    if version:
        build = ctx.build_for(version)
        if build is not None and (python is None or build.supports_python(python)):
            return ctx.pip_requirement(build, version if _exact_exists(version) else None, gpu=False)
    newest = ctx.newest_release(gpu=False, python=python)
    return ctx.pip_requirement(newest, gpu=False) if newest is not None else "tensorflow"


def _exact_exists(version: str) -> bool:
    # A nightly or pre-release number has no CPU twin of the same number; a plain release does.
    return all(part.isdigit() for part in version.split("."))


def _hide_gpu(ctx: Context) -> Fix:
    return Fix(
        text="Keep TensorFlow off the GPU (it is there but not usable): hide it from CUDA in this shell.",
        commands=(ctx.set_variable("CUDA_VISIBLE_DEVICES", "-1"),),
    )
