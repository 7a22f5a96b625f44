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
    if columns.isdigit() and int(columns) > 0:
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
