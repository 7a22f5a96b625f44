"""The terminal report: one status line per link, findings with fixes, both ways forward, verdict.

Colour and glyphs live only here. Plain ASCII when stdout is not a terminal or NO_COLOR is set, so
logs, pipes and CI output stay readable.
"""

from __future__ import annotations

import os
import sys
import textwrap
from typing import Optional

from envcheck.findings import (
    BROKEN,
    CPU_ONLY,
    GPU_READY,
    LINK_ERROR,
    LINK_OK,
    LINK_SKIPPED,
    LINK_WARNING,
    Command,
    Finding,
    Fix,
    Report,
    Severity,
)

_RESET = "\033[0m"
_STYLES = {
    "red": "\033[31m",
    "yellow": "\033[33m",
    "green": "\033[32m",
    "dim": "\033[2m",
    "bold": "\033[1m",
    "cyan": "\033[36m",
}

_LINK_MARK = {
    # status: (ascii, fancy, colour)
    LINK_OK: ("[ok]  ", "✔", "green"),
    LINK_WARNING: ("[warn]", "!", "yellow"),
    LINK_ERROR: ("[FAIL]", "✘", "red"),
    LINK_SKIPPED: ("[skip]", "–", "dim"),
}
_SEVERITY_MARK = {
    Severity.ERROR: ("ERROR", "✘", "red"),
    Severity.WARNING: ("WARN", "!", "yellow"),
    Severity.INFO: ("INFO", "i", "cyan"),
}
_VERDICT_COLOUR = {GPU_READY: "green", CPU_ONLY: "yellow", BROKEN: "red"}

WIDTH = 100


def use_color(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):  # set and not empty, per the no-color convention
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _can_encode(text: str, stream=None) -> bool:
    """Whether the stream's encoding has these characters (a legacy console may not)."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _Painter:
    def __init__(self, color: bool, glyphs: bool = True):
        self.color = color
        self.glyphs = glyphs

    def __call__(self, text: str, style: str) -> str:
        if not self.color or not text:
            return text
        return "".join(_STYLES[s] for s in style.split()) + text + _RESET

    def mark(self, table: dict, key) -> str:
        ascii_mark, fancy, colour = table[key]
        return self(fancy if self.glyphs else ascii_mark, colour) if self.color else ascii_mark


def render(report: Report, verbose: bool = False, color: Optional[bool] = None) -> str:
    if color is None:
        paint = _Painter(use_color(), glyphs=_can_encode("".join(m[1] for m in _LINK_MARK.values())))
    else:
        paint = _Painter(color)
    out: list[str] = []
    facts = report.facts
    title = f"envcheck {report.envcheck_version} doctor"
    where = facts.python.executable
    out.append(paint(title, "bold") + (paint(f"  ({where})", "dim") if where else ""))
    for note in report.notes:
        out.append(paint(f"note: {note}", "dim"))
    out.append("")

    title_width = max(len(link.title) for link in report.links) if report.links else 0
    for link in report.links:
        mark = paint.mark(_LINK_MARK, link.status)
        timing = f"  ({link.seconds * 1000:.0f} ms)" if verbose and link.seconds else ""
        line = f"  {mark} {link.title.ljust(title_width)}  {link.summary}"
        out.append(line + paint(timing, "dim"))
    out.append("")

    roots = [f for f in report.findings if f.caused_by is None]
    consequences: dict[str, list[Finding]] = {}
    for f in report.findings:
        if f.caused_by is not None:
            consequences.setdefault(f.caused_by, []).append(f)
    shown_children: set[int] = set()
    if roots:
        out.append(paint("Findings", "bold"))
        for f in roots:
            children = [c for c in consequences.get(f.id, []) if id(c) not in shown_children]
            out.extend(_finding(f, paint, verbose, children))
            shown_children.update(id(c) for c in children)
        orphans = [f for f in report.findings if f.caused_by is not None and id(f) not in shown_children]
        for f in orphans:
            out.extend(_finding(f, paint, verbose, []))
        out.append("")

    verdict = report.verdict
    if verdict.status != GPU_READY and (verdict.gpu_path or verdict.cpu_path):
        out.append(paint("Two ways forward", "bold"))
        if verdict.gpu_path:
            out.append("  To use the GPU, in this order:")
            out.extend(_steps(verdict.gpu_path, paint))
        if verdict.cpu_path:
            out.append("  To run on the CPU today:")
            out.extend(_steps(verdict.cpu_path, paint))
        out.append("")

    colour = _VERDICT_COLOUR.get(verdict.status, "bold")
    out.append(paint("Verdict: ", "bold") + paint(verdict.line, f"bold {colour}"))
    return "\n".join(out) + "\n"


def _finding(f: Finding, paint: _Painter, verbose: bool, children: list[Finding]) -> list[str]:
    lines = []
    mark = paint.mark(_SEVERITY_MARK, f.severity)
    lines.append(f"  {mark} {paint(f.id, 'bold')}  {f.title}")
    if f.detail:
        lines.extend(_wrap(f.detail, "      "))
    if verbose and f.evidence:
        lines.append(paint("      evidence:", "dim"))
        for what, value in f.evidence:
            first, *rest = (value or "").splitlines() or [""]
            lines.append(paint(f"        {what}: {first}", "dim"))
            lines.extend(paint(f"          {r}", "dim") for r in rest)
    if f.fix is not None:
        lines.extend(_wrap("Fix: " + f.fix.text, "      "))
        lines.extend(_commands(f.fix.commands, paint, "        "))
        if f.fix.url:
            lines.append(f"        see {f.fix.url}")
    if children:
        lines.append("      " + paint("Because of this:", "dim"))
        for c in children:
            cmark = paint.mark(_SEVERITY_MARK, c.severity)
            lines.append(f"        {cmark} {c.id}  {c.title}")
    return lines


def _steps(steps: tuple[Fix, ...], paint: _Painter) -> list[str]:
    lines = []
    for n, step in enumerate(steps, 1):
        lines.extend(_wrap(f"{n}. {step.text}", "    ", hang="       "))
        lines.extend(_commands(step.commands, paint, "       "))
        if step.url:
            lines.append(f"       see {step.url}")
    return lines


def _commands(commands: tuple[Command, ...], paint: _Painter, indent: str) -> list[str]:
    lines = []
    for c in commands:
        prompt = {"powershell": "PS> ", "bash": "$ "}.get(c.shell, "$ ")
        lines.append(indent + paint(prompt + c.line, "cyan"))
    return lines


def _wrap(text: str, indent: str, hang: Optional[str] = None) -> list[str]:
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=indent,
        subsequent_indent=hang if hang is not None else indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent]
