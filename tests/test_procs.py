"""Bounded children and guarded probes: whatever a child or a probe does, the doctor goes on."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from envcheck import procs
from envcheck.facts import NvmlFacts, PciFacts
from envcheck.probes import InThread, ProbeOptions, collect, guarded
from envcheck.probes.tensorflow import TfWorker
from tests.conftest import REPO


def test_a_flooding_child_is_stopped_at_the_cap():
    code = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    done = procs.run([sys.executable, "-c", code], timeout=60, max_bytes=1 << 20)
    assert done.flooded and done.returncode is None
    assert len(done.stdout) == 1 << 20  # what was kept is exactly the cap


def test_a_hanging_child_is_killed_at_its_deadline():
    done = procs.run([sys.executable, "-c", "import time; time.sleep(600)"], timeout=0.5)
    assert done.timed_out and done.returncode is None and not done.flooded


def test_a_child_that_forks_loses_its_helpers_too(tmp_path):
    pidfile = tmp_path / "helper.pid"
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(600)\n"
    )
    done = procs.run([sys.executable, "-c", code], timeout=2)
    assert done.timed_out
    import os

    helper = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(helper, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:  # pragma: no cover - the helper survived
        raise AssertionError("the child's helper process is still running")


def test_input_and_ordinary_output_pass_through():
    done = procs.run([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], timeout=30, input=b"gpu")
    assert done.returncode == 0 and done.text().strip() == "GPU" and not done.timed_out


def test_a_tensorflow_worker_that_floods_becomes_a_fact():
    child = procs.Child(
        [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('y' * 65536)"], timeout=60, max_bytes=1 << 20
    )
    facts = TfWorker(child, 60).finish()
    assert facts.error_kind == "bad_output" and "MiB" in facts.error


def test_a_tensorflow_worker_that_hangs_is_a_timeout():
    child = procs.Child([sys.executable, "-c", "import time; time.sleep(600)"], timeout=0.5)
    facts = TfWorker(child, 0.5).finish()
    assert facts.error_kind == "timeout" and facts.timed_out


def test_a_probe_that_raises_is_an_error_section():
    def broken(root):
        raise RuntimeError("the bus is on fire")

    section = guarded("PCI", PciFacts, broken, "/")
    assert section.status == "error" and "the bus is on fire" in section.error and section.seconds >= 0


def test_a_probe_that_hangs_is_given_up_on():
    run = InThread("NVML", NvmlFacts, lambda: time.sleep(600) or NvmlFacts())
    section = run.result(0.2)
    assert section.status == "error" and section.timed_out and "did not answer" in section.error


class _HangingNvml:
    """pynvml whose nvmlInit never returns (a wedged driver)."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        time.sleep(600)


def test_the_doctors_timeout_bounds_a_hanging_nvml(tmp_path):
    facts = collect(ProbeOptions(quick=True, nvml=_HangingNvml(), root=tmp_path, timeout=1.0))
    assert facts.nvml.timed_out and facts.nvml.status == "error"
    assert facts.python.status == "ok"  # the rest of the snapshot is there


def test_the_report_says_which_probe_ran_out_of_time(tmp_path):
    from envcheck.verdict import judge

    facts = collect(ProbeOptions(quick=True, nvml=_HangingNvml(), root=tmp_path, timeout=1.0))
    report = judge(facts)
    assert any(n.startswith("the nvml probe ran out of time") for n in report.notes)
    assert not any("ran out of time" in n for n in judge(collect(ProbeOptions(quick=True, root=tmp_path))).notes)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="orphans are adopted through prctl and /proc")
def test_a_helper_left_in_a_session_of_its_own_is_ended_after_the_child():
    """``setsid sleep &`` leaves the child's process group and session: a process that adopts
    orphans (scan) finds it by the mark it inherited and ends it; a helper left in the child's
    group is ended too, and neither holds the child's pipes open."""
    import uuid

    marks = [f"600.{uuid.uuid4().int % 10**8}", f"601.{uuid.uuid4().int % 10**8}"]
    shell = f"sleep {marks[0]} & setsid sh -c 'sleep {marks[1]}' >/dev/null 2>&1 </dev/null & echo started"
    code = (
        "import sys\n"
        "from envcheck import procs\n"
        "with procs.adopting_orphans() as adopting:\n"
        "    assert adopting\n"
        f"    done = procs.run(['sh', '-c', {shell!r}], timeout=60)\n"
        "print(done.returncode, done.text().strip(), round(done.seconds))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == ["0", "started"]
    left = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                words = fh.read().split(b"\0")
        except OSError:
            continue
        if any(m.encode() in words for m in marks):
            left.append(pid)
            os.kill(int(pid), 9)
    assert not left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl")
def test_adopting_orphans_ends_on_the_way_out_and_leaves_no_zombie(tmp_path):
    """The process adopts only while it probes (scan), and reaps what it adopted: afterwards a
    killed helper is gone, not a zombie that kill(pid, 0) still finds."""
    import ctypes

    def subreaper() -> int:
        value = ctypes.c_int(-1)
        ctypes.CDLL(None).prctl(37, ctypes.byref(value), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        return value.value

    assert subreaper() == 0
    pidfile = tmp_path / "helper.pid"
    code = (
        "import subprocess, time\n"
        "p = subprocess.Popen(['sleep', '600'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(600)\n"
    )
    with procs.adopting_orphans() as adopting:
        assert adopting and subreaper() == 1
        child = procs.Child([sys.executable, "-c", code], timeout=60)
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.05)
        helper = int(pidfile.read_text())
        child.kill()
    assert subreaper() == 0
    with pytest.raises(ProcessLookupError):
        os.kill(helper, 0)


def test_an_orphan_caught_in_the_middle_of_exec_is_looked_at_again(monkeypatch):
    """Between execve's new memory and its environment block, /proc/PID/environ reads empty: the
    first look says nothing, the next one finds the mark (under load the window is wide enough
    for a helper to be missed and outlive its child)."""
    from envcheck import procs

    looks = {1001: [None, None, True], 1002: [False], 1003: [None, False]}
    monkeypatch.setattr(procs, "_carries", lambda pid, mark: looks[pid].pop(0))
    assert procs._marked({1001, 1002, 1003}, "m") == [1001]
    # a process whose environment stays empty (env -i) is given up on, not waited for forever
    monkeypatch.setattr(procs, "_carries", lambda pid, mark: None)
    assert procs._marked({1004}, "m", patience=0.05) == []
