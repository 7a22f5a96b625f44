"""Where the Python environments of this machine are: each place gives candidate interpreters.

  the running interpreter    the one envcheck runs in
  PATH                       every python, python3, python3.X on it (the first of each name is
                             what a terminal runs; later ones are shadowed)
  virtualenvs                the project folder (the current one and its direct subfolders),
                             ~/.virtualenvs, $WORKON_HOME, ~/.venv*, pipenv's and poetry's folders
  pyenv                      $PYENV_ROOT/versions (~/.pyenv/versions)
  conda                      ``conda env list --json`` (or mamba, micromamba) and
                             ~/.conda/environments.txt
  Jupyter kernels            ``jupyter kernelspec list --json`` and the kernelspec folders
                             themselves (JUPYTER_PATH, JUPYTER_DATA_DIR, the user's and the
                             system's): a kernel's argv[0] is its interpreter (after a launcher
                             such as ``/usr/bin/env``, the first python word)

pipx's environments are tools, not places anyone trains from: never listed. Only reads files and
runs the conda and jupyter listings (bounded, through procs); nothing is changed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from envcheck import procs
from envcheck.scan.kernels import Kernel, kernelspecs
from envcheck.scan.places import (
    Places,
    Unreadable,
    children,
    kind_of,
    path_problem,
    places_from,
    read_small,
    venv_python,
    which,
    why,
)

__all__ = ["Candidate", "Kernel", "Places", "discover", "places_from", "venv_python", "which"]

LISTING_TIMEOUT = 15.0  # conda env list, jupyter kernelspec list

RUNNING = "running"
PATH_HOW = "PATH"
VIRTUALENV = "virtualenv"
PYENV = "pyenv"
CONDA = "conda"
KERNEL = "kernel"
HOW_ORDER = (RUNNING, PATH_HOW, VIRTUALENV, PYENV, CONDA, KERNEL)

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Candidate:
    """An interpreter found in one place."""

    path: str
    how: str  # one of HOW_ORDER
    detail: str = ""  # "python3", "~/.virtualenvs", "3.11.7", "base", the kernel's name
    kernel: Kernel | None = None

    @property
    def label(self) -> str:
        if self.how == RUNNING:
            return "running"
        if self.how == KERNEL:
            return f"kernel {self.detail!r}"
        return f"{self.how} {self.detail}".strip()


def discover(places: Places) -> tuple[list[Candidate], list[Kernel]]:
    """Every candidate interpreter, in HOW_ORDER, and every Python kernelspec."""
    out: list[Candidate] = []
    if places.running:
        out.append(Candidate(places.running, RUNNING))
    out += path_pythons(places)
    out += virtualenvs(places)
    out += pyenv_versions(places)
    out += conda_environments(places)
    jupyter = which("jupyter", places)
    kernels = kernelspecs(places, _run_json(places, [jupyter, "kernelspec", "list", "--json"]) if jupyter else None)
    out += [Candidate(k.interpreter, KERNEL, k.name, k) for k in kernels if k.interpreter and not k.problem]
    pipx = pipx_folders(places)
    return [c for c in out if not _inside(c.path, pipx)], kernels


# --- PATH ----------------------------------------------------------------------------------------


def search_path(places: Places) -> list[str]:
    return [p for p in places.environ.get("PATH", "").split(os.pathsep) if p]


def path_pythons(places: Places) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for folder in search_path(places):
        try:
            names = sorted(os.listdir(folder), key=_python_name_order)
        except OSError:
            continue
        for name in names:
            if not _PYTHON_NAME.match(name):
                continue
            path = os.path.join(folder, name)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            command = name[:-4] if name.lower().endswith(".exe") else name
            out.append(Candidate(path, PATH_HOW, command if command not in seen else f"{command} (shadowed)"))
            seen.add(command)
    return out


def _python_name_order(name: str) -> tuple:
    return (len(name), name)  # python, python3, python3.11 ...


# --- virtualenvs and pyenv -------------------------------------------------------------------------


def _is_venv(folder: Path, places: Places) -> bool:
    return kind_of(folder / "pyvenv.cfg", places, is_dir=False, where=folder)


def _venvs_in(folder: Path, places: Places) -> list[Path]:
    return [c for c in children(folder, places) if kind_of(c, places) and _is_venv(c, places)]


def virtualenvs(places: Places) -> list[Candidate]:
    home = places.home
    found: list[tuple[Path, str]] = []
    project = places.cwd
    if _is_venv(project, places):
        found.append((project, "project folder"))
    found += [(v, "project folder") for v in _venvs_in(project, places)]
    roots = [
        home / ".virtualenvs",
        home / ".local" / "share" / "virtualenvs",
        home / ".cache" / "pypoetry" / "virtualenvs",
    ]
    if places.environ.get("WORKON_HOME"):
        roots.insert(0, Path(places.environ["WORKON_HOME"]).expanduser())
    for root in roots:
        found += [(v, _tilde(str(root), home)) for v in _venvs_in(root, places)]
    dotted = [p for p in children(home, places) if p.name.startswith(".venv") and kind_of(p, places)]
    for folder in dotted:
        if _is_venv(folder, places):
            found.append((folder, _tilde(str(folder), home)))
        else:
            found += [(v, _tilde(str(folder), home)) for v in _venvs_in(folder, places)]
    seen: set[Path] = set()
    out = []
    for folder, where in found:
        if folder in seen:
            continue
        seen.add(folder)
        out.append(Candidate(str(venv_python(folder)), VIRTUALENV, where))
    return out


def pyenv_root(places: Places) -> Path:
    return Path(places.environ.get("PYENV_ROOT") or places.home / ".pyenv").expanduser()


def pyenv_versions(places: Places) -> list[Candidate]:
    versions = pyenv_root(places) / "versions"
    folders = sorted((p for p in children(versions, places) if kind_of(p, places)), key=lambda p: _version_key(p.name))
    return [Candidate(str(venv_python(f)), PYENV, f.name) for f in folders]


def _version_key(name: str) -> list:
    # Digits as numbers (3.9 before 3.10), a run too long for int() as its length first.
    return [(len(x), x) if x.isdigit() else (0, x) for x in re.split(r"(\d+)", name)]


def is_pyenv_shim(path: str, places: Places) -> bool:
    return _inside(path, [pyenv_root(places) / "shims"])


# --- conda -----------------------------------------------------------------------------------------


def conda_environments(places: Places) -> list[Candidate]:
    prefixes: list[tuple[str, str]] = []  # (folder, where it was listed)
    for tool in ("conda", "mamba", "micromamba"):
        exe = which(tool, places)
        if not exe:
            continue
        listed = _run_json(places, [exe, "env", "list", "--json"])
        if isinstance(listed, dict) and isinstance(listed.get("envs"), list):
            prefixes += [(p, f"{tool} env list") for p in listed["envs"] if isinstance(p, str)]
            break
    prefixes += _environments_txt(places)
    out = []
    first: dict[str, str] = {}
    for prefix, where in prefixes:
        first.setdefault(prefix, where)
    for prefix, where in first.items():
        problem = path_problem(prefix)
        if problem is not None:
            places.skip(where, f"{_shown(prefix)}: {problem}")
            continue
        folder = Path(prefix)
        try:
            name = "base" if (folder / "condabin").is_dir() else folder.name
        except OSError as exc:
            places.skip(where, f"{_shown(prefix)}: {why(exc)}")
            continue
        out.append(Candidate(str(venv_python(folder)), CONDA, name))
    return out


def _environments_txt(places: Places) -> list[tuple[str, str]]:
    """The folders ~/.conda/environments.txt lists, with their line numbers for a skipped line."""
    listing = places.home / ".conda" / "environments.txt"
    try:
        raw = read_small(listing, "a conda environments list")
    except Unreadable as exc:
        places.skip(listing, str(exc))
        return []
    text = (raw or b"").decode("utf-8", errors="replace")
    return [(line.strip(), f"{listing} line {n}") for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _shown(prefix: str) -> str:
    return prefix if len(prefix) <= 80 else f"{prefix[:40]}...{prefix[-20:]} ({len(prefix)} characters)"


def _run_json(places: Places, argv: list[str]):
    runner = places.runner or procs.run
    try:
        done = runner(argv, timeout=LISTING_TIMEOUT, env=dict(places.environ))
    except OSError:
        return None
    if done.returncode != 0:
        return None
    try:
        return json.loads(done.text())
    except ValueError:
        return None


# --- pipx and helpers ------------------------------------------------------------------------------


def pipx_folders(places: Places) -> list[Path]:
    """pipx's environments: tools installed with pipx, not places to train from."""
    folders = [places.home / ".local" / "pipx" / "venvs", places.home / ".local" / "share" / "pipx" / "venvs"]
    if places.environ.get("PIPX_HOME"):
        folders.insert(0, Path(places.environ["PIPX_HOME"]).expanduser() / "venvs")
    return folders


def _inside(path: str, folders: list[Path]) -> bool:
    for candidate in {os.path.abspath(path), os.path.realpath(path)}:
        for folder in folders:
            root = os.path.abspath(folder)
            if candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep):
                return True
    return False


def _tilde(path: str, home: Path) -> str:
    h = str(home).rstrip("/\\")
    if len(h) > 1 and (path == h or path.startswith(h + os.sep)):
        return "~" + path[len(h) :]
    return path
