"""Fixes that move to another TensorFlow release: the planner's choice and steps, so that the
doctor recommends what ``envcheck plan`` recommends for the same machine, and a fix can always be
done as given (a release that needs another Python gets that Python first)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from envcheck.errors import EnvcheckError
from envcheck.findings import Fix
from envcheck.machine import minor
from envcheck.matrix.runs import release_runs_on_gpu
from envcheck.rules.engine import Context
from envcheck.shell import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import TfBuild
    from envcheck.planner import Plan

# Start-up: the planner is imported inside the functions below, which run only for a fix that moves
# to another release or a machine without TensorFlow, not on every doctor run.


def runs_here(ctx: Context, build: "TfBuild") -> bool:
    """The probed interpreter has wheels for this release (a 64-bit Python of a version it supports)."""
    python = ctx.facts.python
    return bool(python.version) and build.supports_python(python.version) and python.bits in (0, 64)


def install_release(
    ctx: Context,
    build: "TfBuild",
    *,
    gpu: bool = True,
    exact: Optional[str] = None,
    step: bool = False,
    remove: tuple[str, ...] = (),
) -> tuple[tuple[Command, ...], str]:
    """(commands, a sentence for the fix text) that install ``build``'s release on this machine.

    In this interpreter when it can run the release (a pip step, run by --apply only when
    ``step``); otherwise the plan's own steps: the Python the release needs, then a virtual
    environment with the release in it."""
    if runs_here(ctx, build):
        commands = []
        if remove:
            commands.append(ctx.pip_command("uninstall", "-y", *remove, step=step))
        requirement = ctx.pip_requirement(build, exact, gpu=gpu)
        commands.append(ctx.pip_command("install", requirement, step=step))
        return tuple(commands), ""
    from envcheck.planner.options import cpu_option, gpu_option, python_range  # start-up: see above

    # lazy for start-up: keeps planner.steps, planner.target out of `envcheck doctor`
    from envcheck.planner.steps import environment_steps
    from envcheck.planner.target import target_from_machine

    matrix = ctx.matrix
    target = target_from_machine(ctx)
    option = gpu_option(matrix, build, target, ctx.os) if gpu else cpu_option(matrix, build, target, ctx.os)
    option = dataclasses.replace(option, exact=exact)
    commands = tuple(line for s in environment_steps(matrix, target, option) for line in s.lines)
    pythons = python_range(build.python)
    have = ctx.facts.python.version or "unknown"
    return commands, (
        f" TensorFlow {build.label} needs Python {pythons} (this one is {have}): the commands create a Python "
        f"{option.python} environment (tf-env) and install it there."
    )


def plan_for(ctx: Context, release: Optional[str] = None) -> Optional["Plan"]:
    """What ``envcheck plan`` recommends for this machine, or its plan for ``release`` (``--tf``);
    None when the matrix has nothing for it. Made once per machine and release (a plan is a
    function of the facts and the matrix, both fixed for a machine)."""
    plans = ctx.plans
    if release not in plans:
        plans[release] = _make_plan_for(ctx, release)
    return plans[release]


def _make_plan_for(ctx: Context, release: Optional[str]) -> Optional["Plan"]:
    from envcheck.planner import make_plan  # start-up: see above

    # lazy for start-up: keeps planner.target out of `envcheck doctor`
    from envcheck.planner.target import target_from_machine

    try:
        target = target_from_machine(ctx)
        if release is not None:
            target = dataclasses.replace(target, tf_pin=release)
        return make_plan(ctx.matrix, target)
    except EnvcheckError:  # a machine the planner cannot place gets no recommendation
        return None


def newest_release_for(ctx: Context, cc: str) -> Optional["TfBuild"]:
    """The newest release (any Python) whose build runs on a GPU of capability ``cc`` here, with a
    driver that GPU can get."""
    return ctx.newest_release(gpu=True, accept=lambda b: release_runs_on_gpu(ctx.matrix, b, cc, ctx.os).runs is True)


def move_fix(ctx: Context, why: str, url: Optional[str] = None, otherwise: str = "use a newer GPU") -> Fix:
    """Install the release the plan recommends for this machine; ``why`` says what it is (the newest
    release that runs on this GPU). Its commands, and the GPUs the plan leaves out, are the plan's."""
    plan = plan_for(ctx)
    if plan is None or plan.option.kind != "gpu":
        return Fix(
            text=f"No TensorFlow release in the matrix runs on this GPU: run on the CPU or {otherwise}.", url=url
        )
    option = plan.option
    commands, python_note = install_release(ctx, option.build, exact=option.exact)
    left = [s for s in plan.steps if s.title.startswith("Leave out")]
    text = (
        f"Install TensorFlow {option.tf} (CUDA {option.cuda}, cuDNN {option.cudnn}, Python "
        f"{', '.join(option.build.python)}), {why}, or {otherwise}.{python_note}"
    )
    if left:
        text += f" {left[0].title}: {left[0].detail}"
        commands = commands + tuple(line for s in left for line in s.lines)
    return Fix(text=text, commands=commands, url=url, release=minor(option.tf))
