"""What runs inside the probed interpreter runs on Python 3.6 and later, and an older one still
gets a clear, reduced report. Uses the real interpreters under ~/.pyenv/versions where they are."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.probes import INTERPRETER_SCRIPT
from envcheck.probes.tensorflow import WORKER_SCRIPT

PYENV = Path.home() / ".pyenv" / "versions"


def interpreter(prefix: str) -> Path:
    found = sorted(PYENV.glob(f"{prefix}.*/bin/python")) if PYENV.is_dir() else []
    if not found:
        pytest.skip(f"no Python {prefix} under {PYENV}")
    return found[-1]


def test_the_scripts_need_nothing_newer_than_python_3_6():
    vermin = shutil.which("vermin") or str(Path(sys.executable).with_name("vermin"))
    if not Path(vermin).exists():
        pytest.skip("vermin is not installed")
    out = subprocess.run(
        [vermin, "-t=3.6-", "--no-tips", "--violations", str(INTERPRETER_SCRIPT), str(WORKER_SCRIPT)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_the_interpreter_probe_runs_there_and_lists_packages(version):
    python = interpreter(version)
    out = subprocess.run(
        [str(python), "-I", str(INTERPRETER_SCRIPT), "--requires-of", "tensorflow"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["python"]["version"].startswith(version)
    assert data["packages"]["status"] == "ok" and any(d["name"] == "pip" for d in data["packages"]["distributions"])


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_the_tensorflow_worker_runs_there(version):
    python = interpreter(version)
    out = subprocess.run([str(python), str(WORKER_SCRIPT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert '"not_installed": true' in out.stdout  # no TensorFlow in a bare interpreter: said, not crashed


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_doctor_on_an_old_python_3_plans_for_it(cli, version):
    result = cli("doctor", "--quick", "--json", "--python", str(interpreter(version)))
    data = json.loads(result.out)
    assert data["facts"]["python"]["version"].startswith(version) and data["facts"]["packages"]["status"] == "ok"
    plan = data["verdict"]["plan"]
    assert data["verdict"]["status"] == "not-installed" and version in plan["python_supported"]


def test_python_2_gets_a_reduced_report(cli):
    result = cli("doctor", "--json", "--python", str(interpreter("2.7")))
    data = json.loads(result.out)
    assert result.code == 1
    assert data["facts"]["python"]["version"].startswith("2.7")
    assert data["facts"]["packages"]["status"] == "error" and "too old" in data["facts"]["packages"]["error"]
    assert data["facts"]["tensorflow"]["status"] == "skipped"
    assert data["verdict"]["finding_id"] == "EC-PY-003"


TF113_PINS = (
    "tensorflow-gpu==1.13.1", "absl-py==0.7.1", "numpy==1.16.2", "protobuf==3.7.1", "grpcio==1.19.0",
    "tensorboard==1.13.1", "tensorflow-estimator==1.13.0", "termcolor==1.1.0", "keras-applications==1.0.7",
    "keras-preprocessing==1.0.9", "astor==0.7.1", "gast==0.2.2", "six==1.12.0", "wheel==0.33.1", "markdown==3.0.1",
    "werkzeug==0.15.2", "mock==2.0.0", "pbr==5.1.3", "h5py==2.9.0", "setuptools<45",
)  # fmt: skip


@pytest.fixture(scope="session")
def setup_guide_stack():
    """The setup guide's own stack, for real: tensorflow-gpu 1.13.1 on Python 3.6 with its 2019
    dependencies pinned (pip 18 there does not skip releases that need a newer Python). Built once
    in a cache outside the repository; skipped where Python 3.6 or the package index is missing."""
    python36 = interpreter("3.6")
    cache = Path.home() / ".cache" / "envcheck-tests" / "tf-1.13.1-py36"
    python = cache / "bin" / "python"
    marker = cache / ".complete"
    if not marker.exists():
        shutil.rmtree(cache, ignore_errors=True)
        subprocess.run([str(python36), "-m", "venv", str(cache)], check=True, timeout=120)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *TF113_PINS], capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            pytest.skip(f"tensorflow-gpu 1.13.1 could not be installed here: {done.stderr.strip().splitlines()[-1:]}")
        marker.write_text("ok\n")
    return python


@pytest.mark.slow
def test_the_setup_guides_stack_is_read_and_judged(cli, setup_guide_stack):
    result = cli("doctor", "--json", "--python", str(setup_guide_stack))
    data = json.loads(result.out)
    tf = data["facts"]["tensorflow"]
    assert data["facts"]["python"]["version"].startswith("3.6")
    assert tf["error_kind"] == "import_failed" and "libcublas.so.10.0" in tf["error"]
    assert any(
        d["name"] == "tensorflow-gpu" and d["version"] == "1.13.1" for d in data["facts"]["packages"]["distributions"]
    )
    assert data["verdict"]["status"] == "broken" and "libcublas.so.10.0" in data["verdict"]["line"]
    # No GPU here: the CPU build of the same release is the way forward, with this interpreter's pip.
    steps = [c.get("pip_args") for s in data["verdict"]["cpu_path"] for c in s["commands"]]
    assert ["uninstall", "-y", "tensorflow-gpu"] in steps and ["install", "tensorflow==1.13.1"] in steps


def test_the_telling_line_of_tensorflow_1s_import_error():
    from envcheck.machine import telling_line

    error = (
        'ImportError: Traceback (most recent call last):\n  File "x.py", line 58, in <module>\n'
        "ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory\n\n\n"
        "Failed to load the native TensorFlow runtime.\n\nSee https://www.tensorflow.org/install/errors\n\n"
        "for some common reasons and solutions.  Include the entire stack trace\nabove this error message when asking for help."
    )
    assert (
        telling_line(error)
        == "ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory"
    )
    assert telling_line("no error words here\nlast line") == "last line"
