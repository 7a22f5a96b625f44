"""Jupyter's kernels: where Jupyter looks for kernelspecs, and what each kernel.json says.

A kernel's interpreter is its ``argv[0]`` (after a launcher such as ``/usr/bin/env``, the first
python word). kernel.json is read through the bounded reader (a regular file, at most a megabyte,
never a FIFO that hangs), parsed with the nesting bounded, and its ``env`` checked the way a
process start would (a name with ``=`` or a NUL, a value with a NUL cannot be in any process's
environment): a kernel.json Jupyter cannot start is a kernel with a ``problem``, one line, never
an exception that stops the scan.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcheck.scan.places import Places, Unreadable, children, kind_of, read_small, venv_python, which

_PYTHON_WORD = re.compile(
    r"^(i?python|pythonw)[\d.]*[mtd]?(\.exe)?$", re.IGNORECASE
)  # what a kernel's interpreter is called
# Jupyter's own rule for a kernel's name (jupyter_client.kernelspec: letters, digits, - . _).
VALID_NAME = re.compile(r"[a-z0-9._-]+", re.IGNORECASE)


@dataclass(frozen=True)
class Kernel:
    """One Jupyter kernelspec, as its kernel.json says."""

    name: str  # the folder's name: what `jupyter kernelspec remove NAME` takes
    spec_file: str  # the kernel.json
    display_name: str
    argv0: str | None  # its interpreter as written; None when argv is missing or empty
    interpreter: str | None  # argv0 resolved to a path (a bare "python" looked up); None if not found
    env: tuple[tuple[str, str], ...] = ()  # the variables kernel.json sets for the kernel
    problem: str | None = None  # why it cannot start, found without running it


def jupyter_data_dir(places: Places) -> Path:
    environ, home = places.environ, places.home
    if environ.get("JUPYTER_DATA_DIR"):
        return Path(environ["JUPYTER_DATA_DIR"]).expanduser()
    if places.system == "Windows":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming") / "jupyter"
    if places.system == "Darwin":
        return home / "Library" / "Jupyter"
    return Path(environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "jupyter"


def kernel_folders(places: Places, prefixes: tuple[str, ...] = ()) -> list[Path]:
    """Where Jupyter looks for kernelspecs, in its order: JUPYTER_PATH, the user's data folder,
    the environments' share/jupyter, the system's."""
    roots = [Path(p).expanduser() for p in places.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    roots.append(jupyter_data_dir(places))
    roots += [Path(p) / "share" / "jupyter" for p in prefixes]
    if places.system == "Windows":
        if places.environ.get("PROGRAMDATA"):
            roots.append(Path(places.environ["PROGRAMDATA"]) / "jupyter")
    else:
        roots += [Path("/usr/local/share/jupyter"), Path("/usr/share/jupyter")]
    return list(dict.fromkeys(r / "kernels" for r in roots))


def kernelspecs(places: Places, listed: Any = None) -> list[Kernel]:
    """Every Python kernelspec Jupyter would offer (the first of each name, as Jupyter takes it);
    ``listed`` is what ``jupyter kernelspec list --json`` answered, if anything."""
    specs: dict[str, Path] = {}
    if isinstance(listed, dict) and isinstance(listed.get("kernelspecs"), dict):
        for name, entry in listed["kernelspecs"].items():
            folder = entry.get("resource_dir") if isinstance(entry, dict) else None
            if isinstance(name, str) and isinstance(folder, str) and "\0" not in folder + name:
                specs.setdefault(name, Path(folder))
    prefixes = tuple(str(Path(p).parent.parent) for p in (places.running,) if p)
    for folder in kernel_folders(places, prefixes):
        for child in children(folder, places):
            if kind_of(child / "kernel.json", places, is_dir=False):
                specs.setdefault(child.name, child)
    kernels = [read_kernel(name, folder, places) for name, folder in specs.items()]
    return [k for k in kernels if k is not None]


def read_kernel(name: str, folder: Path, places: Places) -> Kernel | None:
    spec_file = folder / "kernel.json"
    spec, problem = _load(spec_file)
    if problem is not None:
        return Kernel(name, str(spec_file), name, None, None, problem=f"its kernel.json {problem}")
    language = str(spec.get("language") or "python").lower()
    if language != "python":
        return None  # R, Julia, ...: not a Python environment
    display = str(spec.get("display_name") or name)
    env, problem = _environment(spec.get("env"))
    argv = spec.get("argv")
    if problem is None and (
        not isinstance(argv, list) or not argv or not isinstance(argv[0], str) or not argv[0].strip()
    ):
        problem = "its kernel.json has no argv to start"
    if problem is not None:
        return Kernel(name, str(spec_file), display, None, None, env, problem=problem)
    argv0 = argv[0]
    if not _PYTHON_WORD.match(os.path.basename(argv0)):
        # A launcher ("/usr/bin/env python3 ...", a wrapper script): its Python is the first
        # python-looking word after it, if any; otherwise there is no interpreter to check.
        named = next((a for a in argv[1:] if isinstance(a, str) and _PYTHON_WORD.match(os.path.basename(a))), None)
        if named is None:
            return Kernel(name, str(spec_file), display, argv0, None, env)
        argv0 = named
    path, problem = _interpreter(argv0, folder, places)
    return Kernel(name, str(spec_file), display, argv0, path, env, problem=problem)


def _load(spec_file: Path) -> tuple[dict, str | None]:
    """kernel.json as an object, or why it cannot be one ("is a pipe (FIFO), not a kernel.json")."""
    try:
        raw = read_small(spec_file, "a kernel.json")
    except Unreadable as exc:
        return {}, str(exc)
    if raw is None:
        return {}, "is not there"
    try:
        spec = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return {}, "is not UTF-8 text"
    except ValueError:
        return {}, "is not valid JSON"
    except RecursionError:
        return {}, "is nested too deeply to be a kernelspec"
    if not isinstance(spec, dict):
        return {}, "is not a JSON object"
    return spec, None


def _environment(env: Any) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """kernel.json's ``env`` as (name, value) pairs, or why no process could be started with it."""
    if not isinstance(env, dict):
        return (), None
    items = []
    for key, value in env.items():
        name, text = str(key), str(value)
        if not name or "=" in name or "\0" in name:
            return (), f"its kernel.json sets a variable no process can have (the name {name!r})"
        if "\0" in text:
            return (), f"its kernel.json sets {name} to a value no process can have (it holds a NUL character)"
        items.append((name, text))
    return tuple(sorted(items)), None


