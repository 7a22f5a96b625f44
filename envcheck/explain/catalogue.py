"""The explain catalogue: the patterns in ``explain_patterns.yaml``, loaded and validated.

A pattern names a message (needles and regexes), says what it means, whether it is harmless, its
cause and fix (templates filled from what the regex captured), and the doctor's rule ids. Loading
checks every field and reports the first mistake as one line naming the file, the line and the
field. Regexes may not contain unbounded or nested repeats, so no input line can make one
backtrack for long (``repeat_problem``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import yaml

from envcheck.errors import UsageError
from envcheck.findings import Fix
from envcheck.shell import Command
from envcheck.fsutil import read_user_text

PATTERNS_FILE = "explain_patterns.yaml"
SCHEMA_VERSION = 1
MAX_REPEAT = 1000  # the largest {m,n} a pattern's regex may use

RULE_ID = re.compile(r"^EC-(PY|GPU|DRV|CC|LIB|TF|PLC|ENV|INT)-\d{3}$")
PATTERN_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SHELLS = ("any", "bash", "powershell")
SOURCE_OSES = ("linux", "windows", "macos", "wsl")


class PatternsError(UsageError):
    """explain_patterns.yaml (or a --patterns file) is malformed: exit 2 with the file and line."""


# --- derived variables ---------------------------------------------------------------------------
# A pattern's regex captures what the message says (a file name); a deriver turns it into what a
# fix needs (the CUDA version that file belongs to). Each deriver declares the names it provides
# so templates can be checked when the catalogue loads.


def cuda_library_version(name: str) -> tuple[str, str]:
    """(family, version) from a CUDA/cuDNN library file name as TF asks for it.

    Windows DLLs carry the version in the name: cudart64_100.dll is CUDA 10.0, cudart64_90.dll
    CUDA 9.0, cudart64_110.dll CUDA 11.x, cudart64_12.dll CUDA 12, cudnn64_7.dll cuDNN 7. Linux
    sonames carry it after ".so.": libcudart.so.11.0, libcudnn.so.8. For libraries other than
    cudart the number is that library's own major version (cufft64_10.dll ships with CUDA 11).
    """
    lowered = name.lower()
    windows = re.fullmatch(r"([a-z]+?)(?:lt)?64_(\d{1,4})\.dll", lowered)
    if windows:
        family, digits = windows.groups()
        if len(digits) >= 3:
            version = f"{digits[:-1]}.{digits[-1]}"
        elif len(digits) == 2 and int(digits) >= 70:  # cudart64_75 .. cudart64_92: CUDA 7.5 .. 9.2
            version = f"{digits[0]}.{digits[1]}"
        else:
            version = digits
        return family, version
    linux = re.fullmatch(r"lib([a-z_]+?)(?:lt)?\.so((?:\.\d+)*)", lowered)
    if linux:
        family, suffix = linux.groups()
        family = "cudnn" if family.startswith("cudnn") else family
        return family, suffix.lstrip(".")
    return "", ""


def _derive_library(variables: dict[str, str]) -> dict[str, str]:
    family, version = cuda_library_version(variables.get("library", ""))
    return {
        "family": family,
        "lib_version": version,
        "cuda_version": version if family == "cudart" else "",
        "cudnn_version": version if family == "cudnn" else "",
        "library_os": "windows" if variables.get("library", "").lower().endswith(".dll") else "linux",
    }


Deriver = Callable[[dict[str, str]], dict[str, str]]
DERIVERS: dict[str, tuple[Deriver, tuple[str, ...]]] = {
    "library": (_derive_library, ("family", "lib_version", "cuda_version", "cudnn_version", "library_os")),
}


# --- patterns ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixTemplate:
    text: str
    commands: tuple[tuple[str, str], ...] = ()  # (shell, line), both may hold {placeholders}
    link: Optional[str] = None


@dataclass(frozen=True)
class Pattern:
    id: str
    title: str
    regexes: tuple[re.Pattern[str], ...]
    needles: tuple[str, ...]
    harmless: bool
    meaning: str
    cause: str
    fix: FixTemplate
    rule_ids: tuple[str, ...]
    sources: tuple[str, ...]
    examples: tuple[str, ...]
    near_misses: tuple[str, ...]
    os: tuple[str, ...] = ()  # where the message is printed; empty: anywhere
    derive: Optional[str] = None
    specialize: Optional[str] = None
    line: int = 0  # where the pattern starts in its file

    def match(self, text: str) -> Optional[re.Match[str]]:
        for regex in self.regexes:
            found = regex.search(text)
            if found:
                return found
        return None

    def variables(self, found: re.Match[str]) -> dict[str, str]:
        values = {name: (value or "") for name, value in found.groupdict().items()}
        if self.derive:
            values.update(DERIVERS[self.derive][0](values))
        return values


class _SafeDict(dict):
    def __missing__(self, key: str) -> str:  # only reachable for a catalogue bug; never crash on it
        return ""


def fill(template: str, variables: dict[str, str]) -> str:
    return template.format_map(_SafeDict(variables))


def fill_fix(fix: FixTemplate, variables: dict[str, str]) -> Fix:
    return Fix(
        text=fill(fix.text, variables),
        commands=tuple(Command(fill(line, variables), shell=shell) for shell, line in fix.commands),
        url=fill(fix.link, variables) if fix.link else None,
    )


# --- loading and validating the catalogue --------------------------------------------------------


class _Node(dict):
    """A YAML mapping that remembers where it and each of its keys are in the file."""

    line: int = 0
    key_lines: dict[str, int]


class _LineLoader(yaml.SafeLoader):
    pass


class _DuplicateKey(Exception):
    def __init__(self, line: int, key: Any) -> None:
        super().__init__(f"{line}: key {key!r} given twice")
        self.line, self.key = line, key


def _construct_mapping(loader: Any, node: Any) -> _Node:
    loader.flatten_mapping(node)
    result = _Node()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise _DuplicateKey(key_node.start_mark.line + 1, key)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


class _Seq(list):
    """A YAML sequence that remembers the line of each item."""

    lines: list[int]


def _construct_sequence(loader: Any, node: Any) -> _Seq:
    result = _Seq(loader.construct_object(child, deep=True) for child in node.value)
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)

_PATTERN_KEYS = {
    "id", "title", "regex", "needles", "harmless", "meaning", "cause", "fix", "rule_ids",
    "sources", "examples", "near_misses", "os", "derive", "specialize",
}  # fmt: skip
_FIX_KEYS = {"text", "commands", "link"}


def default_path() -> Path:
    from envcheck.resources import data_file

    return data_file(PATTERNS_FILE)


def read_patterns(path: Path) -> tuple[Pattern, ...]:
    """Read and validate a patterns file; every problem is one PatternsError naming file and line."""
    text = read_user_text(path, "a patterns file", PatternsError)
    return parse_patterns(text, path)


def parse_patterns(text: str, path: Path) -> tuple[Pattern, ...]:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise PatternsError(f"{path}:{exc.line}: key {exc.key!r} given twice") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise PatternsError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, _Node):
        raise PatternsError(f"{path}: expected a mapping with 'schema_version' and 'patterns'")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PatternsError(f"{path}: schema_version must be {SCHEMA_VERSION}, got {version!r}")
    entries = data.get("patterns")
    if not isinstance(entries, list) or not entries:
        raise PatternsError(f"{path}:{data.key_lines.get('patterns', data.line)}: 'patterns' must be a non-empty list")
    patterns: list[Pattern] = []
    seen: dict[str, int] = {}
    for entry in entries:
        pattern = _parse_pattern(entry, path)
        if pattern.id in seen:
            raise PatternsError(f"{path}:{pattern.line}: pattern id {pattern.id!r} already used at line {seen[pattern.id]}")
        seen[pattern.id] = pattern.line
        patterns.append(pattern)
    return tuple(patterns)


class _Entry:
    """Typed access to one pattern's fields, with errors that name file, line, pattern and field."""

    def __init__(self, node: _Node, path: Path, label: str) -> None:
        self.node, self.path, self.label = node, path, label

    def error(self, key: Optional[str], message: str, item: Optional[int] = None) -> PatternsError:
        line = self.node.key_lines.get(key, self.node.line) if key else self.node.line
        value = self.node.get(key) if key else None
        if item is not None and isinstance(value, _Seq) and item < len(value.lines):
            line = value.lines[item]
        what = f"{self.label}, field {key!r}" if key else self.label
        return PatternsError(f"{self.path}:{line}: {what}: {message}")

    def text(self, key: str, required: bool = True) -> Optional[str]:
        value = self.node.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, "expected a non-empty string")
        return value.strip()

    def texts(self, key: str, required: bool = True) -> tuple[str, ...]:
        value = self.node.get(key)
        if value is None and not required:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or (required and not value):
            raise self.error(key, "expected a non-empty list of strings")
        if not all(isinstance(v, str) and v for v in value):
            raise self.error(key, "every item must be a non-empty string")
        return tuple(value)


