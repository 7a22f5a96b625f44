"""How this user runs envcheck, and what they pointed it at: every printed ``envcheck ...``
command is written so that it runs as printed and looks at the same thing.

The word: after the README's quick start (``.venv/bin/envcheck doctor``, the venv not activated) a
printed ``envcheck plan`` would be "command not found"; so a command is printed with ``envcheck``
when that resolves to this installation, else with the full path of the script that is running,
else as ``<python> -m envcheck``.

The target: ``doctor --python ~/proj/.venv/bin/python`` that ends with ``Details: envcheck doctor
-v`` would send the user to another interpreter. A command records the options that chose what it
looked at (``set_target``); a printed follow-up of the same command keeps all of them, one of another
command keeps those that command takes with the same meaning (``--facts``, ``--matrix``, an
interpreter's ``--python``; for ``plan``, whose ``--python`` is a version, that interpreter's version).

Findings keep the plain ``envcheck ...`` (a snapshot is judged the same on any machine); the
renderers that print for this user rewrite it through ``runnable``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from envcheck import shell


@cache
def envcheck_word(shell_name: str = shell.BASH) -> str:
    running = _running_script()
    on_path = shutil.which("envcheck")
    if on_path and (not running or os.path.realpath(on_path) == running or os.path.basename(running) != "envcheck"):
        if _same_installation(on_path):
            return "envcheck"
    if running:
        return shell.program(running, shell_name)
    return shell.run(sys.executable, ("-m", "envcheck"), shell_name)


def _running_script() -> str:
    """The envcheck console script this process runs as, or ""."""
    running = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if running and os.path.basename(running) in ("envcheck", "envcheck.exe") and os.path.isfile(running):
        return running
    return ""


def _same_installation(path: str) -> bool:
    """The envcheck on PATH is this interpreter's (its script sits beside this Python)."""
    here = os.path.dirname(os.path.realpath(sys.executable))
    there = os.path.dirname(os.path.realpath(path))
    return here == there or os.path.dirname(os.path.abspath(sys.executable)) == os.path.dirname(os.path.abspath(path))


# --- the target ------------------------------------------------------------------------------------

# Options that mean the same to every command that takes them.
SHARED_OPTIONS = {
    "--python": ("doctor", "explain"),  # an interpreter to look at
    "--facts": ("doctor", "explain", "plan"),  # a saved snapshot instead of this machine
    "--matrix": ("doctor", "explain", "plan", "matrix"),
}
# Options that each choose the target: a follow-up that sets one of them keeps none of the others.
ALTERNATIVES = ("--python", "--facts")
# plan's --python is a Python version ("3.11"): an interpreter's follow-up plan gets its version.
VERSION_PYTHON = ("plan",)


@dataclass(frozen=True)
class Target:
    """What a command looked at, as the options that chose it (in the order given)."""

    command: str = ""
    options: tuple[tuple[str, str | None], ...] = ()  # (flag, value); value None for a switch
    python_version: str | None = None  # the probed interpreter's version, for plan's --python

    def for_command(self, command: str) -> list[tuple[str, str | None]]:
        """The options a follow-up ``envcheck COMMAND`` keeps."""
        if command == self.command:
            return list(self.options)
        kept = [(flag, value) for flag, value in self.options if command in SHARED_OPTIONS.get(flag, ())]
        interpreter = self.command in SHARED_OPTIONS["--python"] and any(f == "--python" for f, _ in self.options)
        if command in VERSION_PYTHON and interpreter and self.python_version:
            kept.append(("--python", ".".join(self.python_version.split(".")[:2])))
        return kept


_target = Target()


def set_target(command: str, options: list[tuple[str, object]], python_version: str | None = None) -> None:
    """Record what this run looks at: ``options`` as (flag, value), a value of None or False left
    out, True for a switch."""
    global _target
    given = tuple(
        (flag, None if value is True else str(value)) for flag, value in options if value not in (None, False)
    )
    _target = Target(command, given, python_version)


def current_target() -> Target:
    return _target


@contextmanager
def targeting(target: Target | None = None) -> Iterator[None]:
    """Within the block, follow-ups keep ``target`` (nothing by default); the one before is
    restored after it (``cli.main`` runs each command so)."""
    global _target
    saved = _target
    _target = target or Target()
    try:
        yield
    finally:
        _target = saved


# --- printed commands ------------------------------------------------------------------------------

# envcheck where a shell runs it as a command, then its subcommand.
_COMMAND = re.compile(
    r"(?P<lead>^|\|\s*|;\s*|&&\s*|\|\|\s*|\{\s*|\bthen\s+|\bdo\s+)envcheck(?=\s|$)(?P<sub>\s+[a-z]+\b)?"
)
# envcheck where a shell looks it up ("is it installed?").
_LOOKUP = re.compile(r"(?P<lead>\bcommand -v\s+|\bGet-Command\s+)envcheck(?=\s|$)")


def runnable(line: str, shell_name: str = shell.BASH) -> str:
    """``line`` with each ``envcheck`` written the way this user can run it, and each envcheck
    command keeping the options that chose this run's target."""
    script_shell = shell_name if shell_name in (shell.BASH, shell.POWERSHELL) else shell.BASH
    word = envcheck_word(script_shell)

    def command(match: re.Match[str]) -> str:
        sub = match.group("sub") or ""
        return match.group("lead") + word + sub + _options_for(sub.strip(), line, shell_name)

    line = _LOOKUP.sub(lambda m: m.group("lead") + _lookup_word(word, script_shell), line)
    return _COMMAND.sub(command, line)


def _lookup_word(word: str, shell_name: str) -> str:
    """What ``command -v`` / ``Get-Command`` should look for: the script itself, or the Python
    that runs ``-m envcheck``."""
    if word == "envcheck":
        return word
    path = _running_script() or sys.executable
    return shell.quote(path, shell_name)


def _options_for(command: str, line: str, shell_name: str) -> str:
    if not command:
        return ""

    def has(flag: str) -> bool:
        return re.search(rf"(^|\s){re.escape(flag)}(?=[\s=]|$)", line) is not None

    chosen = any(has(flag) for flag in ALTERNATIVES)
    words = []
    for flag, value in _target.for_command(command):
        if has(flag) or (chosen and flag in ALTERNATIVES):
            continue  # the follow-up sets it itself, or chooses its own target
        words.append(flag)
        if value is not None:
            words.append(_quote(value, shell_name))
    return "".join(" " + w for w in words)


def _quote(value: str, shell_name: str) -> str:
    try:
        return shell.quote(value, shell_name)
    except ValueError:  # no form every shell reads alike: the user's shell here is bash's kind
        return shell.quote(value, shell.BASH)
