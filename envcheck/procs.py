"""Child processes with hard bounds: a wall-clock deadline and a cap on what is read from each
stream, whatever the child does (hangs, floods its output, forks helpers).

Every process envcheck starts (the probed interpreter, the TensorFlow worker, the library load
tests, ldconfig, nvidia-smi) goes through here. Output is read by threads as it comes, so a child
never blocks on a full pipe and never costs more than ``max_bytes`` per stream in memory: past the
cap the child is killed and the result says it was ``flooded``. At the deadline the child and its
process group are killed and the result says ``timed_out``.

Each child starts a session of its own, and when it ends (or is killed) whatever is left of its
process group is killed too. A helper that left the group (``setsid sleep 600 &``) is found after
it, on Linux, when the process has called ``adopt_orphans`` (scan does, for the interpreters it
probes): the process becomes the reaper of its descendants' orphans, each child carries a mark in
its environment (``ENVCHECK_PROCESS_TREE``, the marks of every envcheck above it and its own), and
the orphans that carry a finished child's mark are killed with their groups.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

MAX_STREAM_BYTES = 8 * 1024 * 1024
_CHUNK = 64 * 1024

TREE_VARIABLE = "ENVCHECK_PROCESS_TREE"
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_adopting = False
_live: set[int] = set()  # the children this process started and has not reaped yet
_live_lock = threading.Lock()


def adopt_orphans() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux 3.4+), so that a helper a
    child left behind in a session of its own can be found and ended; False where that cannot be."""
    global _adopting
    if _adopting:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _adopting = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _adopting = False
    return _adopting


@dataclass(frozen=True)
class Finished:
    returncode: Optional[int]  # None when it had to be killed before it ended
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    flooded: bool = False  # a stream passed the cap and the child was stopped
    seconds: float = 0.0

    def text(self, which: str = "stdout") -> str:
        return getattr(self, which).decode("utf-8", errors="replace")


class _Capped:
    """Reads one stream into a bounded buffer on a thread; calls ``on_flood`` past the cap."""

    def __init__(self, stream, limit: int, on_flood) -> None:
        self._stream = stream
        self._limit = limit
        self._on_flood = on_flood
        self._parts: list[bytes] = []
        self._size = 0
        self.flooded = False
        self._thread = threading.Thread(target=self._read, name="envcheck-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(_CHUNK) if hasattr(self._stream, "read1") else self._stream.read(_CHUNK)
                if not chunk:
                    break
                room = self._limit - self._size
                if room > 0:
                    self._parts.append(chunk[:room])
                    self._size += min(room, len(chunk))
                if len(chunk) > room:
                    self.flooded = True
                    self._on_flood()
                    break
        except (OSError, ValueError):
            pass
        finally:
            try:
                self._stream.close()
            except OSError:
                pass

    def result(self, timeout: float) -> bytes:
        self._thread.join(timeout)
        return b"".join(self._parts)


class Child:
    """A running child process; ``finish`` waits for it (until the deadline) and returns what it said."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Optional[Mapping[str, str]] = None,
        input: Optional[bytes] = None,
        max_bytes: int = MAX_STREAM_BYTES,
        cwd: Optional[str] = None,
    ) -> None:
        kwargs: dict = {}
        if os.name == "posix":
            kwargs["start_new_session"] = True  # its own process group: a kill reaches its helpers too
        else:
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        self.started = time.perf_counter()
        self.deadline = self.started + max(0.0, timeout)
        self._killed_for_flood = False
        self.mark = secrets.token_hex(8)
        marks = ":".join(m for m in (os.environ.get(TREE_VARIABLE, ""), self.mark) if m)
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**(os.environ if env is None else env), TREE_VARIABLE: marks},
            cwd=cwd,
            **kwargs,
        )
        with _live_lock:
            _live.add(self.proc.pid)
        self._out = _Capped(self.proc.stdout, max_bytes, self._flood)
        self._err = _Capped(self.proc.stderr, max_bytes, self._flood)
        if input is not None:
            threading.Thread(target=self._feed, args=(input,), name="envcheck-writer", daemon=True).start()

    def _feed(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
        except (OSError, ValueError):
            pass
        finally:
            try:
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass

    def _flood(self) -> None:
        self._killed_for_flood = True
        self.kill()

    def kill(self) -> None:
        """Stop the child and everything it started, and reap it (no zombie is left behind)."""
        try:
            if os.name == "posix":
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except (OSError, ProcessLookupError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
            pass
        self._end_leftovers()

    def _end_leftovers(self) -> None:
        """What the child left running: the rest of its process group, then (when this process
        adopts orphans) every orphan that carries its mark, with the orphan's own group."""
        with _live_lock:
            _live.discard(self.proc.pid)
        if os.name != "posix":
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its group lives on while a member does
        except OSError:
            pass
        if _adopting:
            end_orphans(self.mark)

    def finish(self, deadline: Optional[float] = None) -> Finished:
        """Wait until the child ends or the deadline (the earlier of its own and ``deadline``) passes."""
        end = min(self.deadline, deadline) if deadline is not None else self.deadline
        timed_out = False
        try:
            self.proc.wait(timeout=max(0.0, end - time.perf_counter()))
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
            pass
        if not timed_out:
            self._end_leftovers()  # a helper still holding the pipes would keep the readers waiting
        out = self._out.result(2.0)
        err = self._err.result(2.0)
        flooded = self._killed_for_flood or self._out.flooded or self._err.flooded
        return Finished(
            returncode=None if (timed_out or flooded) else self.proc.returncode,
            stdout=out,
            stderr=err,
            timed_out=timed_out,
            flooded=flooded,
            seconds=time.perf_counter() - self.started,
        )


def end_orphans(mark: str, rounds: int = 5) -> int:
    """Kill the orphans this process adopted that carry ``mark`` in their environment, and their
    process groups; an orphan's own children are adopted when it dies, so a few rounds. Returns
    how many were ended."""
    ended = 0
    for _ in range(rounds):
        found = [pid for pid in _adopted() if _carries(pid, mark)]
        if not found:
            break
        for pid in found:
            _kill_orphan(pid)
            ended += 1
    return ended


def _kill_orphan(pid: int) -> None:
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)  # its own group (setsid made it a leader)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    end = time.monotonic() + 2.0  # it is this process's child now: reap it (a process stuck in
    while time.monotonic() < end:  # the kernel may take a moment to die; never wait long)
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except OSError:
            return
        time.sleep(0.01)


def _adopted() -> set[int]:
    """This process's children that it did not start through here: orphans it adopted."""
    children: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return children
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", "rb") as fh:
                children.update(int(p) for p in fh.read().split())
        except (OSError, ValueError):
            continue
    with _live_lock:
        return children - _live


def _carries(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            entries = fh.read(1 << 20).split(b"\0")
    except OSError:
        return False
    prefix = TREE_VARIABLE.encode() + b"="
    for entry in entries:
        if entry.startswith(prefix):
            return mark.encode() in entry[len(prefix) :].split(b":")
    return False


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    input: Optional[bytes] = None,
    max_bytes: int = MAX_STREAM_BYTES,
    cwd: Optional[str] = None,
) -> Finished:
    """Run a child to the end or the deadline. Raises OSError when it cannot be started."""
    return Child(argv, timeout=timeout, env=env, input=input, max_bytes=max_bytes, cwd=cwd).finish()
