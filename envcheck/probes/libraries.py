"""The CUDA and cuDNN libraries on this machine: every copy, which one the loader takes, and
(on Linux, outside --quick) whether each loads and which version it reports about itself.

The search itself is pure (``library_search``); this module gathers the machine's inputs: the
environment, the ldconfig cache (through an injectable command runner), the pip wheels' folders of
the probed interpreter, conda and the CUDA toolkit folders. Load tests run inside the probed
interpreter, in a subprocess, so a library whose constructor crashes cannot take the doctor down.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import platform
import re
import struct
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Optional

from envcheck import procs
from envcheck.facts import ERROR, SKIPPED, CudaToolkit, LibrariesFacts
from envcheck.probes.library_search import (
    Location,
    env_get,
    find_libraries,
    ldconfig_locations,
    parse_ldconfig,
    search_windows,
)
from envcheck.probes.limits import TF_TIMEOUT

# (argv, timeout) -> (returncode, stdout). Raises OSError when the program cannot be run.
CommandRunner = Callable[[Sequence[str], float], tuple[int, str]]
# [{"path", "family"}, ...] -> [{"loads", "load_error", "reported_version"}, ...] in the same order.
LoadTester = Callable[[list[dict]], list[dict]]

LDCONFIG_CANDIDATES = ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig")
MAX_LOAD_TESTS = 48  # a machine with dozens of stray copies still gets a bounded probe


def run_command(argv: Sequence[str], timeout: float) -> tuple[int, str]:
    """Run a program with a deadline and a cap on its output (``procs``)."""
    done = procs.run(argv, timeout=timeout)
    if done.timed_out:
        raise subprocess.TimeoutExpired(list(argv), timeout)
    return (done.returncode if done.returncode is not None else -1), done.text()


def bounded_runner(budget: Callable[[], float]) -> CommandRunner:
    """``run_command`` whose timeout is also capped by what is left of the doctor's time."""

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        return run_command(argv, min(timeout, budget()))

    return run


def probe_libraries(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    system: Optional[str] = None,
    pip_dirs: Sequence[str] = (),
    conda_prefix: Optional[str] = None,
    runner: CommandRunner = run_command,
    load_tester: Optional[LoadTester] = None,
) -> LibrariesFacts:
    """Search, then (when ``load_tester`` is given) load every copy found."""
    system = system or platform.system()
    try:
        if system == "Windows":
            path = env_get(environ, "PATH") or ""
            result = search_windows(path.split(";"), environ, _list_names)
            facts = LibrariesFacts(
                search_path=result.search_path,
                libraries=result.libraries,
                toolkits=result.toolkits,
                search_errors=tuple(f"cannot list {d}" for d in result.unreadable if _exists(d)),
            )
        elif system == "Linux":
            facts = _search_linux(environ, root, pip_dirs, conda_prefix, runner)
            if load_tester is not None:
                facts = load_copies(facts, load_tester)
        else:
            return LibrariesFacts(
                status=SKIPPED,
                error=f"TensorFlow has no CUDA builds for {system}",
            )
    except Exception as exc:  # noqa: BLE001 - probes never raise
        return LibrariesFacts(status=ERROR, error=f"{type(exc).__name__}: {exc}")
    return dataclasses.replace(facts)


def _search_linux(
    environ: Mapping[str, str],
    root: Path,
    pip_dirs: Sequence[str],
    conda_prefix: Optional[str],
    runner: CommandRunner,
) -> LibrariesFacts:
    errors: list[str] = []
    locations: list[Location] = []
    # The order TF's dlopen calls meet directories: LD_LIBRARY_PATH, then the RUNPATH of the TF
    # libraries (which points at the pip nvidia-* wheels), then the ldconfig cache, then the
    # default directories. Conda and toolkit folders are reached only through one of these.
    for entry in environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry:
            locations.append(Location(entry, "LD_LIBRARY_PATH"))
    locations.extend(Location(d, "pip") for d in pip_dirs)
    entries, ldconfig_error = read_ldconfig_cache(runner)
    if ldconfig_error:
        errors.append(ldconfig_error)
    locations.extend(ldconfig_locations(entries, os.path.realpath))
    for default in ("lib64", "usr/lib64", "lib", "usr/lib"):
        locations.append(Location(str(root / default), "system"))
    if conda_prefix:
        locations.append(Location(os.path.join(conda_prefix, "lib"), "conda", on_loader_path=False))
    toolkits = find_cuda_toolkits(environ, root, conda_prefix)
    for toolkit in toolkits:
        if toolkit.origin == "conda":
            continue  # its libraries are the conda lib folder above
        for sub in ("lib64", "lib", f"targets/{_target_arch()}-linux/lib"):
            locations.append(Location(os.path.join(toolkit.path, sub), toolkit.origin, on_loader_path=False))
    locations = [
        loc for loc in _unique_directories(locations) if loc.entries is not None or os.path.isdir(loc.directory)
    ]
    libraries, unreadable = find_libraries(locations, os.listdir, _resolve, "linux")
    errors.extend(f"cannot list {d}" for d in unreadable if _exists(d))
    return LibrariesFacts(
        search_path=tuple(loc.directory for loc in locations),
        libraries=libraries,
        toolkits=toolkits,
        search_errors=tuple(errors),
    )


