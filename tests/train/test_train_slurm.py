"""--multi-worker under SLURM: the cluster comes from srun's variables through TensorFlow's
SlurmClusterResolver, no TF_CONFIG written by hand."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from train_helpers import REPO

from envcheck.errors import UsageError
from envcheck.train.strategy import (
    chief_of,
    cluster_source,
    read_tf_config,
    slurm_port_base,
    slurm_tasks,
)


def _step(rank: int, tasks: int = 2, nodes: str = "localhost", per_node: str = "2", ports: str = "") -> dict:
    env = {
        "SLURM_JOB_ID": "4242",
        "SLURM_PROCID": str(rank),
        "SLURM_STEP_NUM_TASKS": str(tasks),
        "SLURM_STEP_NODELIST": nodes,
        "SLURM_STEP_TASKS_PER_NODE": per_node,
    }
    if ports:
        env["SLURM_STEP_RESV_PORTS"] = ports
    return env


def test_tf_config_wins_over_slurm():
    env = {**_step(0), "TF_CONFIG": '{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}}'}
    assert cluster_source(env) == "TF_CONFIG"
    assert read_tf_config(env)["cluster"] == {"worker": ["h:1"]}


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "neither TF_CONFIG nor SLURM's variables"),
        ({"SLURM_JOB_ID": "1", "SLURM_NTASKS": "2"}, "this is a SLURM job but not a job step (SLURM_PROCID"),
        (_step(2), "SLURM_PROCID=2 is not one of the step's 2 tasks"),
        (_step(0, tasks=3), "SLURM_STEP_NUM_TASKS=3 but SLURM_STEP_TASKS_PER_NODE='2' adds up to 2"),
        (_step(0, per_node="two"), "is not a tasks-per-node list"),
        ({**_step(0), "SLURM_PROCID": "x"}, "SLURM_PROCID='x' is not a whole number"),
    ],
)
def test_what_is_missing_or_wrong_is_one_line(env, message):
    with pytest.raises(UsageError, match=None) as info:
        cluster_source(env)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_tasks_per_node_and_reserved_ports_read_as_srun_writes_them():
    assert slurm_tasks(_step(0, tasks=7, nodes="n[1-3],m1", per_node="2(x3),1")) == [2, 2, 2, 1]
    assert slurm_port_base(_step(0, ports="12000-12003")) == 12000
    assert slurm_port_base(_step(0)) == 8888  # the resolver's default


@pytest.mark.slow
def test_the_resolver_lays_out_a_two_node_step_as_srun_runs_it():
    # Four tasks on two nodes: ranks 0-1 on n1, 2-3 on n2, ports from the reserved base by slot.
    configs = [
        read_tf_config(_step(rank, tasks=4, nodes="n[1-2]", per_node="2(x2)", ports="23000-23001")) for rank in range(4)
    ]
    assert configs[0]["cluster"] == {"worker": ["n1:23000", "n1:23001", "n2:23000", "n2:23001"]}
    assert [c["task"]["index"] for c in configs] == [0, 1, 2, 3]
    assert [c["slurm"]["slot"] for c in configs] == [0, 1, 0, 1]
    assert [chief_of(c)[0] for c in configs] == [True, False, False, False]


def _two_free_ports() -> int:
    """A port p with p + 1 free too (the resolver gives a node's tasks consecutive ports)."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two consecutive free ports")


@pytest.mark.slow
def test_two_srun_tasks_on_loopback_train_together_without_tf_config(tmp_path, train_env):
    port = _two_free_ports()
    processes = []
    for rank in range(2):
        env = {**train_env, **_step(rank, ports=f"{port}-{port + 1}"), "SLURM_NODEID": "0", "SLURM_LOCALID": str(rank)}
        env.pop("TF_CONFIG", None)
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "envcheck",
                    "train",
                    "--synthetic",
                    "--no-progress",
                    "--subset",
                    "32",
                    "--val-subset",
                    "8",
                    "--batch-per-replica",
                    "8",
                    "--epochs",
                    "1",
                    "--steps-per-epoch",
                    "2",
                    "--multi-worker",
                    "--output",
                    str(tmp_path / f"out-{rank}"),
                    "--json",
                ],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        results = [(p.wait(timeout=400), *p.communicate()) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    for code, _, err in results:
        assert code == 0, err[-3000:]
    summary = json.loads(results[0][1])
    assert summary["devices"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert summary["devices"]["workers"] == 2 and summary["replicas"] == 2 and summary["global_batch"] == 16
    assert summary["devices"]["is_chief"] and summary["devices"]["worker_index"] == 0
    assert (tmp_path / "out-0" / "summary.json").exists()
    assert results[1][1].strip() == ""  # rank 1 is not the chief: it prints and writes nothing
