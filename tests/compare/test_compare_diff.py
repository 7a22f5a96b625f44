"""envcheck diff: two real-shaped machines, the differences that explain their verdicts first,
noise never."""

from __future__ import annotations

import json

import machines as m
import pytest

from envcheck.compare.diff import Side, compare
from envcheck.compare.facets import group_of, grouping_for, is_noise
from envcheck.compare.flat import flatten, normalise_log_line
from envcheck.facts import to_json
from envcheck.machine import Machine
from envcheck.render.diff import render
from envcheck.verdict import judge


def diff_of(a, b):
    return compare(Side("A.json", judge(a)), Side("B.json", judge(b)))


def write(tmp_path, name, facts):
    path = tmp_path / name
    path.write_text(to_json(facts))
    return str(path)


def test_the_setup_guides_machine_before_and_after_the_fix():
    d = diff_of(m.setup_guide_before(), m.setup_guide_after())
    assert d.verdicts_differ
    assert d.a.report.verdict.status == "broken" and d.b.report.verdict.status == "gpu-ready"
    # The libraries link broke first on A: its differences come first, and they are the fix itself.
    assert d.explaining_links[0] == "libraries"
    explaining = [x for x in d.explaining if x.link == "libraries"]
    labels = [x.label for x in explaining]
    assert labels[:3] == ["CUDA_PATH", "CUDA_PATH_V10_0", "PATH"]  # the variables the guide has you set, first
    assert "cudart64_100.dll loads from" in labels
    cudart = next(x for x in explaining if x.label == "cudart64_100.dll loads from")
    assert cudart.a is None and cudart.b.startswith(m.V10 + "\\bin\\cudart64_100.dll") and "PATH" in cudart.b
    path = next(x for x in explaining if x.label == "PATH")
    assert set(path.b) - set(path.a) == {m.V10 + "\\bin", m.V10 + "\\libnvvp"}
    # Then TensorFlow, which failed to import because of it, and the placement test it then passed.
    assert [x.link for x in d.explaining].index("tensorflow") > labels.index("PATH")
    assert {"libraries", "tensorflow", "placement"} <= set(d.explaining_links)
    assert not d.others  # nothing else changed on that machine


def test_two_linux_machines_that_differ_only_in_ld_library_path():
    a = m.elsewhere(m.linux_with_ld_library_path(), "gpu-node-07", "alice", "2026-11-30T10:00:00+00:00", seed=2)
    b = m.elsewhere(m.linux_clean(), "gpu-node-03", "bob", "2026-12-01T08:30:00+00:00", seed=3)
    d = diff_of(a, b)
    assert d.a.report.verdict.finding_id == "EC-LIB-004" and d.b.report.verdict.status == "gpu-ready"
    assert d.explaining_links == ("libraries",)
    first = d.differences[0]
    assert (first.label, first.a, first.b) == ("LD_LIBRARY_PATH", (m.OLD_CUDNN,), None)
    winner = next(x for x in d.differences if x.label == "libcudnn.so.8 loads from")
    assert winner.a.startswith(m.OLD_CUDNN) and "8.0.5, LD_LIBRARY_PATH" in winner.a
    assert winner.b == "~/venvs/train/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8 (8.9.4, pip)"
    # Host, user, home folder, GPU UUIDs and serials, times: all different, none shown.
    assert {x.link for x in d.differences} == {"libraries"} and not d.others
    text = render(d, width=100, color=False)
    for noise in ("gpu-node", "alice", "bob", "GPU-0000", "created", "seconds"):
        assert noise not in text.split("Why the verdicts differ")[1], noise


def test_the_same_machine_under_another_name_has_no_differences(tmp_path, cli):
    a = write(tmp_path, "a.json", m.elsewhere(m.linux_clean(), "node-1", "ann", seed=4))
    b = write(tmp_path, "b.json", m.elsewhere(m.linux_clean(), "node-2", "ben", "2027-01-01T00:00:00+00:00", seed=5))
    result = cli("diff", a, b)
    assert result.code == 0, result.out
    assert "No differences" in result.out
    data = cli("diff", a, b, "--json").json()
    assert data["command"] == "diff" and data["exit_code"] == 0 and data["explaining"] == data["other"] == []


def test_same_verdict_lists_the_differences_without_claiming_they_explain_anything():
    server = m.linux_clean()
    newer = m.elsewhere(server, "node-9", "ml", seed=9)
    from rules import builders as b

    newer = b.with_distributions(newer, ("numpy", "1.26.4"))
    d = diff_of(server, newer)
    assert not d.verdicts_differ and not d.explaining and d.explaining_links == ()
    assert [(x.label, x.change, x.b) for x in d.others] == [("package numpy", "added", "1.26.4")]
    assert "The verdicts are the same." in render(d, width=80, color=False)


