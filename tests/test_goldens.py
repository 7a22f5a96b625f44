"""Golden output of every command at 60, 80 and 120 columns, as a person sees it (the doctor's are
in tests/rules/golden/): run through the command line with COLUMNS set, or, where the command
needs TensorFlow to run (validate, train) or a machine full of environments (scan), its renderer
on a fixed result. Each is also held to the one width policy: text fits the width; a line longer
than it is one whole unit (a command, a URL, a path).

A deliberate change of wording or layout updates the files:
ENVCHECK_UPDATE_GOLDEN=1 python -m pytest tests/test_goldens.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.facts import to_json
from tests.compare import machines as m

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
WIDTHS = (60, 80, 120)
SNAPSHOT = "tests/fixtures/facts/linux_cuda_build_no_gpu.json"
SETUP_POST = ["--os", "windows", "--python", "3.7", "--gpu", "GeForce GTX 1060", "--driver", "417.35"]

# name -> (argv, what a line longer than the width may be)
COMMANDS = {
    "plan-setup-post": (["plan", *SETUP_POST], r"^ {7}\S|^  envcheck plan "),
    "plan-snapshot": (["plan", "--facts", SNAPSHOT], r"^ {7}\S|^  envcheck plan "),
    "plan-script": (["plan", "--facts", SNAPSHOT, "--format", "bash"], r"^[^#]"),
    "matrix-tf": (["matrix", "tf", "2.15"], r"^(install|source:) "),
    "matrix-cuda": (["matrix", "cuda", "12.2"], r"^(install|source:|download) "),
    "matrix-gpu": (["matrix", "gpu", "GeForce GTX 1060"], None),
    "explain": (
        ["explain", "--facts", SNAPSHOT, "Could not load dynamic library 'libcudart.so.11.0'; dlerror: not found"],
        r"",  # explain's header and commands are laid out by its own renderer, which its tests hold
    ),
    "diff": (["diff", "gpu-node-07.json", "gpu-node-03.json"], None),
    "fleet": (["fleet", "nodes"], None),
}


@pytest.fixture(autouse=True)
def as_a_user(monkeypatch, tmp_path, plain_envcheck_word):
    """The repository as the working folder (snapshots by relative name), the diff's and fleet's
    files beside it under the names the README uses."""
    a = m.elsewhere(m.linux_with_ld_library_path(), "gpu-node-07", "alice", "2026-11-30T10:00:00+00:00", seed=2)
    b = m.elsewhere(m.linux_clean(), "gpu-node-03", "bob", "2026-12-01T08:30:00+00:00", seed=3)
    work = tmp_path / "work"
    (work / "nodes").mkdir(parents=True)
    (work / "tests").symlink_to(REPO / "tests")
    (work / "gpu-node-07.json").write_text(to_json(a))
    (work / "gpu-node-03.json").write_text(to_json(b))
    for number in (1, 2, 3, 7, 12, 21, 33):
        (work / "nodes" / f"node-{number}.json").write_text(to_json(m.cluster_node(number)))
    monkeypatch.chdir(work)
    monkeypatch.delenv("NO_COLOR", raising=False)


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ENVCHECK_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path.name} missing: run with ENVCHECK_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} differs: ENVCHECK_UPDATE_GOLDEN=1 updates it if that is meant"


WINDOWS_PATH = re.compile(r"[A-Za-z]:\\[^,;]*[,;.]?")  # one path, spaces in its folders


def fits(text: str, width: int, whole: str | None) -> None:
    for line in text.splitlines():
        if len(line) <= width or " " not in line.strip() or WINDOWS_PATH.fullmatch(line.strip()):
            continue  # fits, or one word (a URL, a path) that no break would shorten
        assert whole is not None and re.search(whole, line), f"{len(line)} > {width}: {line!r}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_output(name, width, monkeypatch, capsys):
    argv, whole = COMMANDS[name]
    monkeypatch.setenv("COLUMNS", str(width))
    main(argv)
    text = capsys.readouterr().out
    check(f"{name}.{width}.txt", text)
    if not argv[-2:] == ["--format", "bash"]:  # a script is a file: 100 columns whatever the terminal
        fits(text, width, whole)


def validation_report():
    from envcheck.validation.checks import Check, ValidationReport

    report = ValidationReport(level=3, devices=["CPU:0", "CPU:1"])
    report.checks = [
        Check(1, "matmul on CPU:0", True, "max error 4.0e-07, 186.76 ms, 11.5 GFLOP/s", seconds=1.3),
        Check(1, "conv2d on CPU:0", True, "max error 3.8e-07, 95.03 ms, 12.7 GFLOP/s", seconds=0.6),
        Check(
            2,
            "all-reduce over 2 replicas (CPU:0, CPU:1)",
            True,
            "sum 3 on every replica; 4.2 MB in 45.77 ms (0.092 GB/s)",
            seconds=1.1,
        ),
        Check(
            3,
            "training (quick)",
            True,
            "3 epochs x 6 steps x 32 images on 2 replicas: 4.37 images/s, 2.18 per replica",
            seconds=205.5,
        ),
        Check(3, "loss falls", True, "loss 2.4450 -> 1.3278 over 3 epochs"),
        Check(3, "devices used", True, "trained on CPU:0, CPU:1: no usable GPU, the CPU"),
    ]
    report.notes = ["no GPU in use: level 1 ran on the CPU, levels 2 and 3 on 2 logical CPU devices"]
    report.doctor = {
        "status": "cpu-only",
        "line": "CPU only: no NVIDIA GPU on this machine; TensorFlow runs on the CPU (nothing to fix)",
        "gpus": 0,
        "exit_code": 0,
    }
    return report


def render_validate(width: int) -> str:
    import io

    from rich.console import Console

    from envcheck.render.validate import print_validation

    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    print_validation(validation_report(), console)
    return console.file.getvalue()


def render_train(width: int) -> str:
    from envcheck.commands.train import fit_to_terminal, format_summary

    summary = {
        "parameters": 1_656_250,
        "data": {"source": "synthetic (seed 0)"},
        "epochs": 2,
        "replicas": 2,
        "devices": {"devices": ["/job:worker/replica:0/task:0/device:CPU:0"], "is_chief": True},
        "final": {"loss": 1.5413, "accuracy": 0.5273, "val_loss": 7.3843, "val_accuracy": 0.2188},
        "seconds": 11.1,
        "images_per_second_steady": 104.2,
        "images_per_second_per_replica": 52.1,
    }
    return fit_to_terminal(format_summary(summary, Path("runs/two-tasks")), width) + "\n"


def render_scan(width: int) -> str:
    from envcheck.render.json import render as render_json
    from envcheck.render.scan import render
    from envcheck.scan.discover import PATH_HOW, RUNNING, VIRTUALENV, Candidate
    from envcheck.scan.result import Scan
    from envcheck.scan.run import OK, Environment
    from envcheck.verdict import judge
    from tests.rules import builders

    def env(path, facts, *hows):
        report = json.loads(render_json(judge(facts)))
        reached = [Candidate(path=path, how=how) for how in hows]
        return Environment(path, path.rsplit("/bin/", 1)[0], "3.11.7", "venv", reached, status=OK, report=report)

    home = "/home/dev"
    environments = (
        env(f"{home}/projects/vision/.venv/bin/python", builders.no_gpu(), RUNNING, PATH_HOW, VIRTUALENV),
        env(f"{home}/.virtualenvs/train/bin/python", builders.server(), VIRTUALENV),
        env(f"{home}/.virtualenvs/tf1.13/bin/python", builders.setup_post(), VIRTUALENV),
    )
    return render(Scan(environments, (), False, 2.4, 120.0, 30.0), home=home, width=width, color=False)


RENDERED = {"validate": render_validate, "train": render_train, "scan": render_scan}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(RENDERED))
def test_rendered_output(name, width):
    text = RENDERED[name](width)
    check(f"{name}.{width}.txt", text)
    fits(text, width, None)


def test_every_command_has_goldens():
    from envcheck.cli import COMMANDS as ALL

    covered = {name.split("-")[0] for name in (*COMMANDS, *RENDERED)} | {"doctor"}  # tests/rules/test_golden.py
    assert covered == set(ALL)
