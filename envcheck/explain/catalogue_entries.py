"""One pattern of a patterns file, read field by field: each value checked, templates held to the
names the regexes capture, conditions to the variables that exist, and every mistake reported as
one line naming the file, the line, the pattern and the field."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any, Optional

from envcheck.explain.catalogue import (
    PATTERN_ID,
    RULE_ID,
    SHELLS,
    SHOWS,
    SOURCE_OSES,
    CauseTemplate,
    CommandTemplate,
    Condition,
    FixTemplate,
    Pattern,
    PatternsError,
)
from envcheck.explain.catalogue_yaml import Node, Seq
from envcheck.explain.context import CONTEXT_NAMES
from envcheck.explain.derivers import DERIVERS
from envcheck.explain.normalise import normalise_line
from envcheck.explain.parts import PART_NAMES
from envcheck.explain.regexes import Regex, RegexProblem, compile_regex
from envcheck.explain.statuses import STATUS_NAMES

_PATTERN_KEYS = {
    "id", "title", "regex", "needles", "harmless", "meaning", "cause", "causes", "fix", "rule_ids",
    "sources", "examples", "near_misses", "os", "derive", "specialize", "shows",
    "harmless_without_gpu", "harmful_with_gpu", "harmful_if_seen", "fallback", "record", "covered_by", "stack_only", "at_end",
    "subject_elsewhere",
}  # fmt: skip
_FIX_KEYS = {"text", "commands", "link", "when"}
_CAUSE_KEYS = {"id", "text", "tell", "rule_ids", "fix", "when", "first_if", "last_if", "refines"}
_CONDITION_KEYS = {"vars", "seen", "any"}


class _Entry:
    """Typed access to one pattern's fields, with errors that name file, line, pattern and field."""

    def __init__(self, node: Node, path: Path, label: str) -> None:
        self.node, self.path, self.label = node, path, label

    def error(self, key: Optional[str], message: str, item: Optional[int] = None) -> PatternsError:
        line = self.node.key_lines.get(key, self.node.line) if key else self.node.line
        value = self.node.get(key) if key else None
        if item is not None and isinstance(value, Seq) and item < len(value.lines):
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


def parse_pattern(node: Any, path: Path, eager: bool = True) -> Pattern:
    """One item of ``patterns``, every field checked (see explain_patterns.yaml's header)."""
    if not isinstance(node, Node):
        raise PatternsError(f"{path}: every item of 'patterns' must be a mapping")
    raw_id = node.get("id")
    entry = _Entry(node, path, f"pattern {raw_id!r}" if isinstance(raw_id, str) else "pattern")
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
    derive = entry.text("derive", required=False)
    if derive is not None and derive not in DERIVERS:
        raise entry.error("derive", f"unknown deriver {derive!r} (known: {', '.join(DERIVERS)})")
    names, scan_names = _template_names(regexes, derive)
    rule_ids = entry.rule_ids()
    return Pattern(
        id=pattern_id,
        title=_template(entry, "title", entry.text("title"), names),
        regexes=regexes,
        needles=_needles(entry),
        harmless=harmless,
        meaning=_template(entry, "meaning", entry.text("meaning"), names),
        causes=_parse_causes(entry, names, scan_names, pattern_id, rule_ids),
        fixes=_parse_fixes(entry, names, scan_names),
        rule_ids=rule_ids,
        sources=entry.texts("sources"),
        examples=entry.texts("examples"),
        near_misses=entry.texts("near_misses"),
        os=_os_names(entry),
        derive=derive,
        specialize=_specializer(entry),
        shows=_shows(entry),
        harmless_without_gpu=entry.flag("harmless_without_gpu"),
        harmful_with_gpu=entry.flag("harmful_with_gpu"),
        harmful_if_seen=entry.texts("harmful_if_seen", required=False),
        fallback=entry.flag("fallback") or entry.flag("record"),
        record=entry.flag("record"),
        stack_only=entry.flag("stack_only"),
        at_end=entry.flag("at_end"),
        covered_by=entry.texts("covered_by", required=False),
        subject_elsewhere=_subject_elsewhere(entry, eager),
        line=node.line,
    )


def _template_names(regexes: tuple[Regex, ...], derive: Optional[str]) -> tuple[set[str], set[str]]:
    """(the names templates may fill: what every regex captures, the message's parts, what the
    deriver provides; the names conditions may test: any group of any regex, one a matching regex
    lacks reading as empty)."""
    captured = set.intersection(*(set(r.groupindex) for r in regexes))
    # a part may be empty (a template fills it with ""); install_gpu is filled from the matrix
    names = set(captured) | set(PART_NAMES) | {"install_gpu"}
    if derive:
        names |= set(DERIVERS[derive][1]) | set(DERIVERS[derive][2])
    scan_names = set.union(*(set(r.groupindex) for r in regexes)) | (set(DERIVERS[derive][1]) if derive else set())
    return names, scan_names


