"""``envcheck explain``'s output: the report as text (at the terminal's width: text wraps, commands
and URLs stay whole and paste as printed) and as one JSON document in the common envelope, and the
catalogue for ``--list``."""

from __future__ import annotations

from typing import Any, Optional

from envcheck.explain.explanations import Explanation, explain
from envcheck.explain.report import ExplainReport
from envcheck.explain.scanner import Catalogue
from envcheck.printable import printable
from envcheck.render import json_text
from envcheck.render.width import terminal_width, wrap
from envcheck.words import plural

SHELL_LABELS = {"bash": "bash", "powershell": "PowerShell"}
STATUS_LABELS = {"confirmed": "confirmed on this machine", "ruled-out": "ruled out on this machine"}
INDENT = "    "


def render_json(report: ExplainReport) -> str:
    return json_text("explain", report.to_dict(), report.exit_code)


def render_text(report: ExplainReport, show_harmless: bool = True, width: Optional[int] = None) -> str:
    """The report as text; every line of it shown with the characters a terminal would obey
    escaped (``printable``): the excerpts, file names and captured values are the log's text."""
    return _shown(_report_text(report, show_harmless, width or terminal_width()))


def _shown(text: str) -> str:
    return "\n".join(printable(line) for line in text.split("\n"))


def _report_text(report: ExplainReport, show_harmless: bool, width: int) -> str:
    scan = report.scan
    if scan.bytes == 0:
        lines = [f"envcheck explain: {report.source} is empty; there is nothing to explain.", _doctor_hint()]
        return _wrapped(lines, width)
    where = f"{plural(scan.lines, 'line')} of {report.source}"
    if not report.explanations:
        lines = [
            f"envcheck explain: no known TensorFlow, CUDA or driver message in {where}.",
            *_unexplained(report, alone=True),
            "`envcheck explain --list` shows the messages envcheck knows. " + _doctor_hint(),
            *_quoting_hint(report),
            *(f"Note: {p}" for p in report.problems),
        ]
        return _wrapped(lines, width)
    out = [_wrapped(_header(report, where), width).rstrip("\n")]
    shown_harmless_header = False
    number = 0
    for explanation in report.explanations:
        if explanation.harmless and not show_harmless:
            continue
        number += 1
        if explanation.harmless and not shown_harmless_header:
            out += ["", "Harmless:"]
            shown_harmless_header = True
        out.append("")
        out.extend(_render_one(number, explanation, report.shell, width))
    hidden = report.harmless_count if not show_harmless else 0
    if hidden:
        out += ["", f"({plural(hidden, 'harmless message')} not shown; drop --hide-harmless to see them.)"]
    return "\n".join(out) + "\n"


def _quoting_hint(report: ExplainReport) -> list[str]:
    """A message given as arguments went through the shell, whose quoting drops the message's own
    quotes ('libcudnn.so.8' inside '...') and more; standard input takes it as printed."""
    if report.source != "the argument":
        return []
    return [
        "A message with quotes of its own loses them inside the shell's quotes: run `envcheck explain -`, "
        "paste the message, then press Ctrl-D (Ctrl-Z Enter on Windows), or save it to a file and use --file."
    ]


def _doctor_hint() -> str:
    return "To check this machine itself, run `envcheck doctor`."


def _header(report: ExplainReport, where: str) -> list[str]:
    lines = [
        f"envcheck explain: {plural(len(report.explanations), 'known message')} in {where} "
        f"({report.to_act_on} to act on, {report.harmless_count} harmless)."
    ]
    if report.machine and any(e.machine for e in report.explanations):
        lines.append(f"Advice marked 'On this machine' uses the facts of {report.machine}.")
    lines.extend(_unexplained(report, alone=False))
    if report.scan.dropped:
        lines.append(
            f"{report.scan.dropped} further matches were not shown (more than the distinct messages envcheck keeps)."
        )
    lines.extend(f"Note: {p}" for p in report.problems)
    return lines


def _unexplained(report: ExplainReport, alone: bool) -> list[str]:
    """The line that says the input ends in a Python error nothing here explains."""
    error = report.unexplained_error
    if not error:
        return []
    if alone:
        return [f"It ends in a Python error envcheck does not know: {error}"]
    return [
        f"But it ends in a Python error none of these messages explains: {error}. The harmless notices are "
        "not its cause; the error and the traceback above it say what failed."
    ]


def _wrapped(lines: list[str], width: int) -> str:
    return "".join(wrap(line, width, 0) + "\n" for line in lines)


def _paragraph(label: str, text: str, width: int, indent: str = INDENT, rest: Optional[str] = None) -> list[str]:
    rest = indent if rest is None else rest
    return [
        rest + line if i else indent + line for i, line in enumerate(_wrap_lines(f"{label}{text}", width - len(rest)))
    ]


def _wrap_lines(text: str, width: int) -> list[str]:
    return wrap(text, max(20, width), 0).split("\n")