def test_a_driver_difference_is_the_explaining_one(tmp_path, cli):
    from rules import builders as b

    old = b.change(
        m.linux_clean(),
        {"nvml.driver_version": "470.57.02", "nvml.cuda_driver_version": "11.4", "driver.version": "470.57.02"},
    )
    result = cli("diff", write(tmp_path, "old.json", old), write(tmp_path, "new.json", m.linux_clean()), "--json")
    assert result.code == 1
    data = result.json()
    assert data["explaining_links"] == ["driver"] and data["verdicts_differ"]
    assert [(x["label"], x["a"], x["b"]) for x in data["explaining"]][:2] == [
        ("driver version (NVML)", "470.57.02", "535.129.03"),
        ("kernel module version", "470.57.02", "535.129.03"),
    ]


def test_this_machine_now_against_a_snapshot(tmp_path, cli):
    result = cli("diff", "-", write(tmp_path, "server.json", m.linux_clean()))
    assert result.code == 1
    assert "A: this machine now (--quick)" in result.out.splitlines()[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (("-", "-"), "A and B are both '-'"),
        (("no-such.json", "-"), "no-such.json: no such file"),
        (("FIXTURE", "FIXTURE", "--full"), "--full only applies to '-'"),
        (("", "-"), "got an empty string"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, message):
    fixture = write(tmp_path, "x.json", m.linux_clean())
    result = cli("diff", *(fixture if a == "FIXTURE" else a for a in args))
    assert result.code == 2 and message in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_a_file_that_is_not_a_snapshot_is_one_line(cli, tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text(json.dumps({"hello": 1}))
    result = cli("diff", str(bad), str(bad))
    assert result.code == 2 and "notes.json: not an envcheck facts snapshot" in result.err


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_report_fits_the_width(width):
    text = render(diff_of(m.setup_guide_before(), m.setup_guide_after()), width=width, color=False)
    assert max(len(line) for line in text.splitlines()) <= width


def test_noise_and_links_are_answered_in_one_place():
    grouping = grouping_for(Machine(m.setup_guide_before()), Machine(m.linux_clean()))
    assert grouping.os == "windows"
    for path, link in [
        ("env.variables[LD_LIBRARY_PATH]", "libraries"),
        ("env.variables[CUDA_VISIBLE_DEVICES]", "environment"),
        ("env.variables[VIRTUAL_ENV]", "python"),
        ("env.variables[PATH]", "libraries"),  # Windows: where the DLLs are looked for
        ("nvml.gpus[0].compute_capability", "compute"),
        ("nvml.gpus[0].name", "gpu"),
        ("nvml.driver_version", "driver"),
        ("packages.distributions[tensorflow-gpu].version", "tensorflow"),
        ("packages.distributions[nvidia-cudnn-cu12].version", "libraries"),
        ("packages.distributions[numpy].version", "tensorflow"),  # TensorFlow requires it
        ("packages.distributions[rich].version", "python"),
        ("tensorflow.placement[matmul /GPU:0].device", "placement"),
        ("platform.cpu_flags", "tensorflow"),
        ("platform.distro", "platform"),
    ]:
        assert group_of(path, grouping) == link, path
    linux = grouping_for(Machine(m.linux_clean()))
    assert group_of("env.variables[PATH]", linux) == "python"
    for path in (
        "created",
        "python.seconds",
        "platform.hostname",
        "nvml.gpus[0].uuid",
        "nvml.gpus[1].memory_used_mb",
        "tensorflow.import_seconds",
        "tensorflow.placement[matmul /GPU:0].seconds",
        "nvml.gpus[0].processes[42].pid",
    ):
        assert is_noise(path), path
    assert not is_noise("nvml.driver_version") and not is_noise("env.variables[PATH]")


def test_log_lines_compare_without_their_time_stamps_and_pids():
    assert (
        normalise_log_line("2019-03-01 10:00:00.123456: W tensorflow/x.cc:55] Could not load")
        == "W tensorflow/x.cc:55] Could not load"
    )
    assert (
        normalise_log_line("W0000 00:00:1700000000.123456   12345 cuda_dnn.cc:535] Loaded")
        == "W cuda_dnn.cc:535] Loaded"
    )
    assert normalise_log_line("plain line") == "plain line"
    flat = flatten(m.setup_guide_after())
    assert not any(path.endswith(".seconds") or path == "created" for path in flat)
