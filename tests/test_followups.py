"""Every envcheck command envcheck prints runs as printed and looks at what this run looked at:
``doctor --python X`` ends with ``doctor --python X -v``, a plan's script line repeats the plan's
flags, and no command is ever split over two lines, whatever the width."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from envcheck import invocation, shell
from envcheck.invocation import Target, runnable, targeting
from envcheck.render.terminal import render
from envcheck.verdict import judge
from tests.rules import builders

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("envcheck")


@pytest.fixture
def plain_word(monkeypatch):
    monkeypatch.setattr(invocation, "envcheck_word", lambda shell_name="bash": "envcheck")


def target(command, *options, version=None):
    return Target(command, tuple(options), version)


def test_a_follow_up_of_the_same_command_keeps_every_option(plain_word):
    with targeting(target("doctor", ("--python", "/p/.venv/bin/python"), ("--quick", None))):
        assert runnable("envcheck doctor -v") == "envcheck doctor --python /p/.venv/bin/python --quick -v"
        # one that sets its own value keeps it
        assert runnable("envcheck doctor --quick -v") == "envcheck doctor --python /p/.venv/bin/python --quick -v"


def test_another_command_keeps_what_means_the_same_there(plain_word):
    doctor = target(
        "doctor", ("--python", "/p/bin/python"), ("--matrix", "m.yaml"), ("--quick", None), version="3.11.7"
    )
    with targeting(doctor):
        # explain looks at the same interpreter; plan's --python is a version: the interpreter's
        assert runnable("python -c 'x' 2>&1 | envcheck explain -").endswith(
            "| envcheck explain --python /p/bin/python --matrix m.yaml -"
        )
        assert runnable("envcheck plan") == "envcheck plan --matrix m.yaml --python 3.11"
        assert runnable("envcheck matrix tf 2.15") == "envcheck matrix --matrix m.yaml tf 2.15"
        assert runnable("envcheck scan") == "envcheck scan"


def test_a_follow_up_that_chooses_its_own_target_keeps_none_of_the_others(plain_word):
    plan = target("plan", ("--facts", "their.json"), ("--gpu", "RTX 4090"))
    with targeting(plan):
        step = "if command -v envcheck >/dev/null; then envcheck doctor --python tf-env/bin/python; fi"
        assert runnable(step) == step
        assert (
            runnable("envcheck plan --format bash") == "envcheck plan --facts their.json --gpu 'RTX 4090' --format bash"
        )


def test_values_are_quoted_for_the_line_s_shell(plain_word):
    odd = "/home/a b/it's/python"
    with targeting(target("doctor", ("--python", odd))):
        bash = runnable("envcheck doctor -v", shell.BASH)
        assert shlex.split(bash) == ["envcheck", "doctor", "--python", odd, "-v"]
        assert (
            runnable("envcheck doctor -v", shell.POWERSHELL) == "envcheck doctor --python '/home/a b/it''s/python' -v"
        )


def test_outside_a_command_nothing_is_added(plain_word):
    assert runnable("envcheck doctor -v") == "envcheck doctor -v"
    assert runnable("echo envcheck doctor") == "echo envcheck doctor"


def test_a_lookup_finds_the_program_that_runs(monkeypatch, tmp_path):
    script = tmp_path / "bin" / "envcheck"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    invocation.envcheck_word.cache_clear()
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.setattr(invocation.shutil, "which", lambda name: None)
    try:
        line = runnable("if command -v envcheck >/dev/null; then envcheck doctor; fi")
        assert line == f"if command -v {script} >/dev/null; then {script} doctor; fi"
    finally:
        invocation.envcheck_word.cache_clear()


def _user_env() -> dict:
    """A shell where envcheck is not on PATH (the README's quick start, the venv not activated)."""
    return {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "COLUMNS": "100"}


needs_script = pytest.mark.skipif(not SCRIPT.exists(), reason="no envcheck console script beside this interpreter")


@needs_script
def test_doctor_python_ends_with_details_for_that_interpreter(tmp_path):
    venv = tmp_path / "proj" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    first = subprocess.run(
        [str(SCRIPT), "doctor", "--python", str(python), "--quick"], capture_output=True, text=True, env=_user_env()
    )
    details = [line for line in first.stdout.splitlines() if "Details: " in line]
    assert details, first.stdout
    command = details[-1].split("Details: ", 1)[1]
    assert shlex.split(command) == [str(SCRIPT), "doctor", "--python", str(python), "--quick", "-v"]
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=_user_env())
    assert again.returncode == first.returncode
    assert str(python) in "".join(again.stdout.splitlines()[:2])  # the same interpreter, now in detail
    assert "Findings" in again.stdout


