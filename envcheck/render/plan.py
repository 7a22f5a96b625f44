"""A plan as text for a person, JSON for a program, or a bash/PowerShell script to review and run."""

from __future__ import annotations

import textwrap

from envcheck import __version__
from envcheck.errors import UsageError
from envcheck.planner import GPU, Plan, describe_target
from envcheck.planner.options import (
    DRIVER_INSTALL,
    DRIVER_OK,
    DRIVER_UNKNOWN,
    DRIVER_UPGRADE,
)
from envcheck.planner.steps import BASH, POWERSHELL, Step, requirement
from envcheck.planner.target import OS_TITLES
from envcheck.platform import platform_named
from envcheck.printable import printable
from envcheck.render import json_text
from envcheck.shell import quote_always

WIDTH = 100
SHELL_TITLES = {BASH: "bash", POWERSHELL: "PowerShell"}


def render_json(plan: Plan) -> str:
    return json_text("plan", plan.to_dict(), 0)


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        printable(text), WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    ) or [indent.rstrip()]


def _driver_line(plan: Plan) -> str:
    o = plan.option
    have = plan.target.driver
    text = f"{o.driver_floor} or newer" if o.driver_floor else "not known for this CUDA release"
    tail = {
        DRIVER_OK: f" (you have {have}: fine)",
        DRIVER_UPGRADE: f" (you have {have}: upgrade it)",
        DRIVER_INSTALL: " (no driver answered here: install one)",
        DRIVER_UNKNOWN: " (check yours with nvidia-smi)",
    }.get(o.driver_status, "")
    return text + tail


def render_text(plan: Plan) -> str:
    o = plan.option
    out = [f"envcheck plan for: {printable(describe_target(plan.target))}", ""]
    where = "on the GPU" if o.kind == GPU else "on the CPU only"
    out.append(f"Recommended: TensorFlow {printable(o.tf)} {where}, {OS_TITLES[o.os]}")
    out.append(f"  install   {printable(requirement(o))}")
    python = f"{o.python} (TensorFlow {o.tf} supports {o.python_range})"
    if o.python_change:
        python += " -- not the Python you have"
    out.append(f"  Python    {printable(python)}")
    if o.kind == GPU:
        out.append(f"  CUDA      {printable(o.cuda)}")
        out.append(f"  cuDNN     {printable(o.cudnn)}")
        out.append(f"  driver    {printable(_driver_line(plan))}")
    out += ["", "Why"]
    for reason in plan.choice.reasons:
        wrapped = _wrap(reason, "    ")
        out += ["  - " + wrapped[0].lstrip()] + wrapped[1:]
    if plan.choice.warnings:
        out += ["", "Warnings"]
        for warning in plan.choice.warnings:
            wrapped = _wrap(warning, "    ")
            out += ["  ! " + wrapped[0].lstrip()] + wrapped[1:]
    out += ["", f"Steps ({SHELL_TITLES[plan.shell]} unless marked)"]
    for number, step in enumerate(plan.steps, 1):
        out += _text_step(number, step, plan.shell)
    if plan.choice.alternatives:
        out += ["", "Alternatives"]
        for alt in plan.choice.alternatives:
            wrapped = _wrap(f"{alt.title}: {alt.text}{_rerun_hint(plan, alt)}", "    ")
            out += ["  - " + wrapped[0].lstrip()] + wrapped[1:]
    script = "powershell" if plan.shell == POWERSHELL else "bash"
    out += ["", f"As a script to review and run: envcheck plan ... --format {script}"]
    return "\n".join(out) + "\n"


def _rerun_hint(plan: Plan, alt) -> str:
    """The flags that turn an alternative into a plan of its own."""
    o = alt.option
    if o is None:
        return ""
    flags = [f"--tf {o.tf}"]
    if o.os != plan.target.os:
        flags.append(f"--os {o.os}")
    if o.kind == "cpu" and plan.option.kind != "cpu":
        flags.append("--cpu")
    return f" (its steps: add {' '.join(flags)})"


def _text_step(number: int, step: Step, shell: str) -> list[str]:
    side = {"windows": "[on Windows] ", "wsl": "[inside WSL2] "}.get(step.side, "")
    out = [f"  {number}. {side}{printable(step.title)}"]
    if step.detail:
        out += _wrap(step.detail, "     ")
    if step.url:
        out.append(f"     {printable(step.url)}")
    for line in step.lines:
        marker = "" if line.shell == shell or step.side else f"({SHELL_TITLES[line.shell]}) "
        out.append(f"       {marker}{printable(line.line)}")
        out.append(f"         # {printable(line.why)}")
    return out


def render_script(plan: Plan, shell: str) -> str:
    """A script for ``shell``; steps meant for the other shell (the Windows side of WSL2) are comments."""
    o = plan.option
    platform = platform_named(o.os)
    if shell not in platform.shells:
        raise UsageError(f"the plan is for {platform.title}: use --format {platform.shell}")
    where = "GPU" if o.kind == GPU else "CPU"
    out = []
    if shell == BASH:
        out.append("#!/usr/bin/env bash")
    out += [
        f"# TensorFlow {o.tf} on the {where}, {OS_TITLES[o.os]}: written by 'envcheck plan' (envcheck {__version__}).",
        f"# For: {printable(describe_target(plan.target))}",
        "#",
        "# Read it before you run it. It stops at the first check that fails. Downloads that need a",
        "# browser (driver, CUDA, cuDNN) are links: do them first. It creates ./tf-env and installs",
        "# into it; any line that changes something outside it says so in its comment.",
    ]
    if len(platform.shells) > 1:  # WSL2: bash inside, PowerShell on the Windows side
        other = "inside WSL2 (bash)" if shell == POWERSHELL else "on Windows (PowerShell)"
        out.append(f"# Steps to run {other} are left here as comments.")
    out.append("")
    out.append("set -euo pipefail" if shell == BASH else '$ErrorActionPreference = "Stop"')
    for number, step in enumerate(plan.steps, 1):
        out.append("")
        out += _script_step(number, step, shell)
    out += ["", f"echo {quote_always(f'Done: TensorFlow {o.tf} is installed in ./tf-env', shell)}", ""]
    return "\n".join(out)


# PowerShell does not stop on a failing program (only on failing cmdlets), so those lines check.
_NATIVE = ("py ", ".\\", "nvidia-smi", "wsl ")


def _checked(line: str, shell: str) -> str:
    if shell == POWERSHELL and line.startswith(_NATIVE):
        return line + '; if ($LASTEXITCODE -ne 0) { throw "failed (exit code $LASTEXITCODE)" }'
    return line


def _script_step(number: int, step: Step, shell: str) -> list[str]:
    side = {"windows": " [on Windows, PowerShell]", "wsl": " [inside WSL2, bash]"}.get(step.side, "")
    out = [f"# {number}. {printable(step.title)}{side}"]
    if step.detail:
        out += _wrap(step.detail, "#    ")
    if step.url:
        out.append(f"#    {printable(step.url)}")
    for line in step.lines:
        if line.shell == shell:
            out.append(f"# {printable(line.why)}")
            out.append(_checked(printable(line.line), shell))
        else:
            out.append(f"# ({SHELL_TITLES[line.shell]}; {printable(line.why)})")
            out.append(f"#   {printable(line.line)}")
    return out
