"""Probes gather, never judge, never raise: ``collect`` builds the facts snapshot.

Everything interpreter-specific runs inside the probed interpreter: in-process when it is the one
envcheck runs in, else as a subprocess running ``interpreter.py`` (standard library only).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform as _platform
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck import __version__, procs
from envcheck.errors import UsageError
from envcheck.facts import (
    ERROR,
    SKIPPED,
    DriverFacts,
    EnvFacts,
    Facts,
    HostFacts,
    LibrariesFacts,
    NvmlFacts,
    PackagesFacts,
    PciFacts,
    PlatformFacts,
    PythonFacts,
    TensorflowFacts,
    from_dict,
)
from envcheck.probes import interpreter as interpreter_probe
from envcheck.probes.driver import probe_driver
from envcheck.probes.gpu_speed import probe_host
from envcheck.probes.libraries import bounded_runner, probe_libraries, subprocess_load_tester
from envcheck.probes.limits import COMMAND_TIMEOUT, DOCTOR_TIMEOUT, INTERPRETER_TIMEOUT, NVML_TIMEOUT, TF_TIMEOUT
from envcheck.probes.nvml import probe_nvml
from envcheck.probes.pci import probe_pci
from envcheck.probes.system import probe_environment, probe_platform

INTERPRETER_SCRIPT = Path(interpreter_probe.__file__).resolve()


# The doctor as a whole stops at ``timeout`` (``--timeout``); each probe also has its own limit
# (probes/limits.py), and the earlier of the two applies.


@dataclass
class ProbeOptions:
    python: Optional[str] = None  # another interpreter to probe; None = this one
    quick: bool = False  # skip everything that imports TensorFlow
    tf_timeout: float = TF_TIMEOUT
    timeout: float = DOCTOR_TIMEOUT  # the whole collection
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    root: Path = Path("/")  # filesystem root, for tests that build trees
    system: Optional[str] = None  # platform.system() of the probed machine; None = this one
    nvml: Any = None  # the pynvml module or a stand-in; None = import pynvml
    # Told (probe name, "start" | "done") as probes run: the live display. It may be called from
    # the NVML thread, so it must be quick and thread-safe.
    progress: Optional[Callable[[str, str], None]] = None


class Clock:
    """The doctor's deadline: what is left of ``--timeout`` for the next probe."""

    def __init__(self, seconds: float) -> None:
        self.end = time.perf_counter() + seconds
        self.seconds = seconds

    def left(self, own: float) -> float:
        return max(0.0, min(own, self.end - time.perf_counter()))