def _interpreter(argv0: str, folder: Path, places: Places) -> tuple[str | None, str | None]:
    """The interpreter a kernel's argv names, as a path, or why it cannot start."""
    if "\0" in argv0:
        return None, "its interpreter's name holds a NUL character"
    if os.path.isabs(os.path.expanduser(argv0)):
        path = os.path.expanduser(argv0)
        if not os.path.lexists(path):
            return None, f"its interpreter {argv0} does not exist"
        if not os.path.exists(path):
            return None, f"its interpreter {argv0} is a broken link"
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            return None, f"its interpreter {argv0} is not executable"
        return path, None
    # A bare name ("python3"): the Python of the environment that holds the kernelspec, else PATH's.
    owner = _prefix_of_share(folder)
    if owner is not None and os.path.exists(venv_python(owner)):
        return str(venv_python(owner)), None
    found = which(argv0, places)
    if found is None:
        return None, f"its interpreter {argv0!r} is not on PATH"
    return found, None


def _prefix_of_share(folder: Path) -> Path | None:
    """<prefix>/share/jupyter/kernels/<name> -> <prefix>."""
    parts = folder.parts
    if len(parts) >= 4 and parts[-4:-1] == ("share", "jupyter", "kernels"):
        return Path(*parts[:-4])
    return None
