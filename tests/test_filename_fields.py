"""doctor --save-facts node-%n.json: one command line for every node of a cluster."""

from __future__ import annotations

import pytest

from envcheck.errors import UsageError
from envcheck.filename_fields import expand


def test_fields_are_the_slurm_node_number_or_the_host_name():
    assert expand("node-%n.json", {"SLURM_NODEID": "12"}, "gpu07") == "node-12.json"
    assert (
        expand("node-%n.json", {}, "gpu07.cluster.example") == "node-gpu07.cluster.example.json"
    )  # pdsh, mpirun, a DaemonSet
    assert expand("%h-%n.json", {"SLURM_NODEID": "3"}, "gpu07") == "gpu07-3.json"
    assert expand("100%%-%h.json", {}, "a b/c") == "100%-a_b_c.json"  # a host name never makes a path
    assert expand("plain.json", {}, "x") == "plain.json"


@pytest.mark.parametrize("pattern", ["node-%q.json", "node-%"])
def test_an_unknown_field_is_one_line(pattern):
    with pytest.raises(UsageError, match=r"--save-facts .*: unknown field %.* \(known: %n"):
        expand(pattern, {}, "h")


def test_the_doctor_writes_the_expanded_name(cli, tmp_path, monkeypatch):
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "facts" / "multi_gpu_server.json"
    monkeypatch.setenv("SLURM_NODEID", "7")
    monkeypatch.chdir(tmp_path)
    result = cli("doctor", "--facts", str(fixture), "--json", "--save-facts", "node-%n.json")
    assert result.code == 0 and (tmp_path / "node-7.json").is_file()
    bad = cli("doctor", "--facts", str(fixture), "--save-facts", "node-%x.json")
    assert bad.code == 2 and "unknown field %x" in bad.err
