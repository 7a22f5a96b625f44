"""envcheck validate: the checks' judgements, and levels 1 to 3 run for real on CPU devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envcheck.facts import PlacementResult, TensorflowFacts
from envcheck.validation.checks import Check, ValidationReport
from envcheck.validation.compute import conv2d_reference, relative_error, short_device
from envcheck.validation.training import compare_devices, loss_falls, usable_gpus_from

REPO = Path(__file__).resolve().parents[1]


def test_the_float64_convolution_reference_matches_a_direct_sum():
    rng = np.random.default_rng(0)
    images, kernel = rng.normal(size=(2, 5, 6, 3)), rng.normal(size=(3, 3, 3, 4))
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)))
    direct = np.zeros((2, 5, 6, 4))
    for y in range(5):
        for x in range(6):
            direct[:, y, x, :] = np.einsum("nhwc,hwco->no", padded[:, y : y + 3, x : x + 3, :], kernel)
    np.testing.assert_allclose(conv2d_reference(images, kernel), direct, atol=1e-10)


def test_relative_error_is_against_the_largest_value_and_catches_shape_mistakes():
    reference = np.array([[100.0, -2.0], [3.0, 4.0]])
    assert relative_error(reference + [[0.0, 1.0], [0.0, 0.0]], reference) == pytest.approx(0.01)
    assert relative_error(reference.T.ravel(), reference) == float("inf")
    assert short_device("/job:localhost/replica:0/task:0/device:GPU:1") == "GPU:1"
    assert short_device("/gpu:1") == short_device("/device:GPU:1") == short_device("/physical_device:GPU:1") == "GPU:1"


def test_the_loss_must_fall_from_the_first_epoch_to_the_last():
    assert loss_falls([{"loss": 2.3}, {"loss": 2.0}, {"loss": 1.1}])[0]
    ok, why = loss_falls([{"loss": 2.3}, {"loss": 1.0}, {"loss": 2.4}])
    assert not ok and "did not fall" in why
    assert not loss_falls([{"loss": 2.3}])[0]
    assert not loss_falls([{"loss": 2.3}, {"loss": None}])[0]


@pytest.mark.parametrize(
    "used, usable, passed",
    [
        (
            ["/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"],
            ["/GPU:0", "/GPU:1"],
            True,
        ),
        (["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"], [], True),
        (["/job:localhost/replica:0/task:0/device:CPU:0"], ["/GPU:0"], False),  # a usable GPU left idle
        (["/job:localhost/replica:0/task:0/device:GPU:0"], ["/GPU:0", "/GPU:1"], False),  # one of two GPUs
        (["/job:localhost/replica:0/task:0/device:GPU:1"], ["/GPU:0"], False),  # a GPU the doctor rejects
    ],
)
def test_training_devices_must_be_the_gpus_the_doctor_finds_usable(used, usable, passed):
    assert compare_devices(used, usable)[0] is passed


@pytest.mark.parametrize(
    "used, usable, requested, passed",
    [
        # validate --gpus 1 on a two-GPU machine (the documented --full run) used to fail this check.
        (["/job:localhost/replica:0/task:0/device:GPU:0"], ["/GPU:0", "/GPU:1"], 1, True),
        (["/job:localhost/replica:0/task:0/device:GPU:0"], ["/GPU:1"], 1, False),  # GPU 0 is not usable
        (
            ["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"],
            ["/GPU:0"],
            0,
            True,
        ),  # --gpus 0 / --cpu-replicas: the CPU on purpose
        (["/job:localhost/replica:0/task:0/device:GPU:0"], ["/GPU:0"], 0, False),
    ],
)
def test_asked_for_gpus_are_compared_with_the_first_usable_ones(used, usable, requested, passed):
    assert compare_devices(used, usable, requested)[0] is passed


def test_usable_gpus_are_those_where_both_doctor_ops_ran_right_on_that_gpu():
    facts = TensorflowFacts(
        placement=(
            PlacementResult(
                op="matmul", requested="/GPU:0", device="/job:localhost/replica:0/task:0/device:GPU:0", ok=True
            ),
            PlacementResult(
                op="conv2d", requested="/GPU:0", device="/job:localhost/replica:0/task:0/device:GPU:0", ok=True
            ),
            PlacementResult(
                op="matmul", requested="/GPU:1", device="/job:localhost/replica:0/task:0/device:GPU:1", ok=True
            ),
            PlacementResult(
                op="conv2d", requested="/GPU:1", device=None, ok=False, error="CUDNN_STATUS_NOT_INITIALIZED"
            ),
            PlacementResult(
                op="matmul", requested="/GPU:2", device="/job:localhost/replica:0/task:0/device:CPU:0", ok=True
            ),
        )
    )
    assert usable_gpus_from(facts) == ["GPU:0"]
    assert usable_gpus_from(TensorflowFacts(error_kind="import_failed")) is None
    assert usable_gpus_from(None) is None


def test_the_report_fails_when_any_check_fails_and_says_so_in_json():
    report = ValidationReport(
        level=2,
        devices=["CPU:0"],
        checks=[Check(1, "matmul on CPU:0", True, "fine"), Check(2, "all-reduce", False, "replicas disagree")],
    )
    data = report.to_dict()
    assert data["passed"] is False and data["exit_code"] == 1
    assert [c["passed"] for c in data["checks"]] == [True, False]
    assert ValidationReport(level=1, devices=[]).exit_code == 1  # no checks ran: nothing was shown to work


def test_a_wrong_result_and_a_wrong_device_fail_level_one():
    tf = pytest.importorskip("tensorflow")
    from envcheck.validation.compute import check_op

    a = np.random.default_rng(0).normal(size=(128, 128)).astype(np.float32)
    product, flops = a.astype(np.float64) @ a, 2 * 128**3
    wrong = check_op("matmul", "/CPU:0", lambda x, y: tf.linalg.matmul(x, y) * 1.5, (a, a), product, flops)
    assert not wrong.passed and "wrong result" in wrong.summary
    right = check_op("matmul", "/CPU:0", tf.linalg.matmul, (a, a), product, flops)
    assert right.passed and right.figures["device"] == "CPU:0" and right.figures["gflops"] > 0
    if not tf.config.list_physical_devices("GPU"):
        # The setup post's silent failure: asked for a GPU, soft placement ran it on the CPU.
        tf.config.set_soft_device_placement(True)
        moved = check_op("matmul", "/GPU:0", tf.linalg.matmul, (a, a), product, flops)
        assert not moved.passed
        assert "GPU:0" in moved.summary


def _envcheck(tmp_path: Path, *args: str, timeout: float = 400):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["KERAS_HOME"] = str(tmp_path / "keras-home")  # empty: the quick run uses synthetic data
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_levels_one_to_three_pass_on_two_cpu_replicas(tmp_path):
    result = _envcheck(tmp_path, "validate", "--level", "3", "--cpu-replicas", "2", "--json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["passed"] and report["level"] == 3 and report["devices"] == ["CPU:0", "CPU:1"]
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["matmul on CPU:0"]["figures"]["max_relative_error"] < 1e-4
    assert checks["conv2d on CPU:0"]["figures"]["gflops"] > 0
    reduce = checks["all-reduce over 2 replicas (CPU:0, CPU:1)"]["figures"]
    assert reduce["expected_sum"] == 3 and reduce["strategy_reduce"] == 3 and reduce["replicas_disagreeing"] == []
    training = checks["training (quick)"]["figures"]
    assert training["replicas"] == 2 and training["images_per_second_per_replica"] > 0
    assert training["data"].startswith("synthetic")
    losses = checks["loss falls"]["figures"]["losses"]
    assert checks["loss falls"]["passed"] and losses[-1] < losses[0]
    assert checks["devices used"]["passed"]
    assert [c["level"] for c in report["checks"]] == [1, 1, 2, 3, 3, 3]


# Level 1 at a terminal (its PASS lines, exit 0, nothing of level 2): tests/test_validate_progress.py.


@pytest.mark.parametrize(
    "args, message",
    [
        (["--level", "4"], "invalid choice: 4"),
        (["--level", "1", "--train"], "--train is level 3"),
        (["--gpus", "1", "--cpu-replicas", "2"], "exclude each other"),
        (["--train", "--data", "no/such/cifar"], "--data no/such/cifar: no such file or folder"),
        # These used to be accepted and silently ignored (or to run level 3 after all).
        (["--level", "1", "--full"], "--full is level 3"),
        (["--level", "2", "--data", "no/such/cifar"], "--data is for the training run of level 3"),
        (["--level", "1", "--output", "runs/x"], "--output is for the training run of level 3"),
        (["--train", "--output", ""], "needs a path, got an empty string"),  # was: outputs in the current folder
    ],
)
def test_bad_validate_flags_are_one_line_and_exit_2(cli, args, message):
    result = cli("validate", *args)
    assert result.code == 2 and message in result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_full_on_a_machine_without_gpu_is_refused_before_anything_runs(tmp_path):
    result = _envcheck(tmp_path, "validate", "--full", "--gpus", "0", timeout=120)
    assert result.returncode == 2
    assert "--full runs the post's 70 epochs" in result.stderr and "needs a GPU" in result.stderr
    assert "PASS" not in result.stdout


def test_an_unwritable_output_is_refused_before_any_level_runs(cli, tmp_path):
    (tmp_path / "a-file").write_text("x")
    result = cli("validate", "--train", "--output", str(tmp_path / "a-file" / "run"))
    assert result.code == 2 and "--output" in result.err and "is a file" in result.err
    assert "PASS" not in result.out


def test_gpus_on_a_machine_without_any_are_refused_not_run_on_the_cpu(cli, monkeypatch):
    # Used to pass every level on the CPU as if --gpus had not been given.
    tf = pytest.importorskip("tensorflow")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    result = cli("validate", "--level", "1", "--gpus", "1")
    assert result.code == 2 and "--gpus 1: this machine has no GPU" in result.err
    assert "PASS" not in result.out


def test_a_reader_that_goes_away_does_not_turn_a_pass_into_exit_1():
    # `envcheck validate | head -1`: rich's default reaction to the closed pipe is SystemExit(1).
    code = (
        "import sys\n"
        "from envcheck.commands.validate import _console\n"
        "from envcheck.render.validate import validation_lines\n"
        "from envcheck.validation.checks import Check, ValidationReport\n"
        "report = ValidationReport(level=1, devices=['CPU:0'], checks=[Check(1, f'check {i}', True, 'x' * 200)"
        " for i in range(2000)])\n"
        "console = _console()\n"
        "for line in validation_lines(report):\n"
        "    console.print(line, soft_wrap=True)\n"
        "sys.exit(report.exit_code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().startswith("PASS")
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == ""


def test_validate_never_says_more_than_the_doctor():
    from envcheck.validation.checks import Check, ValidationReport

    checks = [Check(1, "matmul on CPU:0", True, "ok")]
    no_gpu = ValidationReport(
        level=1,
        devices=["CPU:0"],
        checks=list(checks),
        doctor={"status": "cpu-only", "line": "CPU only: no NVIDIA GPU", "gpus": 0, "exit_code": 0},
    )
    assert no_gpu.exit_code == 0 and no_gpu.problems == []
    broken_gpu = ValidationReport(
        level=1,
        devices=["CPU:0"],
        checks=list(checks),
        doctor={"status": "cpu-only", "line": "CPU only: driver too old", "gpus": 0, "exit_code": 1},
    )
    assert broken_gpu.exit_code == 1 and broken_gpu.problems == ["the doctor finds: CPU only: driver too old"]
    unused = ValidationReport(
        level=1,
        devices=["CPU:0"],
        checks=list(checks),
        doctor={"status": "gpu-ready", "line": "GPU ready (1 GPU)", "gpus": 1, "exit_code": 0},
    )
    assert unused.exit_code == 1 and "TensorFlow used none" in unused.problems[0]
    gate = ValidationReport(level=1, devices=["CPU:0"], checks=list(checks), doctor=None, require_gpu=True)
    assert gate.exit_code == 1 and gate.to_dict()["passed"] is False and gate.to_dict()["checks_passed"] is True
    on_gpu = ValidationReport(
        level=1,
        devices=["GPU:0"],
        checks=[Check(1, "matmul on GPU:0", True, "ok")],
        require_gpu=True,
        doctor={"status": "gpu-ready", "line": "GPU ready (1 GPU)", "gpus": 1, "exit_code": 0},
    )
    assert on_gpu.exit_code == 0
