"""The trainer under a hostile world: flags past every sensible bound, a rerun into a finished run,
a kill right after an epoch, a full disk, and TensorFlow's start-up lines around our errors."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest
from train_helpers import REPO, read_json, run_module

from envcheck.errors import EXIT_USAGE

TINY = [
    "--synthetic",
    "--no-progress",
    "--subset",
    "32",
    "--val-subset",
    "8",
    "--batch-per-replica",
    "8",
    "--steps-per-epoch",
    "1",
    "--gpus",
    "0",
]


@pytest.fixture(autouse=True)
def no_keras_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TF_CONFIG", raising=False)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seed", "4294967296"], "--seed: must be at most 4,294,967,295"),
        (["--seed", "9" * 5000], "--seed: must be at most 4,294,967,295"),
        (["--cpu-replicas", "100000"], "--cpu-replicas: must be at most 64"),
        (["--subset", "1" + "0" * 5000], "--subset: must be at most"),
        (["--synthetic", "--subset", "100000000000"], "--subset: must be at most 1,000,000,000"),
        (["--synthetic", "--subset", "60000"], "--subset 60,000: --synthetic generates at most 50,000 images"),
        (["--synthetic", "--val-subset", "10001"], "--val-subset 10,001: --synthetic generates at most 10,000"),
        (["--synthetic", "--resume", "--overwrite"], "not allowed with argument"),
    ],
)
def test_flags_past_their_bounds_are_one_line_before_anything_starts(cli, args, message):
    started = time.monotonic()
    result = cli("train", *args)
    assert result.code == EXIT_USAGE, result
    assert message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert "tensorflow" not in sys.modules or time.monotonic() - started < 60  # nothing was built


def test_validate_bounds_its_cpu_replicas_too(cli):
    result = cli("validate", "--cpu-replicas", "100000")
    assert result.code == EXIT_USAGE and "--cpu-replicas: must be at most 64" in result.err


def _finished_run(folder, epochs=2) -> dict:
    """What a finished run leaves: the summary is written last, once every epoch is done."""
    folder.mkdir(parents=True)
    summary = {"epochs": epochs, "devices": {"is_chief": True, "devices": ["/CPU:0"]}}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "history.json").write_text(json.dumps({"epochs": [{"epoch": e + 1} for e in range(epochs)]}))
    (folder / "model.keras").write_bytes(b"PK model")
    return summary


def test_a_finished_run_is_not_retrained_silently(cli, tmp_path):
    out = tmp_path / "run"
    _finished_run(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = cli("train", *TINY, "--epochs", "2", "--output", str(out))
    assert result.code == EXIT_USAGE, result
    assert "holds a finished run (2 epochs)" in result.err and "--resume" in result.err and "--overwrite" in result.err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing touched


def test_resume_on_a_finished_run_reports_it_and_trains_nothing(cli, tmp_path):
    out = tmp_path / "run"
    summary = _finished_run(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = cli("train", *TINY, "--epochs", "2", "--output", str(out), "--resume", "--json")
    assert result.code == 0, result
    data = json.loads(result.out)
    assert data["epochs"] == summary["epochs"] and data["command"] == "train"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.slow
def test_exit_2_after_tensorflow_starts_is_one_line_without_its_log(tmp_path, train_env):
    # Fewer images than one global batch is found only once the replicas are known (TF started).
    train_env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    result = run_module(
        "envcheck",
        "train",
        "--synthetic",
        "--no-progress",
        "--subset",
        "8",
        "--val-subset",
        "8",
        "--batch-per-replica",
        "16",
        "--gpus",
        "0",
        "--epochs",
        "1",
        "--output",
        str(tmp_path / "run"),
        env=train_env,
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("envcheck: error: 8 training images are fewer than one global batch")


# --- whole runs (slow) --------------------------------------------------------------------------


@pytest.mark.slow
def test_overwrite_trains_a_finished_run_again(tmp_path, train_env):
    out = tmp_path / "run"
    _finished_run(out, epochs=5)
    result = run_module(
        "envcheck", "train", *TINY, "--epochs", "1", "--output", str(out), "--overwrite", "--json", env=train_env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["epochs"] == 1
    assert [r["epoch"] for r in read_json(out / "history.json")["epochs"]] == [1]


@pytest.mark.slow
def test_a_kill_right_after_an_epoch_loses_nothing_and_leaves_no_temporary_file(tmp_path, train_env):
    out = tmp_path / "run"
    args = [*TINY, "--epochs", "4", "--output", str(out)]
    first = subprocess.Popen(
        [sys.executable, "-m", "envcheck.train", *args],
        cwd=REPO,
        env=train_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and first.poll() is None:
            try:  # the first instant the history shows epoch 2 (the plot is still to be drawn)
                if len(json.loads((out / "history.json").read_text())["epochs"]) >= 2:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.005)
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait(timeout=60)
    shown = [r["epoch"] for r in read_json(out / "history.json")["epochs"]]
    assert 2 <= len(shown) < 4, shown
    second = run_module("envcheck.train", *args, "--json", env=train_env)
    assert second.returncode == 0, second.stderr[-3000:]
    summary = json.loads(second.stdout)
    assert summary["resumed_from_epoch"] >= len(shown)  # no epoch the history showed was trained again
    assert [r["epoch"] for r in read_json(out / "history.json")["epochs"]] == [1, 2, 3, 4]
    assert not [p.name for p in out.rglob(".*")]  # nothing temporary left, not even by the kill


def _can_mount_a_small_disk() -> bool:
    if shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        return False
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
        capture_output=True,
        timeout=30,
    )
    return done.returncode == 0


def _train_on_a_small_disk(tmp_path, train_env, size: str):
    disk = tmp_path / "disk"
    disk.mkdir()
    command = (
        'disk="$0"; python="$1"; shift; mount -t tmpfs -o size=%s tmpfs "$disk" && "$python" -m envcheck train "$@"; '
        'code=$?; ls -A "$disk/run" "$disk/run/resume" 2>&1; exit $code'.replace("%s", str(size))
    )
    return subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            command,
            str(disk),
            sys.executable,
            *TINY,
            "--epochs",
            "3",
            "--output",
            str(disk / "run"),
        ],
        cwd=REPO,
        env=train_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.skipif(not _can_mount_a_small_disk(), reason="cannot mount a small tmpfs in a user namespace here")
@pytest.mark.parametrize("size, kept", [("4m", "No epoch is kept yet"), ("30m", "Epoch 1 is kept")])
def test_a_full_disk_is_one_line_and_exit_1_saying_what_was_kept(tmp_path, train_env, size, kept):
    train_env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    done = _train_on_a_small_disk(tmp_path, train_env, size)
    # Every line envcheck says but the run's header (what it trains on, and how fast: before the first step).
    errors = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("envcheck:") and not line.startswith("envcheck: training MiniGoogLeNet")
    ]
    assert done.returncode == 1, done.stderr[-3000:]
    assert len(errors) == 1 and "cannot write the epoch's outputs (No space left on device" in errors[0], done.stderr[
        -3000:
    ]
    assert kept in errors[0]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert ".tmp-" not in done.stdout  # the listing of the folder: no temporary file left


@pytest.mark.slow
def test_a_write_that_fails_inside_h5py_is_one_line_not_a_crash(tmp_path, train_env):
    """Past envcheck's own space check (a file-size limit here): h5py's failure and its clean-up."""

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (5 << 20, 5 << 20))

    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", "train", *TINY, "--epochs", "2", "--output", str(out)],
        cwd=REPO,
        env=train_env,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=limit_file_size,
    )
    assert done.returncode == 1, done.stderr[-3000:]  # not 3 (internal error), not 139 (SIGSEGV)
    assert "cannot write the epoch's outputs (File too large)" in done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert not [p.name for p in out.rglob(".*")]
