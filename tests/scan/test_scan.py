"""envcheck scan over real environments built here: venvs, a conda-shaped prefix, a pyenv folder,
kernelspec folders; each interpreter found once, with every way it was reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from envcheck.scan.discover import (
    KERNEL,
    PATH_HOW,
    PYENV,
    RUNNING,
    VIRTUALENV,
    discover,
    places_from,
)
from envcheck.scan.result import (
    KERNEL_CANNOT_START,
    NOT_AN_INTERPRETER,
    NOT_CHECKED,
    kernel_findings,
)
from envcheck.scan.run import OK, TIMED_OUT, check_all, identify


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def kernel(root: Path, name: str, spec) -> Path:
    folder = root / "kernels" / name
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return folder / "kernel.json"


def launcher(python) -> list:
    return [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """A home with a virtualenv on PATH (an activated one), a project venv, a pipx tool, a conda
    prefix (and one deleted since), a pyenv version, and Jupyter kernels good and bad."""
    root = tmp_path_factory.mktemp("machine")
    home, project, jupyter = root / "home", root / "project", root / "jupyter"
    tf = make_venv(home / ".virtualenvs" / "tf")
    project_python = make_venv(project / ".venv")
    pipx = make_venv(home / ".local" / "pipx" / "venvs" / "black")
    conda = make_venv(root / "miniconda" / "envs" / "cuda")
    (root / "miniconda" / "envs" / "cuda" / "conda-meta").mkdir()
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(
        f"{root / 'miniconda' / 'envs' / 'cuda'}\n{root / 'miniconda' / 'envs' / 'deleted'}\n"
    )
    pyenv = make_venv(root / "pyenv" / "versions" / "3.99.0")
    kernel(jupyter, "tf", {"argv": launcher(tf), "display_name": "TF", "language": "python"})
    kernel(
        jupyter,
        "tf-cpu",
        {
            "argv": launcher(tf),
            "display_name": "TF on the CPU",
            "language": "python",
            "env": {"CUDA_VISIBLE_DEVICES": ""},
        },
    )
    kernel(
        jupyter,
        "bare",
        {
            "argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3",
            "language": "python",
        },
    )
    gone = kernel(
        jupyter,
        "old-project",
        {"argv": launcher(root / "removed" / "bin" / "python"), "display_name": "Old", "language": "python"},
    )
    plain = root / "not-executable" / "bin" / "python3"
    plain.parent.mkdir(parents=True)
    plain.write_text("")
    kernel(jupyter, "noexec", {"argv": launcher(plain), "display_name": "No exec", "language": "python"})
    kernel(jupyter, "ir", {"argv": ["R", "--slave"], "display_name": "R", "language": "R"})
    broken = kernel(jupyter, "broken", "{not json")
    kernel(
        jupyter,
        "via-env",
        {"argv": ["/usr/bin/env", "python3", "-m", "ipykernel_launcher"], "display_name": "env", "language": "python"},
    )
    kernel(
        jupyter,
        "wrapper",
        {"argv": ["{resource_dir}/start.sh", "{connection_file}"], "display_name": "wrapped", "language": "python"},
    )
    environ = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(tf.parent), str(pipx.parent), "/usr/bin", "/bin"]),
        "JUPYTER_PATH": str(jupyter),
        "JUPYTER_DATA_DIR": str(root / "jupyter-data"),
        "PYENV_ROOT": str(root / "pyenv"),
    }
    return {
        "root": root,
        "home": home,
        "project": project,
        "tf": tf,
        "project_python": project_python,
        "pipx": pipx,
        "conda": conda,
        "pyenv": pyenv,
        "gone": gone,
        "broken": broken,
        "environ": environ,
    }


def places(machine):
    return places_from(machine["environ"], cwd=machine["project"], running=sys.executable)


def test_every_place_is_looked_at_and_pipx_is_not(machine):
    candidates, kernels = discover(places(machine))
    paths = {(c.how, c.path) for c in candidates}
    tf = str(machine["tf"])
    assert (RUNNING, sys.executable) == (candidates[0].how, candidates[0].path)
    assert (PATH_HOW, tf) in paths  # the activated venv's python on PATH
    assert (VIRTUALENV, tf) in paths and (VIRTUALENV, str(machine["project_python"])) in paths
    assert (PYENV, str(machine["pyenv"])) in paths
    assert ("conda", str(machine["conda"])) in paths
    assert not any(str(machine["home"] / ".local" / "pipx") in c.path for c in candidates)
    names = {k.name for k in kernels}
    assert {"tf", "tf-cpu", "bare", "old-project", "noexec", "broken"} <= names and "ir" not in names
    bare = next(k for k in kernels if k.name == "bare")
    assert bare.interpreter == str(machine["tf"].parent / "python3")  # found on PATH, as Jupyter would
    by_name = {k.name: k for k in kernels}
    assert by_name["via-env"].interpreter == str(machine["tf"].parent / "python3")  # /usr/bin/env python3, on PATH
    assert (
        by_name["wrapper"].interpreter is None and by_name["wrapper"].problem is None
    )  # a launcher script: nothing to check
    problems = {k.name: k.problem for k in kernels if k.problem}
    assert problems["old-project"].endswith("does not exist") and problems["noexec"].endswith("is not executable")
    assert problems["broken"] == "its kernel.json is not valid JSON"


def test_one_interpreter_reached_many_ways_is_one_environment(machine):
    p = places(machine)
    candidates, kernels = discover(p)
    environments, unusable = identify(candidates, p, jobs=2)
    tf = [
        e
        for e in environments
        if os.path.realpath(e.prefix) == os.path.realpath(machine["home"] / ".virtualenvs" / "tf")
    ]
    # The venv in a terminal (PATH), in its folder, and as two kernels: one environment. The
    # kernel that sets CUDA_VISIBLE_DEVICES runs differently: an environment of its own.
    assert len(tf) == 2
    plain, hidden = sorted(tf, key=lambda e: bool(e.env))
    assert {c.how for c in plain.reached} == {PATH_HOW, VIRTUALENV, KERNEL}
    assert {c.detail for c in plain.reached if c.how == KERNEL} == {"tf", "bare", "via-env"}
    assert "PATH python" in plain.labels and "PATH python3" in plain.labels
    assert hidden.env == (("CUDA_VISIBLE_DEVICES", ""),) and [c.detail for c in hidden.reached] == ["tf-cpu"]
    assert plain.kind == "venv"
    conda = next(e for e in environments if any(c.how == "conda" for c in e.reached))
    assert conda.kind == "conda"
    assert environments[0].reached[0].how == RUNNING
    # A conda prefix listed but deleted is no interpreter: a finding, not a row.
    assert [u.candidate.path for u in unusable] == [
        str(machine["root"] / "miniconda" / "envs" / "deleted" / "bin" / "python")
    ]
    findings = kernel_findings(kernels, unusable)
    gone = next(f for f in findings if "'old-project'" in f.title)
    assert gone.kind == KERNEL_CANNOT_START and gone.where == str(machine["gone"])
    assert [c.line for c in gone.commands] == [
        "jupyter kernelspec remove -y -- old-project",
        "python -m ipykernel install --user --name=old-project",
    ]


def test_the_scan_end_to_end(machine, cli, monkeypatch):
    """Through the command, with the doctor (quick) on each environment: running first, every
    environment once, the kernel findings with their fixes, the JSON carrying each report."""
    # Only what this test builds: the tf venv and its hidden-GPU kernel, a deleted kernel's interpreter.
    home = machine["root"] / "home-small"
    if not home.exists():
        jupyter = machine["root"] / "jupyter-small"
        kernel(jupyter, "tf", {"argv": launcher(machine["tf"]), "display_name": "TF", "language": "python"})
        kernel(
            jupyter,
            "tf-cpu",
            {
                "argv": launcher(machine["tf"]),
                "display_name": "TF on the CPU",
                "language": "python",
                "env": {"CUDA_VISIBLE_DEVICES": ""},
            },
        )
        kernel(
            jupyter,
            "old-project",
            {
                "argv": launcher(machine["root"] / "removed" / "bin" / "python"),
                "display_name": "Old",
                "language": "python",
            },
        )
        home.mkdir()
    environ = {
        "HOME": str(home),
        "PATH": str(machine["tf"].parent),
        "JUPYTER_PATH": str(machine["root"] / "jupyter-small"),
        "JUPYTER_DATA_DIR": str(home / "jd"),
        "PYENV_ROOT": str(home / "no-pyenv"),
        "COLUMNS": "120",
    }
    for name in list(os.environ):
        if name not in ("SYSTEMROOT", "TMPDIR", "TEMP", "TMP", "PYTHONPATH"):
            monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(home)
    result = cli("scan", "--json", "--jobs", "2")
    data = result.json()
    assert data["command"] == "scan" and data["exit_code"] == result.code == 1  # the deleted kernel is a finding
    envs = data["environments"]
    assert envs[0]["reached"][0]["how"] == "running"
    tf_rows = [e for e in envs if any(r["how"] == "kernel" for r in e["reached"])]
    assert len(tf_rows) == 2 and all(e["status"] == OK for e in envs)
    hidden = next(e for e in tf_rows if e["kernel_env"])
    assert (
        hidden["report"]["facts"]["env"]["variables"]["CUDA_VISIBLE_DEVICES"] == ""
    )  # the kernel's own variables were probed
    assert hidden["report"]["command"] == "doctor" and hidden["report"]["facts"]["quick"] is True
    assert [f["kind"] for f in data["findings"]] == [KERNEL_CANNOT_START]
    from envcheck.render.scan import environment_folder, render
    from envcheck.scan.result import scan

    again = scan(dict(os.environ), places_from(dict(os.environ), cwd=home), full=False, timeout=30, budget=120, jobs=2)
    for width in (40, 60, 80, 120):
        text = render(again, home=str(home), width=width, color=False)
        lines = text.splitlines()
        assert lines[0].startswith("envcheck scan  3 environments in ")
        assert all(len(line) <= width for line in lines if not line.startswith("       ")), (
            width
        )  # commands are never cut
    text = render(again, home=str(home), width=120, color=False)
    assert "(quick: TensorFlow not imported; --full imports it)" in text.splitlines()[0]
    header, *lines = text.split("\n\n")[1].splitlines()
    rows: list[str] = []
    for line in lines:  # a first broken link too long for its column goes on under it
        if line.startswith("   ") and rows:
            rows[-1] += " " + line.strip()
        else:
            rows.append(line)
    assert header.split() == ["environment", "Python", "TF", "GPU", "reached", "first", "broken", "link"]
    running = environment_folder(sys.executable)  # an environment is shown by its folder
    assert rows[0].split()[0] == (running if not running.startswith(str(home)) else "~" + running[len(str(home)) :])
    assert "/.virtualenvs/tf " in rows[1] and " PATH" in rows[1] and "TensorFlow: not installed" in rows[1]
    verbose = " ".join(render(again, home=str(home), verbose=True, width=120, color=False).split())
    assert "reached: PATH python, PATH python3" in verbose and "kernel 'tf'" in verbose
    assert "kernel tf-cpu" in rows[2]
    assert "jupyter kernelspec remove -y -- old-project" in text


def test_an_environment_past_its_time_is_reported_not_dropped(machine):
    p = places(machine)
    candidates, _ = discover(p)
    environments, _ = identify([c for c in candidates if c.how == VIRTUALENV][:2], p, jobs=2)
    slow = check_all(environments, machine["environ"], full=False, timeout=0.05, budget=60, jobs=2)
    assert [e.status for e in slow] == [TIMED_OUT, TIMED_OUT]
    assert all("did not finish within 0.05 s (--timeout 0.05)" in e.error for e in slow)
    late = check_all(environments, machine["environ"], full=False, timeout=30, budget=0.5, jobs=1)
    assert [e.status for e in late] == [TIMED_OUT, TIMED_OUT]
    assert all(e.error == "not started: the scan's 0.5 s budget ran out first" for e in late)


def test_a_budget_that_runs_out_gives_exit_1_and_names_each_environment(cli, machine, monkeypatch):
    for name, value in machine["environ"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(machine["project"])
    result = cli("scan", "--json", "--budget", "0.01")
    data = result.json()
    assert result.code == 1
    assert all(e["status"] == TIMED_OUT for e in data["environments"])  # the budget covers asking what each is
    unchecked = [f for f in data["findings"] if f["kind"] == NOT_CHECKED]
    assert unchecked and len(unchecked) >= len(data["environments"])
    assert all(f["commands"][0]["line"].startswith("envcheck doctor --python ") for f in unchecked)
    assert any(f["kind"] == NOT_AN_INTERPRETER for f in data["findings"])  # the deleted conda prefix


@pytest.mark.parametrize(
    "args, message",
    [
        (["--timeout", "0"], "--timeout: must be a positive number of seconds"),
        (["--budget", "soon"], "--budget: not a number"),
        (["--jobs", "0"], "--jobs: must be at least 1"),
        (["--fail-on", "sometimes"], "--fail-on: unknown choice"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(cli, args, message):
    result = cli("scan", *args)
    assert result.code == 2 and message in result.err and len(result.err.strip().splitlines()) == 1


def test_a_python_2_shim_that_pyenv_has_not_selected_is_no_environment(tmp_path):
    """pyenv's shims for versions not selected print "pyenv: python2.7: command not found" and exit
    127: the versions themselves are listed, the shims are not."""
    root = tmp_path / "pyenv"
    shims = root / "shims"
    shims.mkdir(parents=True)
    shim = shims / "python2.7"
    shim.write_text("#!/bin/sh\necho 'pyenv: python2.7: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    p = places_from({"HOME": str(tmp_path), "PATH": str(shims), "PYENV_ROOT": str(root)}, cwd=tmp_path, running=None)
    candidates, _ = discover(p)
    assert [c.path for c in candidates] == [str(shim)]
    environments, unusable = identify(candidates, p, jobs=1)
    assert environments == [] and unusable == []


def test_the_help_says_where_it_looks_and_the_exit_codes():
    out = subprocess.run(
        [sys.executable, "-m", "envcheck", "scan", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    ).stdout
    for word in ("pyenv", "conda env list", "kernelspec", "pipx", "exit status:", "not checked in time"):
        assert word in " ".join(out.split()), word


@pytest.mark.slow
def test_full_imports_tensorflow_in_each_environment(machine):
    p = places(machine)
    candidates, _ = discover(p)
    environments, _ = identify([c for c in candidates if c.how == RUNNING], p, jobs=1)
    checked = check_all(environments, machine["environ"], full=True, timeout=120, budget=240, jobs=1)
    report = checked[0].report
    assert checked[0].status == OK and report["facts"]["quick"] is False
    assert report["facts"]["tensorflow"]["status"] in ("ok", "missing", "error")


@pytest.mark.parametrize(
    "interpreter, shown",
    [
        ("/home/me/projects/a/.venv/bin/python3", "/home/me/projects/a/.venv"),
        ("/home/me/.pyenv/versions/3.11.7/bin/python", "/home/me/.pyenv/versions/3.11.7"),
        ("/opt/conda/envs/tf/bin/python3.11", "/opt/conda/envs/tf"),
        ("/usr/bin/python3", "/usr/bin/python3"),  # the system's own: the interpreter names it
        ("/usr/local/bin/python3.12", "/usr/local/bin/python3.12"),
        ("/home/me/tools/run-me", "/home/me/tools/run-me"),  # not a python: as it is
    ],
)
def test_an_environment_is_shown_by_its_folder(interpreter, shown):
    from envcheck.render.scan import environment_folder

    assert environment_folder(interpreter) == shown


def test_a_long_path_is_cut_in_the_middle():
    from envcheck.render.lines import clip_middle

    assert clip_middle("~/.pyenv/versions/3.11.7", 40) == "~/.pyenv/versions/3.11.7"
    cut = clip_middle("~/projects/a-very-long-project-name/.venv", 24)
    assert len(cut) == 24 and cut.startswith("~/") and cut.endswith("-name/.venv") and "..." in cut
