"""``envcheck explain`` output: the report it builds, as plain text or JSON."""

from __future__ import annotations

import json
import shutil
import textwrap
from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck import __version__
from envcheck.explain.explanations import Explanation
from envcheck.explain.scanner import Catalogue, ScanResult

SCHEMA_VERSION = 1
SHELL_LABELS = {"bash": "bash", "powershell": "PowerShell"}


@dataclass(frozen=True)
class ExplainReport:
    source: str  # "the argument", "standard input", or the file name
    scan: ScanResult
    explanations: tuple[Explanation, ...]
    machine: str = ""  # whose facts shaped the advice, in words; "" when none
    machine_os: Optional[str] = None
    shell: Optional[str] = None  # the machine's shell, to show only its commands; None: show all
    problems: tuple[str, ...] = field(default=())

    @property
    def to_act_on(self) -> int:
        return sum(1 for e in self.explanations if not e.harmless)

    @property
    def exit_code(self) -> int:
        # The question was "what is in this text?": answered when something known was found.
        return 0 if self.explanations else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "envcheck_version": __version__,
            "source": self.source,
            "lines": self.scan.lines,
            "bytes": self.scan.bytes,
            "found": len(self.explanations),
            "to_act_on": self.to_act_on,
            "harmless": len(self.explanations) - self.to_act_on,
            "not_shown": self.scan.dropped,
            "exit_code": self.exit_code,
            "machine": {"probed": bool(self.machine), "origin": self.machine or None, "os": self.machine_os},
            "problems": list(self.problems),
            "explanations": [e.to_dict() for e in self.explanations],
        }


def render_json(report: ExplainReport) -> str:
    return json.dumps(report.to_dict(), indent=2) + "\n"


def _width() -> int:
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 110))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render_text(report: ExplainReport, show_harmless: bool = True) -> str:
    width = _width()
    out: list[str] = []
    scan = report.scan
    where = f"{_plural(scan.lines, 'line')} of {report.source}"
    if scan.bytes == 0:
        out.append(f"envcheck explain: {report.source} is empty; there is nothing to explain.")
        out.append("To check this machine itself, run `envcheck doctor`.")
        return "\n".join(out) + "\n"
    if not report.explanations:
        out.append(f"envcheck explain: no known TensorFlow, CUDA or driver message in {where}.")
        out.append(
            "`envcheck explain --list` shows the messages envcheck knows. To check this machine itself, "
            "run `envcheck doctor`."
        )
        out.extend(f"Note: {p}" for p in report.problems)
        return "\n".join(out) + "\n"
    harmless = len(report.explanations) - report.to_act_on
    out.append(
        f"envcheck explain: {_plural(len(report.explanations), 'known message')} in {where} "
        f"({report.to_act_on} to act on, {harmless} harmless)."
    )
    if report.machine and any(e.machine for e in report.explanations):
        out.append(f"Advice marked 'On this machine' uses the facts of {report.machine}.")
    if scan.dropped:
        out.append(f"{scan.dropped} further matches were not shown (more than the distinct messages envcheck keeps).")
    out.extend(f"Note: {p}" for p in report.problems)
    number = 0
    shown_harmless_header = False
    for explanation in report.explanations:
        if explanation.harmless and not show_harmless:
            continue
        number += 1
        if explanation.harmless and not shown_harmless_header:
            out.append("")
            out.append("Harmless:")
            shown_harmless_header = True
        out.append("")
        out.extend(_render_one(number, explanation, report.shell, width))
    hidden = harmless if not show_harmless else 0
    if hidden:
        out.append("")
        out.append(f"({_plural(hidden, 'harmless message')} not shown; drop --hide-harmless to see them.)")
    return "\n".join(out) + "\n"


def _render_one(number: int, e: Explanation, shell: Optional[str], width: int) -> list[str]:
    indent = "    "
    lines = [f"[{number}] {e.title}"]
    status = "harmless" if e.harmless else "error"
    where = (
        f"line {e.first_line}"
        if e.count == 1
        else f"lines {', '.join(map(str, e.line_numbers))}"
        + ("…" if e.count > len(e.line_numbers) else "")
        + f" ({e.count}×)"
    )
    lines.append(indent + " · ".join(part for part in (status, ", ".join(e.rule_ids), where) if part))
    lines.append(indent + "> " + _shorten(e.excerpt, width - len(indent) - 2))

    def paragraph(label: str, text: str) -> None:
        lines.extend(
            textwrap.wrap(
                f"{label}: {text}", width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
            )
        )

    paragraph("What it means", e.meaning)
    if not e.harmless:
        lines.extend(_render_causes(e, shell, width, indent))
    paragraph("Fix", e.fix.text)
    lines.extend(_commands(e.fix.commands, shell, indent + "  "))
    if e.fix.url:
        lines.append(indent + "  " + e.fix.url)
    if e.log_note:
        paragraph("In this log", e.log_note)
    for note in e.machine:
        paragraph("On this machine", note.text)
        lines.extend(_commands(note.commands, shell, indent + "  "))
        if note.url:
            lines.append(indent + "  " + note.url)
    return lines


