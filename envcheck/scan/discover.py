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
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from envcheck import procs

LISTING_TIMEOUT = 15.0  # conda env list, jupyter kernelspec list

RUNNING = "running"
PATH_HOW = "PATH"
VIRTUALENV = "virtualenv"
PYENV = "pyenv"
CONDA = "conda"
KERNEL = "kernel"
HOW_ORDER = (RUNNING, PATH_HOW, VIRTUALENV, PYENV, CONDA, KERNEL)

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$", re.IGNORECASE)
_PYTHON_WORD = re.compile(
    r"^(i?python|pythonw)[\d.]*[mtd]?(\.exe)?$", re.IGNORECASE
)  # what a kernel's interpreter is called
_WINDOWS = os.name == "nt"


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


@dataclass(frozen=True)
class Places:
    """What discovery reads: the environment, the home and project folders, the running Python."""

    environ: Mapping[str, str]
    home: Path
    cwd: Path
    running: str | None = sys.executable
    system: str = "Windows" if _WINDOWS else ("Darwin" if sys.platform == "darwin" else "Linux")
    runner: object = field(default=None)  # procs.run or a stand-in (tests)


def places_from(environ: Mapping[str, str], cwd: Path | None = None, running: str | None = sys.executable) -> Places:
    home = Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())
    return Places(environ=environ, home=home, cwd=cwd or Path.cwd(), running=running)


def discover(places: Places) -> tuple[list[Candidate], list[Kernel]]:
    """Every candidate interpreter, in HOW_ORDER, and every Python kernelspec."""
    out: list[Candidate] = []
    if places.running:
        out.append(Candidate(places.running, RUNNING))
    out += path_pythons(places)
    out += virtualenvs(places)
    out += pyenv_versions(places)
    out += conda_environments(places)
    kernels = kernelspecs(places)
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


def which(name: str, places: Places) -> str | None:
    return shutil.which(name, path=places.environ.get("PATH", ""))


# --- virtualenvs and pyenv -------------------------------------------------------------------------


def venv_python(folder: Path) -> Path:
    """The interpreter of a venv or conda folder (whether or not it is still there)."""
    windows = (folder / "Scripts" / "python.exe", folder / "python.exe")
    for candidate in windows:
        if candidate.exists():
            return candidate
    return folder / "bin" / "python"


def _is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


def _venvs_in(folder: Path) -> list[Path]:
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []
    return [c for c in children if _is_venv(c)]


def virtualenvs(places: Places) -> list[Candidate]:
    home = places.home
    found: list[tuple[Path, str]] = []
    project = places.cwd
    if _is_venv(project):
        found.append((project, "project folder"))
    found += [(v, "project folder") for v in _venvs_in(project)]
    roots = [
        home / ".virtualenvs",
        home / ".local" / "share" / "virtualenvs",
        home / ".cache" / "pypoetry" / "virtualenvs",
    ]
    if places.environ.get("WORKON_HOME"):
        roots.insert(0, Path(places.environ["WORKON_HOME"]).expanduser())
    for root in roots:
        found += [(v, _tilde(str(root), home)) for v in _venvs_in(root)]
    try:
        dotted = sorted(p for p in home.glob(".venv*") if p.is_dir())
    except OSError:
        dotted = []
    for folder in dotted:
        if _is_venv(folder):
            found.append((folder, _tilde(str(folder), home)))
        else:
            found += [(v, _tilde(str(folder), home)) for v in _venvs_in(folder)]
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
    try:
        folders = sorted((p for p in versions.iterdir() if p.is_dir()), key=lambda p: _version_key(p.name))
    except OSError:
        return []
    return [Candidate(str(venv_python(f)), PYENV, f.name) for f in folders]


def _version_key(name: str) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name)]


def is_pyenv_shim(path: str, places: Places) -> bool:
    return _inside(path, [pyenv_root(places) / "shims"])


# --- conda -----------------------------------------------------------------------------------------


def conda_environments(places: Places) -> list[Candidate]:
    prefixes: list[str] = []
    for tool in ("conda", "mamba", "micromamba"):
        exe = which(tool, places)
        if not exe:
            continue
        listed = _run_json(places, [exe, "env", "list", "--json"])
        if isinstance(listed, dict) and isinstance(listed.get("envs"), list):
            prefixes += [p for p in listed["envs"] if isinstance(p, str)]
            break
    listing = places.home / ".conda" / "environments.txt"
    try:
        prefixes += [
            line.strip() for line in listing.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
        ]
    except OSError:
        pass
    out = []
    for prefix in dict.fromkeys(prefixes):
        folder = Path(prefix)
        name = "base" if (folder / "condabin").is_dir() else folder.name
        out.append(Candidate(str(venv_python(folder)), CONDA, name))
    return out


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


