"""How this user runs envcheck: the word every printed ``envcheck ...`` command starts with.

After the README's quick start (``.venv/bin/envcheck doctor``, the venv not activated) a printed
``envcheck plan`` would be "command not found"; so a command is printed with ``envcheck`` when
that resolves to this installation, else with the full path of the script that is running, else
as ``<python> -m envcheck``. Findings keep the plain word (a snapshot is judged the same on any
machine); the renderers that print for this user rewrite it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from functools import cache

from envcheck import shell


@cache
def envcheck_word(shell_name: str = shell.BASH) -> str:
    running = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    on_path = shutil.which("envcheck")
    if on_path and (not running or os.path.realpath(on_path) == running or os.path.basename(running) != "envcheck"):
        if _same_installation(on_path):
            return "envcheck"
    if running and os.path.basename(running) in ("envcheck", "envcheck.exe") and os.path.isfile(running):
        return shell.program(running, shell_name)
    return shell.run(sys.executable, ("-m", "envcheck"), shell_name)


def _same_installation(path: str) -> bool:
    """The envcheck on PATH is this interpreter's (its script sits beside this Python)."""
    here = os.path.dirname(os.path.realpath(sys.executable))
    there = os.path.dirname(os.path.realpath(path))
    return here == there or os.path.dirname(os.path.abspath(sys.executable)) == os.path.dirname(os.path.abspath(path))


_WORD = re.compile(r"(^|\|\s*|;\s*|&&\s*|\{\s*)envcheck(?=\s|$)")


def runnable(line: str, shell_name: str = shell.BASH) -> str:
    """``line`` with each command position's ``envcheck`` written the way this user can run it."""
    word = envcheck_word(shell_name if shell_name in (shell.BASH, shell.POWERSHELL) else shell.BASH)
    if word == "envcheck":
        return line
    return _WORD.sub(lambda m: m.group(1) + word, line)
