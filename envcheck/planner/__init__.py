"""The pre-install planner: which TensorFlow, CUDA, cuDNN and Python to install, and how.

``make_plan(matrix, target)`` chooses (``policy``), spells out the steps (``steps``) and returns a
``Plan`` the renderers (``render``) turn into text, JSON or a script.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from envcheck.planner.options import CPU, GPU, Alternative, Choice, Option
from envcheck.planner.policy import choose
from envcheck.planner.steps import Step, plan_steps, requirement, shell_for
from envcheck.planner.target import OS_TITLES, Target, apply_overrides, target_from_facts

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix

POLICY = (
    "the newest TensorFlow release that fits the operating system, the Python version and the GPU's "
    "compute capability; the driver is upgraded when that release needs it, and keeping the driver "
    "is listed as an alternative"
)

__all__ = [
    "CPU",
    "GPU",
    "POLICY",
    "Alternative",
    "Choice",
    "Option",
    "Plan",
    "Step",
    "Target",
    "apply_overrides",
    "make_plan",
    "target_from_facts",
]


@dataclass(frozen=True)
class Plan:
    choice: Choice
    steps: tuple[Step, ...]

    @property
    def target(self) -> Target:
        return self.choice.target

    @property
    def option(self) -> Option:
        return self.choice.option

    @property
    def shell(self) -> str:
        return shell_for(self.option.os)

    def to_dict(self) -> dict[str, Any]:
        o = self.option
        return {
            "target": target_to_dict(self.target),
            **option_to_dict(o),
            "libraries": list(o.build.libraries) if o.kind == GPU else [],
            "reasons": list(self.choice.reasons),
            "warnings": list(self.choice.warnings),
            "steps": [s.to_dict() for s in self.steps],
            "alternatives": [
                {"key": a.key, "title": a.title, "text": a.text, "plan": option_to_dict(a.option) if a.option else None}
                for a in self.choice.alternatives
            ],
            "left_out": [
                {"name": g.name, "compute_capability": str(g.compute_capability), "index": g.index}
                for g in self.choice.left_out
            ],
            "policy": POLICY,
        }


def make_plan(matrix: "Matrix", target: Target) -> Plan:
    choice = choose(matrix, target)
    return Plan(choice=choice, steps=plan_steps(matrix, choice.target, choice.option, choice.left_out))


def option_to_dict(o: Option) -> dict[str, Any]:
    return {
        "kind": o.kind,
        "os": o.os,
        "tensorflow": o.tf,
        "requirement": requirement(o),
        "python": o.python,
        "python_supported": sorted(o.build.python, key=lambda v: tuple(int(p) for p in v.split("."))),
        "python_change": o.python_change,
        "cuda": o.cuda,
        "cudnn": o.cudnn,
        "driver_floor": str(o.driver_floor) if o.driver_floor else None,
        "driver_status": o.driver_status,
        "gpu_support": o.support if o.kind == GPU else None,
    }


def target_to_dict(t: Target) -> dict[str, Any]:
    def opt(value: Optional[object]) -> Optional[str]:
        return None if value is None else str(value)

    return {
        "os": t.os,
        "python": t.python,
        "python_bits": t.python_bits,
        "has_gpu": t.has_gpu,
        "gpus": list(t.gpu_names),
        "compute_capability": opt(t.compute_capability),
        "driver": opt(t.driver),
        "tf": t.tf_pin,
        "origins": dict(t.origins),
    }


def describe_target(t: Target) -> str:
    """One line: the machine the plan is for, each value with where it came from."""

    def tagged(text: str, key: str) -> str:
        origin = t.origin(key)
        return f"{text} [{origin}]" if origin else text

    parts = [tagged(OS_TITLES[t.os], "os")]
    parts.append(
        tagged(f"Python {t.python}" + (f" ({t.python_bits}-bit)" if t.python_bits == 32 else ""), "python")
        if t.python
        else "Python not given"
    )
    if t.os == "macos":
        return ", ".join(parts + ([tagged(f"TensorFlow {t.tf_pin}", "tf")] if t.tf_pin else []))
    parts.append(tagged(t.gpu_label, "gpu"))
    if t.has_gpu is not False:
        parts.append(tagged(f"driver {t.driver}", "driver") if t.driver else "driver not known")
    if t.tf_pin:
        parts.append(tagged(f"TensorFlow {t.tf_pin}", "tf"))
    return ", ".join(parts)
