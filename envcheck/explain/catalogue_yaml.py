"""YAML for a patterns file: mappings and sequences that remember the line of each key and item,
and a duplicate key refused, so a mistake can name its line. libyaml's loader when present."""

from __future__ import annotations

from typing import Any

import yaml


class Node(dict):
    """A YAML mapping that remembers where it and each of its keys are in the file."""

    line: int = 0
    key_lines: dict[str, int]


class LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when present: 4x faster
    pass


class DuplicateKey(Exception):
    def __init__(self, line: int, key: Any) -> None:
        super().__init__(f"{line}: key {key!r} given twice")
        self.line, self.key = line, key


def _construct_mapping(loader: Any, node: Any) -> Node:
    loader.flatten_mapping(node)
    result = Node()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise DuplicateKey(key_node.start_mark.line + 1, key)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


class Seq(list):
    """A YAML sequence that remembers the line of each item."""

    lines: list[int]


def _construct_sequence(loader: Any, node: Any) -> Seq:
    result = Seq(loader.construct_object(child, deep=True) for child in node.value)
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
