"""benchmarks/explain_accuracy.py counts the held-out set the way its docstring says: by kind, with
aliases for new: slugs, near misses, errors called harmless and the platform of the commands.

The judging is checked with stand-in explanations (so the checks do not depend on what today's
catalogue answers), and the command line on small folders; the real set's figures are measured,
never asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from envcheck.explain.explanations import Cause
from envcheck.findings import Fix
from envcheck.shell import Command

ROOT = Path(__file__).resolve().parents[2]


def _benchmark():
    spec = importlib.util.spec_from_file_location("explain_accuracy", ROOT / "benchmarks" / "explain_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _benchmark()


def explanation(eid: str, *cause_ids: str, harmless: bool = False, commands: tuple = ()):
    """A stand-in for envcheck.explain.Explanation with the fields the benchmark reads."""
    causes = tuple(Cause(id=c, text=c) for c in cause_ids)
    return SimpleNamespace(id=eid, harmless=harmless, fix=Fix(text="fix", commands=commands), causes=causes)


class Answers:
    """A catalogue and explain() that answer each message with prepared explanations."""

    def __init__(self, answers: dict[str, tuple]):
        self.answers = answers

    def scan_text(self, text: str) -> str:
        return text

    def explain(self, scanned: str) -> tuple:
        return self.answers.get(scanned, ())


def entry(eid: str, kind: str, cause_id, os=None, harmless=False) -> dict:
    out = {"id": eid, "kind": kind, "message": eid, "cause_id": cause_id, "harmless": harmless}
    if os:
        out["os"] = os
    return out


def test_figures_by_kind_with_an_alias_and_a_near_miss():
    answers = Answers(
        {
            "first": (explanation("p1", "right", "other"),),
            "aliased": (explanation("p2", "other", "renamed"),),
            "numa": (explanation("numa-node-notice", harmless=True),),
            "called-harmless": (explanation("numa-node-notice", harmless=True),),
            "lookalike": (explanation("p3", "x", harmless=True),),
        }
    )
    families = {
        "errors": [
            entry("first", "error", "right"),
            entry("aliased", "error", "new:slug"),
            entry("unknown", "error", "right"),
            entry("called-harmless", "error", "right"),
        ],
        "notices": [entry("numa", "harmless", "numa-node-notice", harmless=True)],
        "near": [entry("lookalike", "near_miss", None), entry("quiet", "near_miss", None)],
    }
    report = bench.measure_kinds(families, {"new:slug": {"renamed"}}, answers, answers.explain)
    o = report["overall"]
    assert (o["errors"], o["errors_recognised"], o["cause_first"], o["cause_given"]) == (4, 3, 1, 2)
    assert o["errors_called_harmless"] == 1 and o["cause_first_pct"] == 25.0 and o["cause_given_pct"] == 50.0
    assert (o["harmless"], o["harmless_right"]) == (1, 1)
    assert (o["near_misses"], o["near_misses_explained"], o["near_misses_acted_on"]) == (2, 1, 0)
    whats = {(m["id"], m["what"]) for m in report["misses"]}
    assert ("unknown", "not recognised") in whats and ("called-harmless", "error called harmless") in whats
    assert ("aliased", "cause given, not first") in whats and ("lookalike", "near miss explained") in whats
    assert report["families"]["errors"]["errors"] == 4 and report["families"]["near"]["near_misses"] == 2


def test_a_new_slug_without_an_alias_is_never_given():
    answers = Answers({"m": (explanation("p", "new:slug"),)})
    report = bench.measure_kinds({"f": [entry("m", "error", "new:slug")]}, {}, answers, answers.explain)
    assert report["overall"]["cause_given"] == 0 and report["overall"]["cause_first"] == 0


def test_the_first_cause_is_that_of_the_first_explanation():
    answers = Answers({"m": (explanation("p1", "a"), explanation("p2", "wanted"))})
    report = bench.measure_kinds({"f": [entry("m", "error", "wanted")]}, {}, answers, answers.explain)
    assert report["overall"]["cause_given"] == 1 and report["overall"]["cause_first"] == 0


PS = Command(line="where.exe cudart64_110.dll", shell="powershell")
BASH_PROC = Command(line="grep avx /proc/cpuinfo", shell="bash")
ANY_PIP = Command(line="python -m pip install numpy<2", shell="any")
ANY_LDCONFIG = Command(line="ldconfig -p", shell="any")
ANY_SMI = Command(line="nvidia-smi", shell="any")
BASH_MAC = Command(line="sysctl -a | grep machdep.cpu", shell="bash")


@pytest.mark.parametrize(
    ("system", "commands", "verdict"),
    [
        ("windows", (PS, ANY_PIP), True),
        ("windows", (PS, BASH_PROC), False),  # a bash twin beside PowerShell is still not for Windows
        ("windows", (ANY_LDCONFIG,), False),
        ("windows", (ANY_SMI,), True),  # nvidia-smi comes with the Windows driver
        ("windows", (), None),
        ("macos", (BASH_MAC, ANY_PIP), True),
        ("macos", (BASH_PROC,), False),
        ("macos", (ANY_SMI,), False),
        ("macos", (PS,), False),
        ("linux", (BASH_PROC,), None),
        (None, (PS,), None),
    ],
)
def test_platform_verdict(system, commands, verdict):
    assert bench.platform_verdict(system, (explanation("p", "c", commands=commands),)) is verdict


def test_commands_of_causes_count_and_harmless_explanations_do_not():
    tell = Cause(id="c", text="c", tell=Fix(text="check", commands=(BASH_PROC,)))
    with_tell = SimpleNamespace(id="p", harmless=False, fix=Fix(text="f", commands=(PS,)), causes=(tell,))
    assert bench.platform_verdict("windows", (with_tell,)) is False
    notice = explanation("n", harmless=True, commands=(BASH_PROC,))
    assert bench.platform_verdict("windows", (notice, explanation("p", "c", commands=(PS,)))) is True


def test_platform_counts_in_the_figures():
    answers = Answers(
        {
            "win-ok": (explanation("p", "c", commands=(PS,)),),
            "mac-bad": (explanation("p", "c", commands=(BASH_PROC,)),),
            "mac-silent": (explanation("p", "c"),),
        }
    )
    families = {
        "f": [
            entry("win-ok", "error", "c", os="windows"),
            entry("mac-bad", "error", "c", os="macos"),
            entry("mac-silent", "error", "c", os="macos"),
        ]
    }
    o = bench.measure_kinds(families, {}, answers, answers.explain)["overall"]
    assert (o["platform_windows"], o["platform_right_windows"], o["platform_right_windows_pct"]) == (1, 1, 100.0)
    assert (o["platform_macos"], o["platform_right_macos"], o["platform_macos_without_commands"]) == (1, 0, 1)


def _write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture
def tiny_sets(tmp_path):
    corpus, held = tmp_path / "corpus", tmp_path / "held"
    corpus.mkdir()
    held.mkdir()
    base = {"source": "https://example.org/1", "cause": "c", "fix": "f"}
    _write(
        corpus,
        "demo.yaml",
        {"messages": [{**base, "id": "a", "message": "Epoch 1/10", "harmless": False, "cause_id": "x"}]},
    )
    _write(corpus, "ordinary.yaml", {"lines": [{"line": "Epoch 3/70", "source": "https://example.org/3"}]})
    messages = [
        {**base, "id": "e", "kind": "error", "message": "Epoch 2/10", "harmless": False, "cause_id": "new:slug"},
        {
            **base,
            "id": "n",
            "kind": "near_miss",
            "message": "ValueError: Shapes (None, 1) and (None, 10)",
            "harmless": False,
            "cause_id": None,
        },
    ]
    _write(held, "family.yaml", {"messages": messages})
    _write(held, "aliases.yaml", {"aliases": {"new:slug": {"cause_ids": ["x"], "reason": "same cause"}}})
    return corpus, held


def test_held_out_alone_on_the_command_line(tiny_sets, capsys):
    _, held = tiny_sets
    assert bench.main(["--json", "--held-out", str(held)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["aliases"] == 1 and list(report["families"]) == ["family"]
    assert (report["overall"]["errors"], report["overall"]["near_misses"]) == (1, 1)
    assert bench.main(["--held-out", str(held)]) == 0
    text = capsys.readouterr().out
    assert "near misses explained (must be 0)" in text and "platform right, windows" in text
    assert "misses, not listed (--misses lists them)" in text and "misses (ids only)" not in text


def test_held_out_misses_listed_only_when_asked(tiny_sets, capsys):
    _, held = tiny_sets
    assert bench.main(["--json", "--held-out", str(held)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "misses" not in report and report["misses_count"] == 1
    assert bench.main(["--json", "--misses", "--held-out", str(held)]) == 0
    listed = json.loads(capsys.readouterr().out)["misses"]
    assert [m["id"] for m in listed] == ["e"]
    assert bench.main(["--misses", "--held-out", str(held)]) == 0
    assert "misses (ids only)" in capsys.readouterr().out


def test_both_sets_side_by_side(tiny_sets, capsys):
    corpus, held = tiny_sets
    assert bench.main(["--json", "--corpus", str(corpus), "--held-out", str(held)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["training"]["overall"]["messages"] == 1 and report["training"]["by_kind"]["overall"]["errors"] == 1
    assert report["held_out"]["overall"]["errors"] == 1
    assert bench.main(["--corpus", str(corpus), "--held-out", str(held)]) == 0
    assert "the two sets side by side" in capsys.readouterr().out


def test_a_second_held_out_set_gets_its_own_column(tiny_sets, tmp_path, capsys):
    corpus, held = tiny_sets
    second = tmp_path / "held2"
    second.mkdir()
    base = {"source": "https://example.org/2", "cause": "c", "fix": "f", "harmless": False}
    messages = [
        {**base, "id": "e1", "kind": "error", "message": "Epoch 4/10", "cause_id": "x"},
        {**base, "id": "e2", "kind": "error", "message": "Epoch 5/10", "cause_id": "new:other"},
    ]
    _write(second, "family.yaml", {"messages": messages})
    _write(second, "aliases.yaml", {"aliases": {}})
    args = ["--corpus", str(corpus), "--held-out", str(held), "--held-out-v2", str(second)]
    assert bench.main(["--json", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    # The two held-out sets are measured apart, never added together.
    assert report["held_out"]["overall"]["errors"] == 1 and report["held_out_v2"]["overall"]["errors"] == 2
    assert "misses" not in report["held_out_v2"] and report["held_out_v2"]["misses_count"] == 2
    assert bench.main(args) == 0
    text = capsys.readouterr().out
    assert "the three sets side by side" in text and "held-out v2" in text
    row = next(line for line in text.splitlines() if line.startswith("messages: errors / harmless / near misses"))
    assert row.rstrip().endswith("1 / 0 / 1       2 / 0 / 0")


def _second_and_third(tmp_path):
    folders = []
    for name, count in (("held2", 2), ("held3", 3)):
        folder = tmp_path / name
        folder.mkdir()
        base = {"source": f"https://example.org/{name}", "cause": "c", "fix": "f", "harmless": False}
        messages = [
            {**base, "id": f"{name}-{i}", "kind": "error", "message": f"Epoch {i}/10", "cause_id": "x"}
            for i in range(count)
        ]
        _write(folder, "family.yaml", {"messages": messages})
        _write(folder, "aliases.yaml", {"aliases": {}})
        folders.append(folder)
    return folders


def test_a_third_held_out_set_gets_its_own_column(tiny_sets, tmp_path, capsys):
    corpus, held = tiny_sets
    second, third = _second_and_third(tmp_path)
    args = ["--corpus", str(corpus), "--held-out", str(held), "--held-out-v2", str(second), "--held-out-v3", str(third)]
    assert bench.main(["--json", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    # Each held-out set is measured apart: 1, 2 and 3 errors, never added together.
    errors = [report[key]["overall"]["errors"] for key in ("held_out", "held_out_v2", "held_out_v3")]
    assert errors == [1, 2, 3] and report["held_out_v3"]["misses_count"] == 3
    assert bench.main(args) == 0
    text = capsys.readouterr().out
    assert "the four sets side by side" in text and "held-out v3" in text
    assert f"the held-out set {third}" in text
    row = next(line for line in text.splitlines() if line.startswith("messages: errors / harmless / near misses"))
    assert row.rstrip().endswith("2 / 0 / 0       3 / 0 / 0")
    # The third set alone, as --held-out DIR, is the same report.
    assert bench.main(["--json", "--held-out", str(third)]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["overall"]["errors"] == 3 and alone["retired"] is False


def test_the_third_set_alone_in_the_side_by_side_report(tiny_sets, tmp_path, capsys):
    corpus, held = tiny_sets
    _, third = _second_and_third(tmp_path)
    args = ["--corpus", str(corpus), "--held-out", str(held), "--held-out-v3", str(third)]
    assert bench.main(["--json", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "held_out_v2" not in report and report["held_out_v3"]["overall"]["errors"] == 3
    assert bench.main(args) == 0
    text = capsys.readouterr().out
    assert "the three sets side by side" in text and "held-out v3" in text and "held-out v2" not in text


def test_the_retired_first_set_is_never_called_held_out(tiny_sets, tmp_path, capsys, monkeypatch):
    corpus, held = tiny_sets
    second, third = _second_and_third(tmp_path)
    # The tiny folder stands for the retired first set.
    monkeypatch.setattr(bench, "DEFAULT_HELD_OUT", held)
    assert bench.main(["--json", "--held-out"]) == 0
    assert json.loads(capsys.readouterr().out)["retired"] is True
    assert bench.main(["--held-out"]) == 0
    text = capsys.readouterr().out
    assert "held-out v1 (retired)" in text and "not held-out figures" in text
    assert "the held-out set" not in text
    args = ["--corpus", str(corpus), "--held-out", "--held-out-v2", str(second), "--held-out-v3", str(third)]
    assert bench.main(args) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.lstrip().startswith("training"))
    assert header.split("training")[1].split() == ["held-out", "v1", "(retired)", "held-out", "v2", "held-out", "v3"]
    assert f"the held-out set {held} " not in text and f"the held-out set {second} " in text


def test_a_live_set_is_not_labelled_retired(tiny_sets, capsys):
    _, held = tiny_sets
    assert bench.main(["--held-out", str(held)]) == 0
    text = capsys.readouterr().out
    assert "retired" not in text and f"the held-out set {held}" in text


def test_without_a_second_set_the_report_has_two_columns(tiny_sets, capsys):
    corpus, held = tiny_sets
    assert bench.main(["--json", "--corpus", str(corpus), "--held-out", str(held)]) == 0
    assert "held_out_v2" not in json.loads(capsys.readouterr().out)
    assert bench.main(["--corpus", str(corpus), "--held-out", str(held)]) == 0
    assert "held-out v2" not in capsys.readouterr().out


def test_the_live_sets_are_measured_only_when_asked(tiny_sets, tmp_path, capsys, monkeypatch):
    # Whoever writes patterns runs the default report; the live held-out sets' figures must not
    # reach them that way, only through an explicit measurement (--live).
    corpus, held = tiny_sets
    second, third = _second_and_third(tmp_path)
    for name, value in (
        ("DEFAULT_CORPUS", corpus),
        ("DEFAULT_HELD_OUT", held),
        ("DEFAULT_HELD_OUT_V2", second),
        ("DEFAULT_HELD_OUT_V3", third),
        ("DEFAULT_HELD_OUT_V4", tmp_path / "no-fourth-set"),
    ):
        monkeypatch.setattr(bench, name, value)
    assert bench.main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "held_out_v3" not in report and "held_out" in report
    # the second set is retired (read by whoever writes patterns): in the default run, as retired
    assert report["held_out_v2"]["retired"] is True
    assert bench.main([]) == 0
    text = capsys.readouterr().out
    assert "held-out v2 (retired)" in text and "held-out v3" not in text
    assert bench.main(["--json", "--live"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["held_out_v2"]["overall"]["errors"] == 2 and report["held_out_v3"]["overall"]["errors"] == 3
    assert "misses" not in report["held_out_v3"]