def _parse_pattern(node: Any, path: Path) -> Pattern:
    if not isinstance(node, _Node):
        raise PatternsError(f"{path}: every item of 'patterns' must be a mapping")
    raw_id = node.get("id")
    label = f"pattern {raw_id!r}" if isinstance(raw_id, str) else "pattern"
    entry = _Entry(node, path, label)
    unknown = sorted(set(node) - _PATTERN_KEYS, key=str)
    if unknown:
        raise entry.error(str(unknown[0]), "unknown field")
    pattern_id = entry.text("id")
    if not PATTERN_ID.match(pattern_id):
        raise entry.error("id", "use lower-case words joined by '-', e.g. 'cuinit-no-device'")
    harmless = node.get("harmless")
    if not isinstance(harmless, bool):
        raise entry.error("harmless", "expected true or false")

    regexes = tuple(_compile(entry, source, index) for index, source in enumerate(entry.texts("regex")))
    needles = entry.texts("needles")
    derive = entry.text("derive", required=False)
    if derive is not None and derive not in DERIVERS:
        raise entry.error("derive", f"unknown deriver {derive!r} (known: {', '.join(DERIVERS)})")
    specialize = entry.text("specialize", required=False)
    if specialize is not None:
        from envcheck.explain.machine import SPECIALIZERS

        if specialize not in SPECIALIZERS:
            raise entry.error("specialize", f"unknown specializer {specialize!r} (known: {', '.join(sorted(SPECIALIZERS))})")
    os_names = entry.texts("os", required=False)
    for index, os_name in enumerate(os_names):
        if os_name not in SOURCE_OSES:
            raise entry.error("os", f"unknown OS {os_name!r} (one of {', '.join(SOURCE_OSES)})", index)
    rule_ids = entry.texts("rule_ids", required=False)
    for index, rule_id in enumerate(rule_ids):
        if not RULE_ID.match(rule_id):
            raise entry.error("rule_ids", f"{rule_id!r} is not a rule id like EC-LIB-001", index)

    # Placeholders may only name what every regex captures (or the deriver provides).
    names = set.intersection(*(set(r.groupindex) for r in regexes))
    if derive:
        names |= set(DERIVERS[derive][1])
    title = _template(entry, "title", entry.text("title"), names)
    meaning = _template(entry, "meaning", entry.text("meaning"), names)
    cause = _template(entry, "cause", entry.text("cause"), names)
    fix = _parse_fix(entry, names)
    return Pattern(
        id=pattern_id,
        title=title,
        regexes=regexes,
        needles=needles,
        harmless=harmless,
        meaning=meaning,
        cause=cause,
        fix=fix,
        rule_ids=rule_ids,
        sources=entry.texts("sources"),
        examples=entry.texts("examples"),
        near_misses=entry.texts("near_misses"),
        os=os_names,
        derive=derive,
        specialize=specialize,
        line=node.line,
    )


