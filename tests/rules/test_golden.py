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
WIDTHS = (60, 80, 120)


@pytest.fixture(autouse=True)
def plain_envcheck_word(monkeypatch):
    """Golden files print envcheck commands as a user with envcheck on PATH sees them."""
    from envcheck import invocation

    monkeypatch.setattr(invocation, "envcheck_word", lambda shell_name="bash": "envcheck")


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ENVCHECK_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"{path.name} missing: run with ENVCHECK_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_terminal_output(machine, width):
    text = render_terminal(judge(MACHINES[machine]()), color=False, width=width)
    check(f"{machine}.{width}.txt", text)
    # The report fits the width, except commands, which are printed whole so a copied line runs.
    commands = {c.line for c in _commands(judge(MACHINES[machine]()))}
    assert all(len(line) <= width or line.strip() in commands or " " not in line.strip() for line in text.splitlines())


def _commands(report):
    for step in (*report.verdict.gpu_path, *report.verdict.cpu_path):
        yield from step.commands
    for finding in report.findings:
        if finding.fix is not None:
            yield from finding.fix.commands


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_every_printed_command_parses_in_its_shell(machine, tmp_path):
    """Every command of the report, as the terminal shows it, is one command its shell can parse:
    bash -n for bash (and "any"), PowerShell's parser for PowerShell where pwsh is installed."""
    import shutil
    import subprocess

    report = judge(MACHINES[machine]())
    text = render_terminal(report, color=False, width=80, verbose=True)
    pwsh = shutil.which("pwsh")
    for command in _commands(report):
        assert command.line in text  # printed whole, on a line of its own
        if command.shell in ("bash", "any"):
            done = subprocess.run(["bash", "-n", "-c", command.line], capture_output=True, text=True)
            assert done.returncode == 0, (command.line, done.stderr)
        if command.shell in ("powershell", "any") and pwsh:
            script = tmp_path / "check.ps1"
            script.write_text(command.line)
            check_parse = (
                "$errors = $null; [System.Management.Automation.Language.Parser]::ParseFile("
                f"'{script}', [ref]$null, [ref]$errors) | Out-Null; if ($errors) {{ $errors | ForEach-Object {{ $_.Message }}; exit 1 }}"
            )
            done = subprocess.run([pwsh, "-NoProfile", "-Command", check_parse], capture_output=True, text=True)
            assert done.returncode == 0, (command.line, done.stdout, done.stderr)


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_markdown_report(machine):
    check(f"{machine}.md", render_markdown(judge(MACHINES[machine]())))
