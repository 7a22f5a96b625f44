"""Child processes with hard bounds: a wall-clock deadline and a cap on what is read from each
stream, whatever the child does (hangs, floods its output, forks helpers).

Every process envcheck starts (the probed interpreter, the TensorFlow worker, the library load
tests, ldconfig, nvidia-smi) goes through here. Output is read by threads as it comes, so a child
never blocks on a full pipe and never costs more than ``max_bytes`` per stream in memory: past the
cap the child is killed and the result says it was ``flooded``. At the deadline the child and its
process group are killed and the result says ``timed_out``.

Each child starts a session of its own, and when it ends (or is killed) whatever is left of its
process group is killed too. A helper that left the group (``setsid sleep 600 &``) is found after
it, on Linux, while the process is ``adopting_orphans`` (scan is, for the interpreters it
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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

MAX_STREAM_BYTES = 8 * 1024 * 1024
_CHUNK = 64 * 1024

TREE_VARIABLE = "ENVCHECK_PROCESS_TREE"
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_adopting = False
_live: set[int] = set()  # the children this process started and has not reaped yet
_live_lock = threading.Lock()


def _subreaper(on: bool) -> bool:
    try:
        # lazy and guarded: importing ctypes can fail on some systems, and the try handles it
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@contextmanager
def adopting_orphans() -> Iterator[bool]:
    """While inside, this process is the reaper of its descendants' orphans (Linux 3.4+), so that a
    helper a child left behind in a session of its own is found and ended with it; yields whether
    it is. On the way out every orphan that died meanwhile is reaped and the process stops
    adopting (unless it already did before), so nothing is left to it afterwards."""
    global _adopting
    if _adopting or not sys.platform.startswith("linux"):
        yield _adopting
        return
    _adopting = _subreaper(True)
    try:
        yield _adopting
    finally:
        if _adopting:
            _subreaper(False)
            _adopting = False
            _reap(None)


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
            ended = end_orphans(self.mark)
            _reap({self.proc.pid, *ended})  # what was killed and came to this process dies here

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


def end_orphans(mark: str, rounds: int = 5) -> set[int]:
    """Kill the orphans this process adopted that carry ``mark`` in their environment, and their
    process groups; an orphan's own children are adopted when it dies, so a few rounds. Returns
    the process groups ended."""
    groups: set[int] = set()
    for _ in range(rounds):
        found = _marked(_adopted(), mark)
        if not found:
            break
        for pid in found:
            groups.add(_kill_orphan(pid))
    return groups - {0}


def _marked(pids: set[int], mark: str, patience: float = 0.5) -> list[int]:
    """The processes of ``pids`` that carry ``mark``. One in the middle of execve shows an empty
    environment for a moment (its new memory has no environment block yet): it is read again
    until it has one, is gone, or ``patience`` runs out, so a helper caught mid-exec is not missed."""
    found: list[int] = []
    pending = set(pids)
    end = time.monotonic() + patience
    while pending:
        for pid in sorted(pending):
            carries = _carries(pid, mark)
            if carries is not None:
                pending.discard(pid)
                if carries:
                    found.append(pid)
        if not pending or time.monotonic() >= end:
            return found
        time.sleep(0.005)
    return found


def _reap(groups: set[int] | None, patience: float = 0.5) -> None:
    """Reap the adopted children of ``groups`` (all, when None) once they have died: killed, each
    is a zombie of this process for a moment, and would stay one (still "running" to kill(pid, 0))."""
    end = time.monotonic() + patience
    while True:
        waiting = False
        for pid in _adopted():
            state, group = _stat(pid)
            if groups is not None and group not in groups:
                continue
            if state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except OSError:
                    pass
            elif groups is not None:
                waiting = True  # killed, not dead yet
        if not waiting or time.monotonic() >= end:
            return
        time.sleep(0.01)


def _stat(pid: int) -> tuple[str, int]:
    """(state, process group) of a process, from /proc; ("", 0) when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[2])
    except (OSError, IndexError, ValueError):
        return "", 0


def _kill_orphan(pid: int) -> int:
    """Kill an orphan and its process group; the group (0 when it was gone already)."""
    group = _stat(pid)[1]
    if group > 0 and group != os.getpgrp():  # never this process's own group
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    return group if group != os.getpgrp() else 0


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


def _carries(pid: int, mark: str) -> Optional[bool]:
    """Whether the process's environment holds ``mark``; None when it has none to read yet (an
    exec under way) although the process lives and is no zombie."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return False
    if not data:
        return None if _stat(pid)[0] not in ("", "Z", "X") else False
    entries = data.split(b"\0")
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
