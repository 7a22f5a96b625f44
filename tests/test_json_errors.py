"""A run that asks for --json gets one JSON document on stdout whatever happens: a failure is the
envelope (schema_version, envcheck_version, command, exit_code) with the error; stderr still has
the one line for a person."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(python, *args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([str(python), "-m", "envcheck", *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_validate_json_without_tensorflow_writes_the_envelope_with_the_error(tmp_path):
    """envcheck in an interpreter of its own without TensorFlow (a real venv, nothing installed)."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = run(venv / "bin" / "python", "validate", "--json")
    assert done.returncode == 2
    document = json.loads(done.stdout)
    assert list(document)[:4] == ["schema_version", "envcheck_version", "command", "exit_code"]
    assert document["command"] == "validate" and document["exit_code"] == 2
    assert "needs numpy, tensorflow" in document["error"]
    assert f"{venv / 'bin' / 'python'} -m pip install" in document["error"]  # that interpreter's own pip
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("envcheck: error: ")
    without = run(venv / "bin" / "python", "validate")
    assert without.stdout == "" and without.returncode == 2  # no --json: the line on stderr only


def test_a_bad_snapshot_with_json_is_still_one_document(tmp_path):
    bad = tmp_path / "not-a-snapshot.json"
    bad.write_text("{")
    for args in (("doctor", "--json", "--facts", str(bad)), ("plan", "--format", "json", "--facts", str(bad))):
        done = run(sys.executable, *args)
        document = json.loads(done.stdout)
        assert document["exit_code"] == done.returncode == 2 and document["command"] == args[0]
        assert str(bad) in document["error"]


def test_a_usage_error_with_json_is_a_document_too():
    done = run(sys.executable, "matrix", "tf", "2.15", "--json", "--bogus")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"].startswith("matrix tf: unrecognized argument")
