"""Hostile text in every string field of a snapshot, found by walking the Facts dataclasses (so a
field added to facts.py is covered the day it is added), and the check that a rendered text shows
none of it raw."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

from envcheck.errors import EnvcheckError
from envcheck.facts import Facts, load_facts, to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "facts"

# What an attacker puts in a folder, a host name or a GPU name: the OSC 52 clipboard write of the
# issue, a CSI that clears the screen, an 8-bit CSI, a carriage return that overwrites the line, a
# newline that forges one, bidi overrides and isolates, a zero-width space, a tag character.
PAYLOADS = (
    "k\x1b]52;c;dG91Y2ggUFdOX2NsaXA=\x07",
    "x\x1b[2J\x1b[1;1Hy",
    "a\x9b31mb\x9d0;t\x9c",
    "ok\rFORGED overwritten",
    "one\nFORGED line",
    "txt.\u202eexe\u202c",
    "\u2066hidden\u2069\u200b",
    "tag\U000e0041\U000e0042",
    "del\x7f\x00nul",
    "\ufeffbom\u00adsoft\u2028sep",
)
FORGED = "FORGED"

# An SGR colour sequence: the only escape rich writes itself (with colour on).
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def raw_controls(text: str, colour: bool = False) -> list[str]:
    """Every character in ``text`` that a terminal would obey or not draw, except the newlines
    between lines (and, with ``colour``, rich's own SGR sequences)."""
    if colour:
        text = _SGR.sub("", text)
    return sorted(
        {
            c
            for c in text
            if c != "\n"
            and (
                unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
                or c in "\u034f\u115f\u1160\u3164\uffa0"
                or "\ufe00" <= c <= "\ufe0f"
                or "\U000e0100" <= c <= "\U000e01ef"
            )
        }
    )


# The width every text renderer is asked for here: wide enough that nothing wraps, so a line that
# starts with the payload's forged word got there through the value's own newline or carriage
# return, never through wrapping (a value's word may start a wrapped line at any width: a hostile
# snapshot found that at 100 columns). Wrapping itself is tested by the goldens at 60, 80 and 120.
WIDE = 2000


def forged_lines(text: str) -> list[str]:
    """Lines that start with the payload's forged word: a newline or carriage return went through."""
    return [line for line in re.split(r"[\n\r]", text) if line.lstrip(" -*#>`").startswith(FORGED)]


def assert_shown_safely(text: str, where: str, colour: bool = False) -> None:
    raw = raw_controls(text, colour)
    assert not raw, f"{where} printed raw {[unicodedata.name(c, hex(ord(c))) for c in raw]}"
    assert not forged_lines(text), f"{where} let a newline through: {forged_lines(text)[:2]}"


# --- the walk ---------------------------------------------------------------------------------------


def string_paths(cls: type = Facts, prefix: str = "") -> list[str]:
    """Every string field of the snapshot's schema, as dotted paths ("nvml.gpus[].name")."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, path = _unoptional(hints[f.name]), f"{prefix}{f.name}"
        if tp is str:
            out.append(path)
        elif typing.get_origin(tp) is tuple:
            item = typing.get_args(tp)[0]
            out += string_paths(item, path + "[].") if dataclasses.is_dataclass(item) else [path + "[]"]
        elif typing.get_origin(tp) is dict:
            out.append(path + "{}")
        elif dataclasses.is_dataclass(tp):
            out += string_paths(tp, path + ".")
    return out


def _unoptional(tp: Any) -> Any:
    if typing.get_origin(tp) in (Union, getattr(__import__("types"), "UnionType", Union)):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def poison(obj: Any, text: Callable[[str], str], chosen: Callable[[str], bool], prefix: str = "") -> Any:
    """``obj`` with ``text(path)`` in every string field whose path is ``chosen`` (lists and maps
    that are empty get one hostile entry, a missing part a blank one, so every field of the schema
    can be reached)."""
    hints = typing.get_type_hints(type(obj))
    changes = {}
    for f in dataclasses.fields(obj):
        tp, path, value = _unoptional(hints[f.name]), f"{prefix}{f.name}", getattr(obj, f.name)
        if tp is str:
            if chosen(path):
                changes[f.name] = text(path)
        elif typing.get_origin(tp) is tuple:
            item = typing.get_args(tp)[0]
            if dataclasses.is_dataclass(item):
                items = value or ((_blank(item),) if any(chosen(p) for p in string_paths(item, path + "[].")) else ())
                changes[f.name] = tuple(poison(v, text, chosen, path + "[].") for v in items)
            elif chosen(path + "[]"):
                changes[f.name] = (*value, text(path + "[]"))
        elif typing.get_origin(tp) is dict:
            if chosen(path + "{}"):  # every value it holds, and a key of its own
                changes[f.name] = {**{k: text(path + "{}") for k in value}, text(path + "{}"): text(path + "{}")}
        elif dataclasses.is_dataclass(tp):
            if value is None and any(chosen(p) for p in string_paths(tp, path + ".")):
                value = _blank(tp)  # a part the snapshot lacks (no link or clock facts): given one
            if value is not None:
                changes[f.name] = poison(value, text, chosen, path + ".")
    return dataclasses.replace(obj, **changes)


def _blank(cls: type) -> Any:
    """An instance with every required field at a plain value (strings are then poisoned)."""
    hints = typing.get_type_hints(cls)
    required = {}
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            tp = _unoptional(hints[f.name])
            required[f.name] = {str: "", int: 0, bool: False, float: 0.0}.get(tp, None)
    return cls(**required)


# --- every renderer a snapshot feeds -----------------------------------------------------------------


def renders(facts: Facts, tmp: Path) -> list[tuple[str, str, bool]]:
    """(where, text, colour) for every text and Markdown rendering of this snapshot."""
    from envcheck.compare.diff import Side, compare
    from envcheck.compare.fleet import read_fleet
    from envcheck.matrix import load_matrix
    from envcheck.planner import make_plan
    from envcheck.planner.target import target_from_facts
    from envcheck.render import diff as render_diff
    from envcheck.render import fleet as render_fleet
    from envcheck.render import markdown, terminal
    from envcheck.render import plan as render_plan
    from envcheck.render.json import render as render_json
    from envcheck.verdict import judge

    report = judge(facts)
    out = [
        ("doctor", terminal.render(report, color=False, width=WIDE), False),
        ("doctor -v", terminal.render(report, verbose=True, color=False, width=WIDE), False),
        ("doctor -v in colour", terminal.render(report, verbose=True, color=True, width=WIDE), True),
        ("doctor --markdown", markdown.render(report), False),
        ("doctor --markdown --no-redact", markdown.render(report, redact=False), False),
    ]
    matrix = load_matrix()
    try:
        plan = make_plan(matrix, target_from_facts(facts, matrix, snapshot=True))
    except EnvcheckError:
        pass  # a plan refused as bad input is one line, not this test's concern
    else:
        out.append(("plan --facts", render_plan.render_text(plan), False))
        for shell in ("bash", "powershell"):
            try:
                out.append((f"plan --facts --format {shell}", render_plan.render_script(plan, shell), False))
            except EnvcheckError:
                pass  # the other OS's script is a usage error
    other = judge(load_facts(FIXTURES / "multi_gpu_server.json"))
    diff = compare(Side("a.json", other), Side("b.json", report))
    out.append(("diff", render_diff.render(diff, width=WIDE, color=False), False))
    files = []
    for name, data in (("hostile", to_dict(facts)), ("plain", to_dict(other.facts)), ("plain2", to_dict(other.facts))):
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(data))
        files.append(str(path))
    fleet = read_fleet(files, jobs=1)
    out.append(("fleet", render_fleet.render(fleet, width=WIDE, color=False), False))
    out.append(("fleet --markdown", render_fleet.render_markdown(fleet), False))
    out.append(("scan", _scan_render(json.loads(render_json(report)), facts), False))
    return out


def _scan_render(doctor: dict, facts: Facts) -> str:
    from envcheck.render.scan import render
    from envcheck.scan.discover import KERNEL, Candidate, Kernel
    from envcheck.scan.result import Scan, kernel_findings
    from envcheck.scan.run import OK, Environment, Unusable

    name = facts.platform.hostname or "k"
    kernel = Kernel(name, f"/k/{name}/kernel.json", name, facts.python.executable, facts.python.executable)
    env = Environment(
        interpreter=facts.python.executable or "/x/bin/python",
        prefix=facts.python.prefix,
        version=facts.python.version,
        kind="venv",
        reached=[Candidate(facts.python.executable, KERNEL, name, kernel)],
        env=tuple(facts.env.variables.items()),
        status=OK,
        report=doctor,
    )
    findings = kernel_findings([kernel], [Unusable(Candidate(facts.python.executable, KERNEL, name, kernel), "odd")])
    result = Scan((env,), tuple(findings), False, 1.0, 60.0, 30.0)
    return render(result, home=facts.platform.home or "", verbose=True, width=WIDE, color=False)
