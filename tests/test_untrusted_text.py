"""Untrusted text never reaches the terminal raw: every string that comes from the machine, a file or
another program is shown with its control and invisible characters escaped (envcheck.printable),
in every text and Markdown renderer; JSON keeps every value exact.

The property test walks the Facts dataclasses, puts hostile text in each string field of real
snapshots, and renders every report a snapshot feeds: the doctor's (text, -v, colour, Markdown),
the plan's (text and both scripts), fleet's (text and Markdown), diff's and scan's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hostile import (
    FORGED,
    PAYLOADS,
    assert_shown_safely,
    forged_lines,
    poison,
    raw_controls,
    renders,
    string_paths,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.facts import Facts, facts_from_dict, load_facts, to_dict
from envcheck.printable import printable, printable_json

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "facts"
SNAPSHOTS = sorted(p.stem for p in FIXTURES.glob("*.json"))
# The snapshot reader refuses an OS it does not know (one line, exit 2): no renderer ever sees one.
CHECKED_BY_THE_READER = {"platform.os"}
FIELDS = [p for p in string_paths() if p not in CHECKED_BY_THE_READER]


def snapshot(name: str) -> Facts:
    return load_facts(FIXTURES / f"{name}.json")


# --- the function itself ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("k\x1b]52;c;dG91Y2g=\x07", "k\\x1b]52;c;dG91Y2g=\\x07"),  # OSC 52: the clipboard
        ("a\x1b[2Jb", "a\\x1b[2Jb"),  # CSI: clear the screen
        ("a\x9b2Jb\x9d0;t\x9c", "a\\x9b2Jb\\x9d0;t\\x9c"),  # 8-bit CSI, OSC, ST
        ("one\ntwo\rthree\tfour", "one\\ntwo\\rthree\\tfour"),
        ("\x00\x7f", "\\x00\\x7f"),
        ("txt.\u202eexe\u202c", "txt.\\u202eexe\\u202c"),  # right-to-left override, pop
        ("\u202a\u202b\u202d \u2066\u2067\u2068\u2069", "\\u202a\\u202b\\u202d \\u2066\\u2067\\u2068\\u2069"),
        ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),  # direction marks
        ("a\u200bb\u200dc\u2060d\ufeff", "a\\u200bb\\u200dc\\u2060d\\ufeff"),  # zero width, BOM
        ("tag\U000e0041", "tag\\U000e0041"),  # tag characters hide ASCII
        ("v\ufe0fs\U000e0100", "v\\ufe0fs\\U000e0100"),  # variation selectors
        ("\u3164\u115f", "\\u3164\\u115f"),  # Hangul fillers draw nothing
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("bad\udcff", "bad\\udcff"),  # an undecodable byte (surrogateescape)
    ],
)
def test_what_a_terminal_obeys_or_hides_is_shown_escaped(raw, shown):
    assert printable(raw) == shown
    assert not raw_controls(printable(raw))


@pytest.mark.parametrize(
    "plain",
    [
        "/usr/local/cuda-12.4/lib64",
        "C:\\Program Files\\NVIDIA",
        "GeForce RTX 4090",
        "Intel® Xeon® Gold",
        "日本語のパス",
        "héllo wörld",
        "emoji 🚀",
        "naïve café",
        "nbsp\u00a0here",
        "",
    ],
)
def test_ordinary_text_is_left_as_it_is(plain):
    assert printable(plain) == plain


@given(st.text())
@settings(max_examples=examples(300))
def test_the_escaped_text_is_one_line_with_nothing_raw(text):
    shown = printable(text)
    assert not raw_controls(shown) and "\n" not in shown


@given(st.text())
@settings(max_examples=examples(300))
def test_json_keeps_every_value_exact_and_nothing_raw(text):
    document = printable_json(json.dumps({"value": text}, ensure_ascii=False))
    assert json.loads(document) == {"value": text}
    assert not raw_controls(document)


# --- every renderer over hostile snapshots -----------------------------------------------------------


def test_every_string_field_of_the_schema_is_walked():
    paths = string_paths()
    for expected in (
        "platform.hostname",
        "python.implementation",
        "nvml.gpus[].name",
        "packages.distributions[].name",
        "tensorflow.placement[].device",
        "env.variables{}",
        "libraries.libraries[].copies[].path",
        "nvml.gpus[].processes[].name",
        "tensorflow.log_lines[]",
        "driver.module_files[]",
    ):
        assert expected in paths
    poisoned = poison(snapshot("multi_gpu_server"), lambda p: "X\x1b" + p, lambda p: True)
    seen = json.dumps(to_dict(poisoned))
    assert all(json.dumps("X\x1b" + p)[1:-1] in seen for p in paths)


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_no_renderer_shows_a_hostile_field_raw(name, tmp_path):
    """Every string field at once, holding every payload, on every real snapshot."""
    facts = poison(snapshot(name), lambda p: " ".join(PAYLOADS), lambda p: p in FIELDS)
    for where, text, colour in renders(facts, tmp_path):
        assert_shown_safely(text, f"{where} ({name})", colour)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(SNAPSHOTS),
    chosen=st.sets(st.sampled_from(FIELDS), min_size=1, max_size=6),
    payload=st.one_of(st.sampled_from(PAYLOADS), st.text(min_size=1, max_size=12).map(lambda t: t + "\nFORGED")),
)
def test_no_renderer_shows_hostile_text_raw_whichever_fields_hold_it(name, chosen, payload, tmp_path):
    """A few fields at a time, so the others keep the snapshot's real values and every path of the
    rules and renderers is reached (a hostile status string alone would cut most of them short)."""
    facts = poison(snapshot(name), lambda p: payload, lambda p: p in chosen)
    facts = facts_from_dict(to_dict(facts))  # what --facts would read back
    for where, text, colour in renders(facts, tmp_path):
        assert_shown_safely(text, f"{where} ({name}, {sorted(chosen)})", colour)


def test_json_reports_keep_the_hostile_values_exactly(tmp_path):
    from envcheck.render.json import render
    from envcheck.verdict import judge

    facts = poison(snapshot("multi_gpu_server"), lambda p: PAYLOADS[0] + "\u202e", lambda p: p == "platform.hostname")
    document = render(judge(facts))
    assert json.loads(document)["facts"]["platform"]["hostname"] == PAYLOADS[0] + "\u202e"
    assert not raw_controls(document) and not forged_lines(document) and FORGED not in document


# --- the other commands that show text from outside ---------------------------------------------------

MINIMAL_MATRIX = Path(__file__).resolve().parent / "fixtures" / "matrix" / "minimal.yaml"
OSC52 = "\\e]52;c;dG91Y2ggUFdOX2NsaXA=\\a"  # as a YAML double-quoted string writes it


def test_matrix_shows_a_hostile_matrix_file_escaped_and_its_json_exact(cli, tmp_path):
    text = MINIMAL_MATRIX.read_text()
    text = text.replace("title: Tested build configurations", f'title: "Tested{OSC52}\\nFORGED line"')
    text = text.replace("sources: [https://example.org/windows-cpu]", f'sources: ["https://x{OSC52}\\u202e"]')
    text = text.replace("{name: GeForce GTX 1060,", f'{{name: "GeForce GTX 1060{OSC52}", aliases: [GTX 1060],')
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(text)
    for args in (("tf", "2.11", "--os", "windows"), ("tf", "2.10"), ("gpu", "GTX", "1060"), ("cuda", "11.2")):
        result = cli("matrix", "--matrix", str(hostile), *args)
        assert result.code == 0, result.err
        assert_shown_safely(result.out, f"matrix {' '.join(args)}")
    assert "\\x1b]52;c;" in cli("matrix", "--matrix", str(hostile), "tf", "2.11", "--os", "windows").out
    data = cli("matrix", "--matrix", str(hostile), "tf", "2.11", "--os", "windows", "--json").json()
    assert data["sources"] == ["https://x\x1b]52;c;dG91Y2ggUFdOX2NsaXA=\x07\u202e"]


def test_validate_shows_a_tensorflow_error_escaped_and_never_as_markup():
    import io

    from rich.console import Console

    from envcheck.render.validate import print_validation
    from envcheck.validation.checks import Check, ValidationReport

    said = "InternalError: [/] [link=https://x]click[/link] \x1b]52;c;dG91Y2g=\x07\nFORGED line \u202e"
    report = ValidationReport(
        level=1, devices=["CPU:0"], checks=[Check(1, "matmul on CPU:0", False, said)], notes=[said]
    )
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=200)
    print_validation(report, console)  # as validate prints it
    assert_shown_safely(out.getvalue(), "validate", colour=True)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert "[/] [link=https://x]click[/link]" in plain  # the error's text, not rich markup


def test_train_names_a_hostile_folder_escaped(tmp_path):
    import io

    from rich.console import Console

    from envcheck.commands.train import format_summary
    from envcheck.render.stages import Stages

    folder = tmp_path / "runs\x1b]52;c;dG91Y2g=\x07\nFORGED"
    summary = {
        "parameters": 1,
        "data": {"source": str(folder / "cifar.tar.gz")},
        "epochs": 1,
        "replicas": 1,
        "devices": {"devices": ["CPU:0"]},
        "final": {"loss": 1.0, "accuracy": 0.5, "val_loss": 1.0, "val_accuracy": 0.5},
        "seconds": 1.0,
        "images_per_second_steady": 1.0,
        "images_per_second_per_replica": 1.0,
    }
    assert_shown_safely(format_summary(summary, folder), "train's summary")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=200)
    with Stages(console=console, enabled=False) as stage:
        stage(f"Unpacking {folder.name}", done=f"Unpacked {folder.name}")
    stages = Stages(console=console, enabled=None)
    stages.plain = True
    stages(f"Reading {folder.name}")
    assert_shown_safely(out.getvalue(), "train's stages")
    assert "\\x1b]52" in out.getvalue()
