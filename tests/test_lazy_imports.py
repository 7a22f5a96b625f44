"""An import inside a function hides an edge of the import graph from a reader, so each one says
why it is there (start-up time: a heavy or optional module, or one only some paths use), in a
comment on its line or above it. One comment covers a block of imports that follow each other."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "envcheck"


def unexplained(source: str) -> list[int]:
    """The first line of each function-level import with no comment on it or above its block."""
    lines = source.splitlines()
    tree = ast.parse(source)
    import_lines: set[int] = set()
    inside: list[ast.stmt] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                import_lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
                if in_function:
                    inside.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    missing = []
    for node in inside:
        own = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if any("#" in lines[n - 1] for n in own):
            continue
        above = node.lineno - 1
        # Up over the block: the imports before this one and the blank lines between their groups.
        while above >= 1 and (above in import_lines or not lines[above - 1].strip()):
            if above in import_lines and "#" in lines[above - 1]:
                break
            above -= 1
        if above >= 1 and lines[above - 1].lstrip().startswith("#"):
            continue
        if above >= 1 and above in import_lines:  # a block led by an import with its own comment
            continue
        missing.append(node.lineno)
    return missing


def test_every_function_level_import_says_why():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line in unexplained(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    assert not found, "imports inside functions without a comment saying why (or move them to the top):\n" + "\n".join(
        found
    )


def test_the_check_catches_what_it_is_for():
    source = """
import os


def bare():
    import json

    return json


def explained():
    # lazy for start-up: yaml is heavy
    import yaml
    from envcheck import shell

    return yaml, shell


def trailing():
    import keras  # TensorFlow

    from envcheck.train import callbacks

    return keras, callbacks


def after_code():
    x = 1
    import re

    return x, re
"""
    assert unexplained(source) == [6, 29]
