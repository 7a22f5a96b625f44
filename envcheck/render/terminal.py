"""The doctor's terminal report: the chain, one line per GPU when there are several, the verdict,
and each fix once, numbered, in the order to do them; findings and evidence with ``-v``.

Everything goes through rich (colour, wrapping at the terminal's width or ``COLUMNS``); values
from the machine are always plain text to rich, never markup. Commands are printed whole on a
line of their own, without a prompt, so that a copied line runs as it is. Plain ASCII marks when
stdout is not a terminal, ``NO_COLOR`` is set or ``TERM=dumb``, so logs and CI output stay readable.
"""

from __future__ import annotations

import io
import os
import re
import sys
from typing import Optional

from rich.console import Console
from rich.text import Text

from envcheck.findings import (
    BROKEN,
    CPU_ONLY,
    DEGRADED,
    GPU_READY,
    LINK_ERROR,
    LINK_OK,
    LINK_SKIPPED,
    LINK_WARNING,
    NOT_INSTALLED,
    Finding,
    Fix,
    Report,
    Severity,
    shown_once,
)
from envcheck.invocation import runnable
from envcheck.printable import printable
from envcheck.render.width import DEFAULT_WIDTH, MIN_WIDTH, path_pieces, terminal_width  # noqa: F401 - part of this module's interface
from envcheck.shell import SHELL_TITLES, Command

# status: (ascii, glyph, style)
_LINK_MARK = {
    LINK_OK: ("[ok]  ", "✔", "green"),
    LINK_WARNING: ("[warn]", "!", "yellow"),
    LINK_ERROR: ("[FAIL]", "✘", "bold red"),
    LINK_SKIPPED: ("[skip]", "–", "dim"),
}
_SEVERITY_MARK = {
    Severity.ERROR: ("ERROR", "✘", "bold red"),
    Severity.WARNING: ("WARN", "!", "yellow"),
    Severity.INFO: ("INFO", "i", "cyan"),
}
_VERDICT_STYLE = {
    GPU_READY: "bold green",
    DEGRADED: "bold yellow",
    CPU_ONLY: "bold yellow",
    BROKEN: "bold red",
    NOT_INSTALLED: "bold cyan",
}

# Link titles short enough to leave the line to what was seen (the JSON keeps the long ones).
SHORT_TITLES = {
    "python": "Python",
    "gpu": "NVIDIA GPU",
    "driver": "Driver",
    "compute": "Compute capability",
    "libraries": "CUDA libraries",
    "tensorflow": "TensorFlow",
    "placement": "Ops on the GPU",
    "environment": "Environment",
    "multigpu": "Multi-GPU",
}


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


def console_for(width: int, color: bool) -> Console:
    """A rich console that renders into a string (``console.file.getvalue()``)."""
    return Console(
        file=io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
        soft_wrap=False,
    )


# Stands for a space inside a whole part while a line is wrapped: not whitespace to the wrapper,
# one cell wide like the space it replaces.
_GLUE = "\ue000"
_BACKTICKED = re.compile(r"`[^`\n]+`")


def whole(text: str, style: str = "") -> Text:
    """Text that wrapping never breaks (a command in a sentence): it moves to the next line
    whole, and stays whole on a line narrower than itself."""
    return Text(text.replace(" ", _GLUE), style=style)


def _glued(part) -> Text:
    """A part of a line as Text, its backticked spans glued (``whole`` parts already are)."""
    text = part.copy() if isinstance(part, Text) else Text(str(part))
    plain = _BACKTICKED.sub(lambda m: m.group().replace(" ", _GLUE), text.plain)
    if plain != text.plain:
        text = Text(plain, style=text.style, spans=text.spans)
    return text


def _unglued(text: Text) -> Text:
    return Text(text.plain.replace(_GLUE, " "), style=text.style, spans=text.spans, end="")


def print_wrapped(console: Console, parts, indent: int = 0, hang: Optional[int] = None) -> None:
    """One logical line at the console's width: wrapped at spaces, continuation lines starting
    at column ``hang``; a word longer than a line (a path) is folded, a whole part never is."""
    text = Text(" " * indent)
    for part in parts:
        text.append_text(_glued(part))
    hang = indent if hang is None else hang
    width = console.width
    if text.cell_len <= width:
        console.print(_unglued(text), crop=False, overflow="ignore")
        return
    if hang < 0 or hang >= width - 10:
        hang = 0
    head, body = text[:hang], _breakable_paths(text[hang:], width - hang)
    body.rstrip()
    longest_whole = max((len(w) for w in body.plain.split() if _GLUE in w), default=0)
    overflow = "ignore" if longest_whole > width - hang else "fold"
    for i, piece in enumerate(body.wrap(console, width - hang, overflow=overflow)):
        piece.rstrip()
        console.print(_unglued((head if i == 0 else Text(" " * hang)) + piece), crop=False, overflow="ignore")