def _needles(entry: _Entry) -> tuple[str, ...]:
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
    return needles


def _specializer(entry: _Entry) -> Optional[str]:
    specialize = entry.text("specialize", required=False)
    if specialize is not None:
        # Imported here: machine sits above the catalogue (it explains with the machine's facts).
        from envcheck.explain.machine import SPECIALIZERS

        if specialize not in SPECIALIZERS:
            raise entry.error(
                "specialize", f"unknown specializer {specialize!r} (known: {', '.join(sorted(SPECIALIZERS))})"
            )
    return specialize


def _os_names(entry: _Entry) -> tuple[str, ...]:
    os_names = entry.texts("os", required=False)
    for index, os_name in enumerate(os_names):
        if os_name not in SOURCE_OSES:
            raise entry.error("os", f"unknown OS {os_name!r} (one of {', '.join(SOURCE_OSES)})", index)
    return os_names


def _shows(entry: _Entry) -> Optional[str]:
    shows = entry.text("shows", required=False)
    if shows is not None and shows not in SHOWS:
        raise entry.error("shows", f"expected one of {', '.join(SHOWS)}")
    return shows


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
    if not isinstance(raw, Seq) or not raw:
        raise entry.error("causes", "expected a non-empty list of causes (each with id, text and tell)")
    causes: list[CauseTemplate] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Node):
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
                refines=_refines(cause_entry),
                line=item.line,
            )
        )
    if all(c.when is not None for c in causes):
        raise entry.error("causes", "at least one cause must apply without a 'when' condition")
    return tuple(causes)


def _refines(entry: _Entry) -> tuple[str, ...]:
    """``refines: [cause id, ...]``: the generic causes of the loader's reasons (a wrong
    architecture, a missing dependency) that this cause says more precisely."""
    raw = entry.node.get("refines")
    if raw is None:
        return ()
    values = [raw] if isinstance(raw, str) else raw
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, str) and PATTERN_ID.match(v) for v in values)
    ):
        raise entry.error("refines", "a list of cause ids (the loader reasons' causes this cause is a case of)")
    return tuple(values)


def _parse_condition(entry: _Entry, key: str, scan_names: set[str], node: Any = None) -> Optional[Condition]:
    node = entry.node.get(key) if node is None else node
    if node is None:
        return None
    if not isinstance(node, Node) or not node:
        raise entry.error(key, "expected a mapping with 'vars' (name: [values]) and/or 'seen' (pattern ids), or 'any'")
    unknown = sorted(set(node) - _CONDITION_KEYS, key=str)
    if unknown:
        raise entry.error(key, f"unknown key {unknown[0]!r} (use 'vars' or 'seen', or 'any')")
    if "any" in node:
        # one of several conditions: {any: [{vars: ...}, {vars: ...}]}, nothing else beside it
        alternatives = node.get("any")
        if set(node) != {"any"} or not isinstance(alternatives, list) or len(alternatives) < 2:
            raise entry.error(key, "'any' is a list of two or more conditions, alone in its mapping")
        parsed = tuple(_parse_condition(entry, key, scan_names, item) for item in alternatives)
        if any(c is None or c.any_of for c in parsed):
            raise entry.error(key, "each condition of 'any' is a mapping with 'vars' and/or 'seen'")
        return Condition(any_of=parsed, line=entry.node.key_lines.get(key, entry.node.line))  # type: ignore[arg-type]
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
    if isinstance(raw, Seq):
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
    if not isinstance(node, Node):
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
        if not isinstance(raw, Node) or set(raw) - {"shell", "line", "when"} or not isinstance(raw.get("line"), str):
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


def _subject_elsewhere(entry: _Entry, eager: bool) -> Optional[Regex]:
    source = entry.text("subject_elsewhere", required=False)
    if source is None:
        return None
    try:
        return compile_regex(source, eager)
    except RegexProblem as exc:
        raise entry.error("subject_elsewhere", str(exc)) from None


def _compile(entry: _Entry, source: str, index: int, eager: bool) -> Regex:
    try:
        return compile_regex(source, eager)
    except RegexProblem as exc:
        raise entry.error("regex", str(exc), index) from None
