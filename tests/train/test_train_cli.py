"""envcheck train's flags: bad values are one line and exit 2; no TensorFlow until it is needed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from train_helpers import REPO

from envcheck.errors import EXIT_USAGE


@pytest.fixture(autouse=True)
def no_keras_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TF_CONFIG", raising=False)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--epochs", "-1"], "--epochs: must be at least 1, got -1"),
        (["--subset", "0"], "--subset: must be at least 1"),
        (["--cpu-replicas", "0"], "--cpu-replicas: must be at least 1"),
        (["--gpus", "-2"], "--gpus: must be at least 0"),
        (["--batch-per-replica", "ten"], "expected a whole number, got 'ten'"),
        (["--lr", "-0.1"], "--lr: must be a positive number"),
        (["--lr", "nan"], "--lr: must be a positive number"),
        (["--preset", "slow"], "--preset: unknown choice 'slow'"),
        (["--synthetic", "--data", "x"], "not allowed with argument"),
        (["--data", "no/such/folder"], "--data no/such/folder: no such file or folder"),
        (["--gpus", "2", "--cpu-replicas", "2"], "exclude each other"),
        (["--gpus", "2", "--cpu-replicas", "1"], "exclude each other"),  # used to train on the CPU silently
        (["--synthetic", "--jit", "--cpu-replicas", "2"], "--jit with --cpu-replicas"),
        (["--multi-worker"], "--multi-worker needs a cluster: neither TF_CONFIG nor SLURM"),
        # An empty path used to mean the current folder: outputs written into it, data searched below it.
        (["--data", ""], "--data/--data-dir: needs a path, got an empty string"),
        (["--synthetic", "--output", ""], "--output/-o: needs a path, got an empty string"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(cli, args, message):
    result = cli("train", *args)
    assert result.code == EXIT_USAGE
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_multi_worker_with_cpu_replicas_is_refused(cli, monkeypatch):
    # MultiWorkerMirroredStrategy uses one CPU per worker: the split used to be ignored silently.
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 0}}')
    result = cli("train", "--multi-worker", "--synthetic", "--cpu-replicas", "2")
    assert result.code == EXIT_USAGE and "--multi-worker with --cpu-replicas" in result.err


def test_a_malformed_tf_config_is_one_line(cli, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 3}}')
    result = cli("train", "--multi-worker", "--synthetic")
    assert result.code == EXIT_USAGE and "TF_CONFIG's task is worker 3, but the cluster has 1 worker" in result.err


def test_missing_cifar10_is_one_line_saying_where_it_looked(cli, tmp_path):
    result = cli("train", "--output", str(tmp_path / "out"))
    assert result.code == EXIT_USAGE
    assert "CIFAR-10 not found" in result.err and str(tmp_path / "keras-home") in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_more_gpus_than_the_machine_has_names_what_is_there(monkeypatch):
    tf = pytest.importorskip("tensorflow")
    from envcheck.errors import UsageError
    from envcheck.train import strategy

    two = [tf.config.PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(2)]
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: two if kind == "GPU" else [])
    with pytest.raises(UsageError) as caught:
        strategy.select_gpus(4)
    assert str(caught.value) == (
        "--gpus 4: this machine has 2 GPUs TensorFlow can see (/physical_device:GPU:0, /physical_device:GPU:1)"
    )


def test_gpus_are_chosen_through_envcheck_runtime_with_memory_growth(monkeypatch):
    tf = pytest.importorskip("tensorflow")
    runtime = pytest.importorskip("envcheck.runtime")
    from envcheck.train import strategy

    four = [tf.config.PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(4)]
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: four if kind == "GPU" else [])
    calls = []

    def configure(**kwargs):
        calls.append(kwargs)
        return [tf.config.LogicalDevice(f"/device:GPU:{i}", "GPU") for i in kwargs["gpus"]]

    monkeypatch.setattr(runtime, "configure", configure)
    assert strategy.select_gpus(2) == ["/device:GPU:0", "/device:GPU:1"]
    assert calls == [{"gpus": [0, 1], "memory_growth": True, "fallback": "error"}]


def test_more_gpus_on_a_machine_without_any_points_at_the_doctor(cli, monkeypatch):
    tf = pytest.importorskip("tensorflow")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    result = cli("train", "--synthetic", "--subset", "8", "--gpus", "4")
    assert result.code == EXIT_USAGE
    assert "--gpus 4: this machine has no GPU that TensorFlow can see (run `envcheck doctor`" in result.err


def test_help_and_flag_checks_do_not_import_tensorflow():
    code = (
        "import sys\n"
        "from envcheck.cli import main\n"
        "for args in (['train', '--help'], ['validate', '--help'], ['train', '--epochs', '0']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "import envcheck.train, envcheck.train.data, envcheck.train.config, envcheck.train.schedule\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert "--cpu-replicas" in result.stdout and "--multi-worker" in result.stdout and "--level" in result.stdout


def test_the_module_entry_point_is_the_train_command(train_env):
    result = subprocess.run(
        [sys.executable, "-m", "envcheck.train", "--epochs", "0"],
        cwd=REPO,
        env=train_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == EXIT_USAGE and "--epochs: must be at least 1" in result.stderr


def test_an_output_folder_that_cannot_be_written_is_refused_before_training(cli, tmp_path):
    # Used to train a whole epoch and then fail with an internal error at the first save.
    (tmp_path / "a-file").write_text("x")
    result = cli("train", "--synthetic", "--subset", "8", "--output", str(tmp_path / "a-file" / "run"))
    assert result.code == EXIT_USAGE
    assert "cannot be created" in result.err and "is a file" in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_the_output_check_creates_nothing(tmp_path):
    from envcheck.errors import UsageError
    from envcheck.train.outputs import check_output_folder

    check_output_folder(tmp_path / "not" / "yet")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="exists and is not a folder"):
        check_output_folder(tmp_path / "f")


def test_a_resume_with_another_seed_is_another_run(tmp_path):
    # The seed orders the data, and for --synthetic it makes the images: a resume must keep it.
    from envcheck.train.config import TrainConfig

    assert TrainConfig(output=tmp_path, seed=0).resume_key() != TrainConfig(output=tmp_path, seed=5).resume_key()
