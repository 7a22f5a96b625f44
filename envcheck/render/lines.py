"""Line-by-line terminal output for the commands that print tables (scan, diff, fleet): rich Text
wrapped at the width with a hanging indent, cells clipped to fit, commands never wrapped. The
width, colour and console come from the doctor's terminal renderer, so every command follows
``COLUMNS``, ``NO_COLOR`` and ``TERM=dumb`` the same way."""

from __future__ import annotations

from rich.text import Text

from envcheck.invocation import runnable
from envcheck.render.terminal import console_for, print_wrapped, terminal_width, use_color
from envcheck.render.width import path_pieces


class Lines:
    def __init__(self, width: int | None = None, color: bool | None = None) -> None:
        self.color = use_color() if color is None else color
        self.console = console_for(width or terminal_width(), self.color)

    @property
    def width(self) -> int:
        return self.console.width

    def style(self, text: str, style: str) -> Text:
        return Text(text, style=style if self.color else "")

    def line(self, *parts, indent: int = 0, hang: int | None = None) -> None:
        """One logical line, wrapped without breaking words; continuation lines start at ``hang``."""
        print_wrapped(self.console, parts, indent=indent, hang=hang)

    def command(self, line: str, indent: int) -> None:
        """A command to copy: whole, on its own line, written the way this user runs envcheck."""

        text = Text(" " * indent)
        text.append(runnable(line), style="cyan" if self.color else "")
        self.console.print(text, soft_wrap=True, crop=False)

    def blank(self) -> None:
        self.console.print()

    def value(self) -> str:
        return "\n".join(line.rstrip() for line in self.console.file.getvalue().split("\n")).rstrip("\n") + "\n"


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, with "..." when cut."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: max(0, width - 3)] + "..." if width > 3 else text[:width]


def clip_middle(text: str, width: int) -> str:
    """A path cut in the middle ("~/.pyenv/...ons/3.11.7"): its first folder or two and its end
    say the most."""
    if len(text) <= width:
        return text
    if width <= 8:
        return clip_left(text, width)
    keep = width - 3
    separator = "\\" if "\\" in text and "/" not in text else "/"
    head = 0
    for end, char in enumerate(text):
        if char != separator:
            continue
        if end + 1 > keep // 2:
            break
        head = end + 1
        if text[:head].count(separator) >= 2:
            break
    return text[:head] + "..." + text[-(keep - head) :]


def clip_left(text: str, width: int) -> str:
    """A path cut from the left ("...ects/a/.venv/bin/python"): its end says the most."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[len(text) - max(0, width) :]
    return "..." + text[-(width - 3) :]


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``, broken at spaces; a word longer than a line (a path)
    is broken after a ``/`` or ``\\`` where it can be, and only where it cannot, inside a name."""
    width = max(1, width)
    lines: list[str] = []
    current = ""
    for word in text.split():
        pieces = [word] if len(word) <= width else path_pieces(word, width)
        for i, piece in enumerate(pieces):
            joiner = "" if i else " "
            if current and len(current) + len(joiner) + len(piece) <= width:
                current += joiner + piece
            else:
                if current:
                    lines.append(current)
                current = piece
    if current:
        lines.append(current)
    return lines or [""]
