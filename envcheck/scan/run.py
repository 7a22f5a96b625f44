"""From candidates to environments, and the doctor on each.

A candidate interpreter is asked what it is (its executable and prefix, in one line of Python any
version from 2.6 on can run); candidates that name the same interpreter in the same prefix are
one environment, listed once with every way it was reached. A kernel that sets variables of its
own (kernel.json's ``env``) runs differently from its interpreter in a terminal, so it is an
environment of its own.

Each environment then gets the doctor (``envcheck doctor --json --python ... [--quick]``) in an
isolated child process (scan/child.py: a kernel's variables reach its interpreter only), at most
``jobs`` at a time, each with its own timeout, all within the scan's budget: an
environment whose doctor did not finish in time is reported as timed out, not dropped.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from envcheck import procs
from envcheck.scan import child
from envcheck.scan.discover import (
    HOW_ORDER,
    PATH_HOW,
    PYENV,
    RUNNING,
    Candidate,
    Places,
    is_pyenv_shim,
    pyenv_root,
)

IDENTIFY_TIMEOUT = 10.0
QUICK_TIMEOUT = 30.0  # one environment's doctor --quick
FULL_TIMEOUT = 120.0  # one environment's full doctor (imports TensorFlow)

# Runs on Python 2.6 and later: who the interpreter is.
_IDENTIFY = (
    "import json, os, platform, sys; "
    "print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix, "
    "'base_prefix': getattr(sys, 'base_prefix', getattr(sys, 'real_prefix', sys.prefix)), "
    "'version': platform.python_version(), 'conda': os.path.isdir(os.path.join(sys.prefix, 'conda-meta'))}))"
)

OK = "ok"  # the doctor answered
TIMED_OUT = "timed-out"  # its own timeout, or the scan's budget, ran out
FAILED = "failed"  # the doctor could not check it (not a working interpreter, a crash)


@dataclass
class Environment:
    interpreter: str  # what the doctor is pointed at
    prefix: str
    version: str
    kind: str  # "venv", "conda", "pyenv" or "system"
    reached: list[Candidate] = field(default_factory=list)
    env: tuple[tuple[str, str], ...] = ()  # a kernel's own variables
    status: str = ""
    error: str | None = None
    seconds: float | None = None
    report: dict[str, Any] | None = None  # the doctor's --json document

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(c.label for c in sorted(self.reached, key=lambda c: HOW_ORDER.index(c.how))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "interpreter": self.interpreter,
            "prefix": self.prefix,
            "python": self.version,
            "kind": self.kind,
            "reached": [
                {
                    "how": c.how,
                    "detail": c.detail,
                    "path": c.path,
                    **({"kernel_file": c.kernel.spec_file} if c.kernel else {}),
                }
                for c in self.reached
            ],
            "kernel_env": dict(self.env),
            "status": self.status,
            "error": self.error,
            "seconds": self.seconds,
            "report": self.report,
        }


@dataclass(frozen=True)
class Unusable:
    """A candidate that is no working interpreter (a venv whose base Python is gone, a broken
    link), or one that was not asked in time (``timed_out``: its own limit, or the budget)."""

    candidate: Candidate
    reason: str  # reads after the interpreter's path: "cannot be run: ...", "did not answer ..."
    timed_out: bool = False


def identify(
    candidates: list[Candidate], places: Places, jobs: int, deadline: float | None = None
) -> tuple[list[Environment], list[Unusable]]:
    """Ask each distinct path what it is (all within ``deadline``, a perf_counter time), and
    merge the candidates that agree."""
    paths = list(dict.fromkeys(c.path for c in candidates))
    end = deadline if deadline is not None else time.perf_counter() + IDENTIFY_TIMEOUT * max(1, len(paths))
    # An empty folder to run them in: a json.py in the current folder must not answer for them.
    with tempfile.TemporaryDirectory(prefix="envcheck-scan-") as neutral:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(paths) or 1))) as pool:
            answers = dict(zip(paths, pool.map(lambda p: _ask(p, places.environ, end, neutral), paths)))
    environments: dict[tuple, Environment] = {}
    unusable: list[Unusable] = []
    for c in candidates:
        answer = answers[c.path]
        if isinstance(answer, Unusable):
            if c.how == PATH_HOW and is_pyenv_shim(c.path, places):
                continue  # a shim for a version pyenv has not selected: the version itself is listed
            unusable.append(replace(answer, candidate=c))
            continue
        env = c.kernel.env if c.kernel is not None else ()
        key = (os.path.realpath(answer["executable"] or c.path), os.path.realpath(answer["prefix"]), env)
        found = environments.get(key)
        if found is None:
            found = environments[key] = Environment(
                interpreter=_best_path(c, answer),
                prefix=answer["prefix"],
                version=answer["version"],
                kind=_kind(answer, c, places),
                env=env,
            )
        found.reached.append(c)
    ordered = sorted(environments.values(), key=lambda e: min(HOW_ORDER.index(c.how) for c in e.reached))
    return ordered, unusable


def _ask(path: str, environ: Mapping[str, str], deadline: float, cwd: str):
    """The interpreter's own answer (checked), or an ``Unusable`` saying why there is none."""
    nobody = Candidate(path, "")
    if not os.path.exists(path):  # said without a process, so even when no time is left
        return Unusable(nobody, "is a broken link" if os.path.lexists(path) else "does not exist")
    left = deadline - time.perf_counter()
    if left < 0.5:
        return Unusable(nobody, "was not asked what it is: the scan's budget ran out first", timed_out=True)
    limit = min(IDENTIFY_TIMEOUT, left)
    try:
        done = procs.run([path, "-E", "-c", _IDENTIFY], timeout=limit, env=dict(environ), cwd=cwd)
    except (OSError, ValueError) as exc:
        return Unusable(nobody, f"cannot be run: {getattr(exc, 'strerror', None) or exc}")
    if done.timed_out:
        cause = " (the scan's budget)" if limit < IDENTIFY_TIMEOUT else ""
        return Unusable(nobody, f"did not answer within {limit:.3g} s{cause}", timed_out=True)
    if done.returncode != 0:
        last = (done.text("stderr").strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return Unusable(nobody, f"is not a working Python ({last[:160]})")
    answer = _answer(done.text())
    if answer is None:
        return Unusable(nobody, "is not a Python interpreter (unexpected output)")
    return answer


def _answer(text: str) -> dict | None:
    """The identifying line as the fields it must hold, of the types they must have, or None."""
    try:
        answer = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError, RecursionError):
        return None
    if not isinstance(answer, dict):
        return None
    fields = {k: answer.get(k) for k in ("executable", "prefix", "base_prefix", "version")}
    if not all(isinstance(v, str) and "\0" not in v and len(v) < 4096 for v in fields.values() if v is not None):
        return None
    if not fields["prefix"] or not isinstance(fields["version"], str) or len(fields["version"]) > 64:
        return None
    return {**fields, "conda": answer.get("conda") is True}


