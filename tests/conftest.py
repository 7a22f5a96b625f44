"""Shared test helpers: run the CLI in-process or as a subprocess, build snapshots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"

# The tests are the same however pytest was started: a width comes from the test that needs one,
# never from the runner. pytest imports readline at start-up, and GNU readline exports the
# terminal's size (80x24 without a terminal) as COLUMNS and LINES into the process's environment
# behind os.environ's back: subprocesses and pytest-xdist's workers inherit COLUMNS=80, and a
# shell's exported COLUMNS would do the same. Both are removed here, from os.environ and from the
# environment subprocesses inherit.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
    os.unsetenv(_name)

# The same for Ctrl-C: a shell that starts pytest in the background (`... &`, nohup, a CI runner's
# script) starts it with SIGINT ignored, and every process a test starts inherits that, so the
# tests that send a run SIGINT would see it carry on. Python's own handler instead: a process
# started after exec gets the default, and Python in it raises KeyboardInterrupt as at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _keras_global_policy_kept():
    """A test that runs the trainer in this process (prepare sets Keras' global dtype policy to
    what the speed plan chose, mixed_bfloat16 on a CPU described as having AVX512_BF16) leaves the
    policy as it found it: layers a later test builds without a dtype would otherwise compute in
    bfloat16 (found under pytest-xdist, where another file ran first in the same worker)."""
    keras = sys.modules.get("keras")
    before = keras.mixed_precision.global_policy().name if keras is not None else None
    yield
    keras = sys.modules.get("keras")
    if keras is not None and keras.mixed_precision.global_policy().name != (before or "float32"):
        keras.mixed_precision.set_global_policy(before or "float32")


def pytest_collection_modifyitems(config, items):
    """Files with slow tests first, each file's tests in their own order: pytest-xdist hands out
    whole files (--dist loadfile, in this order: --no-loadscope-reorder), so the minutes-long ones
    start at once and the many short ones fill in around them, instead of one long file starting
    last while the other workers have nothing left to do."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # a stable sort: the order within a file stays


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def plain_envcheck_word(monkeypatch):
    """Printed envcheck commands as a user with envcheck on PATH sees them (the documents' form)."""
    from envcheck import invocation

    monkeypatch.setattr(invocation, "envcheck_word", lambda shell_name="bash": "envcheck")


@pytest.fixture
def cli(capsys):
    """Run ``envcheck ARGS`` in-process; returns exit code, stdout, stderr."""
    from envcheck.cli import main

    def run(*args: str) -> CliResult:
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_envcheck(*args: str, env: dict | None = None, input: str | None = None, timeout: float = 300) -> CliResult:
    """Run ``python -m envcheck ARGS`` as a real subprocess (for exit codes and stdout/stderr)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=timeout,
        cwd=str(REPO),
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def envcheck_proc():
    return run_envcheck