@needs_script
def test_the_plan_s_script_line_writes_this_plan_s_script(tmp_path):
    flags = ["--os", "windows", "--python", "3.7", "--gpu", "GeForce GTX 1060", "--driver", "417.35"]
    text = subprocess.run([str(SCRIPT), "plan", *flags], capture_output=True, text=True, env=_user_env()).stdout
    lines = text.splitlines()
    command = lines[lines.index("As a script to review and run:") + 1].strip()
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, env=_user_env())
    direct = subprocess.run(
        [str(SCRIPT), "plan", *flags, "--format", "powershell"], capture_output=True, text=True, env=_user_env()
    ).stdout
    assert (tmp_path / "install-tf.ps1").read_text() == direct


@needs_script
def test_the_plan_script_checks_with_the_envcheck_that_wrote_it(tmp_path):
    """Not on PATH, ``command -v envcheck`` would skip the check silently: the script names this one."""
    script = subprocess.run(
        [str(SCRIPT), "plan", "--cpu", "--format", "bash"], capture_output=True, text=True, env=_user_env()
    ).stdout
    check = next(line for line in script.splitlines() if line.startswith("if command -v"))
    assert check.startswith(f"if command -v {SCRIPT} >/dev/null; then {SCRIPT} doctor --python tf-env/bin/python")
    assert subprocess.run(["bash", "-n", "-c", check]).returncode == 0


# How the word reads when envcheck is on PATH, when the venv is not activated, and when it runs as
# ``python -m envcheck`` from a deep checkout (longer than a 40-column line: it must not be cut).
WORDS = ["envcheck", "/home/dev/tf-demo/.venv/bin/envcheck", "/srv/build/work/main/.venv-test/bin/python -m envcheck"]
MACHINES = {"setup_post": builders.setup_post, "server": builders.server, "no_gpu": builders.no_gpu}


@settings(max_examples=40, deadline=None)
@given(
    machine=st.sampled_from(sorted(MACHINES)),
    width=st.integers(40, 160),
    verbose=st.booleans(),
    python=st.sampled_from([None, "/home/dev/my projects/vision/.venv/bin/python"]),
    word=st.sampled_from(WORDS),
)
# The word longer than the line after "Details: " (CI ran from a deep checkout as python -m): the
# command moves to its own line whole instead of being cut after a "/".
@example(machine="no_gpu", width=40, verbose=False, python=None, word=WORDS[2])
def test_no_printed_command_is_split_over_lines(machine, width, verbose, python, word):
    report = judge(MACHINES[machine]())
    saved = invocation.envcheck_word
    invocation.envcheck_word = lambda shell_name="bash": word
    try:
        with targeting(target("doctor", *([("--python", python)] if python else []))):
            text = render(report, verbose=verbose, color=False, width=width)
            commands = [runnable("envcheck doctor -v")] if not verbose and "Also: " in text else []
            for step in (*report.verdict.gpu_path, *report.verdict.cpu_path):
                commands += [runnable(c.line, c.shell) for c in step.commands]
    finally:
        invocation.envcheck_word = saved
    lines = text.splitlines()
    for command in commands:
        assert any(command in line for line in lines), (command, text)
