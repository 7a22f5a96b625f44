"""A plan as text for a person, JSON for a program, or a bash/PowerShell script to review and run."""

from __future__ import annotations

from envcheck import __version__
from envcheck.errors import UsageError
from envcheck.invocation import runnable
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
from envcheck.render.width import keep_together, terminal_width, wrap_lines
from envcheck.shell import quote_always

SCRIPT_WIDTH = 100  # a script is a file: its comments wrap at 100 whatever the terminal
SHELL_TITLES = {BASH: "bash", POWERSHELL: "PowerShell"}


def render_json(plan: Plan) -> str:
    return json_text("plan", plan.to_dict(), 0)


def _wrap(text: str, indent: str, width: int = SCRIPT_WIDTH, first: str | None = None) -> list[str]:
    return wrap_lines(printable(text), width, indent if first is None else first, indent)


def _header(plan: Plan, width: int) -> list[str]:
    """ "envcheck plan for: ..." with each fact's "[where it came from]" kept beside it."""
    items = printable(describe_target(plan.target)).split(", ")
    kept = [keep_together(i) if len(i) <= width - 2 else _source_kept(i) for i in items]
    return wrap_lines(", ".join(kept), width, "envcheck plan for: ", "  ")


def _source_kept(item: str) -> str:
    """ "NVIDIA GeForce RTX 4090 [PCI bus]" with its "[where it came from]" as one unbreakable piece
    (by str.rfind: a regex ending in "$" retried at every " [" is quadratic on a long GPU name)."""
    start = item.rfind(" [")
    if not item.endswith("]") or start < 0 or "]" in item[start + 2 : -1]:
        return item
    return item[:start] + keep_together(item[start:])


def _for_this_user(plan: Plan, line: str, shell: str) -> str:
    """A step's command as this user runs it: envcheck by the path that works here, when the plan
    is for this machine (a plan for another one keeps the plain word)."""
    return runnable(line, shell) if plan.target.origin("os") == "this machine" else line


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


def render_text(plan: Plan, width: int | None = None) -> str:
    """The plan for a person, wrapped at ``width`` (the terminal's, or COLUMNS); commands whole."""
    width = width or terminal_width()
    o = plan.option
    out = [*_header(plan, width), ""]
    where = "on the GPU" if o.kind == GPU else "on the CPU only"
    out += _wrap(f"Recommended: TensorFlow {o.tf} {where}, {OS_TITLES[o.os]}", "  ", width, "")
    python = f"{o.python} (TensorFlow {o.tf} supports {o.python_range})"
    if o.python_change:
        python += " -- not the Python you have"
    facts = [("install", requirement(o)), ("Python", python)]
    if o.kind == GPU:
        facts += [("CUDA", o.cuda), ("cuDNN", o.cudnn), ("driver", _driver_line(plan))]
    for key, value in facts:
        out += _wrap(str(value), " " * 12, width, f"  {key:<8}  ")
    out += ["", "Why"]
    for reason in plan.choice.reasons:
        out += _wrap(reason, "    ", width, "  - ")
    if plan.choice.warnings:
        out += ["", "Warnings"]
        for warning in plan.choice.warnings:
            out += _wrap(warning, "    ", width, "  ! ")
    out += ["", f"Steps ({SHELL_TITLES[plan.shell]} unless marked)"]
    for number, step in enumerate(plan.steps, 1):
        out += _text_step(plan, number, step, width)
    if plan.choice.alternatives:
        out += ["", "Alternatives"]
        for alt in plan.choice.alternatives:
            out += _wrap(f"{alt.title}: {alt.text}{_rerun_hint(plan, alt)}", "    ", width, "  - ")
    out += ["", "As a script to review and run:", "  " + _script_command(plan)]
    return "\n".join(out) + "\n"


def _script_command(plan: Plan) -> str:
    """The command that writes this plan as a script: this run's own flags, --format, a file."""
    script, suffix = ("powershell", "ps1") if plan.shell == POWERSHELL else ("bash", "sh")
    return runnable(f"envcheck plan --format {script} > install-tf.{suffix}", plan.shell)


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


def _text_step(plan: Plan, number: int, step: Step, width: int) -> list[str]:
    """A step: its title and detail wrapped, each command whole on its line, its comment under it."""
    side = {"windows": "[on Windows] ", "wsl": "[inside WSL2] "}.get(step.side, "")
    out = _wrap(f"{side}{step.title}", "     ", width, f"  {number}. ")
    if step.detail:
        out += _wrap(step.detail, "     ", width)
    if step.url:
        out.append(f"     {printable(step.url)}")
    for line in step.lines:
        marker = "" if line.shell == plan.shell or step.side else f"({SHELL_TITLES[line.shell]}) "
        out.append(f"       {marker}{printable(_for_this_user(plan, line.line, line.shell))}")
        out += _wrap(line.why, "         # ", width)  # every line a comment: a copied pair runs as it is
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
        out += _script_step(plan, number, step, shell)
    out += ["", f"echo {quote_always(f'Done: TensorFlow {o.tf} is installed in ./tf-env', shell)}", ""]
    return "\n".join(out)


# PowerShell does not stop on a failing program (only on failing cmdlets), so those lines check.
_NATIVE = ("py ", ".\\", "nvidia-smi", "wsl ")


def _checked(line: str, shell: str) -> str:
    if shell == POWERSHELL and line.startswith(_NATIVE):
        return line + '; if ($LASTEXITCODE -ne 0) { throw "failed (exit code $LASTEXITCODE)" }'
    return line


def _script_step(plan: Plan, number: int, step: Step, shell: str) -> list[str]:
    side = {"windows": " [on Windows, PowerShell]", "wsl": " [inside WSL2, bash]"}.get(step.side, "")
    out = _wrap(f"{step.title}{side}", "#    ", first=f"# {number}. ")
    if step.detail:
        out += _wrap(step.detail, "#    ")
    if step.url:
        out.append(f"#    {printable(step.url)}")
    for line in step.lines:
        command = printable(_for_this_user(plan, line.line, line.shell))
        if line.shell == shell:
            out += _wrap(line.why, "# ")
            out.append(_checked(command, shell))
        else:
            out += _wrap(f"({SHELL_TITLES[line.shell]}; {line.why})", "# ")
            out.append(f"#   {command}")
    return out