def read_ldconfig_cache(runner: CommandRunner) -> tuple[list[tuple[str, str]], Optional[str]]:
    """The ldconfig cache as (name, path) pairs, or an error line saying why it could not be read."""
    last_error = None
    for program in LDCONFIG_CANDIDATES:
        try:
            code, out = runner([program, "-p"], 10.0)
        except (OSError, subprocess.SubprocessError) as exc:
            last_error = f"ldconfig -p: {getattr(exc, 'strerror', None) or exc}"
            continue
        if code != 0:
            return [], f"ldconfig -p exited with {code}"
        return parse_ldconfig(out, want_64bit=_is_64bit()), None
    return [], last_error


def _target_arch() -> str:
    """The toolkit's per-architecture folder name: x86_64, or sbsa for 64-bit Arm servers."""
    machine = platform.machine().lower()
    return "sbsa" if machine in ("aarch64", "arm64") else machine


def _is_64bit() -> bool:
    return struct.calcsize("P") == 8


def _unique_directories(locations: list[Location]) -> list[Location]:
    """Drop a directory met again (by its real path), unless the first meeting saw only part of it."""
    out: list[Location] = []
    complete: set[str] = set()
    for location in locations:
        key = os.path.realpath(location.directory)
        if key in complete:
            continue
        if location.entries is None:
            complete.add(key)
        out.append(location)
    return out


def _resolve(directory: str, name: str) -> str:
    return os.path.realpath(os.path.join(directory, name))


def _list_names(directory: str) -> list[str]:
    return os.listdir(directory)


def _exists(directory: str) -> bool:
    return os.path.exists(directory)


# --- CUDA toolkits -------------------------------------------------------------------------------

_CUDA_H_VERSION = re.compile(r"^#define\s+CUDA_VERSION\s+(\d+)", re.M)
_VERSION_TXT = re.compile(r"CUDA Version\s+(\d+(?:\.\d+)*)")
_CONDA_CUDA_PACKAGES = ("cuda-version", "cudatoolkit", "cuda-toolkit", "cuda-cudart")


def find_cuda_toolkits(
    environ: Mapping[str, str], root: Path = Path("/"), conda_prefix: Optional[str] = None
) -> tuple[CudaToolkit, ...]:
    """CUDA_HOME, CUDA_PATH, /usr/local/cuda*, /opt/cuda and a conda env's CUDA packages."""
    candidates: list[tuple[str, str]] = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        value = environ.get(var)
        if value:
            candidates.append((value, "CUDA_PATH" if var == "CUDA_PATH" else "CUDA_HOME"))
    local = root / "usr/local"
    candidates.append((str(local / "cuda"), "cuda-dir"))
    versioned = sorted(glob.glob(str(local / "cuda-*")), key=lambda p: _dir_version_key(p), reverse=True)
    candidates.extend((p, "cuda-dir") for p in versioned)
    candidates.append((str(root / "opt/cuda"), "cuda-dir"))
    found: list[CudaToolkit] = []
    seen: set[str] = set()
    for path, origin in candidates:
        if not os.path.isdir(path):
            continue
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        version, source = toolkit_version(Path(path))
        found.append(CudaToolkit(path=path, version=version, origin=origin, version_source=source))
    if conda_prefix:
        conda = conda_cuda_version(Path(conda_prefix))
        if conda is not None:
            found.append(CudaToolkit(path=conda_prefix, version=conda[0], origin="conda", version_source=conda[1]))
    return tuple(found)


