"""Every --help at the width every command prints at (COLUMNS, the terminal's, else 100): the
descriptions and epilogs rewrapped, tables under their text, commands and examples whole."""

from __future__ import annotations

import re

import pytest

from envcheck.cli import COMMANDS, build_parser, main
from envcheck.render.width import reflow

HELPS = [[], *([name] for name in COMMANDS), ["matrix", "tf"], ["matrix", "cuda"], ["matrix", "gpu"]]
USAGE_GROUP = re.compile(r"^\s+(\[[^\]]*\]|[A-Z]+ \[[A-Z]+ \.\.\.\])$")  # argparse keeps one option whole


def help_text(argv, width, monkeypatch, capsys) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


def verbatim_lines() -> set[str]:
    """The commands and examples the descriptions and epilogs hold (indented, not table rows)."""
    parser = build_parser()
    texts = [parser.description or "", parser.epilog or ""]
    for action in parser._subparsers._group_actions:
        for sub in action.choices.values():
            texts += [sub.description or "", sub.epilog or ""]
    return {
        line.strip()
        for text in texts
        for line in text.splitlines()
        if line.startswith("  ") and not re.match(r"^ +\S+ {2,}\S", line)
    }


@pytest.mark.parametrize("width", [40, 60, 80, 120])
@pytest.mark.parametrize("argv", HELPS, ids=lambda a: " ".join(a) or "envcheck")
def test_help_fits_the_width(argv, width, monkeypatch, capsys):
    text = help_text(argv, width, monkeypatch, capsys)
    whole = verbatim_lines()
    for line in text.splitlines():
        if len(line) > width:
            assert USAGE_GROUP.match(line) or line.strip() in whole, f"{len(line)} > {width}: {line!r}"


def test_the_plan_description_is_wrapped_not_one_long_line(monkeypatch, capsys):
    text = help_text(["plan"], 100, monkeypatch, capsys)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "Recommends the newest release" in " ".join(text.split())


def test_an_exit_status_table_keeps_its_columns(monkeypatch, capsys):
    text = help_text(["scan"], 60, monkeypatch, capsys)
    rows = text[text.index("exit status:") :].splitlines()[1:]
    assert rows[0].startswith("  0  every environment was checked")
    assert all(re.match(r"^  \d  \S|^     \S", row) for row in rows if row.strip())


def test_reflow_joins_paragraphs_and_keeps_commands():
    text = (
        "A paragraph written at one\nwidth, in two lines:\n  envcheck doctor --json --save-facts node-%n.json\n"
        "exit status:\n  0  a row whose text\n     goes on here\n  1  another"
    )
    assert reflow(text, 80).splitlines() == [
        "A paragraph written at one width, in two lines:",
        "  envcheck doctor --json --save-facts node-%n.json",
        "exit status:",
        "  0  a row whose text goes on here",
        "  1  another",
    ]
    narrow = reflow(text, 20).splitlines()
    assert "  envcheck doctor --json --save-facts node-%n.json" in narrow  # a command stays whole
    assert narrow[narrow.index("exit status:") + 1 :][:3] == ["  0  a row whose", "     text goes on", "     here"]
