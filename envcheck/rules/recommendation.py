"""Before TensorFlow is installed: the plan's recommendation for this machine, as the verdict's
next step (the release, the install line for this interpreter, and what else the GPU path needs).

The planner chooses; this only turns its choice into the doctor's two ways forward, so that
``envcheck doctor`` in a fresh environment ends with what to run next rather than with an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from envcheck.findings import Fix
from envcheck.machine import minor
from envcheck.rules.engine import Context
from envcheck.rules.installs import install_release, plan_for, runs_here

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.planner import Plan


@dataclass(frozen=True)
class Recommendation:
    reason: str  # the verdict line after "not installed: "
    gpu_steps: tuple[Fix, ...]
    cpu_steps: tuple[Fix, ...]
    summary: dict[str, Any]  # the plan's option, as ``plan --json`` spells it

    def to_dict(self) -> dict[str, Any]:
        return dict(self.summary)


def recommend(ctx: Context) -> Optional[Recommendation]:
    """The plan for this machine, or None when the matrix has nothing for it."""
    plan = plan_for(ctx)
    if plan is None:
        return None
    # Start-up: the planner's modules are loaded only for a machine without TensorFlow (plan_for).
    from envcheck.planner import option_to_dict

    # lazy for start-up: keeps planner.options, planner.steps out of `envcheck doctor`
    from envcheck.planner.options import CPU
    from envcheck.planner.steps import requirement

    option = plan.option
    where = "on the GPU" if option.kind != CPU else "on the CPU"
    requirement_line = requirement(option)
    reason = f"TensorFlow is not installed yet; for this machine: TensorFlow {option.tf} {where} ({requirement_line})"
    if option.python_change:
        reason += f", with Python {option.python}"
    install, python_note = install_release(
        ctx, option.build, gpu=option.kind != CPU, exact=option.exact, step=runs_here(ctx, option.build)
    )
    first = Fix(
        text=f"Install TensorFlow {option.tf}"
        + (" with its CUDA libraries" if option.cuda_extra else "")
        + f".{python_note}",
        commands=install,
        url="https://www.tensorflow.org/install/pip",
        release=minor(option.tf),
    )
    before, after = other_steps(plan)
    summary = {**option_to_dict(option), "requirement": requirement_line}
    if option.kind == CPU:
        return Recommendation(reason=reason, gpu_steps=(), cpu_steps=(first, *after), summary=summary)
    return Recommendation(
        reason=reason, gpu_steps=(*before, first, *after), cpu_steps=_cpu_alternative(ctx, plan), summary=summary
    )


# Plan steps the install above already does in this interpreter (or through the plan's own
# environment steps when this interpreter cannot run the release).
_REPLACED = ("Install TensorFlow", "Check it", "Install Python", "Install 64-bit Python", "Check that Python")


def other_steps(plan: "Plan") -> tuple[list[Fix], list[Fix]]:
    """The plan's steps besides installing the release (the driver, CUDA and cuDNN where they are not
    pip wheels, the GPUs it leaves out), as fixes: (those before the install: the driver; the rest)."""
    before: list[Fix] = []
    after: list[Fix] = []
    release = minor(plan.option.tf)
    for step in plan.steps:
        if step.title.startswith(_REPLACED):
            continue
        fix = Fix(
            text=step.title + (f": {step.detail}" if step.detail else ""),
            commands=step.lines,
            url=step.url,
            release=release,
        )
        (before if "driver" in step.title.lower() else after).append(fix)
    return before, after


def _cpu_alternative(ctx: Context, plan: "Plan") -> tuple[Fix, ...]:
    alternative = next((a for a in plan.choice.alternatives if a.key == "cpu" and a.option is not None), None)
    if alternative is None:
        return ()
    option = alternative.option
    install, python_note = install_release(
        ctx, option.build, gpu=False, exact=option.exact, step=runs_here(ctx, option.build)
    )
    return (
        Fix(text=f"Or install TensorFlow {option.tf} for the CPU only (no GPU setup).{python_note}", commands=install),
    )


__all__ = ["Recommendation", "recommend"]
