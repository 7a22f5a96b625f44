"""Reading a patterns file: YAML that remembers each key's line (so every mistake is one line
naming the file, the line and the field), its shape checked before anything is built, then every
pattern (``catalogue_entries``) and the cross-references between them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from envcheck.explain.catalogue import SCHEMA_VERSION, Pattern, PatternsError
from envcheck.explain.catalogue_entries import parse_pattern
from envcheck.explain.catalogue_yaml import DuplicateKey, LineLoader, Node, Seq
from envcheck.fsutil import read_user_text

_TOP_KEYS = {"schema_version", "patterns", "anchors"}


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
        data = yaml.load(text, Loader=LineLoader)
    except DuplicateKey as exc:
        raise PatternsError(f"{path}:{exc.line}: key {exc.key!r} given twice") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise PatternsError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, Node):
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
        pattern = parse_pattern(entry, path, eager)
        if pattern.id in seen:
            raise PatternsError(
                f"{path}:{pattern.line}: pattern id {pattern.id!r} already used at line {seen[pattern.id]}"
            )
        seen[pattern.id] = pattern.line
        patterns.append(pattern)
    _check_references(patterns, seen, path)
    return tuple(patterns), _parse_anchors(data, path, patterns)


def _parse_anchors(data: "Node", path: Path, patterns: list[Pattern]) -> tuple[str, ...]:
    raw = data.get("anchors")
    if raw is None:
        return ()
    line = data.key_lines.get("anchors", data.line)
    if not isinstance(raw, list) or not all(isinstance(a, str) and a.strip() for a in raw):
        raise PatternsError(f"{path}:{line}: 'anchors' must be a list of non-empty strings")
    anchors = []
    for index, anchor in enumerate(raw):
        item_line = raw.lines[index] if isinstance(raw, Seq) else line
        if anchor != anchor.lower() or not anchor.isascii():
            raise PatternsError(f"{path}:{item_line}: anchor {anchor!r} must be lower-case ASCII")
        if not any(anchor in n for p in patterns for n in p.needles):
            raise PatternsError(
                f"{path}:{item_line}: anchor {anchor!r} is in no pattern's needles (each anchor costs a pass over the input)"
            )
        anchors.append(anchor)
    return tuple(anchors)


def _check_references(patterns: list[Pattern], seen: dict[str, int], path: Path) -> None:
    """A condition may name other patterns ("seen in the same input"): they have to exist."""
    for pattern in patterns:
        for other in pattern.harmful_if_seen:
            if other not in seen:
                raise PatternsError(
                    f"{path}:{pattern.line}: pattern {pattern.id!r}: 'harmful_if_seen' names {other!r}, which is not a pattern id"
                )
        for cause in pattern.causes:
            for condition in (cause.when, cause.first_if, cause.last_if):
                for other in condition.every_seen if condition else ():
                    if other not in seen:
                        raise PatternsError(
                            f"{path}:{condition.line}: pattern {pattern.id!r}, cause {cause.id!r}: "
                            f"'seen' names {other!r}, which is not a pattern id"
                        )
