"""validate --scaling names the bottleneck that was put there on purpose: every scenario runs
the real measurement (MirroredStrategy over three logical CPU devices) and the real analysis on
a workload whose costs it chooses (scaling_workloads.py). Three processes run them side by side:
the sleeps that stand for device work and a slow pipeline take little of a core, so they overlap
(about 75 s together on an idle machine, where one process took 180)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

_RUN = """
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
# Enough inter-op threads for every replica's sleep to run beside the others'.
tf.config.threading.set_inter_op_parallelism_threads(16)
from envcheck.train.strategy import split_cpu
devices = split_cpu(3)
sys.path.insert(0, sys.argv[1])
from scaling_workloads import SCENARIOS
from envcheck.validation.bottleneck import analyse
from envcheck.validation.scaling import measure
out = {}
for name in json.loads(sys.argv[2]):
    m = measure(SCENARIOS[name](), devices, logical_cpu=True, steps=5)
    out[name] = {"measurement": m.to_dict(), "analysis": analyse(m).to_dict()}
print(json.dumps(out))
"""


# Three groups of about a minute each on an idle 2-core machine: the slow input pipeline (its probe
# of the pipeline alone waits 20 s), the slow device, and the rest, the healthy run (whose 90%
# efficiency has the least room) first, beside processes that mostly sleep.
GROUPS = (["healthy", "large gradients", "small batch"], ["slow device"], ["slow input"])


@pytest.fixture(scope="module")
def results():
    pytest.importorskip("tensorflow")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(Path.home())}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _RUN, str(HERE), json.dumps(names)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(REPO),
            env=env,
        )  # fmt: skip
        for names in GROUPS
    ]
    out = {}
    try:
        for run in runs:
            stdout, stderr = run.communicate(timeout=900)
            assert run.returncode == 0, stderr[-3000:]
            out.update(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert sorted(out) == sorted(name for group in GROUPS for name in group)
    return out


def _named(result) -> list[str]:
    return [b["name"] for b in result["analysis"]["bottlenecks"]]


@pytest.mark.slow
def test_a_healthy_setup_scales_as_expected_and_names_nothing(results):
    analysis = results["healthy"]["analysis"]
    assert analysis["scales_as_expected"], analysis["verdict"]
    assert analysis["bottlenecks"] == [] and analysis["verdict"].endswith("scales as expected")


@pytest.mark.slow
def test_a_slow_input_pipeline_is_named_input_bound(results):
    assert _named(results["slow input"])[:1] == ["input-bound"], results["slow input"]["analysis"]["verdict"]


@pytest.mark.slow
def test_a_slow_device_is_named_the_straggler(results):
    result = results["slow device"]
    assert _named(result)[:1] == ["straggler"], result["analysis"]["verdict"]
    assert result["analysis"]["bottlenecks"][0]["device"].endswith("CPU:1")
    assert "CPU:1 alone" in result["analysis"]["bottlenecks"][0]["evidence"][0]


@pytest.mark.slow
def test_large_gradients_are_named_communication_bound(results):
    assert _named(results["large gradients"])[:1] == ["communication-bound"], results["large gradients"]["analysis"]


@pytest.mark.slow
def test_a_small_batch_is_named_even_when_the_devices_scale(results):
    result = results["small batch"]
    assert "batch too small" in _named(result), result["analysis"]["verdict"]
    assert "straggler" not in _named(result) and "input-bound" not in _named(result)