def _best_path(c: Candidate, answer: dict) -> str:
    """The interpreter's own name for itself, unless that is a shim or not there; else the path found."""
    executable = answer.get("executable") or ""
    return executable if executable and os.path.exists(executable) else c.path


def _kind(answer: dict, c: Candidate, places: Places) -> str:
    if answer.get("conda"):
        return "conda"
    if os.path.realpath(answer["prefix"]) != os.path.realpath(answer.get("base_prefix") or answer["prefix"]):
        return "venv"

    root = os.path.realpath(pyenv_root(places))
    if c.how == PYENV or os.path.realpath(answer["prefix"]).startswith(root + os.sep):
        return "pyenv"
    return "system"


# --- the doctor on each ----------------------------------------------------------------------------


def check_all(
    environments: list[Environment],
    environ: Mapping[str, str],
    *,
    full: bool,
    timeout: float,
    budget: float,
    whole_budget: float | None = None,
    jobs: int,
    progress=None,
) -> list[Environment]:
    """The doctor on every environment, ``jobs`` at a time, each within ``timeout``, all within
    ``budget`` (what is left of the scan's ``whole_budget``, the figure a message names)."""
    deadline = time.perf_counter() + budget
    lock = threading.Lock()

    def one(env: Environment) -> Environment:
        left = deadline - time.perf_counter()
        if left < 1.0:
            return replace(
                env,
                status=TIMED_OUT,
                error=f"not started: the scan's {whole_budget or budget:g} s budget ran out first",
            )
        limit = min(timeout, left)
        # The kernel's variables are for its interpreter: they travel in the request, and envcheck's
        # own child runs isolated. The doctor stops at its own timeout; the child gets a little more.
        probed = {**environ, **dict(env.env)}
        ask = child.request(env.interpreter, probed, full=full, timeout=max(1.0, limit - 2))
        started = time.perf_counter()
        try:
            done = procs.run(
                [sys.executable, "-I", "-c", child.BOOT], timeout=limit, env=child.child_environment(environ), input=ask
            )
        except OSError as exc:
            return replace(env, status=FAILED, error=f"cannot start the doctor: {exc.strerror or exc}")
        seconds = round(time.perf_counter() - started, 2)
        if progress is not None:
            with lock:
                progress(env)
        if done.timed_out:
            cause = "the scan's budget" if limit < timeout else f"--timeout {timeout:g}"
            return replace(
                env,
                status=TIMED_OUT,
                seconds=seconds,
                error=f"the doctor did not finish within {limit:.3g} s ({cause})",
            )
        if done.returncode in (0, 1):
            try:
                return replace(env, status=OK, seconds=seconds, report=json.loads(done.text()))
            except ValueError:
                pass
        last = (done.text("stderr").strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return replace(env, status=FAILED, seconds=seconds, error=last.removeprefix("envcheck: error: ")[:300])

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(environments) or 1))) as pool:
        return list(pool.map(one, environments))


def running_first(environments: list[Environment]) -> list[Environment]:
    return sorted(environments, key=lambda e: (not any(c.how == RUNNING for c in e.reached),))