def _render_one(number: int, e: Explanation, shell: Optional[str], width: int) -> list[str]:
    lines = [f"[{number}] {e.title}"]
    status = "harmless" if e.harmless else "error"
    where = (
        f"line {e.first_line}"
        if e.count == 1
        else f"lines {', '.join(map(str, e.line_numbers))}"
        + ("…" if e.count > len(e.line_numbers) else "")
        + f" ({e.count}×)"
    )
    lines.append(INDENT + " · ".join(part for part in (status, ", ".join(e.rule_ids), where) if part))
    lines.append(INDENT + "> " + _shorten(e.excerpt, width - len(INDENT) - 2))
    lines.extend(_paragraph("What it means: ", e.meaning, width))
    status_part = _status_part(e)
    if status_part:
        lines.extend(_paragraph("Status: ", status_part, width))
    if not e.harmless or (e.causes and e.causes[0].status == "confirmed"):
        lines.extend(_render_causes(e, shell, width))
    lines.extend(_paragraph("Fix: ", e.fix.text, width))
    lines.extend(_commands(e.fix.commands, shell, INDENT + "  "))
    if e.fix.url:
        lines.append(INDENT + "  " + e.fix.url)
    if e.log_note:
        lines.extend(_paragraph("In this log: ", e.log_note, width))
    for note in e.machine:
        lines.extend(_paragraph("On this machine: ", note.text, width))
        lines.extend(_commands(note.commands, shell, INDENT + "  "))
        if note.url:
            lines.append(INDENT + "  " + note.url)
    return lines


def _status_part(e: Explanation) -> str:
    """A status of the CUDA stack the message names, when its pattern is not the status's own."""
    name = e.variables.get("status_name")
    if not name or e.id.endswith("-status"):
        return ""
    return f"{name} ({e.variables.get('status_value', '')}) from {e.variables.get('status_library', '')}: {e.variables.get('status_meaning', '')}."


def _render_causes(e: Explanation, shell: Optional[str], width: int) -> list[str]:
    """The first cause in full; the others as a short ranked list, each with how to tell it."""
    causes = e.causes
    if not causes:
        return _paragraph("Cause: ", e.cause, width)
    first, others = causes[0], causes[1:]
    label = "Cause" if not others else "Most likely cause"
    if first.status in STATUS_LABELS:
        label += f" ({STATUS_LABELS[first.status]})"
    lines = _paragraph(f"{label}: ", first.text, width)
    if others and first.tell is not None:
        lines.extend(_tell(first.tell, shell, width, INDENT + "  "))
    if others:
        lines.append(INDENT + "Other possible causes, most likely first:")
        for number, cause in enumerate(others, start=2):
            tag = f" [{STATUS_LABELS[cause.status]}]" if cause.status in STATUS_LABELS else ""
            lines.extend(_paragraph(f"{number}. ", cause.text + tag, width, INDENT + "  ", INDENT + "     "))
            if cause.tell is not None:
                lines.extend(_tell(cause.tell, shell, width, INDENT + "     "))
    for cause_id, why in e.dropped:
        lines.extend(_paragraph("Ruled out by this log: ", f"{cause_id} ({why}).", width))
    return lines


def _tell(tell: Any, shell: Optional[str], width: int, indent: str) -> list[str]:
    lines = _paragraph("How to tell: ", tell.text, width, indent)
    lines.extend(_commands(tell.commands, shell, indent + "  "))
    if tell.url:
        lines.append(indent + "  " + tell.url)
    return lines


def _commands(commands: Any, shell: Optional[str], indent: str) -> list[str]:
    """The commands for the machine's shell, each on its own line with nothing before it, so it
    pastes as printed; all of them under a label per shell when the shell is unknown or none is
    for it (a Windows message explained on Linux still shows its PowerShell lines)."""
    mine = [c for c in commands if shell is not None and c.shell in ("any", shell)]
    if mine:
        return [indent + c.line for c in mine]
    out: list[str] = []
    last_label = None
    for command in commands:
        label = SHELL_LABELS.get(command.shell)
        if label and label != last_label:
            out.append(f"{indent}In {label}:")
            last_label = label
        out.append(indent + ("  " if label else "") + command.line)
    return out


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(10, limit - 1)] + "…"


def _example_title(catalogue: Catalogue, pattern: Any) -> str:
    found = [e for e in explain(catalogue.scan_text(pattern.examples[0])) if e.id == pattern.id]
    return found[0].title if found else pattern.title


def render_catalogue(catalogue: Catalogue, width: Optional[int] = None) -> str:
    """``--list``: every known message with the title its first example gives."""
    width = width or terminal_width()
    out = [f"envcheck explain knows {len(catalogue.patterns)} messages ({catalogue.path.name}):", ""]
    for pattern in catalogue.patterns:
        tag = "harmless" if pattern.harmless else ", ".join(pattern.rule_ids) or "code"
        out.append(pattern.id)
        out.extend(_paragraph("", f"{_example_title(catalogue, pattern)}  [{tag}]", width))
    return _shown("\n".join(out) + "\n")  # a --patterns file is anyone's text


def render_catalogue_json(catalogue: Catalogue) -> str:
    """``--list --json``: the same list, one object per message, in the common envelope."""
    items = [
        {
            "id": pattern.id,
            "title": _example_title(catalogue, pattern),
            "harmless": pattern.harmless,
            "rule_ids": list(pattern.rule_ids),
        }
        for pattern in catalogue.patterns
    ]
    return json_text("explain", {"patterns_file": catalogue.path.name, "messages": items}, 0)
