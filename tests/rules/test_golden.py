"""Golden output: what a person sees for the named machines, in the terminal and as a bug report.

A deliberate change of wording or layout updates the files:
ENVCHECK_UPDATE_GOLDEN=1 python -m pytest tests/rules/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envcheck.render.markdown import render as render_markdown
from envcheck.render.terminal import render as render_terminal
from envcheck.verdict import judge

from . import builders as b

GOLDEN = Path(__file__).resolve().parent / "golden"
MACHINES = {"setup_post_win10": b.setup_post, "multi_gpu_server": b.server, "linux_cuda_build_no_gpu": b.no_gpu}


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ENVCHECK_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"{path.name} missing: run with ENVCHECK_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_terminal_output(machine):
    check(f"{machine}.txt", render_terminal(judge(MACHINES[machine]()), color=False))


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_markdown_report(machine):
    check(f"{machine}.md", render_markdown(judge(MACHINES[machine]())))