def guarded(name: str, section: type, probe: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one probe: time it, and turn anything it raises into an error section, so that a probe
    that crashes costs its own part of the snapshot and nothing else."""
    started = time.perf_counter()
    try:
        result = probe(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - probes never raise into the doctor
        result = section(status=ERROR, error=f"the {name} probe failed: {type(exc).__name__}: {exc}")
    return dataclasses.replace(result, seconds=round(time.perf_counter() - started, 4))


def _tell(progress: Optional[Callable[[str, str], None]], name: str, event: str) -> None:
    if progress is not None:
        try:
            progress(name, event)
        except Exception:  # noqa: BLE001 - a display must never break the probes
            pass


class InThread:
    """A probe on a thread of its own (its C calls release the GIL, so it overlaps the others),
    given up on at its deadline: a hanging driver call cannot hold the doctor."""

    def __init__(self, name: str, section: type, probe: Callable[..., Any], *args: Any, progress=None) -> None:
        self.name, self.section = name, section
        self.progress = progress
        _tell(progress, name.lower(), "start")
        self.started = time.perf_counter()
        self._result: Any = None
        self._thread = threading.Thread(target=self._run, args=(probe, args), name=f"envcheck-{name}", daemon=True)
        self._thread.start()

    def _run(self, probe, args) -> None:
        try:
            self._result = guarded(self.name, self.section, probe, *args)
        except BaseException as exc:  # noqa: BLE001 - not even a thread may raise
            self._result = self.section(
                status=ERROR, error=f"the {self.name} probe failed: {type(exc).__name__}: {exc}"
            )
        _tell(self.progress, self.name.lower(), "done")

    def result(self, timeout: float) -> Any:
        self._thread.join(timeout)
        if self._result is None:
            waited = time.perf_counter() - self.started
            return self.section(
                status=ERROR,
                error=f"{self.name} did not answer within {waited:.0f} s",
                timed_out=True,
                seconds=round(waited, 4),
            )
        return self._result


def resolve_interpreter(python: str) -> str:
    """Check that ``python`` names a runnable interpreter; a clear UsageError otherwise."""
    path = Path(python).expanduser()
    if not path.exists():
        found = shutil.which(python)
        if not found:
            raise UsageError(f"--python {python}: no such file")
        path = Path(found)
    if path.is_dir():
        candidates = [path / "bin" / "python", path / "Scripts" / "python.exe", path / "python.exe"]
        if path.name in ("bin", "Scripts"):  # the environment's bin folder itself
            candidates += [path / "python", path / "python3", path / "python.exe"]
        hit = next((c for c in candidates if c.exists()), None)
        if hit is None:
            raise UsageError(f"--python {python}: is a directory with no bin/python in it")
        path = hit
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {python}: not executable")
    return str(path)


def probe_interpreter(
    python: Optional[str],
    environ: Mapping[str, str],
    timeout: float = INTERPRETER_TIMEOUT,
    requires_of: Sequence[str] = (),
) -> dict:
    """Python and package facts as plain dicts, from this or another interpreter."""
    if python is None:
        return interpreter_probe.collect(requires_of)
    exe = resolve_interpreter(python)
    argv = [exe, "-I", str(INTERPRETER_SCRIPT)] + (["--requires-of", ",".join(requires_of)] if requires_of else [])
    try:
        done = procs.run(argv, timeout=timeout, env=environ)
    except OSError as exc:
        raise UsageError(f"--python {python}: cannot run it: {exc.strerror or exc}") from None
    if done.timed_out:
        raise UsageError(f"--python {python}: did not answer within {timeout:.0f} s") from None
    if done.flooded:
        raise UsageError(
            f"--python {python}: printed more than {procs.MAX_STREAM_BYTES // (1024 * 1024)} MiB; not an interpreter envcheck can read"
        )
    if done.returncode != 0:
        old = _old_python(exe, environ, timeout)
        if old is not None:
            return old
        last = (done.text("stderr").strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {python}: not a working Python 3.6+ interpreter ({last[:200]})")
    try:
        data = json.loads(done.text())
        if not isinstance(data, dict) or "python" not in data:
            raise ValueError
    except ValueError:
        raise UsageError(f"--python {python}: not a Python interpreter (unexpected output)") from None
    return data


# Runs on any Python from 2.6 on: what an interpreter too old for the full probe can tell.
_OLD_PYTHON_CODE = (
    "import json, platform, struct, sys; "
    "print(json.dumps({'executable': sys.executable, 'version': platform.python_version(), "
    "'implementation': platform.python_implementation(), 'bits': struct.calcsize('P') * 8, "
    "'machine': platform.machine(), 'prefix': sys.prefix}))"
)


def _old_python(exe: str, environ: Mapping[str, str], timeout: float) -> Optional[dict]:
    """A reduced report for an interpreter the full probe cannot run on (Python 2.7, 3.5): the
    interpreter itself, and packages marked as not read."""
    try:
        done = procs.run([exe, "-c", _OLD_PYTHON_CODE], timeout=min(timeout, 10.0), env=environ)
        data = json.loads(done.text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not str(data.get("version", "")).startswith(
        ("2.", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5")
    ):
        return None
    return {
        "python": {
            k: data[k] for k in ("executable", "version", "implementation", "bits", "machine", "prefix") if k in data
        },
        "packages": {
            "status": "error",
            "error": f"Python {data['version']} is too old for envcheck's package probe (it needs 3.6 or later)",
        },
        "too_old": True,
    }


def _tf_distribution_names() -> tuple[str, ...]:
    """The distributions whose requirements the snapshot keeps (TensorFlow's, from the matrix)."""
    try:
        # lazy, inside the try: a matrix that cannot be loaded only leaves the requirements out
        from envcheck.matrix import load_matrix

        return load_matrix().tf_distribution_names()
    except Exception:  # noqa: BLE001 - without the matrix the snapshot just carries fewer requirements
        return ()


def collect(options: ProbeOptions) -> Facts:
    """Run every probe and return the frozen snapshot, within ``options.timeout`` in all.

    The TensorFlow worker starts first and is read last: importing TensorFlow takes seconds, and
    every other probe (NVML on a thread of its own, since nvmlInit can be slow) fits inside them.
    Each probe runs through ``guarded``: timed, and an error section instead of an exception.
    """

    clock = Clock(options.timeout)
    system = options.system or _platform.system()
    python_exe = resolve_interpreter(options.python) if options.python else sys.executable
    progress = options.progress
    worker = None
    if not options.quick:
        # lazy for start-up: keeps probes.tensorflow out of `envcheck doctor --quick`
        from envcheck.probes.tensorflow import start_tf_worker

        _tell(progress, "tensorflow", "start")
        worker = start_tf_worker(python_exe, options.environ, clock.left(options.tf_timeout))
    try:
        nvml_run = InThread("NVML", NvmlFacts, probe_nvml, options.nvml, progress=progress)
        _tell(progress, "python", "start")
        interp = probe_interpreter(
            python_exe if options.python else None,
            options.environ,
            timeout=clock.left(INTERPRETER_TIMEOUT),
            requires_of=_tf_distribution_names(),
        )
        _tell(progress, "python", "done")
        if interp.get("too_old") and hasattr(worker, "kill"):
            worker.kill()  # TensorFlow's check needs Python 3.6+ too
            worker = TensorflowFacts(
                status=SKIPPED,
                error="the interpreter is too old for the TensorFlow check (it needs Python 3.6 or later)",
            )
        python_facts = _section(PythonFacts, interp.get("python"), "python")
        packages_facts = _section(PackagesFacts, interp.get("packages"), "packages")
        facts = Facts(
            envcheck_version=__version__,
            created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            quick=options.quick,
            python=python_facts,
            platform=_told(progress, "platform", PlatformFacts, probe_platform, options.environ, options.root),
            env=_told(progress, "environment", EnvFacts, probe_environment, options.environ),
            host=_told(progress, "host", HostFacts, probe_host, options.root, system),
            packages=packages_facts,
            **_gpu_stack(options, clock, system, python_exe, interp, python_facts),
            nvml=_without_own_processes(_nvml_result(nvml_run, clock), worker),
            tensorflow=_finish(worker, clock, progress),
        )
    except BaseException:
        if hasattr(worker, "kill"):
            worker.kill()  # an interrupted doctor leaves no TensorFlow process behind
        raise
    return facts


def _nvml_result(run: InThread, clock: Clock) -> NvmlFacts:
    facts = run.result(clock.left(NVML_TIMEOUT))
    if facts.timed_out:
        return dataclasses.replace(facts, error_kind="unknown")
    return facts


def _without_own_processes(facts: NvmlFacts, worker) -> NvmlFacts:
    """The GPUs' processes less envcheck's own (the TensorFlow check runs its ops on the GPUs while
    NVML is asked): another process on a GPU is a finding, the doctor's worker is not."""
    child = getattr(getattr(worker, "child", None), "proc", None)
    own = {os.getpid()} | ({child.pid} if child is not None else set())
    if not any(p.pid in own for g in facts.gpus for p in g.processes):
        return facts
    gpus = tuple(
        dataclasses.replace(g, processes=tuple(p for p in g.processes if p.pid not in own)) for g in facts.gpus
    )
    return dataclasses.replace(facts, gpus=gpus)


def _gpu_stack(
    options: ProbeOptions, clock: Clock, system: str, python_exe: str, interp: dict, python_facts: PythonFacts
) -> dict:
    """The PCI, kernel driver and library sections (NVML and TensorFlow run beside them)."""

    library_dirs = interp.get("library_dirs") if isinstance(interp.get("library_dirs"), dict) else {}
    pip_dirs = [str(d) for d in library_dirs.get("pip") or () if isinstance(d, str)]
    conda_prefix = python_facts.conda_prefix or options.environ.get("CONDA_PREFIX") or None
    # Loading libraries is what TF would do, in TF's interpreter; --quick skips it.
    tester = None
    if not options.quick:
        tester = subprocess_load_tester(
            python_exe, str(INTERPRETER_SCRIPT), options.environ, clock.left(options.tf_timeout)
        )
    progress = options.progress
    return {
        "pci": _told(progress, "pci", PciFacts, probe_pci, options.root, system),
        "driver": _told(progress, "driver", DriverFacts, probe_driver, options.root, system),
        "libraries": _told(
            progress,
            "libraries",
            LibrariesFacts,
            probe_libraries,
            options.environ,
            options.root,
            system,
            pip_dirs=pip_dirs,
            conda_prefix=conda_prefix,
            runner=bounded_runner(lambda: clock.left(COMMAND_TIMEOUT)),
            load_tester=tester,
        ),
    }


def _told(progress, name: str, section: type, probe: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    _tell(progress, name, "start")
    result = guarded(name, section, probe, *args, **kwargs)
    _tell(progress, name, "done")
    return result


def _finish(worker, clock: Clock, progress=None) -> TensorflowFacts:
    if worker is None:
        return TensorflowFacts(status=SKIPPED)
    if isinstance(worker, TensorflowFacts):
        _tell(progress, "tensorflow", "done")
        return worker  # it could not even start; the reason is already in the facts
    facts = worker.finish(deadline=clock.end)
    _tell(progress, "tensorflow", "done")
    return facts


def _section(cls, data, name):
    """A probe's dict as its record; a malformed one becomes an error status, never a crash."""
    try:
        return from_dict(cls, data or {}, name)
    except Exception as exc:  # noqa: BLE001
        return cls(status=ERROR, error=f"probe returned malformed data: {exc}")
