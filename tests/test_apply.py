"""``doctor --apply``: the pip steps of a way forward, for real, in a throwaway virtual environment.

The venv gets a locally built placeholder ``tensorflow-gpu`` wheel and pip reads only a local folder
(PIP_NO_INDEX, PIP_FIND_LINKS), so nothing here touches the network.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from envcheck.commands.apply import apply_path, pip_steps
from envcheck.errors import UsageError
from envcheck.verdict import judge

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def build_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal, valid pure-Python wheel with one empty module."""
    stem = f"{name.replace('-', '_')}-{version}"
    dist_info = f"{stem}.dist-info"
    files = {
        f"{name.replace('-', '_')}_placeholder/__init__.py": b"",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: envcheck-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("apply")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    python = root / "venv" / "bin" / "python"
    wheels = root / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "tensorflow-gpu", "2.12.0")
    build_wheel(wheels, "tensorflow", "2.12.0")
    build_wheel(wheels, "tensorflow-cpu", "2.12.0")
    empty = root / "empty"
    empty.mkdir()
    build_wheel(empty, "tensorflow-gpu", "2.12.0")
    return python, wheels, empty


def installed(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m; print('\\n'.join(f'{d.metadata[\"Name\"]}=={d.version}' for d in m.distributions()))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("==", 1) for line in out.split())


def pip_env(links: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(links),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def reset(python: Path, links: Path) -> None:
    """Back to the broken state: only the tensorflow-gpu placeholder installed."""
    subprocess.run(
        [str(python), "-m", "pip", "uninstall", "-y", "-q", "tensorflow", "tensorflow-cpu", "tensorflow-gpu"],
        env=pip_env(links),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "tensorflow-gpu==2.12.0"],
        env=pip_env(links),
        check=True,
        capture_output=True,
    )


def doctor(python: Path, links: Path, *extra: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--quick", "--python", str(python), *extra],
        capture_output=True,
        text=True,
        env=pip_env(links),
        cwd=str(REPO),
        stdin=stdin,
        timeout=300,
    )


@pytest.mark.slow
def test_apply_cpu_runs_the_pip_steps_and_judges_again(venv):
    python, wheels, _ = venv
    reset(python, wheels)
    proc = doctor(python, wheels, "--apply", "cpu", "--yes")
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    # The steps are shown before they run, with the venv's own interpreter.
    assert out.index("-m pip uninstall -y tensorflow-gpu") < out.index("[1/2]")
    # The CPU twin of the installed release (the matrix knows 2.12 has wheels for this Python, and
    # tensorflow-cpu is the CPU build on x86-64 Linux).
    assert f"{python} -m pip install tensorflow-cpu==2.12.0" in out
    # tensorflow-cpu has no CUDA code, so no step needs to hide a GPU (and none is left to do by hand).
    assert "CUDA_VISIBLE_DEVICES" not in out
    assert installed(python).get("tensorflow-cpu") == "2.12.0" and "tensorflow-gpu" not in installed(python)
    before, after = [line for line in out.splitlines() if line.startswith(("Before:", "After:"))]
    # The placeholder and the mix are gone: fewer findings after than before.
    assert before != after, (before, after)


@pytest.mark.slow
def test_a_failing_step_stops_the_rest_and_says_what_was_done(venv):
    python, wheels, empty = venv
    reset(python, wheels)
    proc = doctor(python, empty, "--apply", "cpu", "--yes")  # no tensorflow wheel to install from
    assert proc.returncode == 1
    out = proc.stdout
    assert "Step 2 failed" in out
    assert "ok      " in out and "uninstall -y tensorflow-gpu" in out.split("ok      ")[1].splitlines()[0]
    assert "FAILED  " in out and "install tensorflow-cpu==2.12.0" in out.split("FAILED  ")[1].splitlines()[0]
    assert "After:" not in out
    assert "tensorflow-gpu" not in installed(python) and "tensorflow-cpu" not in installed(python)


@pytest.mark.slow
def test_without_a_terminal_and_without_yes_nothing_changes(venv):
    python, wheels, _ = venv
    reset(python, wheels)
    proc = doctor(python, wheels, "--apply", "cpu")
    assert proc.returncode == 2
    assert "--yes" in proc.stderr and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert installed(python).get("tensorflow-gpu") == "2.12.0"


# --- in-process: the decisions around the runs ---------------------------------------------------


def _args(**kw):
    base = dict(facts=None, apply="cpu", yes=False, json=False, markdown=False, verbose=False)
    base.update(kw)
    return argparse.Namespace(**base)


def _report():
    from rules import builders

    return judge(builders.setup_post())


def test_answering_no_changes_nothing(capsys):
    import io

    out = io.StringIO()
    code = apply_path(_args(), _report(), out=out, ask=lambda prompt: "n", interactive=True)
    text = out.getvalue()
    assert "Run these 2 steps? " not in text  # the prompt goes to the asker, not the log
    assert "Nothing was changed." in text and code == 1
    assert "uninstall -y tensorflow-gpu" in text and "install tensorflow==1.13.1" in text


def test_refuses_a_snapshot_and_machine_readable_output():
    with pytest.raises(UsageError, match="--facts"):
        apply_path(_args(facts="x.json"), _report())
    with pytest.raises(UsageError, match="--json"):
        apply_path(_args(json=True), _report())
    with pytest.raises(UsageError, match="--yes"):
        apply_path(_args(), _report(), interactive=False)


def test_gpu_path_without_pip_steps_only_lists_the_manual_ones():
    import io

    out = io.StringIO()
    code = apply_path(_args(apply="gpu"), _report(), out=out, interactive=False)
    text = out.getvalue()
    assert "has no pip steps to run" in text and "Install CUDA 10.0" in text and code == 1


def test_pip_steps_keep_order_and_leave_shell_steps_manual():
    steps, manual = pip_steps(_report().verdict.cpu_path)
    assert [s.args for s in steps] == [("uninstall", "-y", "tensorflow-gpu"), ("install", "tensorflow==1.13.1")]
    assert manual == []  # the CPU build of 1.13 has no CUDA: no shell step is left to do by hand


def test_end_of_input_at_the_question_is_a_no():
    import io

    def ctrl_d(prompt):
        raise EOFError

    out = io.StringIO()
    code = apply_path(_args(), _report(), out=out, ask=ctrl_d, interactive=True)
    assert "Nothing was changed." in out.getvalue() and code == 1


def test_ctrl_c_during_a_step_says_what_was_and_was_not_done(monkeypatch):
    import io

    import envcheck.commands.apply as apply_module

    calls = []

    def fake_pip(python, args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return 0, None

    monkeypatch.setattr(apply_module, "_run_pip", fake_pip)
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        apply_path(_args(yes=True), _report(), out=out)
    text = out.getvalue()
    assert "Step 2 interrupted" in text
    assert "ok      " in text and "uninstall -y tensorflow-gpu" in text.split("ok      ")[1].splitlines()[0]
    assert "STOPPED " in text and "install tensorflow==1.13.1" in text.split("STOPPED ")[1].splitlines()[0]
