"""The stages a long command reports before its own progress starts (render/stages.py)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from envcheck.render import stages as stages_module
from envcheck.render.stages import Stages


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(stages_module.time, "perf_counter", lambda: now[0])
    return now


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=80, color_system=None, highlight=False), out


def test_a_slow_stage_leaves_its_done_line_and_a_quick_one_none(clock):
    term, out = console(True)
    with Stages(console=term, enabled=True) as stage:
        stage("Unpacking x.tar.gz", done="Unpacked x.tar.gz")
        clock[0] += 12.3
        stage("Decoding 10 images", done="Decoded 10 images")
        clock[0] += 0.2
    text = out.getvalue()
    assert "✔ Unpacked x.tar.gz  12.3 s" in text
    assert "Decoded 10 images" not in text  # 0.2 s: not worth a line


def test_a_failed_stage_is_not_reported_done(clock):
    term, out = console(True)
    with pytest.raises(RuntimeError):
        with Stages(console=term, enabled=True) as stage:
            stage("Unpacking x.tar.gz", done="Unpacked x.tar.gz")
            clock[0] += 5
            raise RuntimeError("disk full")
    assert "Unpacked" not in out.getvalue()


def test_without_a_terminal_nothing_is_printed(clock):
    pipe, out = console(False)
    with Stages(console=pipe) as stage:
        stage("Unpacking x.tar.gz", done="Unpacked x.tar.gz")
        clock[0] += 30
    assert out.getvalue() == ""


def test_no_color_on_a_terminal_gives_plain_lines(clock, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    term, out = console(True)
    term.file.isatty = lambda: True  # what use_color asks
    with Stages(console=term) as stage:
        stage("Unpacking x.tar.gz", done="Unpacked x.tar.gz")
        clock[0] += 30
        stage("Starting TensorFlow")
    assert out.getvalue().splitlines() == ["envcheck: Unpacking x.tar.gz ...", "envcheck: Starting TensorFlow ..."]
