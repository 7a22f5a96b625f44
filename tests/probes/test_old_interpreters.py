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
    out = subprocess.run([vermin, "-t=3.6-", "--no-tips", "--violations", str(INTERPRETER_SCRIPT), str(WORKER_SCRIPT)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_the_interpreter_probe_runs_there_and_lists_packages(version):
    python = interpreter(version)
    out = subprocess.run([str(python), "-I", str(INTERPRETER_SCRIPT), "--requires-of", "tensorflow"], capture_output=True, text=True, timeout=60)
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