STATUS_LABELS = {"confirmed": "confirmed on this machine", "ruled-out": "ruled out on this machine"}


def _render_causes(e: Explanation, shell: Optional[str], width: int, indent: str) -> list[str]:
    """The first cause in full; the others as a short ranked list, each with how to tell it."""
    lines: list[str] = []

    def wrap(text: str, first: str, rest: str) -> None:
        lines.extend(textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False))

    causes = e.causes
    if not causes:
        wrap(f"Cause: {e.cause}", indent, indent)
        return lines
    first, others = causes[0], causes[1:]
    label = "Cause" if not others else "Most likely cause"
    if first.status in STATUS_LABELS:
        label += f" ({STATUS_LABELS[first.status]})"
    wrap(f"{label}: {first.text}", indent, indent)
    if others and first.tell is not None:
        wrap(f"How to tell: {first.tell.text}", indent + "  ", indent + "  ")
        lines.extend(_commands(first.tell.commands, shell, indent + "    "))
        if first.tell.url:
            lines.append(indent + "    " + first.tell.url)
    if others:
        lines.append(indent + "Other possible causes, most likely first:")
        for number, cause in enumerate(others, start=2):
            tag = f" [{STATUS_LABELS[cause.status]}]" if cause.status in STATUS_LABELS else ""
            wrap(f"{number}. {cause.text}{tag}", indent + "  ", indent + "     ")
            if cause.tell is not None:
                wrap(f"How to tell: {cause.tell.text}", indent + "     ", indent + "     ")
                lines.extend(_commands(cause.tell.commands, shell, indent + "       "))
                if cause.tell.url:
                    lines.append(indent + "       " + cause.tell.url)
    return lines


def _commands(commands: Any, shell: Optional[str], indent: str) -> list[str]:
    """The commands for the machine's shell; all of them, labelled, when it is unknown or when
    none is for it (a Windows message explained on Linux still shows its PowerShell lines)."""
    mine = [c for c in commands if shell is not None and c.shell in ("any", shell)]
    label_all = not mine
    out = []
    shown = None
    for command in mine or commands:
        # Printed as they run, without a prompt; another shell's commands under its name, on a
        # line of its own (a label after the command would be pasted with it).
        if label_all and command.shell in SHELL_LABELS and command.shell != shown:
            out.append(f"{indent}{SHELL_LABELS[command.shell]}:")
            shown = command.shell
        out.append(f"{indent}{'  ' if shown else ''}{command.line}")
    return out


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(10, limit - 1)] + "…"


def _example_title(catalogue: Catalogue, pattern: Any) -> str:
    from envcheck.explain.explanations import explain

    found = [e for e in explain(catalogue.scan_text(pattern.examples[0])) if e.id == pattern.id]
    return found[0].title if found else pattern.title


def render_catalogue(catalogue: Catalogue) -> str:
    """``--list``: every known message with the title its first example gives."""
    width = _width()
    out = [f"envcheck explain knows {len(catalogue.patterns)} messages ({catalogue.path.name}):", ""]
    for pattern in catalogue.patterns:
        title = _example_title(catalogue, pattern)
        tag = "harmless" if pattern.harmless else ", ".join(pattern.rule_ids) or "code"
        out.append(f"{pattern.id}")
        out.extend(
            textwrap.wrap(
                f"{title}  [{tag}]", width, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
            )
        )
    return "\n".join(out) + "\n"


def render_catalogue_json(catalogue: Catalogue) -> str:
    """``--list --json``: the same list, one object per message."""
    import json

    items = []
    for pattern in catalogue.patterns:
        items.append(
            {
                "id": pattern.id,
                "title": _example_title(catalogue, pattern),
                "harmless": pattern.harmless,
                "rule_ids": list(pattern.rule_ids),
            }
        )
    return json.dumps({"patterns_file": catalogue.path.name, "messages": items}, indent=2) + "\n"
