"""A whole scan: the environments with their doctors' reports, and the scan's own findings (Jupyter
kernels that cannot start, interpreters that do not run, environments not checked in time)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcheck import procs, shell
from envcheck.scan.discover import KERNEL, Kernel, Places, discover
from envcheck.scan.kernels import VALID_NAME
from envcheck.scan.places import Skipped
from envcheck.scan.run import (
    OK,
    Environment,
    Unusable,
    check_all,
    identify,
    running_first,
)

KERNEL_CANNOT_START = "kernel-cannot-start"
NOT_AN_INTERPRETER = "not-an-interpreter"
NOT_CHECKED = "not-checked"


@dataclass(frozen=True)
class ScanFinding:
    kind: str  # KERNEL_CANNOT_START, NOT_AN_INTERPRETER or NOT_CHECKED
    title: str  # one line
    where: str  # the kernel.json, or the interpreter
    fix: str = ""
    commands: tuple[shell.Command, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "where": self.where,
            "fix": self.fix,
            "commands": [c.to_dict() for c in self.commands],
        }


@dataclass(frozen=True)
class Scan:
    environments: tuple[Environment, ...]
    findings: tuple[ScanFinding, ...]
    full: bool
    seconds: float
    budget: float
    timeout: float
    skipped: tuple[Skipped, ...] = ()  # what could not be read: one line each, and the scan went on

    def to_dict(self) -> dict[str, Any]:
        return {
            "full": self.full,
            "seconds": self.seconds,
            "budget": self.budget,
            "timeout": self.timeout,
            "environments": [e.to_dict() for e in self.environments],
            "findings": [f.to_dict() for f in self.findings],
            "skipped": [s.to_dict() for s in self.skipped],
        }


def scan(
    environ: Mapping[str, str],
    places: Places,
    *,
    full: bool,
    timeout: float,
    budget: float,
    jobs: int,
    progress=None,
    found=None,
) -> Scan:
    """``found(environments)`` is told what will be checked once it is known, ``progress(env)``
    each one checked."""
    # What a probed interpreter leaves running, in a session of its own too, is ended with it.
    with procs.adopting_orphans():
        return _scan(
            environ, places, full=full, timeout=timeout, budget=budget, jobs=jobs, progress=progress, found=found
        )


def _scan(
    environ: Mapping[str, str], places: Places, *, full: bool, timeout: float, budget: float, jobs: int, progress, found
) -> Scan:
    started = time.perf_counter()
    candidates, kernels = discover(places)
    environments, unusable = identify(candidates, places, jobs, deadline=started + budget)
    if found is not None:
        found(environments)
    left = max(0.0, budget - (time.perf_counter() - started))
    checked = check_all(
        running_first(environments),
        environ,
        full=full,
        timeout=timeout,
        budget=left,
        whole_budget=budget,
        jobs=jobs,
        progress=progress,
    )
    findings = kernel_findings(kernels, unusable) + interpreter_findings(unusable) + unchecked_findings(checked)
    seconds = round(time.perf_counter() - started, 2)
    return Scan(tuple(checked), tuple(findings), full, seconds, budget, timeout, tuple(places.skipped))


def _kernel_fix(kernel: Kernel) -> tuple[str, tuple[shell.Command, ...]]:
    """Jupyter's own commands, the name after ``--`` or ``=`` (a kernel called ``-rf`` is a name,
    never an option); a name Jupyter does not accept can only go with its folder."""
    if not VALID_NAME.fullmatch(kernel.name):
        folder = shell.quote(os.path.dirname(kernel.spec_file), shell.BASH)
        text = (
            "Jupyter takes no kernel by this name: remove its folder, or register the kernel again under a plain name:"
        )
        return text, (shell.Command(f"rm -r -- {folder}", shell=shell.BASH),)
    text = "Remove it, or register it again from the environment it should use (activated, with ipykernel installed):"
    return text, (
        shell.Command(f"jupyter kernelspec remove -y -- {shell.quote(kernel.name, shell.BASH)}", shell=shell.BASH),
        shell.Command(
            f"python -m ipykernel install --user {shell.quote('--name=' + kernel.name, shell.BASH)}", shell=shell.BASH
        ),
    )


def kernel_findings(kernels: list[Kernel], unusable: list[Unusable]) -> list[ScanFinding]:
    out = []
    broken = {
        u.candidate.kernel.name: u.reason
        for u in unusable
        if u.candidate.how == KERNEL and u.candidate.kernel is not None and not u.timed_out
    }
    for kernel in kernels:
        problem = kernel.problem or (
            f"its interpreter {kernel.interpreter} {broken[kernel.name]}" if kernel.name in broken else None
        )
        if problem is None:
            continue
        text, commands = _kernel_fix(kernel)
        out.append(
            ScanFinding(
                KERNEL_CANNOT_START,
                f"Jupyter kernel {kernel.name!r} cannot start ({kernel.spec_file}): {problem}",
                kernel.spec_file,
                text,
                commands,
            )
        )
    return out


def interpreter_findings(unusable: list[Unusable]) -> list[ScanFinding]:
    """Interpreters that do not run (a kernel's are its kernel's finding), and those not asked in
    time, each once: "<path> (<how it was reached>) <why>"."""
    out = []
    seen: set[str] = set()
    for u in unusable:
        c = u.candidate
        if (c.how == KERNEL and not u.timed_out) or c.path in seen:
            continue
        seen.add(c.path)
        title = f"{c.path} ({c.label}) {u.reason}"
        if u.timed_out:
            command = shell.Command("envcheck doctor --python " + shell.quote(c.path, shell.BASH), shell=shell.BASH)
            fix = "Check it on its own, or give the scan more time (--budget, --timeout):"
            out.append(ScanFinding(NOT_CHECKED, title, c.path, fix, (command,)))
            continue
        fix = (
            "Recreate the virtual environment with a Python that exists (its base interpreter may have been removed or upgraded)."
            if c.how in ("virtualenv", "conda")
            else "Remove it, or point it at a working interpreter."
        )
        out.append(ScanFinding(NOT_AN_INTERPRETER, title, c.path, fix))
    return out


def unchecked_findings(environments: list[Environment]) -> list[ScanFinding]:
    out = []
    for env in environments:
        if env.status == OK:
            continue
        fix = (
            "Check it on its own"
            + (", or give the scan more time (--budget, --timeout)" if env.status != "failed" else "")
            + ":"
        )
        command = shell.Command(
            "envcheck doctor --python " + shell.quote(env.interpreter, shell.BASH), shell=shell.BASH
        )
        out.append(
            ScanFinding(
                NOT_CHECKED, f"{env.interpreter} was not checked: {env.error}", env.interpreter, fix, (command,)
            )
        )
    return out


def exit_code(result: Scan, fail_on: str = "never") -> int:
    """0 when the scan found nothing of its own; 1 for a kernel that cannot start, an interpreter that
    does not run, an environment not checked in time, or (with --fail-on) a doctor's finding."""
    if result.findings:
        return 1
    if fail_on == "never":
        return 0
    worst = {"error": ("error",), "warning": ("error", "warning")}[fail_on]
    for env in result.environments:
        findings = (env.report or {}).get("findings") or ()
        if any(f.get("severity") in worst for f in findings):
            return 1
    return 0
