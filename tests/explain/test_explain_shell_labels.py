"""A message from another system's shell (a Windows DLL message explained on Linux) shows that
shell's commands under its name, as they run: no prompt, no label pasted along with a command."""

from __future__ import annotations

import re

SNAPSHOT = "tests/fixtures/facts/linux_cuda_build_no_gpu.json"
WINDOWS_MESSAGE = "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed"


def test_powershell_commands_under_their_name_without_a_prompt(cli, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    out = cli("explain", "--facts", SNAPSHOT, WINDOWS_MESSAGE).out
    lines = out.splitlines()
    where = [i for i, line in enumerate(lines) if line.strip() == "where.exe cudart64_100.dll"]
    assert where, out
    for i in where:  # under an "In PowerShell:" line, indented below it
        label = next(j for j in range(i, -1, -1) if lines[j].strip().endswith(":") and "PowerShell" in lines[j])
        assert lines[label].strip() == "In PowerShell:"
        assert len(lines[i]) - len(lines[i].lstrip()) > len(lines[label]) - len(lines[label].lstrip())
    assert not any(re.match(r"^\s*\$ ", line) for line in lines)
    assert not any(line.rstrip().endswith("(PowerShell)") for line in lines)
