"""``envcheck doctor --apply cpu|gpu``: run the pip steps of one way forward, then judge again.

Only pip steps run, with the probed interpreter's own pip (``python -m pip``), never installers or
shell commands: those stay instructions for the person. The steps are shown first and run only
after a yes (or ``--yes``); the first failing step stops the rest and the report says what was and
was not done.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, TextIO

from envcheck.errors import EXIT_FINDINGS, UsageError
from envcheck.findings import GPU_READY, Fix, Report
from envcheck.shell import Command


@dataclass(frozen=True)
class PipStep:
    why: str  # the text of the path step it belongs to
    command: Command

    @property
    def args(self) -> tuple[str, ...]:
        return self.command.pip_args or ()


def pip_steps(steps: tuple[Fix, ...]) -> tuple[list[PipStep], list[Fix]]:
    """(the pip steps, in order; the steps with nothing for pip, which stay manual)."""
    runnable: list[PipStep] = []
    manual: list[Fix] = []
    for step in steps:
        pips = [c for c in step.commands if c.pip_args]
        runnable.extend(PipStep(step.text, c) for c in pips)
        if len(pips) < len(step.commands) or not pips:
            manual.append(step)
    return runnable, manual


def apply_path(
    args: argparse.Namespace,
    report: Report,
    *,
    out: Optional[TextIO] = None,
    ask: Optional[Callable[[str], str]] = None,
    interactive: Optional[bool] = None,
    rejudge: Optional[Callable[[argparse.Namespace], Report]] = None,
) -> int:
    """Run the pip steps of one way forward; ``rejudge(args)`` probes and judges again afterwards
    (the doctor's own ``build_report``)."""
    out = out or sys.stdout
    if getattr(args, "facts", None):
        raise UsageError("--apply changes this machine; it cannot be used with --facts (a saved snapshot)")
    if getattr(args, "json", False) or getattr(args, "markdown", False):
        raise UsageError("--apply talks to a person; it cannot be combined with --json or --markdown")
    python = report.facts.python.executable
    if not python:
        raise UsageError("--apply: the probed interpreter's path is unknown, so there is no pip to run")
    which = args.apply
    verdict = report.verdict
    steps, manual = pip_steps(verdict.cpu_path if which == "cpu" else verdict.gpu_path)
    out.write(f"Now: {verdict.line}\n")
    if which == "gpu" and verdict.status == GPU_READY and not verdict.gpu_path:
        out.write("The GPU already works: nothing to apply.\n")
        return report.exit_code
    if manual:
        out.write(f"\nNot run by --apply (do these yourself, {'before or after' if steps else 'in order'}):\n")
        for step in manual:
            out.write(f"  - {step.text}\n")
            for command in step.commands:
                if not command.pip_args:
                    out.write(f"      {command.line}\n")
            if step.url:
                out.write(f"      see {step.url}\n")
    if not steps:
        out.write(f"\nThe {which.upper()} path has no pip steps to run.\n")
        return report.exit_code
    out.write(f"\n--apply {which} will run, with {python}:\n")
    for number, step in enumerate(steps, 1):
        out.write(f"  {number}. {_display(python, step.args)}\n")
    out.flush()
    if not args.yes:
        if interactive is None:
            interactive = sys.stdin.isatty()
        if not interactive:
            raise UsageError(
                "--apply asks before changing anything and there is no terminal to ask in; add --yes to run the steps above"
            )
        try:
            answer = (ask or input)(f"Run {'this step' if len(steps) == 1 else f'these {len(steps)} steps'}? [y/N] ")
        except EOFError:  # Ctrl-D at the question: a no
            out.write("\n")
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            out.write("Nothing was changed.\n")
            return report.exit_code
    done: list[PipStep] = []
    for number, step in enumerate(steps, 1):
        out.write(f"\n[{number}/{len(steps)}] {_display(python, step.args)}\n")
        out.flush()
        try:
            code, error = _run_pip(python, step.args)
        except KeyboardInterrupt:
            # Ctrl-C while pip runs: say what was and was not done before giving up.
            out.write(f"\nStep {number} interrupted: pip may have left it half done.\n")
            _summary(out, python, done, step, steps[number:], failed_label="STOPPED")
            out.flush()
            raise
        if code != 0:
            out.write(f"\nStep {number} failed ({error or f'pip exited with {code}'}).\n")
            _summary(out, python, done, step, steps[number:])
            return EXIT_FINDINGS
        done.append(step)
    _summary(out, python, done, None, [])
    return _judge_again(args, report, out, rejudge)


def _display(python: str, args: tuple[str, ...]) -> str:
    return " ".join(shlex.quote(part) for part in (python, "-m", "pip", *args))


def _run_pip(python: str, args: tuple[str, ...]) -> tuple[int, Optional[str]]:
    env = dict(os.environ)
    # pip must not stop to ask (uninstall confirmation, credentials) nor chat about its own version.
    env.setdefault("PIP_NO_INPUT", "1")
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    try:
        proc = subprocess.run([python, "-m", "pip", *args], stdin=subprocess.DEVNULL, env=env)
    except OSError as exc:
        return 127, f"cannot run {python}: {exc.strerror or exc}"
    return proc.returncode, None


def _summary(
    out: TextIO,
    python: str,
    done: list[PipStep],
    failed: Optional[PipStep],
    left: list[PipStep],
    failed_label: str = "FAILED",
) -> None:
    out.write("\nDone:\n" if done else "\nDone: nothing.\n")
    for step in done:
        out.write(f"  ok      {_display(python, step.args)}\n")
    if failed is not None:
        out.write(f"  {failed_label:<7} {_display(python, failed.args)}\n")
    if left:
        out.write("Not run:\n")
        for step in left:
            out.write(f"  -       {_display(python, step.args)}\n")


def _counts(report: Report) -> str:
    counts = {}
    for finding in report.findings:
        counts[finding.severity.value] = counts.get(finding.severity.value, 0) + 1
    parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info") if s in counts]
    return ", ".join(parts) or "no findings"


def _judge_again(args: argparse.Namespace, before: Report, out: TextIO, rejudge) -> int:
    """Probe and judge again with the same options, and show both verdicts."""
    # lazy for start-up: keeps render.terminal out of `envcheck apply --help` and the paths that do not use it
    from envcheck.render.terminal import render

    if rejudge is None:
        return before.exit_code
    again = argparse.Namespace(**{**vars(args), "apply": None, "save_facts": None})
    after = rejudge(again)
    out.write("\n" + render(after, verbose=getattr(args, "verbose", False)))
    out.write(
        f"\nBefore: {before.verdict.line}  [{_counts(before)}]\nAfter:  {after.verdict.line}  [{_counts(after)}]\n"
    )
    return after.exit_code
