"""--multi-worker's cluster checked before TensorFlow sees it: every malformed TF_CONFIG or SLURM
step is one line naming the variable, exit 2; what passes the checks is a cluster TensorFlow's own
resolvers take; a worker whose peers never come gives up after a bounded, stated wait."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from train_helpers import REPO

from envcheck.errors import UsageError
from envcheck.train.strategy import chief_of, cluster_source, read_tf_config

DIGITS = "9" * 5000


def tf_config(cluster, task) -> dict:
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})}


def step(rank="0", tasks="2", nodes="n1", per_node="2", **more) -> dict:
    env = {
        "SLURM_JOB_ID": "7",
        "SLURM_PROCID": rank,
        "SLURM_STEP_NUM_TASKS": tasks,
        "SLURM_STEP_NODELIST": nodes,
        "SLURM_STEP_TASKS_PER_NODE": per_node,
    }
    env.update(more)
    return env


TWO = ["h1:2222", "h2:2222"]
CASES = [
    ({"TF_CONFIG": "[" * 60_000 + "]" * 60_000}, "TF_CONFIG is nested too deeply"),
    (
        {"TF_CONFIG": '{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": Infinity}}'},
        "TF_CONFIG's task 'index' must be a whole number, got Infinity",
    ),
    (
        tf_config({"worker": TWO}, {"type": "worker", "index": 1.5}),
        "'index' must be a whole number, got a number (1.5)",
    ),
    (
        tf_config({"worker": TWO}, {"type": "worker", "index": True}),
        "'index' must be a whole number, got true or false",
    ),
    (
        tf_config({"worker": TWO}, {"type": "worker", "index": -1}),
        "TF_CONFIG's task is worker -1, but the cluster has 2 workers",
    ),
    (
        {"TF_CONFIG": '{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": ' + DIGITS + "}}"},
        "'index' must be a whole number, got a number of 5,000 digits",
    ),
    (tf_config({"worker": "h1:2222,h2:2222"}, {"type": "worker", "index": 0}), "cluster['worker'] must be a list"),
    (tf_config({"chief": 5, "worker": TWO}, {"type": "worker", "index": 0}), "cluster['chief'] must be a list"),
    (
        tf_config({"chief": None, "worker": TWO}, {"type": "worker", "index": 0}),
        "cluster['chief'] must be a list of \"host:port\" addresses, got null",
    ),
    (
        tf_config({"chief": ["c:1", "c:2"], "worker": TWO}, {"type": "chief", "index": 0}),
        "a cluster has at most one chief",
    ),
    (tf_config({"worker": TWO, "ps": ["p:1"]}, {"type": "worker", "index": 0}), "has a 'ps' task"),
    (tf_config({"worker": ["h1"]}, {"type": "worker", "index": 0}), 'an address is "host:port" (the port is missing)'),
    (
        tf_config({"worker": ["h1:" + DIGITS]}, {"type": "worker", "index": 0}),
        "the port must be a number from 1 to 65535",
    ),
    (tf_config({"worker": ["h1:70000"]}, {"type": "worker", "index": 0}), "the port must be a number from 1 to 65535"),
    (tf_config({"worker": [":2222"]}, {"type": "worker", "index": 0}), "(the port is missing)"),
    (tf_config({"worker": ["h 1:2222"]}, {"type": "worker", "index": 0}), "is no host name or address"),
    (tf_config({"worker": [7]}, {"type": "worker", "index": 0}), "holds a number (7)"),
    (tf_config({"worker": ["h:1", "h:1"]}, {"type": "worker", "index": 0}), "lists 'h:1' twice"),
    (tf_config({"worker": TWO, "evaluator": ["e:1"]}, {"type": "evaluator", "index": 0}), "task is the evaluator"),
    (tf_config({"master": TWO}, {"type": "master", "index": 0}), "has a task type 'master'"),
    (tf_config({"worker": TWO}, {"type": "chief", "index": 0}), "task is chief 0, but the cluster has 0 chiefs"),
    (tf_config({"worker": TWO}, {"type": "worker"}), "task has no 'index'"),
    ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not JSON"),
    ({"TF_CONFIG": '"just a string"'}, "TF_CONFIG must be a JSON object"),
    (tf_config({}, {"type": "worker", "index": 0}), "'cluster' must be an object of task types, got an object"),
    (step(per_node="1(x99999999999)", tasks="1"), "adds up to 99,999,999,999 tasks on 99,999,999,999 nodes"),
    (
        step(rank=DIGITS),
        "... (5000 characters) is not a whole number (of at most 9 digits)",
    ),
    (step(tasks=DIGITS), "SLURM_STEP_NUM_TASKS="),
    (step(per_node=DIGITS), "SLURM_STEP_TASKS_PER_NODE="),
    (
        step(tasks="2", nodes="node[1-99999999]", per_node="1(x2)"),
        "SLURM_STEP_NODELIST='node[1-99999999]' names more than 65,536 nodes",
    ),
    (step(nodes="n[1-2]-ib", per_node="1(x2)"), "has text after its range"),
    (step(nodes="n[[1-2]]", per_node="1(x2)"), "has a bracket inside a bracket"),
    (step(nodes="n[2-1]", per_node="1(x2)"), "is no range of node numbers"),
    (
        step(nodes="n[1-3]", per_node="1(x2)"),
        "SLURM_STEP_NODELIST names 3 nodes but SLURM_STEP_TASKS_PER_NODE='1(x2)' gives tasks for 2",
    ),
    (step(SLURM_STEP_RESV_PORTS=DIGITS), "SLURM_STEP_RESV_PORTS="),
    (step(SLURM_STEP_RESV_PORTS="70000-70001"), "ports are numbers from 1 to 65535"),
    (
        step(SLURM_STEP_RESV_PORTS="12000"),
        "2 tasks on a node need 2 ports from 12000; reserve them with srun --resv-ports=2",
    ),
    (step(rank="2"), "SLURM_PROCID=2 is not one of the step's 2 tasks"),
    ({**step(), "ENVCHECK_CLUSTER_WAIT": "forever"}, "ENVCHECK_CLUSTER_WAIT='forever' must be a number of seconds"),
]


@pytest.mark.parametrize("env, message", CASES, ids=[str(i) for i in range(len(CASES))])
def test_each_malformed_cluster_is_one_line_naming_the_variable(env, message):
    with pytest.raises(UsageError) as info:
        cluster_source(env)
    said = str(info.value)
    assert message in said, said
    assert "\n" not in said and len(said) < 600
    assert any(name in said for name in (*env, "TF_CONFIG", "SLURM_"))


def test_through_the_command_it_is_exit_2_before_tensorflow_starts(cli, monkeypatch):
    for name in [n for n in os.environ if n.startswith("SLURM_") or n == "TF_CONFIG"]:
        monkeypatch.delenv(name)
    for env, message in CASES[:3] + CASES[-8:-4]:
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            result = cli("train", "--multi-worker", "--synthetic", "--epochs", "1")
        assert result.code == 2 and message in result.err and result.err.count("\n") == 1, result.err


def test_a_checked_tf_config_gives_the_index_as_a_number():
    config = read_tf_config(tf_config({"chief": ["c:1"], "worker": TWO}, {"type": "worker", "index": "1"}))
    assert config["task"] == {"type": "worker", "index": 1}
    assert chief_of(config) == (False, 2, 3)


# --- anything else: 0, 1 or 2 with one line -----------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
addresses = st.one_of(
    st.sampled_from(["h1:2222", "h2:2222", "10.0.0.1:1", "[::1]:8", "h:0", "h:", ":1", "h", "h:65536", "a b:1"]),
    json_values,
)
clusters = st.one_of(
    st.dictionaries(
        st.sampled_from(["chief", "worker", "evaluator", "ps", "master", ""]),
        st.one_of(st.lists(addresses, max_size=4), json_values),
        max_size=3,
    ),
    json_values,
)
tasks = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["chief", "worker", "evaluator", "ps", 3]),
            "index": st.one_of(st.integers(-2, 4), json_values),
        }
    ),
    json_values,
)


def _tf_config_texts():
    documents = st.one_of(st.fixed_dictionaries({"cluster": clusters, "task": tasks}), json_values)
    return st.one_of(
        documents.map(json.dumps),
        st.text(max_size=40),
        st.sampled_from(["[" * 3000, "{" * 3000, "NaN", "-Infinity", "1e999", DIGITS]),
    )


def _slurm_steps():
    number = st.one_of(st.integers(0, 6).map(str), st.sampled_from(["", "x", "-1", DIGITS, " 3 ", "١"]))
    names = st.one_of(
        st.sampled_from(["n1", "n[1-2]", "n[01-03,7]", "n[1-2],m3", "n[1-99999999]", "n[", "n]", "[1-2]", "n[1-2]x"]),
        st.text(alphabet="n[]-,0123", max_size=12),
    )
    per_node = st.one_of(
        st.sampled_from(["1", "2", "1(x2)", "2(x2),1", "1(x99999999999)", "(x2)", "1(x)", ""]),
        st.text(alphabet="12(x),", max_size=10),
    )
    ports = st.one_of(
        st.none(), st.sampled_from(["12000-12003", "12000", "0-1", "65535", DIGITS, "a-b", "12000-11000"])
    )
    return st.builds(
        lambda r, t, n, p, port: step(r, t, n, p, **({"SLURM_STEP_RESV_PORTS": port} if port is not None else {})),
        number,
        number,
        names,
        per_node,
        ports,
    )


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=st.one_of(_tf_config_texts().map(lambda t: {"TF_CONFIG": t}), _slurm_steps()))
def test_any_cluster_description_is_accepted_whole_or_refused_in_one_line(env):
    try:
        source = cluster_source(env)
    except UsageError as exc:
        said = str(exc)
        assert "\n" not in said and len(said) < 600 and ("TF_CONFIG" in said or "SLURM_" in said), said
        return
    if source == "TF_CONFIG":
        config = read_tf_config(env)
        is_chief, index, workers = chief_of(config)
        assert 0 <= index < workers


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=_slurm_steps())
def test_every_slurm_step_that_passes_is_one_tensorflows_resolver_lays_out(env):
    try:
        cluster_source(env)
    except UsageError:
        return
    config = read_tf_config(env)  # through SlurmClusterResolver itself
    workers = config["cluster"]["worker"]
    assert len(workers) == int(env["SLURM_STEP_NUM_TASKS"]) and len(set(workers)) == len(workers)
    assert config["task"]["index"] == int(env["SLURM_PROCID"])


# --- a peer that never comes -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_worker_whose_peer_never_comes_gives_up_after_the_stated_wait(tmp_path):
    ports = [_free_port(), _free_port()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(
        PYTHONPATH=str(REPO),
        TF_CPP_MIN_LOG_LEVEL="2",
        ENVCHECK_CLUSTER_WAIT="5",
        TF_CONFIG=json.dumps(
            {"cluster": {"worker": [f"localhost:{p}" for p in ports]}, "task": {"type": "worker", "index": 0}}
        ),
    )
    argv = [
        sys.executable,
        "-m",
        "envcheck",
        "train",
        "--multi-worker",
        "--synthetic",
        "--subset",
        "64",
        "--val-subset",
        "64",
        "--epochs",
        "1",
        "--no-progress",
        "--gpus",
        "0",
        "-o",
        str(tmp_path / "run"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("envcheck:")]
    assert lines == [
        "envcheck: error: --multi-worker: worker 0 waited 5 s for the other workers and gave up: start every "
        "worker (each with its own task in TF_CONFIG, or all under one srun), check that their addresses are "
        "reachable from here, or wait longer with ENVCHECK_CLUSTER_WAIT=SECONDS"
    ], done.stderr[-2000:]
