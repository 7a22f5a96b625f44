"""The README's diff and fleet examples are what the commands print for the machines they name
(the test machines in machines.py), at 100 columns; the scan example has the renderer's columns."""

from __future__ import annotations

import re
from pathlib import Path

import machines as m

from envcheck.compare.diff import Side, compare
from envcheck.compare.fleet import read_fleet
from envcheck.facts import to_json
from envcheck.render.diff import render as render_diff
from envcheck.render.fleet import render as render_fleet
from envcheck.verdict import judge

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_diff_example_is_the_real_output():
    a = m.elsewhere(m.linux_with_ld_library_path(), "gpu-node-07", "alice", "2026-11-30T10:00:00+00:00", seed=2)
    b = m.elsewhere(m.linux_clean(), "gpu-node-03", "bob", "2026-12-01T08:30:00+00:00", seed=3)
    text = render_diff(
        compare(Side("gpu-node-07.json", judge(a)), Side("gpu-node-03.json", judge(b))), width=100, color=False
    )
    assert "$ envcheck diff gpu-node-07.json gpu-node-03.json\n" + text + "```" in README


def test_the_fleet_example_is_the_real_output(tmp_path, monkeypatch):
    for number in range(1, 41):
        (tmp_path / f"node-{number}.json").write_text(to_json(m.cluster_node(number)))
    monkeypatch.chdir(tmp_path)
    text = render_fleet(read_fleet(sorted(f"node-{i}.json" for i in range(1, 41))), width=100, color=False)
    assert "$ envcheck fleet node-*.json\n" + text + "```" in README


def test_the_scan_example_has_the_renderers_columns():
    block = README.split("$ envcheck scan\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    assert re.match(
        r"envcheck scan  \d+ environments in [\d.]+ s \(quick: TensorFlow not imported; --full imports it\)$", lines[0]
    )
    assert lines[2].split() == ["environment", "Python", "TF", "GPU", "reached", "first", "broken", "link"]
    assert all(len(line) <= 100 for line in lines)
    assert "/work" not in block and "/root" not in block