# A line's own label, and where its continuation lines start: validate's "PASS  level 1  ",
# "note: ", "doctor: "; any other line goes on two columns in.
_LABELS = re.compile(r"^(?:(?:PASS|FAIL)  level \d+  |[a-z]+: )")


def print_markup(console: Console, markup: str) -> None:
    """A line of rich markup (values in it escaped) at the console's width, its continuation
    lines under the text after its label."""
    text = Text.from_markup(markup)
    label = _LABELS.match(text.plain)
    print_wrapped(console, [text], hang=label.end() if label else 2)


_LONG_PATH = re.compile(r"(?<!\S)(?!https?://)[^\s\ue000]*[/\\][^\s\ue000]*")


def _breakable_paths(text: Text, room: int) -> Text:
    r"""A path longer than a line can break after a ``/`` (or ``\``) rather than anywhere: it is
    cut into pieces that each fill a line, with a space between (greedy, so no two pieces ever
    share a line: the space never shows inside a path). URLs and whole parts stay as they are."""
    plain = text.plain
    cuts = [m for m in _LONG_PATH.finditer(plain) if len(m.group()) > room and not _in_whole(plain, m)]
    if not cuts:
        return text
    out = Text(style=text.style, end="")
    last = 0
    for match in cuts:
        out.append_text(text[last : match.start()])
        at = match.start()
        for i, piece in enumerate(path_pieces(match.group(), room)):
            out.append_text((Text(" ") if i else Text()) + text[at : at + len(piece)])
            at += len(piece)
        last = match.end()
    out.append_text(text[last:])
    return out


def _in_whole(plain: str, match: re.Match) -> bool:
    """The path is a word of a ``whole`` part (a command that starts with the path of a Python):
    it runs past the line with the rest of that part rather than being cut."""
    start, end = match.start(), match.end()
    return (start > 0 and plain[start - 1] == _GLUE) or (end < len(plain) and plain[end] == _GLUE)


class _Out:
    """Lines of rich Text, wrapped at the width; commands never wrapped."""

    def __init__(self, width: int, color: bool, glyphs: bool) -> None:
        self.console = console_for(width, color)
        self.color = color
        self.glyphs = glyphs and color

    def mark(self, table: dict, key) -> Text:
        ascii_mark, glyph, style = table[key]
        return Text(glyph if self.glyphs else ascii_mark, style=style if self.color else "")

    def line(self, *parts, indent: int = 0, hang: Optional[int] = None) -> None:
        """One logical line, wrapped at the width without breaking words; continuation lines
        start at column ``hang`` (the text after a label lines up under itself)."""
        print_wrapped(self.console, parts, indent=indent, hang=hang)

    def command(self, command: Command, indent: int) -> None:
        text = Text(" " * indent)
        text.append(printable(runnable(command.line, command.shell)), style="cyan" if self.color else "")
        self.console.print(text, soft_wrap=True, crop=False)

    def blank(self) -> None:
        self.console.print()

    def value(self) -> str:
        return "\n".join(line.rstrip() for line in self.console.file.getvalue().split("\n"))


