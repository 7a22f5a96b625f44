"""Whole training runs, kept tiny: 2 CPU replicas, resume after a kill, real images, two workers, NaN."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from train_helpers import REAL_CIFAR10, REPO, read_json, run_module

from envcheck.render import SCHEMA_VERSION

pytestmark = pytest.mark.slow

SYNTHETIC = ["--synthetic", "--no-progress"]


def test_two_cpu_replicas_train_with_falling_loss_and_write_every_output(tmp_path, train_env):
    out = tmp_path / "run"
    result = run_module(
        "envcheck.train",
        *SYNTHETIC,
        "--subset",
        "256",
        "--val-subset",
        "32",
        "--cpu-replicas",
        "2",
        "--batch-per-replica",
        "16",
        "--epochs",
        "3",
        "--steps-per-epoch",
        "6",
        "--lr",
        "0.01",
        "--output",
        str(out),
        "--json",
        env=train_env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["parameters"] == 1_656_250
    assert summary["replicas"] == 2 and summary["global_batch"] == 32
    assert [d.rsplit("device:", 1)[-1] for d in summary["devices"]["devices"]] == ["CPU:0", "CPU:1"]
    assert summary["devices"]["strategy"] == "MirroredStrategy"
    assert summary["epochs"] == 3 and summary["images_per_second"] > 0
    envelope = {"schema_version": SCHEMA_VERSION, "command": "train", "exit_code": 0}
    assert envelope.items() <= summary.items()
    assert {k: v for k, v in summary.items() if k not in (*envelope, "envcheck_version")} == read_json(
        out / "summary.json"
    )

    rows = read_json(out / "history.json")["epochs"]
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert [r["learning_rate"] for r in rows] == pytest.approx([0.01, 0.01 * 2 / 3, 0.01 / 3])
    assert rows[-1]["loss"] < rows[0]["loss"]
    assert all(r["images"] == 6 * 32 and r["images_per_second_per_replica"] > 0 for r in rows)
    csv_lines = (out / "history.csv").read_text().splitlines()
    assert csv_lines[0].startswith("epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds")
    assert len(csv_lines) == 4
    assert (out / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "resume").exists()  # a finished run leaves no resume point
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary files left

    keras = pytest.importorskip("keras")
    import envcheck.train.model  # noqa: F401 - registers the shift layer for loading

    model = keras.models.load_model(out / "model.keras")
    images = np.random.default_rng(0).integers(0, 256, size=(3, 32, 32, 3), dtype=np.uint8)
    probabilities = model.predict(images, verbose=0)
    assert probabilities.shape == (3, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)


def _wait_for_epochs(state_file, epochs_done, process, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads(state_file.read_text())["epochs_done"] >= epochs_done:
                return
        except (OSError, ValueError, KeyError):
            pass
        if process.poll() is not None:
            pytest.fail(f"the run ended (exit {process.returncode}) before epoch {epochs_done} was saved")
        time.sleep(0.05)
    pytest.fail(f"epoch {epochs_done} was not saved within {timeout} s")


def test_a_killed_run_resumes_from_its_last_finished_epoch(tmp_path, train_env):
    out = tmp_path / "run"
    args = [
        *SYNTHETIC,
        "--subset",
        "64",
        "--val-subset",
        "8",
        "--batch-per-replica",
        "8",
        "--epochs",
        "5",
        "--steps-per-epoch",
        "2",
        "--output",
        str(out),
    ]
    first = subprocess.Popen(
        [sys.executable, "-m", "envcheck.train", *args],
        cwd=REPO,
        env=train_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_epochs(out / "resume" / "state.json", 2, first)
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait(timeout=60)
    state = read_json(out / "resume" / "state.json")
    done = state["epochs_done"]
    assert 2 <= done < 5
    # The committed record: the kill may fall between the commit and the history files it is
    # drawn into (the resumed run writes them again), so the rows are read from the commit.
    before = {r["epoch"]: r for r in state["rows"] if r["epoch"] <= done}
    assert sorted(before) == list(range(1, done + 1))

    second = run_module("envcheck.train", *args, "--json", env=train_env)
    assert second.returncode == 0, second.stderr[-3000:]
    summary = json.loads(second.stdout)
    assert summary["resumed_from_epoch"] == done and summary["epochs"] == 5
    assert f"resuming the run in {out} after epoch {done} of 5" in second.stderr  # it says so
    rows = read_json(out / "history.json")["epochs"]
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4, 5]
    for row in rows[:done]:  # what the killed run finished is kept, not redone
        assert row == before[row["epoch"]]
    assert rows[done]["learning_rate"] == pytest.approx(5e-3 * (1 - done / 5))  # the schedule continues
    assert not (out / "resume").exists()


def test_ctrl_c_says_what_is_kept_and_exits_130(tmp_path, train_env):
    out = tmp_path / "run"
    args = [
        *SYNTHETIC,
        "--subset",
        "64",
        "--val-subset",
        "8",
        "--batch-per-replica",
        "8",
        "--epochs",
        "50",
        "--steps-per-epoch",
        "2",
        "--output",
        str(out),
    ]
    run = subprocess.Popen(
        [sys.executable, "-m", "envcheck.train", *args],
        cwd=REPO,
        env=train_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_epochs(out / "resume" / "state.json", 1, run)
        run.send_signal(signal.SIGINT)  # what Ctrl-C sends
        _, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 130, err[-3000:]
    assert "envcheck: interrupted" in err and "internal error" not in err and "Traceback" not in err
    kept = read_json(out / "resume" / "state.json")["epochs_done"]
    assert f"kept in {out}: the same command resumes after epoch {kept}" in err


def test_a_resume_with_other_settings_is_refused(tmp_path, train_env):
    out = tmp_path / "run"
    (out / "resume").mkdir(parents=True)
    (out / "resume" / "epoch-0001.weights.h5").write_bytes(b"weights")
    (out / "resume" / "state.json").write_text(
        json.dumps({"epochs_done": 1, "weights": "epoch-0001.weights.h5", "settings": {"recipe": "another"}})
    )
    result = run_module(
        "envcheck.train", *SYNTHETIC, "--subset", "64", "--epochs", "2", "--output", str(out), env=train_env
    )
    assert result.returncode == 2
    assert "holds an interrupted run with other settings" in result.stderr


@pytest.mark.skipif(
    not REAL_CIFAR10.exists(), reason="the real CIFAR-10 archive (../shared/data/cifar10-jpg.tar.gz) is absent"
)
def test_a_short_run_on_a_slice_of_the_real_images(tmp_path, train_env):
    train_env.pop("ENVCHECK_CACHE_DIR")  # the user cache: the archive is extracted once, not per test
    out = tmp_path / "run"
    result = run_module(
        "envcheck.train",
        "--data",
        str(REAL_CIFAR10),
        "--subset",
        "200",
        "--val-subset",
        "100",
        "--batch-per-replica",
        "25",
        "--epochs",
        "2",
        "--no-progress",
        "--output",
        str(out),
        "--json",
        env=train_env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["data"]["kind"] == "image-folders"
    assert summary["data"]["train_images"] == 200 and summary["data"]["test_images"] == 100
    assert summary["data"]["classes"][0] == "airplane" and summary["data"]["classes"][9] == "truck"
    assert summary["data"]["source"] == str(REAL_CIFAR10)  # the archive the user named
    from envcheck.train.data import cache_dir

    extracted = list((cache_dir() / "datasets").glob("cifar10-jpg-*"))
    assert extracted and not any(
        p.resolve().is_relative_to(REPO.resolve()) for p in extracted
    )  # outside the repository
    assert summary["steps_per_epoch"] == 8 and summary["epochs"] == 2
    if summary["devices"]["kind"] == "cpu":  # no GPU, none asked for: the doctor's reason is given
        assert summary["devices"]["note"].startswith("no usable GPU, training on the CPU: ")
        assert "envcheck: note: no usable GPU" in result.stderr
    assert all(np.isfinite(summary["final"][k]) for k in ("loss", "accuracy", "val_loss", "val_accuracy"))


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_workers_on_loopback_train_together_and_only_the_chief_writes(tmp_path, train_env):
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        env = dict(train_env)
        env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "envcheck.train",
                    *SYNTHETIC,
                    "--subset",
                    "64",
                    "--val-subset",
                    "16",
                    "--batch-per-replica",
                    "8",
                    "--epochs",
                    "2",
                    "--steps-per-epoch",
                    "2",
                    "--multi-worker",
                    "--output",
                    str(tmp_path / f"out-{index}"),
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
    assert summary["epochs"] == 2
    assert {p.name for p in (tmp_path / "out-0").iterdir()} == {
        "history.json",
        "history.csv",
        "history.png",
        "summary.json",
        "model.keras",
    }
    assert results[1][1].strip() == ""  # the other worker prints no summary
    assert not (tmp_path / "out-1").exists() or not any((tmp_path / "out-1").iterdir())


def test_a_nan_loss_stops_the_run_with_a_clear_message(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    out = tmp_path / "run"
    result = cli(
        "train",
        *SYNTHETIC,
        "--subset",
        "32",
        "--val-subset",
        "8",
        "--batch-per-replica",
        "8",
        "--epochs",
        "3",
        "--steps-per-epoch",
        "2",
        "--gpus",
        "0",
        "--lr",
        "1e12",
        "--output",
        str(out),
    )
    assert result.code == 1
    assert re.search(r"training stopped: the loss became (nan|inf|-inf) at epoch \d+, batch \d+", result.err)
    assert "lower --lr (now 1e+12)" in result.err
    assert not (out / "model.keras").exists() and not (out / "summary.json").exists()


def test_a_damaged_resume_point_is_one_line_saying_how_to_start_over(tmp_path, monkeypatch):
    # A truncated weights file used to end in an internal error (h5py's OSError).
    from envcheck.errors import UsageError
    from envcheck.train.config import PRESETS, TrainConfig
    from envcheck.train.trainer import train

    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    config = TrainConfig(
        output=tmp_path / "run",
        recipe=PRESETS["post"].with_overrides(epochs=2, batch_per_replica=8),
        synthetic=True,
        subset=16,
        val_subset=8,
        progress=False,
    )
    resume = tmp_path / "run" / "resume"
    resume.mkdir(parents=True)
    (resume / "epoch-0001.weights.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    (resume / "state.json").write_text(
        json.dumps({"epochs_done": 1, "weights": "epoch-0001.weights.h5", "settings": config.resume_key()})
    )
    with pytest.raises(UsageError, match="the resume point cannot be read") as caught:
        train(config)
    assert str(resume) in str(caught.value) and "\n" not in str(caught.value)


def test_several_steps_a_call_with_several_replicas_is_refused_in_one_line(tmp_path, train_env):
    # Keras 3's multi-step loop fails under MirroredStrategy: asked for, it is refused, not a crash.
    result = run_module(
        "envcheck",
        "train",
        *SYNTHETIC,
        "--subset",
        "64",
        "--val-subset",
        "8",
        "--cpu-replicas",
        "2",
        "--batch-per-replica",
        "8",
        "--epochs",
        "1",
        "--steps-per-epoch",
        "2",
        "--steps-per-execution",
        "2",
        "--output",
        str(tmp_path / "run"),
        env=train_env,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "--steps-per-execution above 1 with several replicas" in result.stderr
    assert "internal error" not in result.stderr
