"""The explain catalogue: the patterns in ``explain_patterns.yaml``, loaded and validated.

A pattern names a message (needles and regexes, matched without regard to case), says what it
means, whether it is harmless, its causes (one, or several ranked with how to tell them apart) and
fix (templates filled from what the regex captured), and the doctor's rule ids. Loading checks
every field and reports the first mistake as one line naming the file, the line and the field.
Regexes may not contain unbounded or nested repeats, so no input line can make one backtrack for
long (``repeat_problem``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from envcheck.errors import UsageError
from envcheck.explain import regex_guard
from envcheck.explain.context import CONTEXT_NAMES
from envcheck.explain.normalise import normalise_line
from envcheck.explain.parts import PART_NAMES
from envcheck.explain.statuses import STATUS_NAMES
from envcheck.findings import Fix
from envcheck.fsutil import read_user_text
from envcheck.shell import Command

PATTERNS_FILE = "explain_patterns.yaml"
SCHEMA_VERSION = 1

RULE_ID = re.compile(r"^EC-(PY|GPU|DRV|CC|LIB|TF|PLC|ENV|INT)-\d{3}$")
PATTERN_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SHELLS = ("any", "bash", "powershell")
SOURCE_OSES = ("linux", "windows", "macos", "wsl")


class PatternsError(UsageError):
    """explain_patterns.yaml (or a --patterns file) is malformed: exit 2 with the file and line."""


# --- derived variables ---------------------------------------------------------------------------
# A pattern's regex captures what the message says (a file name); a deriver turns it into what a
# fix needs. Each deriver declares the names it provides so templates can be checked when the
# catalogue loads. Some names need the compatibility matrix (which TensorFlow releases load a file
# and what they were built with): those are filled when the explanation is made
# (``explanations.LATE_DERIVERS``), not while scanning, so a scan never reads the matrix.


def cuda_library_version(name: str) -> tuple[str, str]:
    """(family, version digits as written) from a CUDA/cuDNN library file name.

    ``cudart64_100.dll`` gives ("cudart", "10.0"), ``cudart64_110.dll`` ("cudart", "11.0"),
    ``libcudnn.so.8`` ("cudnn", "8"). The digits are what the name says, not a CUDA release:
    cudart64_110.dll serves every CUDA 11.x. What a name means is what the matrix says about the
    builds that load it (``Matrix.library_use``, filled in as ``{cuda_generation}``)."""
    lowered = name.lower()
    windows = re.fullmatch(r"([a-z_]+?)(?:lt)?64_(\d{1,4})(?:_\d{1,2})?\.dll", lowered)
    if windows:
        family, digits = windows.groups()
        family = "cudnn" if family.startswith("cudnn") else family
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
    library = variables.get("library", "")
    family, version = cuda_library_version(library)
    return {
        "family": family,
        "lib_version": version,
        "cuda_version": version if family == "cudart" else "",
        "cudnn_version": version.split(".")[0] if family == "cudnn" else "",
        "library_os": "windows" if library.lower().endswith(".dll") else "linux",
    }


def cudnn_version_text(raw: str) -> tuple[Optional[tuple[int, int, int]], str]:
    """A cuDNN version as TensorFlow prints it, parsed: "8.0.5", or the integer form of TF 1.x
    ("7301" is 7.3.1, "5110" 5.1.10, cuDNN 9's "90100" 9.1.0)."""
    raw = raw.strip()
    if raw.isdigit():
        value = int(raw)
        parts = (
            (value // 10000, (value % 10000) // 100, value % 100)
            if value >= 10000
            else (value // 1000, (value % 1000) // 100, value % 100)
        )
    else:
        numbers = [int(p) for p in re.findall(r"\d+", raw)][:3]
        if not numbers:
            return None, raw
        parts = tuple((numbers + [0, 0])[:3])  # type: ignore[assignment]
    return parts, ".".join(str(p) for p in parts)  # type: ignore[return-value]


def _derive_cudnn_versions(variables: dict[str, str]) -> dict[str, str]:
    loaded, loaded_text = cudnn_version_text(variables.get("loaded", ""))
    compiled, compiled_text = cudnn_version_text(variables.get("compiled", ""))
    relation = ""
    if loaded and compiled:
        if loaded[0] != compiled[0]:
            relation = "other-major"
        elif loaded[:2] < compiled[:2] or (loaded[:2] == compiled[:2] and loaded < compiled):
            relation = "older"
        else:
            relation = "newer-minor"
    return {"loaded_version": loaded_text, "compiled_version": compiled_text, "relation": relation}


def _derive_status(variables: dict[str, str]) -> Optional[dict[str, str]]:
    # Imported here: the status tables are read only when a message names a status.
    from envcheck.explain.statuses import status_variables

    return status_variables(variables)


def _derive_xid(variables: dict[str, str]) -> Optional[dict[str, str]]:
    number = "79" if variables.get("xid_text") else variables.get("xid_number", "")
    named = _derive_status({"xid_number": number})
    if named is None:  # an Xid the catalogue does not list: still the driver's fault record
        named = {"status_name": f"Xid {number}", "status_meaning": "an Xid NVIDIA's catalogue does not list here",
                 "status_value": number, "status_library": "the NVIDIA kernel driver", "status_source": "", "status_enum": "NVIDIA Xid"}  # fmt: skip
    return {"xid": number, **named}


def _derive_needed_version(variables: dict[str, str]) -> dict[str, str]:
    needed = variables.get("needed", "")
    by = variables.get("by", "")
    return {
        "needed_version_family": "C library (glibc)" if needed.startswith("GLIBC_") else "C++ library (libstdc++)",
        "library_file": re.split(r"[/\\]", by)[-1] if by else "a library",
        # the system library that is too old sits in a conda environment (its own libstdc++)
        "in_conda": "yes" if re.search(r"conda|mamba|miniforge", variables.get("lib", "")) else "",
    }


Deriver = Callable[[dict[str, str]], Optional[dict[str, str]]]
# name -> (scan-time function, names it provides, names the explanation fills from the matrix)
DERIVERS: dict[str, tuple[Deriver, tuple[str, ...], tuple[str, ...]]] = {
    "library": (
        _derive_library,
        ("family", "lib_version", "cuda_version", "cudnn_version", "library_os"),
        ("cuda_generation", "releases", "cuda_folder", "newest_cuda", "install_gpu"),
    ),
    "cudnn_versions": (_derive_cudnn_versions, ("loaded_version", "compiled_version", "relation"), ()),
    # an Xid of the kernel driver (NVRM), by number or by its text: its meaning from cuda_status.yaml
    "xid": (
        _derive_xid,
        ("xid", "status_name", "status_meaning", "status_value", "status_library", "status_source", "status_enum"),
        (),
    ),
    "needed_version": (_derive_needed_version, ("needed_version_family", "library_file", "in_conda"), ()),
    # A status of the CUDA stack, by name, number or printed text: its meaning from cuda_status.yaml.
    # The pattern matches only when the status is known (a deriver may answer None: no match).
    "status": (
        _derive_status,
        ("status_name", "status_value", "status_enum", "status_library", "status_meaning", "status_source"),
        (),
    ),
}


# --- patterns ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """When a cause, command or fix applies, or ranks first/last: every named variable has one of
    the listed values (compared without case; "+" stands for any non-empty value), and, when
    ``seen`` is given, one of those patterns occurred in the same input."""

    variables: tuple[tuple[str, tuple[str, ...]], ...] = ()
    seen: tuple[str, ...] = ()  # any of these pattern ids occurred in the input
    line: int = 0

    def holds(self, variables: dict[str, str], seen: frozenset[str] = frozenset()) -> bool:
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
    harmful_if_seen: tuple[str, ...] = ()  # a harmless notice is not, next to one of these
    fallback: bool = False  # tried on a line only when no other pattern explains it
    covered_by: tuple[str, ...] = ()  # not shown when one of these explains the same input
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
            if c.when is None or c.when.holds(variables)
        ),
        url=fill(fix.link, variables) if fix.link else None,
    )


# --- loading and validating the catalogue --------------------------------------------------------


class _Node(dict):
    """A YAML mapping that remembers where it and each of its keys are in the file."""

    line: int = 0
    key_lines: dict[str, int]


class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when present: 4x faster
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

_TOP_KEYS = {"schema_version", "patterns", "anchors"}
_PATTERN_KEYS = {
    "id", "title", "regex", "needles", "harmless", "meaning", "cause", "causes", "fix", "rule_ids",
    "sources", "examples", "near_misses", "os", "derive", "specialize", "shows",
    "harmless_without_gpu", "harmful_if_seen", "fallback", "covered_by",
}  # fmt: skip
_FIX_KEYS = {"text", "commands", "link", "when"}
_CAUSE_KEYS = {"id", "text", "tell", "rule_ids", "fix", "when", "first_if", "last_if"}
_CONDITION_KEYS = {"vars", "seen"}
SHOWS = ("gpu", "no-gpu")


def default_path() -> Path:
    from envcheck.resources import data_file

    return data_file(PATTERNS_FILE)


def read_catalogue(path: Path, eager: bool = True) -> tuple[tuple[Pattern, ...], tuple[str, ...]]:
    """The patterns of a file and its ``anchors`` (see ``parse_catalogue``)."""
    text = read_user_text(path, "a patterns file", PatternsError)
    return parse_catalogue(text, path, eager)


MAX_DEPTH = 16  # no patterns file nests deeper (the bundled one: 6)


def _check_depth(text: str, path: Path) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                raise PatternsError(
                    f"{path}:{line}: nested deeper than {MAX_DEPTH} levels; no patterns file needs that"
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def parse_patterns(text: str, path: Path) -> tuple[Pattern, ...]:
    return parse_catalogue(text, path)[0]


def parse_catalogue(text: str, path: Path, eager: bool = True) -> tuple[tuple[Pattern, ...], tuple[str, ...]]:
    """The patterns and the anchors: lower-case strings that many needles contain. The scanner
    makes one pass over the input per anchor (and per needle that contains none), then checks a
    line's own needles before its regexes, so shared anchors keep a large catalogue fast.

    Every regex is parsed and checked here; ``eager`` also compiles it (the bundled catalogue,
    whose regexes the test suite compiles, leaves that to the first line that needs it)."""
    try:
        if eager:  # a user's file: its shape first, from the event stream (nothing built, no recursion)
            _check_depth(text, path)
        data = yaml.load(text, Loader=_LineLoader)
    except _DuplicateKey as exc:
        raise PatternsError(f"{path}:{exc.line}: key {exc.key!r} given twice") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise PatternsError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, _Node):
        raise PatternsError(f"{path}: expected a mapping with 'schema_version' and 'patterns'")
    unknown = sorted(set(data) - _TOP_KEYS, key=str)
    if unknown:
        raise PatternsError(f"{path}:{data.key_lines.get(unknown[0], data.line)}: unknown top-level key {unknown[0]!r}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PatternsError(f"{path}: schema_version must be {SCHEMA_VERSION}, got {version!r}")
    entries = data.get("patterns")
    if not isinstance(entries, list) or not entries:
        raise PatternsError(f"{path}:{data.key_lines.get('patterns', data.line)}: 'patterns' must be a non-empty list")
    patterns: list[Pattern] = []
    seen: dict[str, int] = {}
    for entry in entries:
        pattern = _parse_pattern(entry, path, eager)
        if pattern.id in seen:
            raise PatternsError(
                f"{path}:{pattern.line}: pattern id {pattern.id!r} already used at line {seen[pattern.id]}"
            )
        seen[pattern.id] = pattern.line
        patterns.append(pattern)
    # A condition may name other patterns ("seen in the same input"): they have to exist.
    for pattern in patterns:
        for other in pattern.harmful_if_seen:
            if other not in seen:
                raise PatternsError(
                    f"{path}:{pattern.line}: pattern {pattern.id!r}: 'harmful_if_seen' names {other!r}, which is not a pattern id"
                )
        for cause in pattern.causes:
            for condition in (cause.when, cause.first_if, cause.last_if):
                for other in condition.seen if condition else ():
                    if other not in seen:
                        raise PatternsError(
                            f"{path}:{condition.line}: pattern {pattern.id!r}, cause {cause.id!r}: "
                            f"'seen' names {other!r}, which is not a pattern id"
                        )
    return tuple(patterns), _parse_anchors(data, path, patterns)


def _parse_anchors(data: "_Node", path: Path, patterns: list[Pattern]) -> tuple[str, ...]:
    raw = data.get("anchors")
    if raw is None:
        return ()
    line = data.key_lines.get("anchors", data.line)
    if not isinstance(raw, list) or not all(isinstance(a, str) and a.strip() for a in raw):
        raise PatternsError(f"{path}:{line}: 'anchors' must be a list of non-empty strings")
    anchors = []
    for index, anchor in enumerate(raw):
        item_line = raw.lines[index] if isinstance(raw, _Seq) else line
        if anchor != anchor.lower() or not anchor.isascii():
            raise PatternsError(f"{path}:{item_line}: anchor {anchor!r} must be lower-case ASCII")
        if not any(anchor in n for p in patterns for n in p.needles):
            raise PatternsError(
                f"{path}:{item_line}: anchor {anchor!r} is in no pattern's needles (each anchor costs a pass over the input)"
            )
        anchors.append(anchor)
    return tuple(anchors)


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

    def flag(self, key: str) -> bool:
        value = self.node.get(key, False)
        if not isinstance(value, bool):
            raise self.error(key, "expected true or false")
        return value

    def rule_ids(self, key: str = "rule_ids") -> tuple[str, ...]:
        rule_ids = self.texts(key, required=False)
        for index, rule_id in enumerate(rule_ids):
            if not RULE_ID.match(rule_id):
                raise self.error(key, f"{rule_id!r} is not a rule id like EC-LIB-001", index)
        return rule_ids


def _parse_pattern(node: Any, path: Path, eager: bool = True) -> Pattern:
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

    regexes = tuple(_compile(entry, source, index, eager) for index, source in enumerate(entry.texts("regex")))
    needles = tuple(n.lower() for n in entry.texts("needles"))
    for index, needle in enumerate(needles):
        if not needle.isascii():
            raise entry.error(
                "needles", f"{needle!r}: needles must be ASCII (they are searched without regard to case)", index
            )
        if normalise_line(needle) != needle.strip() and not needle.strip().startswith(">"):
            raise entry.error(
                "needles",
                f"{needle!r}: write it in the normal form every line is read in: {normalise_line(needle)!r}",
                index,
            )
    derive = entry.text("derive", required=False)
    if derive is not None and derive not in DERIVERS:
        raise entry.error("derive", f"unknown deriver {derive!r} (known: {', '.join(DERIVERS)})")
    specialize = entry.text("specialize", required=False)
    if specialize is not None:
        from envcheck.explain.machine import SPECIALIZERS

        if specialize not in SPECIALIZERS:
            raise entry.error(
                "specialize", f"unknown specializer {specialize!r} (known: {', '.join(sorted(SPECIALIZERS))})"
            )
    os_names = entry.texts("os", required=False)
    for index, os_name in enumerate(os_names):
        if os_name not in SOURCE_OSES:
            raise entry.error("os", f"unknown OS {os_name!r} (one of {', '.join(SOURCE_OSES)})", index)
    rule_ids = entry.rule_ids()
    shows = entry.text("shows", required=False)
    if shows is not None and shows not in SHOWS:
        raise entry.error("shows", f"expected one of {', '.join(SHOWS)}")

    # Placeholders may only name what every regex captures (or the deriver provides).
    captured = set.intersection(*(set(r.groupindex) for r in regexes))
    # a part may be empty (a template fills it with ""); install_gpu is filled from the matrix
    names = set(captured) | set(PART_NAMES) | {"install_gpu"}
    if derive:
        names |= set(DERIVERS[derive][1]) | set(DERIVERS[derive][2])
    # Conditions may test any group of any regex (one a matching regex lacks reads as empty).
    scan_names = set.union(*(set(r.groupindex) for r in regexes)) | (set(DERIVERS[derive][1]) if derive else set())
    title = _template(entry, "title", entry.text("title"), names)
    meaning = _template(entry, "meaning", entry.text("meaning"), names)
    causes = _parse_causes(entry, names, scan_names, pattern_id, rule_ids)
    fixes = _parse_fixes(entry, names, scan_names)
    return Pattern(
        id=pattern_id,
        title=title,
        regexes=regexes,
        needles=needles,
        harmless=harmless,
        meaning=meaning,
        causes=causes,
        fixes=fixes,
        rule_ids=rule_ids,
        sources=entry.texts("sources"),
        examples=entry.texts("examples"),
        near_misses=entry.texts("near_misses"),
        os=os_names,
        derive=derive,
        specialize=specialize,
        shows=shows,
        harmless_without_gpu=entry.flag("harmless_without_gpu"),
        harmful_if_seen=entry.texts("harmful_if_seen", required=False),
        fallback=entry.flag("fallback"),
        covered_by=entry.texts("covered_by", required=False),
        line=node.line,
    )


def _parse_causes(
    entry: _Entry, names: set[str], scan_names: set[str], pattern_id: str, rule_ids: tuple[str, ...]
) -> tuple[CauseTemplate, ...]:
    """``cause: TEXT`` (one cause, whose id is the pattern's) or ``causes:`` (several, ranked)."""
    node = entry.node
    if ("cause" in node) == ("causes" in node):
        raise entry.error(
            "causes" if "causes" in node else None,
            "give either 'cause' (one text) or 'causes' (a list), not both"
            if "cause" in node
            else "missing 'cause' or 'causes'",
        )
    if "cause" in node:
        text = _template(entry, "cause", entry.text("cause"), names)
        return (
            CauseTemplate(id=pattern_id, text=text, rule_ids=rule_ids, line=node.key_lines.get("cause", node.line)),
        )
    raw = node.get("causes")
    if not isinstance(raw, _Seq) or not raw:
        raise entry.error("causes", "expected a non-empty list of causes (each with id, text and tell)")
    causes: list[CauseTemplate] = []
    for index, item in enumerate(raw):
        if not isinstance(item, _Node):
            raise entry.error("causes", "each cause is a mapping with 'id', 'text' and 'tell'", index)
        label = f"{entry.label} cause {item.get('id')!r}" if isinstance(item.get("id"), str) else f"{entry.label} cause"
        cause_entry = _Entry(item, entry.path, label)
        unknown = sorted(set(item) - _CAUSE_KEYS, key=str)
        if unknown:
            raise cause_entry.error(str(unknown[0]), "unknown field")
        cause_id = cause_entry.text("id")
        if not PATTERN_ID.match(cause_id):
            raise cause_entry.error("id", "use lower-case words joined by '-', e.g. 'cuda-not-installed'")
        if any(c.id == cause_id for c in causes):
            raise cause_entry.error("id", f"cause id {cause_id!r} given twice in this pattern")
        text = _template(cause_entry, "text", cause_entry.text("text"), names)
        if "tell" not in item and len(raw) > 1:
            raise cause_entry.error(
                None, "a pattern with several causes needs 'tell' for each: how to tell this cause from the others"
            )
        tell = _parse_fix_node(cause_entry, "tell", item.get("tell"), names, scan_names) if "tell" in item else None
        fix = _parse_fix_node(cause_entry, "fix", item.get("fix"), names, scan_names) if "fix" in item else None
        causes.append(
            CauseTemplate(
                id=cause_id,
                text=text,
                tell=tell,
                rule_ids=cause_entry.rule_ids(),
                fix=fix,
                when=_parse_condition(cause_entry, "when", scan_names),
                first_if=_parse_condition(cause_entry, "first_if", scan_names),
                last_if=_parse_condition(cause_entry, "last_if", scan_names),
                line=item.line,
            )
        )
    if all(c.when is not None for c in causes):
        raise entry.error("causes", "at least one cause must apply without a 'when' condition")
    return tuple(causes)


def _parse_condition(entry: _Entry, key: str, scan_names: set[str]) -> Optional[Condition]:
    node = entry.node.get(key)
    if node is None:
        return None
    if not isinstance(node, _Node) or not node:
        raise entry.error(key, "expected a mapping with 'vars' (name: [values]) and/or 'seen' (pattern ids)")
    unknown = sorted(set(node) - _CONDITION_KEYS, key=str)
    if unknown:
        raise entry.error(key, f"unknown key {unknown[0]!r} (use 'vars' or 'seen')")
    variables: list[tuple[str, tuple[str, ...]]] = []
    raw_vars = node.get("vars") or {}
    if not isinstance(raw_vars, dict):
        raise entry.error(key, "'vars' maps a variable name to a list of values")
    for name, values in raw_vars.items():
        if name not in scan_names and name not in PART_NAMES and name not in STATUS_NAMES and name not in CONTEXT_NAMES:
            known = ", ".join(sorted(scan_names)) or "none"
            raise entry.error(key, f"variable {name!r} is not captured by any regex nor derived (known: {known})")
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            raise entry.error(key, f"'vars' {name!r}: expected a list of strings")
        variables.append((name, tuple(v.lower() for v in values)))
    seen = node.get("seen") or []
    if isinstance(seen, str):
        seen = [seen]
    if not isinstance(seen, list) or not all(isinstance(v, str) and PATTERN_ID.match(v) for v in seen):
        raise entry.error(key, "'seen' is a list of pattern ids")
    return Condition(variables=tuple(variables), seen=tuple(seen), line=entry.node.key_lines.get(key, entry.node.line))


def _parse_fixes(entry: _Entry, names: set[str], scan_names: set[str]) -> tuple[FixTemplate, ...]:
    """``fix:`` is one mapping, or a list of alternatives tried in order (each but the last with a
    'when'): a message printed on two systems gets each system's own fix."""
    raw = entry.node.get("fix")
    if isinstance(raw, _Seq):
        if not raw:
            raise entry.error("fix", "expected a mapping with 'text', or a list of them")
        fixes = []
        for index, item in enumerate(raw):
            fix = _parse_fix_node(entry, "fix", item, names, scan_names, index)
            if (fix.when is None) != (index == len(raw) - 1):
                raise entry.error(
                    "fix",
                    "every alternative fix but the last needs 'when'; the last is the default and has none",
                    index,
                )
            fixes.append(fix)
        return tuple(fixes)
    fix = _parse_fix_node(entry, "fix", raw, names, scan_names)
    if fix.when is not None:
        raise entry.error("fix", "'when' is only for one of several alternative fixes")
    return (fix,)


def _parse_fix_node(
    entry: _Entry, key: str, node: Any, names: set[str], scan_names: set[str], item: Optional[int] = None
) -> FixTemplate:
    if not isinstance(node, _Node):
        raise entry.error(key, "expected a mapping with 'text' (and optionally 'commands', 'link')", item)
    fix_entry = _Entry(node, entry.path, f"{entry.label} {key}")
    unknown = sorted(set(node) - _FIX_KEYS, key=str)
    if unknown:
        raise fix_entry.error(str(unknown[0]), "unknown field")
    text = _template(fix_entry, "text", fix_entry.text("text"), names)
    commands = []
    raw_commands = node.get("commands") or []
    if not isinstance(raw_commands, list):
        raise fix_entry.error("commands", "expected a list of {shell, line} mappings")
    for index, raw in enumerate(raw_commands):
        if not isinstance(raw, _Node) or set(raw) - {"shell", "line", "when"} or not isinstance(raw.get("line"), str):
            raise fix_entry.error(
                "commands", "each command is a mapping with 'line' and optionally 'shell' and 'when'", index
            )
        command_entry = _Entry(raw, entry.path, f"{entry.label} {key} command")
        shell = raw.get("shell", "any")
        if shell not in SHELLS:
            raise command_entry.error("shell", f"shell must be one of {', '.join(SHELLS)}, got {shell!r}")
        line = _template(command_entry, "line", raw["line"], names)
        commands.append(
            CommandTemplate(shell=shell, line=line, when=_parse_condition(command_entry, "when", scan_names))
        )
    link = fix_entry.text("link", required=False)
    if link is not None:
        link = _template(fix_entry, "link", link, names)
    return FixTemplate(
        text=text, commands=tuple(commands), link=link, when=_parse_condition(fix_entry, "when", scan_names)
    )


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


class Regex:
    """A pattern's regex (matched without regard to case): checked when the file loads, compiled
    when first used, so a scan compiles only the regexes of the messages it meets."""

    __slots__ = ("pattern", "groupindex", "clauses", "_compiled")

    def __init__(
        self,
        pattern: str,
        groupindex: dict[str, int],
        compiled: Optional[re.Pattern[str]] = None,
        clauses: tuple[tuple[bytes, ...], ...] = (),
    ) -> None:
        self.pattern = pattern
        self.groupindex = groupindex
        self.clauses = clauses  # every match holds one string of each clause (lower case)
        self._compiled = compiled

    def may_match(self, lowered_line: bytes) -> bool:
        """False when the (lower-cased) line lacks text that every match holds: no need to run it."""
        for clause in self.clauses:
            for literal in clause:
                if literal in lowered_line:
                    break
            else:
                return False
        return True

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, re.IGNORECASE)  # messages change case between releases
        return self._compiled

    def search(self, text: str) -> Optional[re.Match[str]]:
        return self.compiled.search(text)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"


def _compile(entry: _Entry, source: str, index: int, eager: bool) -> Regex:
    nested = regex_guard.nesting_problem(source)
    if nested:
        raise entry.error("regex", f"{source!r}: {nested}", index)
    try:
        parsed = _sre_parse().parse(source, re.IGNORECASE)
        compiled = re.compile(source, re.IGNORECASE) if eager else None
    except re.error as exc:
        raise entry.error("regex", f"{source!r} does not compile: {exc}", index) from None
    literals = _required_literals(parsed)
    # The bundled catalogue's regexes are held to every rule by the test suite; a user's here.
    problem = (regex_guard.parsed_problem(parsed) or _normal_form_problem(source, literals)) if eager else None
    if problem:
        raise entry.error("regex", f"{source!r}: {problem}", index)
    return Regex(source, dict(parsed.state.groupdict), compiled, literals)


def _normal_form_problem(source: str, literals: tuple[tuple[bytes, ...], ...]) -> Optional[str]:
    """Why a regex can never match a normalised line (see ``normalise``), or None: text it must
    match (its literal runs) that the normal form never holds."""
    runs = [run for clause in literals for run in clause]
    for written, why in (
        (b"  ", "two spaces: every run of blanks reads as one space"),
        (b" :", "a space before ':': the normal form has none"),
        (b" ;", "a space before ';': the normal form has none"),
        (b"\t", "a tab: every tab reads as a space"),
    ):
        if any(written in run for run in runs):
            return f"{why}; write the regex against the normal form"
    odd = next((c for c in source if c in "\u2018\u2019\u201c\u201d\u2013\u2014\u00a0"), None)
    if odd is not None:
        return f"{odd!r}: typographic quotes, dashes and spaces read as their ASCII forms"
    return None


def _required_literals(parsed: Any) -> tuple[tuple[bytes, ...], ...]:
    """What every match of a parsed regex contains, as clauses of alternatives: each run of
    literal characters it must match (lower-cased, ASCII only), and for an alternation that must
    match, the first such run of each branch. Used to skip regexes on lines that cannot match."""
    sre = _sre_parse()
    clauses: list[tuple[bytes, ...]] = []

    def runs(items: Any, required: bool) -> list[bytes]:
        """The literal runs an item sequence must match, in order. Alternations inside it add a
        clause only when the sequence itself is required (not one branch of an outer choice)."""
        found: list[bytes] = []
        current: list[int] = []

        def flush() -> None:
            if len(current) >= 3:
                found.append(bytes(current).lower())
            current.clear()

        for op, value in items:
            if op == sre.LITERAL and value < 128:
                current.append(value)
                continue
            flush()
            if op == sre.SUBPATTERN:
                found.extend(runs(value[-1], required))
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and value[0] >= 1:
                found.extend(runs(value[2], required))
            elif op == sre.BRANCH and required:
                firsts = [runs(branch, False) for branch in value[1]]
                if firsts and all(firsts):
                    clauses.append(tuple(sorted({f[0] for f in firsts})))
        flush()
        return found

    clauses.extend((run,) for run in runs(parsed, True))
    return tuple(dict.fromkeys(clauses))


def _sre_parse() -> Any:
    return regex_guard._sre_parse()


def repeat_problem(source: str) -> Optional[str]:
    """Why a regex could backtrack for long (see ``regex_guard``), or None."""
    return regex_guard.repeat_problem(source)