# --- Jupyter kernels -------------------------------------------------------------------------------


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


def kernelspecs(places: Places) -> list[Kernel]:
    """Every Python kernelspec Jupyter would offer (the first of each name, as Jupyter takes it)."""
    specs: dict[str, Path] = {}
    jupyter = which("jupyter", places)
    if jupyter:
        listed = _run_json(places, [jupyter, "kernelspec", "list", "--json"])
        if isinstance(listed, dict) and isinstance(listed.get("kernelspecs"), dict):
            for name, entry in listed["kernelspecs"].items():
                if isinstance(entry, dict) and isinstance(entry.get("resource_dir"), str):
                    specs.setdefault(name, Path(entry["resource_dir"]))
    prefixes = tuple(str(Path(p).parent.parent) for p in (places.running,) if p)
    for folder in kernel_folders(places, prefixes):
        try:
            children = sorted(p for p in folder.iterdir() if (p / "kernel.json").is_file())
        except OSError:
            continue
        for child in children:
            specs.setdefault(child.name, child)
    kernels = [read_kernel(name, folder, places) for name, folder in specs.items()]
    return [k for k in kernels if k is not None]


def read_kernel(name: str, folder: Path, places: Places) -> Kernel | None:
    spec_file = folder / "kernel.json"
    try:
        spec = json.loads(spec_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        reason = "cannot be read" if isinstance(exc, OSError) else "is not valid JSON"
        return Kernel(name, str(spec_file), name, None, None, problem=f"its kernel.json {reason}")
    if not isinstance(spec, dict):
        return Kernel(name, str(spec_file), name, None, None, problem="its kernel.json is not a JSON object")
    language = str(spec.get("language") or "python").lower()
    if language != "python":
        return None  # R, Julia, ...: not a Python environment
    display = str(spec.get("display_name") or name)
    env = spec.get("env") if isinstance(spec.get("env"), dict) else {}
    env_items = tuple(sorted((str(k), str(v)) for k, v in env.items()))
    argv = spec.get("argv")
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str) or not argv[0].strip():
        return Kernel(
            name, str(spec_file), display, None, None, env_items, problem="its kernel.json has no argv to start"
        )
    argv0 = argv[0]
    if not _PYTHON_WORD.match(os.path.basename(argv0)):
        # A launcher ("/usr/bin/env python3 ...", a wrapper script): its Python is the first
        # python-looking word after it, if any; otherwise there is no interpreter to check.
        named = next((a for a in argv[1:] if isinstance(a, str) and _PYTHON_WORD.match(os.path.basename(a))), None)
        if named is None:
            return Kernel(name, str(spec_file), display, argv0, None, env_items)
        argv0 = named
    if os.path.isabs(os.path.expanduser(argv0)):
        path = os.path.expanduser(argv0)
        if not os.path.lexists(path):
            return Kernel(
                name, str(spec_file), display, argv0, None, env_items, problem=f"its interpreter {argv0} does not exist"
            )
        if not os.path.exists(path):
            return Kernel(
                name,
                str(spec_file),
                display,
                argv0,
                None,
                env_items,
                problem=f"its interpreter {argv0} is a broken link",
            )
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            return Kernel(
                name,
                str(spec_file),
                display,
                argv0,
                None,
                env_items,
                problem=f"its interpreter {argv0} is not executable",
            )
        return Kernel(name, str(spec_file), display, argv0, path, env_items)
    # A bare name ("python3"): the Python of the environment that holds the kernelspec, else PATH's.
    owner = _prefix_of_share(folder)
    if owner is not None and venv_python(owner).exists():
        return Kernel(name, str(spec_file), display, argv0, str(venv_python(owner)), env_items)
    found = which(argv0, places)
    if found is None:
        return Kernel(
            name, str(spec_file), display, argv0, None, env_items, problem=f"its interpreter {argv0!r} is not on PATH"
        )
    return Kernel(name, str(spec_file), display, argv0, found, env_items)


def _prefix_of_share(folder: Path) -> Path | None:
    """<prefix>/share/jupyter/kernels/<name> -> <prefix>."""
    parts = folder.parts
    if len(parts) >= 4 and parts[-4:-1] == ("share", "jupyter", "kernels"):
        return Path(*parts[:-4])
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
