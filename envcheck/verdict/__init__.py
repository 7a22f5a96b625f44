"""Findings to a verdict: the first broken link, its consequences, the two ways forward, and one
status line per link. ``judge`` is the doctor's whole judgement: facts in, report out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Optional

from envcheck import __version__
from envcheck.facts import Facts
from envcheck.findings import BROKEN, DEGRADED, Report, exit_code_for
from envcheck.machine import Machine
from envcheck.rules import evaluate
from envcheck.verdict.chain import walk_chain
from envcheck.verdict.links import link_statuses

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix


def judge(
    facts: Facts,
    matrix_loader: Optional[Callable[[], "Matrix"]] = None,
    fail_on: str = "error",
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    notes: tuple[str, ...] = (),
    require_gpu: bool = False,
) -> Report:
    """Run the rules over a snapshot and walk the chain to a verdict. The exit code is 1 for a
    finding at the ``fail_on`` level, and for a degraded or broken verdict (a GPU that is there and
    does not work) unless ``fail_on`` is "never". ``require_gpu``: no usable GPU makes it 1 whatever
    else holds (a CI gate that needs a GPU)."""
    machine = Machine(facts, matrix_loader=matrix_loader)
    notes = tuple(notes) + timed_out_notes(facts)
    judgement = walk_chain(machine, evaluate(machine, select=select, ignore=ignore))
    findings, verdict = judgement.findings, judgement.verdict
    exit_code = exit_code_for(findings, fail_on)
    if verdict.status in (DEGRADED, BROKEN) and fail_on != "never":
        exit_code = 1
    if require_gpu and verdict.gpus == 0:
        exit_code = 1
        notes = notes + ("--require-gpu: no usable GPU, so the exit code is 1",)
    return Report(
        facts=facts,
        findings=tuple(findings),
        verdict=verdict,
        links=link_statuses(machine, findings, verdict),
        exit_code=exit_code,
        envcheck_version=__version__,
        notes=notes,
        gpus=judgement.gpus,
        gpu_presence=machine.gpu_presence,
    )


_SECTIONS = ("python", "platform", "env", "packages", "pci", "driver", "nvml", "libraries", "tensorflow")


def timed_out_notes(facts: Facts) -> tuple[str, ...]:
    """One line for each probe that ran out of time: its part of the snapshot is incomplete."""
    out = []
    for name in _SECTIONS:
        section = getattr(facts, name)
        if section.timed_out:
            out.append(
                f"the {name} probe ran out of time after {section.seconds:.0f} s: {section.error or 'no answer'}"
            )
    return tuple(out)


__all__ = ["judge", "timed_out_notes"]
