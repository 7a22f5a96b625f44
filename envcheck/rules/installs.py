"""Fixes that move to another TensorFlow release: the planner's steps, so that a fix can always be
done as given (a release that needs another Python gets that Python first)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from envcheck.rules.engine import Context
from envcheck.shell import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import TfBuild


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
    from envcheck.planner.options import cpu_option, gpu_option
    from envcheck.planner.steps import environment_steps
    from envcheck.planner.target import target_from_facts

    matrix = ctx.matrix
    target = target_from_facts(ctx.facts, matrix)
    option = gpu_option(matrix, build, target, ctx.os) if gpu else cpu_option(matrix, build, target, ctx.os)
    option = dataclasses.replace(option, exact=exact)
    commands = tuple(line for s in environment_steps(matrix, target, option) for line in s.lines)
    from envcheck.planner.options import python_range

    pythons = python_range(build.python)
    have = ctx.facts.python.version or "unknown"
    return commands, (
        f" TensorFlow {build.label} needs Python {pythons} (this one is {have}): the commands create a Python "
        f"{option.python} environment (tf-env) and install it there."
    )