def render(report: Report, verbose: bool = False, color: Optional[bool] = None, width: Optional[int] = None) -> str:
    if color is None:
        color = use_color()
    glyphs = _can_encode("".join(m[1] for m in _LINK_MARK.values()))
    out = _Out(width or terminal_width(), color, glyphs)
    facts = report.facts
    header = Text(f"envcheck {report.envcheck_version} doctor", style="bold" if color else "")
    if facts.python.executable:
        where = f"  {printable(facts.python.executable)}"
        if header.cell_len + len(where) <= out.console.width:
            header.append(where, style="dim" if color else "")
        else:
            out.line(header)
            header = Text(where, style="dim" if color else "")
    out.console.print(header, crop=False, overflow="ignore")
    for note in report.notes:
        out.line(Text(f"note: {printable(note)}", style="dim" if color else ""), hang=6)
    out.blank()
    chain(out, report, verbose)
    gpu_table(out, report)
    out.blank()
    verdict = report.verdict
    out.line(
        Text("Verdict: ", style="bold" if color else ""),
        Text(printable(verdict.line), style=_VERDICT_STYLE.get(verdict.status, "bold") if color else ""),
        hang=9,
    )
    shown = ways_forward(out, report)
    if verbose:
        findings(out, report)
        multigpu(out, report)
    else:
        rest = [f for f in shown_once(report.findings) if f.id not in shown]
        if rest:
            out.blank()
            # dict.fromkeys: one rule's findings about GPUs with different names read the same here
            listed = "; ".join(
                dict.fromkeys(
                    f"{f.id} {f.severity.value}" + (f" (because of {f.caused_by})" if f.caused_by else "") for f in rest
                )
            )
            dim = "dim" if color else ""
            out.line(Text(f"Also: {listed}. Details: ", style=dim), whole(runnable("envcheck doctor -v"), dim), hang=6)
    return out.value()


def chain(out: _Out, report: Report, verbose: bool) -> None:
    titles = {link.name: SHORT_TITLES.get(link.name, link.title) for link in report.links}
    width = max((len(t) for t in titles.values()), default=0)
    for link in report.links:
        timing = f"  ({link.seconds * 1000:.0f} ms)" if verbose and link.seconds else ""
        mark = out.mark(_LINK_MARK, link.status)
        out.line(
            Text("  "),
            mark,
            Text(f" {titles[link.name].ljust(width)}  "),
            Text(printable(link.summary) + timing),
            hang=width + 5 + mark.cell_len,
        )


def gpu_table(out: _Out, report: Report) -> None:
    """One line per GPU when there is more than one, or when one is not usable."""
    gpus = report.gpus
    if len(gpus) < 2:
        return
    out.blank()
    names = [printable(g.name) for g in gpus]
    name_width = min(28, max(len(name) for name in names))
    out.line(
        Text(f"  {'GPU':<4}{'name':<{name_width + 2}}{'CUDA':<6}{'TF':<8}status", style="dim" if out.color else "")
    )
    for g, name in zip(gpus, names):
        index = "?" if g.index is None else str(g.index)
        cuda = "-" if g.cuda_index is None else str(g.cuda_index)
        tf = printable(g.tf_device or "-")
        status = (
            "usable" if g.usable and not g.reason else ("usable, " + g.reason if g.usable else g.reason or "not usable")
        )
        style = "" if not out.color else ("green" if g.usable else "red")
        name = name if len(name) <= name_width else name[: name_width - 1] + "…"
        out.line(
            Text(f"  {index:<4}{name:<{name_width + 2}}{cuda:<6}{tf:<8}"),
            Text(printable(status), style=style),
            hang=name_width + 20,
        )


def ways_forward(out: _Out, report: Report) -> set[str]:
    """The fixes, each once and numbered, in the order to do them; returns the finding ids shown."""
    verdict = report.verdict
    shown: set[str] = set()
    by_fix = {f.fix.text: f for f in report.findings if f.fix is not None}
    number = 0
    if verdict.gpu_path:
        out.blank()
        failing = sum(1 for g in report.gpus if not g.usable and not g.hidden)
        title = {
            NOT_INSTALLED: "Next, for the GPU:",
            DEGRADED: f"For the GPU{'s' if failing != 1 else ''} that fail{'s' if failing == 1 else ''}, in this order:",
        }.get(verdict.status, "To use the GPU, in this order:")
        out.line(Text(title, style="bold" if out.color else ""))
        for step in verdict.gpu_path:
            number += 1
            finding = _finding_of(step, report.findings, by_fix)
            children: list[str] = []
            if finding is not None:
                shown.add(finding.id)
                children = [f.id for f in report.findings if f.caused_by == finding.id and f.id not in shown]
                shown.update(children)
            _step(out, number, step, finding, clears=children)
    worth = [
        f
        for f in shown_once(report.findings)
        if f.severity is Severity.WARNING and f.fix is not None and f.id not in shown and f.caused_by is None
    ]
    if worth and verdict.status in (GPU_READY, DEGRADED, CPU_ONLY):
        out.blank()
        out.line(Text("Worth fixing too:", style="bold" if out.color else ""))
        for finding in worth:
            number += 1
            shown.add(finding.id)
            _step(out, number, finding.fix, finding, title=finding.title)
    if verdict.cpu_path:
        out.blank()
        label = {
            NOT_INSTALLED: "Next, for the CPU:" if verdict.gpu_path else "Next:",
            GPU_READY: "On the CPU instead:",
        }.get(verdict.status, "On the CPU instead:" if verdict.gpu_path else "On the CPU:")
        if len(verdict.cpu_path) == 1 or not verdict.gpu_path:
            out.line(Text(label, style="bold" if out.color else ""))
            for n, step in enumerate(verdict.cpu_path, 1):
                _step(out, n, step, None)
        else:
            # One short block: what the steps do in one sentence, then their commands.
            parts = [_first_sentence(s.text).rstrip(".") for s in verdict.cpu_path]
            what = "; ".join([parts[0]] + [p[:1].lower() + p[1:] for p in parts[1:]])
            out.line(Text(label + " ", style="bold" if out.color else ""), Text(printable(what) + "."), hang=2)
            for step in verdict.cpu_path:
                for command in step.commands:
                    out.command(command, 5)
    return shown


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _finding_of(step: Fix, findings, by_fix) -> Optional[Finding]:
    text = step.text
    if ": " in text and text.split(": ", 1)[0].startswith("EC-"):
        rule_id = text.split(": ", 1)[0]
        return next((f for f in findings if f.id == rule_id), None)
    return by_fix.get(text)


