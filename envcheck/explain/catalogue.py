"""The explain catalogue's patterns: what a pattern of ``explain_patterns.yaml`` (or a --patterns
file) is once loaded, and how its texts are filled in.

A pattern names a message (needles and regexes, matched without regard to case), says what it
means, whether it is harmless, its causes (one, or several ranked with how to tell them apart) and
fix (templates filled from what the regex captured), and the doctor's rule ids. The file is read
and validated by ``catalogue_file`` and ``catalogue_entries``; regexes are checked by ``regexes``
(no unbounded or nested repeats, so no input line can make one backtrack for long); derived
variables come from ``derivers``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from envcheck.errors import UsageError
from envcheck.explain.derivers import DERIVERS, cuda_library_version, cudnn_version_text
from envcheck.explain.regexes import Regex, repeat_problem
from envcheck.findings import Fix
from envcheck.resources import data_file
from envcheck.shell import Command, runs_on

__all__ = ["DERIVERS", "Regex", "cuda_library_version", "cudnn_version_text", "repeat_problem"]

PATTERNS_FILE = "explain_patterns.yaml"
SCHEMA_VERSION = 1

RULE_ID = re.compile(r"^EC-(PY|GPU|DRV|CC|LIB|TF|PLC|ENV|INT)-\d{3}$")
PATTERN_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SHELLS = ("any", "bash", "powershell")
SOURCE_OSES = ("linux", "windows", "macos", "wsl")
SHOWS = ("gpu", "no-gpu")


class PatternsError(UsageError):
    """explain_patterns.yaml (or a --patterns file) is malformed: exit 2 with the file and line."""


def default_path() -> Path:
    return data_file(PATTERNS_FILE)


# --- patterns ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """When a cause, command or fix applies, or ranks first/last: every named variable has one of
    the listed values (compared without case; "+" stands for any non-empty value), and, when
    ``seen`` is given, one of those patterns occurred in the same input."""

    variables: tuple[tuple[str, tuple[str, ...]], ...] = ()
    seen: tuple[str, ...] = ()  # any of these pattern ids occurred in the input
    line: int = 0
    any_of: tuple["Condition", ...] = ()  # instead: one of these holds (``any:`` in the file)

    @property
    def every_seen(self) -> tuple[str, ...]:
        """The pattern ids this condition and its alternatives name."""
        return self.seen + tuple(s for c in self.any_of for s in c.every_seen)

    def holds(self, variables: dict[str, str], seen: frozenset[str] = frozenset()) -> bool:
        if self.any_of:
            return any(c.holds(variables, seen) for c in self.any_of)
        for name, values in self.variables:
            value = variables.get(name, "").lower()
            if value not in values and not ("+" in values and value):
                return False
        return not self.seen or any(s in seen for s in self.seen)


@dataclass(frozen=True)
class CommandTemplate:
    shell: str
    line: str
    when: Optional[Condition] = None


@dataclass(frozen=True)
class FixTemplate:
    text: str
    commands: tuple[CommandTemplate, ...] = ()  # lines may hold {placeholders}
    link: Optional[str] = None
    when: Optional[Condition] = None  # only for one of several alternative fixes


@dataclass(frozen=True)
class CauseTemplate:
    id: str
    text: str
    tell: Optional[FixTemplate] = None  # how to tell this cause from the others: a check to run
    rule_ids: tuple[str, ...] = ()
    fix: Optional[FixTemplate] = None  # when this cause has a fix of its own
    when: Optional[Condition] = None  # the cause only applies when this holds
    first_if: Optional[Condition] = None  # rank it first when the message or the log says so
    last_if: Optional[Condition] = None
    # the loader reasons' causes (explanations.REASON_CAUSES) this cause is a specific case of:
    # where the pattern has it, the reason's generic cause is not added before it
    refines: tuple[str, ...] = ()
    line: int = 0


@dataclass(frozen=True)
class Pattern:
    id: str
    title: str
    regexes: tuple[Regex, ...]
    needles: tuple[str, ...]  # lower case: lines are searched without regard to case
    harmless: bool
    meaning: str
    causes: tuple[CauseTemplate, ...]
    fixes: tuple[FixTemplate, ...]  # the first whose condition holds (the last has none)
    rule_ids: tuple[str, ...]
    sources: tuple[str, ...]
    examples: tuple[str, ...]
    near_misses: tuple[str, ...]
    os: tuple[str, ...] = ()  # where the message is printed; empty: anywhere
    derive: Optional[str] = None
    specialize: Optional[str] = None
    shows: Optional[str] = None  # "gpu" or "no-gpu": what the message says about the machine
    harmless_without_gpu: bool = False  # a notice in a log that shows no NVIDIA GPU
    harmful_with_gpu: bool = False  # a notice that TensorFlow runs on the CPU: a failure where the log shows a GPU
    harmful_if_seen: tuple[str, ...] = ()  # a harmless notice is not, next to one of these
    fallback: bool = False  # tried on a line only when no other pattern explains it
    # a logging system's record (its severity letter and source file decide): the regexes read the
    # line with its log prefixes kept, and only when no other pattern explains it (a fallback)
    record: bool = False
    stack_only: bool = False  # a loader's generic message: explained only in the CUDA stack's frame
    at_end: bool = False  # a report printed once the program ended: also read on the input's last lines
    covered_by: tuple[str, ...] = ()  # not shown when one of these explains the same input
    # a generic line of a tool that serves many programs (dkms builds any kernel module): where the
    # input names its subject (this regex) and that subject is not the stack's, the line is another
    # program's, explained only when the input shows the stack
    subject_elsewhere: Optional[Regex] = None
    line: int = 0  # where the pattern starts in its file

    def uses(self, name: str) -> bool:
        """Whether a command of the pattern's fixes or causes fills ``{name}``."""
        fixes = [*self.fixes, *(f for c in self.causes for f in (c.fix, c.tell) if f is not None)]
        return any("{" + name + "}" in command.line for fix in fixes for command in fix.commands)

    @property
    def cause(self) -> str:
        """The first cause's template (the single cause of a one-cause pattern)."""
        return self.causes[0].text

    @property
    def fix(self) -> FixTemplate:
        return self.fixes[-1]

    def fix_for(self, variables: dict[str, str]) -> FixTemplate:
        return next((f for f in self.fixes if f.when is None or f.when.holds(variables)), self.fixes[-1])

    def match(self, text: str) -> Optional[re.Match[str]]:
        for regex in self.regexes:
            found = regex.search(text)
            if found:
                return found
        return None

    def variables(self, found: re.Match[str]) -> Optional[dict[str, str]]:
        """What the match captured, with what ``derive`` adds; None when the deriver says the
        capture is not what the pattern is about (an unknown status name)."""
        values = {name: (value or "") for name, value in found.groupdict().items()}
        if self.derive:
            derived = DERIVERS[self.derive][0](values)
            if derived is None:
                return None
            values.update(derived)
        return values


class _SafeDict(dict):
    def __missing__(self, key: str) -> str:  # only reachable for a catalogue bug; never crash on it
        return ""


def fill(template: str, variables: dict[str, str]) -> str:
    return template.format_map(_SafeDict(variables))


def fill_fix(fix: FixTemplate, variables: dict[str, str]) -> Fix:
    return Fix(
        text=fill(fix.text, variables),
        commands=tuple(
            Command(fill(c.line, variables), shell=c.shell)
            for c in fix.commands
            if (c.when is None or c.when.holds(variables)) and runs_on(c.shell, c.line, variables.get("log_os"))
        ),
        url=fill(fix.link, variables) if fix.link else None,
    )
