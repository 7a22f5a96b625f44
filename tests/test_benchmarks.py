"""Every benchmark script still runs, with tiny sizes; their figures are printed, never asserted.

The training benchmarks run TensorFlow in subprocesses (marked slow); run_all.sh is checked with
bash's own parser and its dry run, and the summary table with result files written here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"


def load_script(name: str):
    """A benchmark script as a module, without putting benchmarks/ on sys.path."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


summary = load_script("summary")


def run_script(tmp_path: Path, script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["ENVCHECK_CACHE_DIR"] = str(tmp_path / "envcheck-cache")
    env["KERAS_HOME"] = str(tmp_path / "keras-home")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("TF_CONFIG", None)
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@pytest.mark.slow
def test_input_pipeline_prints_every_column_and_its_ratio_to_the_posts_image_data_generator(tmp_path):
    pytest.importorskip("tensorflow")
    done = run_script(tmp_path, "input_pipeline.py", "--images", "128", "--rounds", "1", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    columns = result["columns"]
    assert {"numpy_flow", "trainer_per_step", "trainer_as_fit", "trainer_pipeline", "tf_data_alone"} <= set(columns)
    assert "fit runs 11 steps per call" in result["augmentation_device"]  # the post's 781-step epoch
    if _has("tf_keras") and _has("scipy"):
        assert result["ratios_against"] == "image_data_generator"
        assert columns["image_data_generator"]["ratio"] == 1.0
    for column in columns.values():
        assert column["images_per_second"] > 0 and column["ratio"] > 0
    # What the script prints without --json, from the same figures (one TensorFlow run for both).
    text = load_script("input_pipeline").text_of(result)
    assert "trainer: tf.data + layers" in text and "ratios against" in text


@pytest.mark.slow
def test_post_trainer_runs_the_posts_train_py_and_envcheck_train_and_prints_the_ratio(tmp_path):
    pytest.importorskip("tensorflow")
    pytest.importorskip("tf_keras")
    pytest.importorskip("scipy")
    done = run_script(
        tmp_path,
        "post_trainer.py",
        "--images",
        "128",
        "--val-images",
        "64",
        "--steps",
        "1",
        "--rounds",
        "1",
        "--json",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for name in ("post", "envcheck"):
        medians = result["medians"][name]
        assert "error" not in medians, medians
        assert medians["images_per_second_epoch_2"] > 0 and medians["seconds_to_steps"] > 0
    speedup = result["envcheck_speedup"]
    assert set(speedup) == {"images_per_second_epoch_2", "seconds_to_steps", "wall_seconds", "cpu_seconds", "rounds"}
    assert len(speedup["rounds"]) == 1 and speedup["rounds"][0] > 0
    assert result["steps"] == 2
    run = result["runs"]["envcheck"][0]
    assert run["load_average"] >= 0 and run["steps_per_execution"] == 1 and run["precision"]
    for each in (result["runs"]["post"][0], run):
        # Each run's own CPU time (a process that trains uses seconds of it), and the load after it.
        assert each["cpu_seconds"] > 1 and each["load_average_after"] >= 0


def test_the_posts_minigooglenet_in_tf_keras_has_the_posts_parameter_count():
    keras = pytest.importorskip("tf_keras")
    from envcheck.train.model import MINI_GOOGLENET_PARAMETERS

    model = load_script("post_trainer").mini_googlenet(keras, width=32, height=32, depth=3, classes=10)
    assert model.count_params() == MINI_GOOGLENET_PARAMETERS


@pytest.mark.slow
def test_train_throughput_runs_one_variant(tmp_path):
    pytest.importorskip("tensorflow")
    done = run_script(
        tmp_path,
        "train_throughput.py",
        "--steps",
        "1",
        "--batch-per-replica",
        "8",
        "--gpus",
        "0",
        "--variants",
        "fp32,auto",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    variants = json.loads(done.stdout)["variants"]
    for variant in variants.values():
        assert "error" not in variant, variant
        assert variant["images_per_second"] > 0 and variant["per_replica_vs_post_titan_x"] > 0
    # The post's configuration is what it says; "auto" is what envcheck train chose on this machine.
    assert variants["fp32"]["precision"] == "float32" and variants["fp32"]["jit"] is False
    assert variants["fp32"]["steps_per_execution"] == 1


@pytest.mark.parametrize(
    "script, args",
    [
        ("cli_startup.py", ["--runs", "1"]),
        ("matrix_load.py", ["--runs", "1"]),
        ("rules_judge.py", ["--repeat", "1"]),
    ],
)
def test_the_quick_benchmarks_run(tmp_path, script, args):
    done = run_script(tmp_path, script, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize(
    "script, args",
    [
        ("doctor.py", ["--runs", "1", "--quick-runs", "1"]),
        ("explain_large.py", ["--mb", "0.05", "--repeat", "1"]),
    ],
)
def test_the_slower_benchmarks_run(tmp_path, script, args):
    done = run_script(tmp_path, script, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_run_all_is_valid_bash():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    done = subprocess.run([bash, "-n", str(BENCHMARKS / "run_all.sh")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_run_all_dry_run_lists_every_training_benchmark_with_the_data(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    env = {**os.environ, "PYTHON": sys.executable, "GPUS": "2"}
    done = subprocess.run(
        [bash, str(BENCHMARKS / "run_all.sh"), "--dry-run", "--quick", "--data", "cifar.tar.gz"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    commands = [line for line in done.stderr.splitlines() if line.startswith("== ")]
    names = [line.split(":", 1)[0][3:] for line in commands]
    assert names == [
        "input_pipeline", "post_trainer", "train_throughput_1", "train_throughput_all", "validate",
        "validate_scaling", "speed_1", "speed_all",
    ]  # fmt: skip
    assert "--gpus 1" in commands[2] and "--gpus" not in commands[3]
    assert "validate --scaling" in commands[5] and "--json" in commands[5] and "--plot" in commands[5]
    speed = {name: line for name, line in zip(names, commands) if name.startswith("speed_")}
    assert "--gpus 1" in speed["speed_1"] and "fp32" in speed["speed_1"] and "auto" in speed["speed_1"]
    assert "--gpus 2" in speed["speed_all"]
    for line in commands:
        if line.startswith(("== input_pipeline:", "== post_trainer:", "== validate:")):
            assert "--data cifar.tar.gz" in line and "--json" in line
    unknown = subprocess.run(
        [bash, str(BENCHMARKS / "run_all.sh"), "--frobnicate"], capture_output=True, text=True, env=env, check=False
    )
    assert unknown.returncode == 2 and "unknown argument" in unknown.stderr


def test_summary_makes_one_table_and_marks_what_failed(tmp_path):
    (tmp_path / "input_pipeline.json").write_text(
        json.dumps(
            {
                "date": "2026-12-01",
                "machine": "a test machine",
                "data": "synthetic",
                "ratios_against": "image_data_generator",
                "columns": {
                    "image_data_generator": {"images_per_second": 2000.0, "ratio": 1.0},
                    "trainer_pipeline": {"images_per_second": 50000.0, "ratio": 25.0},
                },
            }
        )
    )
    (tmp_path / "post_trainer.json").write_text(
        json.dumps(
            {
                "steps": 40,
                "medians": {
                    "post": {"images_per_second_epoch_2": 100.0, "seconds_to_steps": 30.0, "wall_seconds": 50.0},
                    "envcheck": {"images_per_second_epoch_2": 150.0, "seconds_to_steps": 20.0, "wall_seconds": 40.0},
                },
                "envcheck_speedup": {"images_per_second_epoch_2": 1.5, "seconds_to_steps": 1.5, "wall_seconds": 1.25},
            }
        )
    )
    (tmp_path / "train_throughput_1.json").write_text("")  # the run died before printing
    (tmp_path / "train_throughput_1.log").write_text("Traceback ...")
    (tmp_path / "train_throughput_all.skipped").write_text("fewer than 2 GPUs")
    (tmp_path / "validate.json").write_text(
        json.dumps({"checks": [{"name": "matmul on CPU:0", "passed": True, "summary": "max error 1e-7"}]})
    )
    speed = {
        "replicas": 1,
        "devices": ["GPU:0"],
        "images_per_second": 1587.4,
        "images_per_second_per_replica": 1587.4,
        "precision": "mixed_bfloat16",
        "jit": False,
        "steps_per_execution": 50,
    }
    (tmp_path / "speed_1.json").write_text(json.dumps({"variants": {"auto": speed}}))
    every = {**speed, "replicas": 4, "devices": ["GPU:0", "GPU:1", "GPU:2", "GPU:3"], "images_per_second": 5714.6}
    (tmp_path / "speed_all.json").write_text(json.dumps({"variants": {"auto": every}}))
    table = summary.render(summary.summary_rows(tmp_path) + summary.scaling_row(tmp_path))
    assert "2.00x the post's Titan X" in table  # 1,587.4 against 793.7 images/s
    assert "auto: 4 GPUs / 1" in table and "3.60x" in table and "post: 3.9x on 4 Titan X; 90% of linear" in table
    assert "25.0x the post's" in table and "post's ImageDataGenerator (tf_keras)" in table
    assert "1.50x images/s" in table and "1.50x as fast to the steps" in table
    assert "failed" in table and "train_throughput_1.log" in table
    assert "skipped" in table and "PASS" in table
    assert summary.main([str(tmp_path)]) == 0
    assert summary.main([str(tmp_path / "absent")]) == 2
