"""fleet and diff on hostile snapshots: digit runs past int()'s limit, --jobs past the work and the
CPUs, two files of one host from different folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import machines as m
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.compare.fleet import hostlist, natural_key, read_fleet
from envcheck.facts import to_dict, to_json

REPO = Path(__file__).resolve().parents[2]
RUN = "9" * 5000  # past int()'s 4,300-digit limit


def write(folder: Path, name: str, facts) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(to_json(facts))
    return path


def hostile(facts, where: str):
    data = to_dict(facts)
    if where == "hostname":
        data["platform"]["hostname"] = f"node-{RUN}"
    elif where == "CUDA_VISIBLE_DEVICES":
        data["env"]["variables"]["CUDA_VISIBLE_DEVICES"] = RUN
    else:
        data["python"]["version"] = f"3.{RUN}.1"
    return data


def envcheck(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.parametrize("where", ["hostname", "CUDA_VISIBLE_DEVICES", "python.version"])
def test_a_5000_digit_run_is_a_value_not_exit_3(tmp_path, where):
    plain = [write(tmp_path, f"n{i}.json", m.elsewhere(m.linux_clean(), f"gpu-{i}", seed=i)) for i in (1, 2)]
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(hostile(m.linux_clean(), where)))
    for args in (
        ["fleet", *map(str, plain), str(odd)],
        ["fleet", "--markdown", *map(str, plain), str(odd)],
        ["diff", str(plain[0]), str(odd)],
    ):
        done = envcheck(*args)
        assert done.returncode in (0, 1), (args[0], done.returncode, done.stderr[-400:])
        assert "Traceback" not in done.stderr
    data = json.loads(envcheck("fleet", "--json", *map(str, plain), str(odd)).stdout)
    if where == "hostname":
        assert f"node-{RUN}" in [n["name"] for n in data["nodes"]]  # JSON keeps it whole


@given(st.lists(st.text(alphabet="ab-0123456789²٣", max_size=30), max_size=8))
@settings(max_examples=examples(200))
def test_natural_order_is_total_and_numeric_without_int(names):
    names = names + [f"n{RUN}", f"n{RUN}0", "n007", "n7", "n10"]
    ordered = sorted(names, key=natural_key)
    assert ordered.index("n7") < ordered.index("n10") < ordered.index(f"n{RUN}") < ordered.index(f"n{RUN}0")
    hostlist(ordered)  # compacts what it can, keeps the rest whole, never raises


def test_hostlist_keeps_a_name_whose_number_is_no_node_number_whole():
    assert hostlist([f"node{RUN}", "node1", "node2"]) == f"node{RUN},node[1-2]"
    assert hostlist(["gpu-01", "gpu-02", "gpu-03"]) == "gpu-[01-03]"


def test_jobs_never_start_more_workers_than_the_work_or_the_cpus(tmp_path, monkeypatch):
    cpus = os.cpu_count() or 1
    started = []
    import concurrent.futures

    real = concurrent.futures.ProcessPoolExecutor

    def counting(max_workers=None, **kwargs):
        started.append(max_workers)
        return real(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counting)
    facts = m.linux_clean()
    files = [str(write(tmp_path, f"n{i}.json", m.elsewhere(facts, f"n{i}", seed=i))) for i in range(4 * 64)]
    read = read_fleet(files, jobs=64)  # 4 chunks of 64 files
    assert len(read.nodes) == 256 and all(w <= min(4, cpus) for w in started)
    read = read_fleet(files, jobs=10**6)
    assert len(read.nodes) == 256 and all(w <= min(4, cpus) for w in started)


def test_two_files_of_one_host_in_different_folders_are_told_apart(tmp_path):
    facts = m.elsewhere(m.linux_clean(), "n1", seed=1)
    a = write(tmp_path / "a", "node.json", facts)
    b = write(tmp_path / "b", "node.json", facts)
    read = read_fleet([str(a), str(b), str(tmp_path / "a" / ".." / "a" / "node.json")])
    assert sorted(n.name for n in read.nodes) == ["n1 (a/node.json)", "n1 (b/node.json)"]  # the same file once
