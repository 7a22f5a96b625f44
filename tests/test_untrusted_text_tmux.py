"""The OSC 52 attack of issue 24 in a real terminal: tmux with ``set-clipboard on`` takes an
application's OSC 52 sequence as a new paste buffer, so a Jupyter kernel folder (or a snapshot's
host name) that carries one would replace what the user pastes next. envcheck must show the
sequence, escaped, and tmux's buffer must stay as it was."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO

TMUX = shutil.which("tmux")
PASTED = "touch PWN_clip"
OSC52 = "\x1b]52;c;" + base64.b64encode(PASTED.encode()).decode() + "\x1b\\"


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=30)
        return done.stdout

    def run(self, command: str, seconds: float = 120) -> str:
        """Type ``command`` into the pane, wait for it to finish, return the screen."""
        self("send-keys", "-t", "t", f"{command}; echo ENDED-$?", "Enter")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            screen = self("capture-pane", "-p", "-J", "-S", "-200", "-t", "t")
            if "\nENDED-" in screen:
                return screen
            time.sleep(0.3)
        raise AssertionError(f"did not finish in {seconds} s: {command}")


@pytest.fixture
def tmux(tmp_path):
    socket = f"envcheck-{os.getpid()}-{tmp_path.name}"
    t = Tmux(socket)
    subprocess.run(
        [TMUX, "-L", socket, "-f", os.devnull, "new-session", "-d", "-x", "200", "-y", "60", "-s", "t"], check=True
    )
    try:
        t("set-option", "-g", "set-clipboard", "on")
        t("set-buffer", "what the user copied")
        yield t
    finally:
        t("kill-server")


def _envcheck(home: Path) -> str:
    env = {"HOME": str(home), "JUPYTER_DATA_DIR": str(home / "jd"), "PYENV_ROOT": str(home / "no-pyenv")}
    assignments = " ".join(f"{k}={v}" for k, v in env.items())
    return f"cd {REPO} && env -i PATH=/usr/bin:/bin TERM=xterm {assignments} {sys.executable} -m envcheck"


@pytest.mark.slow
@pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux)")
def test_an_osc_52_sequence_from_a_kernel_folder_or_a_snapshot_does_not_reach_the_clipboard(tmux, tmp_path):
    home = tmp_path / "home"
    folder = home / "jd" / "kernels" / f"k{OSC52}"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({"argv": ["/gone/python", "-m", "ipykernel_launcher"]}))
    snapshot = json.loads((FIXTURES / "facts" / "multi_gpu_server.json").read_text())
    snapshot["platform"]["hostname"] = f"node{OSC52}"
    snapshot["nvml"]["gpus"][0]["name"] = f"Tesla{OSC52}"
    facts = tmp_path / "node.json"
    facts.write_text(json.dumps(snapshot))
    screens = [
        tmux.run(f"{_envcheck(home)} scan --jobs 2 --budget 60"),
        tmux.run(f"{_envcheck(home)} doctor --facts {facts} -v"),
        tmux.run(f"{_envcheck(home)} fleet {facts} {FIXTURES / 'facts' / 'multi_gpu_server.json'}"),
        tmux.run(f"{_envcheck(home)} diff {facts} {FIXTURES / 'facts' / 'multi_gpu_server.json'}"),
    ]
    assert tmux("show-buffer") == "what the user copied"
    assert "\\x1b]52;c;" in screens[0] and "rm -r -- $'" in screens[0]  # the fix names the folder, escaped
    assert all("\\x1b]52;c;" in screen for screen in screens[1:])
