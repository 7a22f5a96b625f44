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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from envcheck import __version__
from envcheck.errors import UsageError
from envcheck.facts import (
    ERROR,
    SKIPPED,
    Facts,
    NvmlFacts,
    PackagesFacts,
    PythonFacts,
    TensorflowFacts,
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
    system: Optional[str] = None  # platform.system() of the probed machine; None = this one
    nvml: Any = None  # the pynvml module or a stand-in; None = import pynvml


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
    """Run every probe and return the frozen snapshot.

    The TensorFlow worker starts first and is read last: importing TensorFlow takes seconds, and
    every other probe (NVML on a thread of its own, since nvmlInit can be slow) fits inside them.
    """
    import platform as _platform

    system = options.system or _platform.system()
    python_exe = resolve_interpreter(options.python) if options.python else sys.executable
    worker = None
    if not options.quick:
        from envcheck.probes.tensorflow import start_tf_worker

        worker = start_tf_worker(python_exe, options.environ, options.tf_timeout)
    try:
        nvml_run = _NvmlThread(options.nvml)
        interp = probe_interpreter(python_exe if options.python else None, options.environ)
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
            **_gpu_stack(options, system, python_exe, interp, python_facts),
            nvml=nvml_run.result(),
            tensorflow=_finish(worker),
        )
    except BaseException:
        if hasattr(worker, "kill"):
            worker.kill()  # an interrupted doctor leaves no TensorFlow process behind
        raise
    return facts


def _gpu_stack(options: ProbeOptions, system: str, python_exe: str, interp: dict, python_facts: PythonFacts) -> dict:
    """The PCI, kernel driver and library sections (NVML and TensorFlow run beside them)."""
    from envcheck.probes.driver import probe_driver
    from envcheck.probes.libraries import probe_libraries, subprocess_load_tester
    from envcheck.probes.pci import probe_pci

    library_dirs = interp.get("library_dirs") if isinstance(interp.get("library_dirs"), dict) else {}
    pip_dirs = [str(d) for d in library_dirs.get("pip") or () if isinstance(d, str)]
    conda_prefix = python_facts.conda_prefix or options.environ.get("CONDA_PREFIX") or None
    # Loading libraries is what TF would do, in TF's interpreter; --quick skips it.
    tester = None if options.quick else subprocess_load_tester(python_exe, str(INTERPRETER_SCRIPT), options.environ)
    return {
        "pci": probe_pci(options.root, system),
        "driver": probe_driver(options.root, system),
        "libraries": probe_libraries(
            options.environ,
            options.root,
            system,
            pip_dirs=pip_dirs,
            conda_prefix=conda_prefix,
            load_tester=tester,
        ),
    }


def _finish(worker) -> TensorflowFacts:
    if worker is None:
        return TensorflowFacts(status=SKIPPED)
    if isinstance(worker, TensorflowFacts):
        return worker  # it could not even start; the reason is already in the facts
    return worker.finish()


class _NvmlThread:
    """probe_nvml on a thread: its ctypes calls release the GIL, so it overlaps the other probes."""

    def __init__(self, nvml: Any):
        import threading

        self._facts: Optional[NvmlFacts] = None
        self._thread = threading.Thread(target=self._run, args=(nvml,), name="envcheck-nvml", daemon=True)
        self._thread.start()

    def _run(self, nvml: Any) -> None:
        from envcheck.probes.nvml import probe_nvml

        try:
            self._facts = probe_nvml(nvml)
        except BaseException as exc:  # noqa: BLE001 - probes never raise, not even from a thread
            self._facts = NvmlFacts(status=ERROR, error_kind="unknown", error=f"{type(exc).__name__}: {exc}")

    def result(self, timeout: float = 60.0) -> NvmlFacts:
        self._thread.join(timeout)
        if self._facts is None:
            return NvmlFacts(status=ERROR, error_kind="unknown", error=f"NVML did not answer within {timeout:.0f} s")
        return self._facts


def _section(cls, data, name):
    """A probe's dict as its record; a malformed one becomes an error status, never a crash."""
    try:
        return from_dict(cls, data or {}, name)
    except Exception as exc:  # noqa: BLE001
        return cls(status=ERROR, error=f"probe returned malformed data: {exc}")


def this_interpreter() -> str:
    return sys.executable
