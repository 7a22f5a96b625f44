"""Probes gather, never judge, never raise: ``collect`` builds the facts snapshot.

Everything interpreter-specific runs inside the probed interpreter: in-process when it is the one
envcheck runs in, else as a subprocess running ``interpreter.py`` (standard library only).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from envcheck import __version__
from envcheck.errors import UsageError
from envcheck.facts import (
    ERROR,
    Facts,
    PackagesFacts,
    PythonFacts,
    from_dict,
)
from envcheck.probes import interpreter as interpreter_probe
from envcheck.probes.system import probe_environment, probe_platform

INTERPRETER_SCRIPT = Path(interpreter_probe.__file__).resolve()


@dataclass
class ProbeOptions:
    python: Optional[str] = None  # another interpreter to probe; None = this one
    quick: bool = False  # skip everything that imports TensorFlow
    tf_timeout: float = 60.0
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    root: Path = Path("/")  # filesystem root, for tests that build trees


def resolve_interpreter(python: str) -> str:
    """Check that ``python`` names a runnable interpreter; a clear UsageError otherwise."""
    path = Path(python).expanduser()
    if not path.exists():
        import shutil

        found = shutil.which(python)
        if not found:
            raise UsageError(f"--python {python}: no such file")
        path = Path(found)
    if path.is_dir():
        candidates = [path / "bin" / "python", path / "Scripts" / "python.exe", path / "python.exe"]
        hit = next((c for c in candidates if c.exists()), None)
        if hit is None:
            raise UsageError(f"--python {python}: is a directory with no bin/python in it")
        path = hit
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {python}: not executable")
    return str(path)


def probe_interpreter(python: Optional[str], environ: Mapping[str, str], timeout: float = 30.0) -> dict:
    """Python and package facts as plain dicts, from this or another interpreter."""
    if python is None:
        return interpreter_probe.collect()
    exe = resolve_interpreter(python)
    try:
        proc = subprocess.run(
            [exe, "-I", str(INTERPRETER_SCRIPT)],
            capture_output=True,
            timeout=timeout,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"--python {python}: did not answer within {timeout:.0f} s") from None
    except OSError as exc:
        raise UsageError(f"--python {python}: cannot run it: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {python}: not a working Python 3 interpreter ({last[:200]})")
    try:
        data = json.loads(proc.stdout.decode(errors="replace"))
        if not isinstance(data, dict) or "python" not in data:
            raise ValueError
    except ValueError:
        raise UsageError(f"--python {python}: not a Python interpreter (unexpected output)") from None
    return data


def collect(options: ProbeOptions) -> Facts:
    """Run every probe and return the frozen snapshot."""
    started = time.perf_counter()
    interp = probe_interpreter(options.python, options.environ)
    python_facts = _section(PythonFacts, interp.get("python"), "python")
    packages_facts = _section(PackagesFacts, interp.get("packages"), "packages")
    facts = Facts(
        envcheck_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        quick=options.quick,
        python=python_facts,
        platform=probe_platform(options.environ, options.root),
        env=probe_environment(options.environ),
        packages=packages_facts,
    )
    del started
    return facts


def _section(cls, data, name):
    """A probe's dict as its record; a malformed one becomes an error status, never a crash."""
    try:
        return from_dict(cls, data or {}, name)
    except Exception as exc:  # noqa: BLE001
        return cls(status=ERROR, error=f"probe returned malformed data: {exc}")


def this_interpreter() -> str:
    return sys.executable
