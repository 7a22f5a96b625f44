"""The live display, as a person sees it: driven in a real pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def worker_that_waits(tmp_path: Path, seconds: float) -> tuple[Path, Path]:
    """An interpreter whose TensorFlow check answers nothing for ``seconds``, then fails, leaving
    a file when done (no TensorFlow import: the live lines are what is looked at)."""
    done = tmp_path / "worker-done"
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *tf_worker.py*) sleep {seconds}; touch "{done}"; exit 1;; esac\n'
        'exec "' + sys.executable + '" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, done


def run_in_pty(
    argv: list[str], env: dict, until: bytes, limit: float = 180.0, on_chunk=None, exit_status=None
) -> list[bytes]:
    """Read a command's terminal output chunk by chunk until ``until`` appears; ``on_chunk(seen)``
    is called as each chunk arrives; ``exit_status["code"]`` is its exit code, when asked."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO, close_fds=True)
    os.close(slave)
    seen = b""
    chunks = []
    stop = time.monotonic() + limit
    try:
        while until not in seen and time.monotonic() < stop:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            seen += chunk
            chunks.append(chunk)
            if on_chunk is not None:
                on_chunk(seen)
    finally:
        code = proc.wait(timeout=120)
        os.close(master)
    if exit_status is not None:
        exit_status["code"] = code
    return chunks


@pytest.mark.slow
def test_the_first_status_lines_come_while_tensorflow_is_still_importing(tmp_path):
    """The live lines come while the TensorFlow check still runs, and a link whose probes have
    answered is marked neutral ("checked"): on this machine the GPU and driver rows are "–" in the
    report and TensorFlow's is not ok, so a green tick there would say the opposite. The check is
    a stand-in that answers after a few seconds (TensorFlow's own import adds nothing to what is
    looked at here, and costs a minute on a loaded machine)."""
    from envcheck.render.live import DONE_MARK

    wrapper, done = worker_that_waits(tmp_path, 3)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    state = {}

    def watch(seen: bytes) -> None:
        if b"importing TensorFlow" in seen and "live" not in state:
            state["live"] = True
            state["worker_done_then"] = done.exists()  # read the moment the first live line is here

    chunks = run_in_pty(
        [sys.executable, "-m", "envcheck", "doctor", "--python", str(wrapper)], env, b"Verdict:", on_chunk=watch
    )
    text = b"".join(chunks)
    # Checked at once above, so this is an ordering, not a timing: the live lines came first.
    assert state.get("live"), text[-2000:]
    assert state["worker_done_then"] is False  # the TensorFlow check was still running
    assert b"Verdict:" in text and text.index(b"importing TensorFlow") < text.index(b"Verdict:")
    assert text.count(b"Python") >= 2  # the live line, then the report's
    live = text.split(b"Verdict:", 1)[0].rsplit(b"envcheck 0.1", 1)[0]
    assert b"checked" in live and DONE_MARK.encode() in live
    assert "✔".encode() not in live  # no mark of a result before there is one


@pytest.mark.slow
def test_nothing_live_when_stdout_is_not_a_terminal():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--quick"], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert "\x1b[" not in out.stdout and "importing TensorFlow" not in out.stdout and "⠋" not in out.stdout


def test_no_color_on_a_terminal_gives_plain_output(tmp_path):
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    chunks = run_in_pty([sys.executable, "-m", "envcheck", "doctor", "--quick"], env, b"Verdict:")
    text = b"".join(chunks)
    assert b"Verdict:" in text and b"\x1b[" not in text


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_doctor_done_before_the_display_would_start_draws_nothing(monkeypatch):
    from envcheck.render import live

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(live, "SHOW_AFTER", 30.0)
    screen = _Terminal()
    with live.live_progress(quick=True, stream=screen) as progress:
        progress("python", "done")
    assert screen.getvalue() == ""


def test_a_longer_wait_gets_the_live_lines(monkeypatch):
    import time

    from envcheck.render import live

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(live, "SHOW_AFTER", 0.0)
    screen = _Terminal()
    with live.live_progress(quick=False, stream=screen) as progress:
        progress("tensorflow", "start")
        deadline = time.monotonic() + 10
        while "importing TensorFlow" not in screen.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "importing TensorFlow" in screen.getvalue()
