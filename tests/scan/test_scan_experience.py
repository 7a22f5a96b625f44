"""scan as a person meets it: what it waits for while it looks and checks (in a real terminal), and
a table whose "first broken link" names something broken, never a finished CPU-only environment."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from envcheck.render.json import render as render_json
from envcheck.render.scan import row
from envcheck.scan.run import OK, Environment
from envcheck.verdict import judge
from tests.rules import builders
from tests.test_live import run_in_pty

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def environment(facts) -> Environment:
    report = json.loads(render_json(judge(facts)))
    return Environment("/home/dev/env/bin/python", "/home/dev/env", "3.11.7", "venv", status=OK, report=report)


def test_a_cpu_only_machine_without_a_gpu_has_no_broken_link():
    assert row(environment(builders.no_gpu()), home="/home/dev").first_broken == "none (CPU only)"


def test_a_cpu_only_verdict_caused_by_a_broken_link_still_names_it():
    old_driver = builders.change(builders.server(), {"nvml.driver_version": "450.80.02"})
    shown = row(environment(old_driver), home="/home/dev").first_broken
    assert shown.startswith("Driver: ") and "none" not in shown


def test_a_ready_machine_has_none():
    assert row(environment(builders.server()), home="/home/dev").first_broken == "none"


@pytest.mark.slow
def test_the_scan_says_what_it_waits_for_and_counts_what_is_done(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "PYTHONPATH": str(REPO),
        "PYENV_ROOT": str(home / "no-pyenv"),
        "JUPYTER_PATH": str(home / "no-jupyter"),
        "TERM": "xterm-256color",
        "COLUMNS": "100",
    }
    chunks = run_in_pty([sys.executable, "-m", "envcheck", "scan", "--jobs", "1"], env, b"first broken link")
    text = ANSI.sub(b"", b"".join(chunks)).decode("utf-8", "replace")
    table_at = text.index("envcheck scan")
    waiting = text[:table_at]
    assert "Looking for Python environments" in waiting
    found = re.search(r"Checking (\d+) environments? with the quick doctor: 0 of \1 done", waiting)
    assert found, waiting[-500:]
    total = found.group(1)
    assert f"{total} of {total} done" in waiting or f"{int(total) - 1} of {total} done" in waiting
    assert not re.search(r"(^|[\r\n])\.{2,}", waiting)  # no bare row of dots
