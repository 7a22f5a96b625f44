"""Printed envcheck commands run as printed: the plain word where it resolves to this installation,
else the script's full path, else python -m envcheck."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from envcheck import invocation


def fresh(monkeypatch, argv0, which):
    invocation.envcheck_word.cache_clear()
    monkeypatch.setattr(sys, "argv", [argv0])
    monkeypatch.setattr(invocation.shutil, "which", lambda name: which)


def test_the_word_stays_when_it_is_this_installation(monkeypatch):
    script = str(Path(sys.executable).with_name("envcheck"))
    fresh(monkeypatch, script, script)
    assert invocation.runnable("envcheck plan") == "envcheck plan"


def test_a_script_run_by_path_is_printed_by_path(monkeypatch, tmp_path):
    script = tmp_path / "my venv" / "bin" / "envcheck"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    fresh(monkeypatch, str(script), None)
    assert invocation.runnable("envcheck plan") == f"'{script}' plan"
    line = invocation.runnable("python -c 'x' 2>&1 | envcheck explain -")
    assert line.endswith(f"| '{script}' explain -")
    assert invocation.runnable("envcheck doctor", "powershell") == f"& '{script}' doctor"


def test_python_m_envcheck_otherwise(monkeypatch):
    fresh(monkeypatch, "-c", None)
    assert (
        invocation.runnable("envcheck doctor --tf-timeout 600")
        == f"{sys.executable} -m envcheck doctor --tf-timeout 600"
    )
    assert invocation.runnable("echo envcheckish") == "echo envcheckish"  # only the command word


def test_the_readme_quick_start_prints_runnable_commands(tmp_path):
    """.venv/bin/envcheck doctor without the venv on PATH: every envcheck command it prints runs."""
    script = Path(sys.executable).with_name("envcheck")
    if not script.exists():
        import pytest

        pytest.skip("no envcheck console script beside this interpreter")
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    facts = Path(__file__).parent / "fixtures" / "facts" / "linux_cuda_build_no_gpu.json"
    out = subprocess.run([str(script), "doctor", "--facts", str(facts)], capture_output=True, text=True, env=env).stdout
    assert f"Details: {script} doctor --facts {facts} -v" in out
    invocation.envcheck_word.cache_clear()
