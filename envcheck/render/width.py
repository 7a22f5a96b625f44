"""How wide the output may be, and plain-text wrapping to it, for every command's text output (no
rich import: `matrix` and `plan` stay fast)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap

DEFAULT_WIDTH = 100  # a pipe or a file: wide enough for paths, narrow enough to read
MIN_WIDTH = 40


def terminal_width(stream=None) -> int:
    """The width to wrap at: ``COLUMNS`` when set, else the terminal's, else 100 (a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and len(columns) <= 6 and int(columns) > 0:  # COLUMNS=<5,000 digits> is no width
        return max(MIN_WIDTH, int(columns))
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    except (AttributeError, ValueError):
        pass
    return DEFAULT_WIDTH


def wrap(text: str, width: int, indent: int) -> str:
    """One line wrapped at spaces to ``width``, its continuation lines indented by ``indent``.
    Words are never broken (a URL or a file name longer than the line stays whole)."""
    if len(text) <= width:
        return text
    return "\n".join(
        textwrap.wrap(
            text,
            width=width,
            subsequent_indent=" " * min(indent, width // 2),
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


# Stands for a space that must not break a line (inside a command or a "[--gpu]" tag) while
# textwrap runs: textwrap breaks only at ASCII whitespace.
_KEEP = "\u00a0"
# Kept on one line when a text wraps: a command in backticks, a flag with its value ("--tf 2.0"), a
# Windows path with spaces in its folders ("C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA").
_WHOLE = re.compile(
    r"`[^`\n]+`"
    r"|(?<!\S)--[a-z][a-z-]* [^\s-][^\s,;)]*"
    r"|\b[A-Za-z]:\\(?:[^\\\s,;:]+(?: [^\\\s,;:]+)*\\)+[^\\\s,;:]*"
)


def keep_together(text: str) -> str:
    """``text`` whose spaces no wrapping here breaks at (a command inside a sentence)."""
    return text.replace(" ", _KEEP)


def wrap_lines(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` in lines of at most ``width``: the first starts with ``first``, the others with
    ``rest`` (spaces as wide as ``first`` by default). Words are never broken, nor what ``_WHOLE``
    matches and ``keep_together`` parts; what is longer than a line runs past it whole."""
    rest = " " * len(first) if rest is None else rest
    glued = _WHOLE.sub(lambda m: keep_together(m.group()), text)
    lines = textwrap.wrap(
        glued,
        width=max(width, len(first) + 1, len(rest) + 1),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(_KEEP, " ") for line in lines] or [first.rstrip()]


_DEFINITION = re.compile(r"^(?P<lead> +\S+ {2,})(?P<text>\S.*)$")  # "  0  GPU ready, ..." (a table row)


def reflow(text: str, width: int, indent: str = "") -> str:
    """Help text written at one width, rewrapped at another: paragraphs of unindented lines are
    joined and wrapped (a line ending with ":" ends one); a table row (``  0  meaning``) is wrapped
    under its text, its continuation lines joined to it; any other indented line (a command, an
    example) stays as it is."""
    out: list[str] = []
    for block in _blocks(text):
        kind, first, lines = block
        if kind == "verbatim":
            out += [indent + line for line in lines]
            continue
        joined = " ".join(line.strip() for line in lines)
        lead = first if kind == "row" else ""
        out += wrap_lines(joined, width, indent + lead, indent + " " * len(lead))
    return "\n".join(out)


def _blocks(text: str) -> list[tuple[str, str, list[str]]]:
    """(kind, the row's lead, lines): kind "text" (a paragraph), "row" or "verbatim"."""
    blocks: list[tuple[str, str, list[str]]] = []
    for line in text.splitlines():
        last = blocks[-1] if blocks else None
        if not line.strip():
            blocks.append(("verbatim", "", [""]))
            continue
        row = _DEFINITION.match(line)
        if row:
            blocks.append(("row", row.group("lead"), [row.group("text")]))
            continue
        indent = len(line) - len(line.lstrip())
        if last and last[0] == "row" and indent >= len(last[1]):
            last[2].append(line)  # the row's text goes on
        elif indent:
            blocks.append(("verbatim", "", [line]))
        elif last and last[0] == "text" and not last[2][-1].rstrip().endswith(":"):
            last[2].append(line)
        else:
            blocks.append(("text", "", [line]))
    return blocks


def path_pieces(word: str, width: int) -> list[str]:
    """``word`` (a path) in pieces of at most ``width``, cut after a separator where it can be."""
    parts = [p for p in re.split(r"(?<=[/\\])", word) if p]
    pieces: list[str] = []
    for part in parts:
        while len(part) > width:
            pieces.append(part[:width])
            part = part[width:]
        if pieces and len(pieces[-1]) + len(part) <= width:
            pieces[-1] += part
        else:
            pieces.append(part)
    return pieces