def _step(
    out: _Out, number: int, step: Fix, finding: Optional[Finding], title: Optional[str] = None, clears: list[str] = ()
) -> None:
    text = step.text
    if finding is not None and text.startswith(finding.id + ": "):
        text = text[len(finding.id) + 2 :]
    text = _first_sentence(text)  # the rest is under -v
    if title:
        text = f"{title}. {text}"
    label = f"  {number}. "
    tail = ""
    if finding is not None:
        tail = f"  [{finding.id}" + (f"; also clears {', '.join(clears)}" if clears else "") + "]"
    out.line(Text(label), Text(printable(text)), Text(tail, style="dim" if out.color else ""), hang=len(label))
    shells = {c.shell for c in step.commands if c.shell not in ("any",)}
    for command in step.commands:
        if len(shells) > 1 and command.shell in SHELL_TITLES:
            out.line(Text(f"     {SHELL_TITLES[command.shell]}:", style="dim" if out.color else ""))
        out.command(command, 5)
    if step.url:
        out.line(Text(f"     {printable(step.url)}", style="dim" if out.color else ""))


def findings(out: _Out, report: Report) -> None:
    """``-v``: every finding with its detail, evidence and fix."""
    if not report.findings:
        return
    out.blank()
    out.line(Text("Findings", style="bold" if out.color else ""))
    for f in shown_once(report.findings):
        cause = f" (because of {f.caused_by})" if f.caused_by else ""
        title = printable(f.title) + cause
        out.line(Text("  "), out.mark(_SEVERITY_MARK, f.severity), Text(f" {f.id}  "), Text(title), hang=6)
        if f.detail:
            out.line(Text(printable(f.detail)), indent=6, hang=6)
        if f.evidence:
            out.line(Text("evidence:", style="dim" if out.color else ""), indent=6)
        for what, value in f.evidence:
            # A value of many lines (a traceback) goes on behind a gutter, so no line of it reads
            # as one of the report's own.
            first, *more = (value or "").split("\n")
            out.line(
                Text(f"{printable(what)}: {printable(first)}", style="dim" if out.color else ""), indent=8, hang=10
            )
            for extra in more[:20]:
                out.line(Text("| " + printable(extra), style="dim" if out.color else ""), indent=10, hang=12)
        if f.fix is not None:
            out.line(Text("Fix: " + printable(f.fix.text)), indent=6, hang=6)
            for command in f.fix.commands:
                out.command(command, 8)
            if f.fix.url:
                out.line(Text(printable(f.fix.url), style="dim" if out.color else ""), indent=8)


def multigpu(out: _Out, report: Report) -> None:
    """``-v``: each GPU's link, clocks, temperature and power, and the path between each pair."""
    # lazy for start-up: only `doctor -v` needs machine and render.multigpu; other commands render here too
    from envcheck.machine import Machine
    from envcheck.render.multigpu import multigpu_details

    lines = multigpu_details(Machine(report.facts))
    if not lines:
        return
    out.blank()
    out.line(Text("Multi-GPU details", style="bold" if out.color else ""))
    for line in lines:
        out.console.print(Text(line), crop=False, overflow="ignore", no_wrap=True)
