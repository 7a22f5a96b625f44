"""A kernel's own settings (kernel.json's ``env``) reach the kernel's interpreter and nothing else:
envcheck's child that runs the doctor is isolated (``python -I``, only the variables envcheck
needs), and the report says which variables the kernel's interpreter was checked with."""

from __future__ import annotations

import json
import os
import sys
import venv
from pathlib import Path

import pytest

from envcheck.scan.discover import places_from
from envcheck.scan.result import scan
from envcheck.scan.run import OK


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def kernel_machine(tmp_path_factory):
    """A home whose one Jupyter kernel sets PYTHONPATH to a folder with a sitecustomize.py that
    writes down every process that runs it, and a json.py that breaks whoever imports it; and
    LD_PRELOAD to a library that is not there."""
    root = tmp_path_factory.mktemp("isolation")
    home = root / "home"
    python = make_venv(root / "kernel-venv")
    planted = root / "planted"
    planted.mkdir()
    marker = root / "ran.txt"
    (planted / "sitecustomize.py").write_text(
        "import os, sys\n"
        f"with open({str(marker)!r}, 'a') as f:\n"
        "    f.write(sys.executable + ' ' + repr(sys.argv[:1]) + '\\n')\n"
    )
    (planted / "json.py").write_text("raise ImportError('the kernel folder shadowed json')\n")
    folder = home / ".local" / "share" / "jupyter" / "kernels" / "planted"
    folder.mkdir(parents=True)
    spec = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "planted",
        "language": "python",
        "env": {"PYTHONPATH": str(planted), "LD_PRELOAD": str(root / "libnot-there.so"), "CUDA_VISIBLE_DEVICES": ""},
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    environ = {"HOME": str(home), "PATH": "/usr/bin:/bin", "PYENV_ROOT": str(root / "no-pyenv")}
    return {"home": home, "python": python, "marker": marker, "environ": environ}


def test_a_kernels_settings_reach_its_interpreter_and_never_envcheck(kernel_machine):
    m = kernel_machine
    places = places_from(m["environ"], cwd=m["home"], running=None)
    result = scan(m["environ"], places, full=False, timeout=60, budget=120, jobs=1)
    kernel_env = next(e for e in result.environments if e.env)
    assert kernel_env.status == OK, kernel_env.error  # json.py in the kernel's folder broke nothing
    ran = m["marker"].read_text().splitlines() if m["marker"].exists() else []
    assert not [line for line in ran if line.startswith(sys.executable + " ")], ran  # not in envcheck
    variables = kernel_env.report["facts"]["env"]["variables"]
    assert variables["CUDA_VISIBLE_DEVICES"] == ""  # the probed interpreter was checked with them


def test_the_report_says_which_variables_the_kernel_applied(kernel_machine):
    from envcheck.render.scan import render

    m = kernel_machine
    places = places_from(m["environ"], cwd=m["home"], running=None)
    result = scan(m["environ"], places, full=False, timeout=60, budget=120, jobs=1)
    text = " ".join(render(result, home=str(m["home"]), width=120, color=False).split())
    assert "kernel 'planted' sets CUDA_VISIBLE_DEVICES, LD_PRELOAD, PYTHONPATH: applied to its interpreter only" in text
