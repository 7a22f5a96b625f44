"""How wide the output may be, and plain-text wrapping to it, for every command's text output (no
rich import: `matrix` and `plan` stay fast)."""

from __future__ import annotations

import os
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
