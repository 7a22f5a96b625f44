"""envcheck fleet: many nodes' snapshots grouped, the odd ones named, bad files refused one by one."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import machines as m
import pytest
from rules import builders as b

from envcheck.compare.fleet import hostlist, read_fleet
from envcheck.errors import FactsError
from envcheck.facts import load_facts, to_dict, to_json
from envcheck.render import SCHEMA_VERSION
from envcheck.render.fleet import render
from envcheck.verdict import judge

REPO = Path(__file__).resolve().parents[2]


def old_driver(facts):
    return b.change(
        facts, {"nvml.driver_version": "470.57.02", "nvml.cuda_driver_version": "11.4", "driver.version": "470.57.02"}
    )


def three_gpus(facts):
    return b.change(facts, {"nvml.gpus": facts.nvml.gpus[:3], "pci.devices": facts.pci.devices[:3]})


def cluster(tmp_path, count=8, odd=None):
    """``count`` nodes of the 4x V100 server, each under its own name; ``odd`` changes some."""
    folder = tmp_path / "snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    odd = odd or {}
    for i in range(1, count + 1):
        facts = m.elsewhere(m.linux_clean(), f"gpu-node-{i:02d}", seed=i, created=f"2026-11-30T10:00:{i:02d}+00:00")
        if i in odd:
            facts = odd[i](facts)
        (folder / f"node-{i}.json").write_text(to_json(facts))
    return folder


def test_the_odd_nodes_are_named_with_what_differs(tmp_path):
    folder = cluster(tmp_path, odd={3: old_driver, 6: three_gpus})
    fleet = read_fleet([str(folder)])
    assert len(fleet.nodes) == 8 and not fleet.refused
    assert fleet.judged == 3  # six alike nodes are one machine to judge
    verdicts = fleet.groups["verdict"]
    assert [len(g.nodes) for g in verdicts] == [6, 1, 1]
    assert verdicts[0].value == "GPU ready (4 GPUs); TensorFlow itself not tested (--quick)"
    driver = fleet.groups["driver"]
    assert [(g.value, g.names) for g in driver] == [
        ("535.129.03", [f"gpu-node-{i:02d}" for i in (1, 2, 4, 5, 6, 7, 8)]),
        ("470.57.02", ["gpu-node-03"]),
    ]
    assert set(fleet.odd) == {"gpu-node-03", "gpu-node-06"}
    odd3 = {o.facet: o for o in fleet.odd["gpu-node-03"]}
    assert (odd3["driver"].value, odd3["driver"].majority, odd3["driver"].majority_count) == (
        "470.57.02",
        "535.129.03",
        7,
    )
    assert odd3["verdict"].value.startswith("broken: Driver 470.57.02 is too old for CUDA 12.2")
    odd6 = {o.facet: o for o in fleet.odd["gpu-node-06"]}
    assert odd6["gpus"].value == "3x Tesla V100-SXM2-32GB" and odd6["gpus"].majority == "4x Tesla V100-SXM2-32GB"
    text = render(fleet, width=100, color=False)
    assert "Odd ones out (2)" in text
    assert (
        "gpu-node-03 Driver 470.57.02 (7 others: 535.129.03); verdict broken: Driver 470.57.02 is too old"
        in " ".join(text.split())
    )
    assert max(len(line) for line in text.splitlines()) <= 100


def test_each_nodes_verdict_is_the_doctors_for_its_file(tmp_path):
    def shadowed(f):
        return m.elsewhere(m.linux_with_ld_library_path(), "gpu-node-04", seed=4)

    folder = cluster(tmp_path, count=5, odd={2: old_driver, 4: shadowed, 5: three_gpus})
    fleet = read_fleet([str(folder)])
    for node in fleet.nodes:
        report = judge(load_facts(node.source))
        assert (node.status, node.line, node.exit_code) == (
            report.verdict.status,
            report.verdict.line,
            report.exit_code,
        ), node.name


def test_gpus_named_by_uuid_keep_nodes_apart(tmp_path):
    # CUDA_VISIBLE_DEVICES names node 1's first GPU by UUID: on node 2, whose GPUs have other UUIDs,
    # it names none. The UUIDs then matter, and the two are judged apart.
    one = m.elsewhere(m.linux_clean(), "n1", seed=1)
    two = m.elsewhere(m.linux_clean(), "n2", seed=2)
    uuid = one.nvml.gpus[0].uuid
    for i, facts in enumerate((one, two), 1):
        (tmp_path / f"n{i}.json").write_text(to_json(b.with_env(facts, CUDA_VISIBLE_DEVICES=uuid)))
    fleet = read_fleet([str(tmp_path / "n1.json"), str(tmp_path / "n2.json")])
    assert fleet.judged == 2
    lines = {n.name: n.line for n in fleet.nodes}
    assert lines["n1"] != lines["n2"]
    for node in fleet.nodes:
        assert node.line == judge(load_facts(node.source)).verdict.line


@pytest.mark.parametrize(
    "field, value",
    [
        ("created", 5),
        ("envcheck_version", None),
        ("platform.hostname", 12),
        ("nvml.seconds", "soon"),
        ("nvml.gpus.0.uuid", 7),
        ("nvml.gpus.0.serial", ["x"]),
        ("tensorflow.import_seconds", "x"),
        ("python.seconds", True),
    ],
)
def test_a_bad_value_in_a_field_the_judgement_skips_is_refused_as_the_doctor_would(tmp_path, field, value):
    facts = m.setup_guide_after()
    good = to_dict(facts)
    (tmp_path / "a-good.json").write_text(json.dumps(good))
    bad = json.loads(json.dumps(good))
    *parents, last = field.split(".")
    node = bad
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[last] = value
    path = tmp_path / "b-bad.json"
    path.write_text(json.dumps(bad))
    fleet = read_fleet([str(tmp_path / "a-good.json"), str(path)])
    with pytest.raises(FactsError) as doctor:
        load_facts(path)
    assert [r.source for r in fleet.refused] == [str(path)]
    assert fleet.refused[0].reason == str(doctor.value).removeprefix(f"{path}: ")


def test_bad_files_are_refused_one_line_each_and_the_good_ones_kept(tmp_path, cli):
    folder = cluster(tmp_path, count=3)
    (folder / "truncated.json").write_text('{"schema_version": 2, "python": {')
    (folder / "other.json").write_text('{"name": "not a snapshot"}')
    (folder / "future.json").write_text(json.dumps({**to_dict(m.linux_clean()), "schema_version": 99}))
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    result = cli("fleet", str(folder), str(empty), str(tmp_path / "missing.json"))
    assert result.code == 2
    errors = result.err.strip().splitlines()
    assert len(errors) == 6 and errors[-1].endswith("5 of 8 files refused (above); the table shows the others")
    for name, reason in (
        ("truncated.json", "not valid JSON"),
        ("other.json", "no integer 'schema_version'"),
        ("future.json", "schema_version 99, newer"),
        ("empty-folder", "a folder with no .json files"),
        ("missing.json", "no such file"),
    ):
        assert any(name in line and reason in line for line in errors), name
    assert "3 nodes from 8 files, 5 refused" in result.out
    data = cli("fleet", str(folder), "--json").json()
    assert (
        data["command"] == "fleet" and data["exit_code"] == 2 and len(data["refused"]) == 3 and len(data["nodes"]) == 3
    )


def test_nothing_readable_is_one_line_and_exit_2(tmp_path, cli):
    (tmp_path / "x.json").write_text("[]")
    result = cli("fleet", str(tmp_path / "x.json"))
    assert result.code == 2
    assert result.err.strip().splitlines()[-1] == "envcheck: error: fleet: no readable snapshot among 1 file"


def test_exit_codes(tmp_path, cli):
    healthy = cluster(tmp_path / "a", count=3)
    assert cli("fleet", str(healthy)).code == 0
    assert cli("fleet", str(healthy), "--require-uniform").code == 0
    broken = cluster(tmp_path / "b", count=3, odd={2: old_driver})
    assert cli("fleet", str(broken)).code == 1  # node 2's doctor finds an error
    differs = cluster(tmp_path / "c", count=3, odd={2: lambda f: b.with_env(f, CUDA_VISIBLE_DEVICES="0,1")})
    assert cli("fleet", str(differs)).code == 0
    assert cli("fleet", str(differs), "--require-uniform").code == 1


def test_markdown_for_a_ticket_redacts_like_the_doctor_and_keeps_node_names(tmp_path, cli):
    folder = cluster(
        tmp_path, count=4, odd={2: lambda f: m.elsewhere(m.linux_with_ld_library_path(), "gpu-node-02", seed=2)}
    )
    text = cli("fleet", str(folder), "--markdown").out
    assert text.startswith("## envcheck fleet: 4 nodes from 4 files; 2 distinct machines judged")
    assert "| 3 | GPU ready (4 GPUs); TensorFlow itself not tested (--quick) | gpu-node-[01,03-04] |" in text
    assert (
        "- **gpu-node-02**: CUDA libraries cudnn 8.0.5 (LD_LIBRARY_PATH) (3 others: cudnn 8.9.4 (pip)); verdict broken: "
        in text
    )
    assert (
        "/home/ml" not in text and "~/venvs/train/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8" in text
    )
    assert "GPU-0" not in text


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_the_table_fits_the_width(tmp_path, width):
    for number in range(1, 41):
        (tmp_path / f"node-{number}.json").write_text(to_json(m.cluster_node(number)))
    text = render(read_fleet([str(tmp_path)]), width=width, color=False)
    assert max(len(line) for line in text.splitlines()) <= width


def test_hostlist_is_slurms_compact_form():
    assert hostlist([f"gpu-node-{i:02d}" for i in range(1, 39)] + ["gpu-node-40"]) == "gpu-node-[01-38,40]"
    assert hostlist(["n1", "n2", "n10", "login"]) == "n[1-2,10],login"
    assert hostlist(["a", "b"]) == "a,b"
    assert hostlist(["n7"]) == "n7"


def test_the_documented_cluster_pattern_end_to_end(tmp_path):
    """What the README tells a cluster to run: one `doctor --json --save-facts node-%n.json` per node
    (srun sets SLURM_NODEID; elsewhere %n is the host name), then `fleet node-*.json`."""
    machines = {0: m.linux_clean(), 1: old_driver(m.linux_clean()), 2: m.linux_clean()}
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runs = []
    for node, facts in machines.items():
        given = tmp_path / f"given-{node}.json"
        given.write_text(
            to_json(
                dataclasses.replace(facts, platform=dataclasses.replace(facts.platform, hostname=f"gpu-node-{node}"))
            )
        )
        runs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "envcheck",
                    "doctor",
                    "--facts",
                    str(given),
                    "--json",
                    "--save-facts",
                    "node-%n.json",
                ],
                cwd=tmp_path,
                env={**env, "SLURM_NODEID": str(node)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    # And this machine for real, outside SLURM: %n is its host name.
    plain = {k: v for k, v in env.items() if k != "SLURM_NODEID"}
    runs.append(
        subprocess.Popen(
            [sys.executable, "-m", "envcheck", "doctor", "--quick", "--json", "--save-facts", "node-%n.json"],
            cwd=tmp_path,
            env=plain,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    reports = (
        tmp_path / "reports"
    )  # the other pattern: each node's --json report captured (kubectl exec, srun --output)
    reports.mkdir()
    for i, run in enumerate(runs):
        out, err = run.communicate(timeout=120)
        assert run.returncode in (0, 1), err
        assert json.loads(out)["command"] == "doctor"
        (reports / f"pod-{i}.json").write_text(out)
    import socket

    from envcheck.filename_fields import _safe

    saved = sorted(p.name for p in tmp_path.glob("node-*.json"))
    assert saved == sorted(["node-0.json", "node-1.json", "node-2.json", f"node-{_safe(socket.gethostname())}.json"])
    fleet = subprocess.run(
        [sys.executable, "-m", "envcheck", "fleet", *sorted(str(p) for p in tmp_path.glob("node-*.json")), "--json"],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(fleet.stdout)
    assert fleet.returncode == 1  # gpu-node-1's old driver is an error finding
    names = {n["name"] for n in data["nodes"]}
    assert {"gpu-node-0", "gpu-node-1", "gpu-node-2"} <= names and len(names) == 4
    assert any(
        o["node"] == "gpu-node-1" and any(d["fact"] == "driver" for d in o["differs_in"]) for o in data["odd_ones_out"]
    )
    from_reports = read_fleet([str(reports)])
    assert not from_reports.refused
    assert sorted((n.name, n.line) for n in from_reports.nodes) == sorted(
        (n["name"], n["verdict"]["line"]) for n in data["nodes"]
    )


def test_worker_processes_read_the_same_fleet(tmp_path):
    from envcheck.compare import fleet as fleet_module

    folder = cluster(tmp_path, count=2 * fleet_module._CHUNK + 3, odd={5: old_driver, 70: three_gpus})
    one = read_fleet([str(folder)], jobs=1)
    two = read_fleet([str(folder)], jobs=2)
    assert [n.to_dict() for n in one.nodes] == [n.to_dict() for n in two.nodes]
    assert one.to_dict()["odd_ones_out"] == two.to_dict()["odd_ones_out"]


@pytest.mark.parametrize("argv", [("fleet", "FOLDER", "--json"), ("diff", "FILE", "FILE", "--json")])
def test_the_json_envelope_is_every_commands(cli, tmp_path, argv):
    from envcheck import __version__

    folder = cluster(tmp_path, count=2)
    file = str(folder / "node-1.json")
    result = cli(*(str(folder) if a == "FOLDER" else file if a == "FILE" else a for a in argv))
    data = json.loads(result.out)
    assert list(data)[:4] == ["schema_version", "envcheck_version", "command", "exit_code"]
    assert data["schema_version"] == SCHEMA_VERSION and data["envcheck_version"] == __version__
    assert data["command"] == argv[0] and data["exit_code"] == result.code