def _parse_fix(entry: _Entry, names: set[str]) -> FixTemplate:
    node = entry.node.get("fix")
    if not isinstance(node, _Node):
        raise entry.error("fix", "expected a mapping with 'text' (and optionally 'commands', 'link')")
    fix_entry = _Entry(node, entry.path, f"{entry.label} fix")
    unknown = sorted(set(node) - _FIX_KEYS, key=str)
    if unknown:
        raise fix_entry.error(str(unknown[0]), "unknown field")
    text = _template(fix_entry, "text", fix_entry.text("text"), names)
    commands = []
    raw_commands = node.get("commands") or []
    if not isinstance(raw_commands, list):
        raise fix_entry.error("commands", "expected a list of {shell, line} mappings")
    for index, raw in enumerate(raw_commands):
        if not isinstance(raw, _Node) or set(raw) - {"shell", "line"} or not isinstance(raw.get("line"), str):
            raise fix_entry.error("commands", "each command is a mapping with 'line' and optionally 'shell'", index)
        command_entry = _Entry(raw, entry.path, f"{entry.label} fix command")
        shell = raw.get("shell", "any")
        if shell not in SHELLS:
            raise command_entry.error("shell", f"shell must be one of {', '.join(SHELLS)}, got {shell!r}")
        commands.append((shell, _template(command_entry, "line", raw["line"], names)))
    link = fix_entry.text("link", required=False)
    if link is not None:
        link = _template(fix_entry, "link", link, names)
    return FixTemplate(text=text, commands=tuple(commands), link=link)


def _template(entry: _Entry, key: str, text: str, names: set[str]) -> str:
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise entry.error(key, f"bad placeholder ({exc}); write a literal brace as {{{{ or }}}}") from None
    for name in fields:
        if not name.isidentifier():
            raise entry.error(key, f"placeholder {{{name}}} must be a plain name")
        if name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise entry.error(key, f"placeholder {{{name}}} is not captured by every regex (captured: {known})")
    return text


def _compile(entry: _Entry, source: str, index: int) -> re.Pattern[str]:
    try:
        compiled = re.compile(source)
    except re.error as exc:
        raise entry.error("regex", f"{source!r} does not compile: {exc}", index) from None
    problem = repeat_problem(source)
    if problem:
        raise entry.error("regex", f"{source!r}: {problem}", index)
    return compiled


def repeat_problem(source: str) -> Optional[str]:
    """Why a regex could backtrack for long (an unbounded or a nested repeat), or None."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]

    repeats = (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT)
    unbounded = sre_parse.MAXREPEAT

    def walk(items: Any, inside_repeat: bool) -> Optional[str]:
        for op, value in items:
            if op in repeats:
                low, high, sub = value
                if high == unbounded or high > MAX_REPEAT:
                    return f"unbounded repeat; write {{0,N}} with N <= {MAX_REPEAT} instead of * or +"
                if inside_repeat and high > 1:
                    return "nested repeat (a repeated group containing a repeat) can backtrack for long"
                problem = walk(sub, inside_repeat or high > 1)
            elif op == sre_parse.SUBPATTERN:
                problem = walk(value[-1], inside_repeat)
            elif op == sre_parse.BRANCH:
                problem = next((p for p in (walk(b, inside_repeat) for b in value[1]) if p), None)
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                problem = walk(value[1], inside_repeat)
            else:
                problem = None
            if problem:
                return problem
        return None

    return walk(sre_parse.parse(source), False)
