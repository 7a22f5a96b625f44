"""validate as a person waits for it: every stage says what it waits for, in a real terminal, and
the training run of level 3 draws its own progress there (TensorFlow's start-up noise is captured
from the same file descriptor, so the display must not be)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from envcheck.commands.validate import TRAINING_STARTS, _announcer
from tests.test_live import run_in_pty

REPO = Path(__file__).resolve().parents[1]
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class RecordingStages:
    def __init__(self) -> None:
        self.events: list[str] = []

    def __call__(self, doing: str, done=None) -> None:
        self.events.append(doing)

    def close(self) -> None:
        self.events.append("<closed>")


def test_each_stage_is_shown_and_the_training_run_gets_the_terminal():
    stages = RecordingStages()
    announce = _announcer(stages)
    for text in ("starting TensorFlow", "level 1: a matmul and a convolution on CPU:0", TRAINING_STARTS):
        announce(text)
    announce("waiting for the doctor's TensorFlow check, to compare the devices it finds usable")
    assert stages.events == [
        "Starting TensorFlow",
        "Level 1: a matmul and a convolution on CPU:0",
        "<closed>",  # the trainer draws its own stages and bar now
        "Waiting for the doctor's TensorFlow check, to compare the devices it finds usable",
    ]


def test_the_training_run_draws_on_the_terminal_validate_was_given(monkeypatch, tmp_path):
    from envcheck.train.trainer import TrainingDiverged
    from envcheck.validation import training

    seen = {}

    def fake_train(config, *, plan=None, progress_console=None, data=None):
        seen["console"] = progress_console
        raise TrainingDiverged("stopped by the test")

    monkeypatch.setattr(training, "start_doctor_probe", lambda: None)
    monkeypatch.setattr("envcheck.train.trainer.train", fake_train)
    terminal = object()
    plan = SimpleNamespace(uses_gpu=False, devices=["/CPU:0"], replicas=1)
    checks = training.run_level3(plan, output=tmp_path / "run", console=terminal)
    assert seen["console"] is terminal
    assert not checks[0].passed and "stopped by the test" in checks[0].summary


@pytest.mark.slow
def test_validate_says_what_it_waits_for_then_reports_at_the_terminal_s_width():
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "0"}
    env.pop("NO_COLOR", None)
    env.pop("COLUMNS", None)
    master_width = 60
    status = {}
    chunks = run_in_pty(
        [sys.executable, "-m", "envcheck", "validate", "--level", "1", "--gpus", "0"],
        {**env, "COLUMNS": str(master_width)},
        b"validation passed",
        exit_status=status,
    )
    assert status["code"] == 0
    raw = b"".join(chunks)
    text = ANSI.sub(b"", raw).decode("utf-8", "replace")
    report_at = text.index("PASS  level 1")
    assert "Starting TensorFlow" in text[:report_at]
    assert "Level 1: a matmul and a convolution on CPU:0" in text[:report_at]
    assert re.search(r"Level 1: .*\d+ s", text[:report_at])  # its seconds count
    assert "cuInit" not in text and "oneDNN" not in text  # TensorFlow's noise stays captured
    report = text[report_at:].replace("\r", "").splitlines()
    assert report and all(len(line) <= master_width for line in report), report
    joined = " ".join(" ".join(report).split())
    assert "PASS level 1 matmul on CPU:0" in joined and "validation passed" in joined
    assert "level 2" not in joined