def toolkit_version(path: Path) -> tuple[Optional[str], Optional[str]]:
    """(version, where it came from): version.json, version.txt, cuda.h, then the folder name."""
    try:
        data = json.loads((path / "version.json").read_text(errors="replace"))
        version = data.get("cuda", {}).get("version") if isinstance(data, dict) else None
        if isinstance(version, str) and version:
            return version, "version.json"
    except (OSError, ValueError, AttributeError):
        pass
    try:
        m = _VERSION_TXT.search((path / "version.txt").read_text(errors="replace"))
        if m:
            return m.group(1), "version.txt"
    except OSError:
        pass
    try:
        m = _CUDA_H_VERSION.search((path / "include/cuda.h").read_text(errors="replace"))
        if m:
            value = int(m.group(1))
            return f"{value // 1000}.{(value % 1000) // 10}", "cuda.h"
    except OSError:
        pass
    m = re.search(r"cuda-(\d+\.\d+)$", os.path.realpath(path))
    if m:
        return m.group(1), "directory name"
    return None, None


def conda_cuda_version(prefix: Path) -> Optional[tuple[str, str]]:
    """The CUDA version a conda env pins, from its package records (conda-meta/NAME-VERSION-BUILD.json)."""
    meta = prefix / "conda-meta"
    try:
        names = os.listdir(meta)
    except OSError:
        return None
    for package in _CONDA_CUDA_PACKAGES:
        for name in sorted(names):
            m = re.fullmatch(rf"{re.escape(package)}-(\d+(?:\.\d+)*)-[^-]+\.json", name)
            if m:
                return m.group(1), f"conda package {package}"
    return None


def _dir_version_key(path: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", os.path.basename(path)))


# --- load tests ----------------------------------------------------------------------------------


def load_copies(facts: LibrariesFacts, load_tester: LoadTester) -> LibrariesFacts:
    """Each copy with ``loads``, ``load_error`` and ``reported_version`` filled by the tester."""
    requests = []
    for family in facts.libraries:
        for copy in family.copies:
            if len(requests) < MAX_LOAD_TESTS:
                requests.append({"path": copy.path, "family": family.family})
    if not requests:
        return facts
    errors = list(facts.search_errors)
    try:
        results = load_tester(requests)
    except Exception as exc:  # noqa: BLE001 - the load test is extra detail, never fatal
        errors.append(f"library load test failed: {type(exc).__name__}: {exc}")
        return dataclasses.replace(facts, search_errors=tuple(errors))
    by_path = {req["path"]: res for req, res in zip(requests, results) if isinstance(res, dict)}
    libraries = []
    for family in facts.libraries:
        copies = []
        for copy in family.copies:
            res = by_path.get(copy.path)
            if res is not None:
                copy = dataclasses.replace(
                    copy,
                    loads=res.get("loads"),
                    load_error=res.get("load_error"),
                    reported_version=res.get("reported_version"),
                )
            copies.append(copy)
        libraries.append(dataclasses.replace(family, copies=tuple(copies)))
    return dataclasses.replace(facts, libraries=tuple(libraries), search_errors=tuple(errors))


def subprocess_load_tester(
    python: str, script: str, environ: Mapping[str, str], timeout: float = TF_TIMEOUT
) -> LoadTester:
    """Run the load tests in ``python`` (the probed interpreter) with the user's environment,
    within ``timeout`` in all; a library whose load hangs is the one reported as hanging."""

    def test(requests: list[dict]) -> list[dict]:
        done = procs.run(
            [python, "-I", script, "--load-libraries"],
            input=json.dumps(requests).encode(),
            timeout=timeout,
            env=environ,
        )
        return load_results(requests, done.text(), done.returncode)

    return test


def load_results(requests: list[dict], output: str, returncode: Optional[int]) -> list[dict]:
    """Turn the tester's lines into one result per request; the copy being loaded when the
    process died (a crash or a hang) is the one that killed it."""
    results: list[dict] = [{} for _ in requests]
    trying: Optional[int] = None
    for line in output.splitlines():
        try:
            item = json.loads(line)
            index = int(item["index"])
        except (ValueError, KeyError, TypeError):
            continue
        if not 0 <= index < len(results):
            continue
        if item.get("trying"):
            trying = index
            continue
        results[index] = {k: item.get(k) for k in ("loads", "load_error", "reported_version")}
        trying = None
    if trying is not None:
        if returncode is None:
            how = "did not finish in time"
        elif returncode < 0:
            how = f"killed the process (signal {-returncode})"
        else:
            how = f"ended the process (exit status {returncode})"
        results[trying] = {"loads": False, "load_error": f"loading this library {how}"}
    return results
