"""What discovery reads (the environment, the home and project folders, the running Python), and
how it reads a machine it does not trust: every folder and file through checks that cannot raise
or hang, and what cannot be read written down as one "skipped: why" line, never an exception.

A folder may be unreadable (``/lost+found`` under ``cd /``), a listed path may hold a NUL or a
name longer than the system allows, a listing file may be a FIFO, a device or 4 GB: each is
``Places.skip(where, why)`` and the scan goes on. Files are read through the bounded reader every
command uses (envcheck/fsutil.py): a regular file only, opened without blocking, at most a cap.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from envcheck.errors import EnvcheckError
from envcheck.fsutil import read_user_bytes

_WINDOWS = os.name == "nt"
# A listing (environments.txt) or a kernel.json is a few kilobytes; a megabyte is past any real one.
LISTING_MAX_BYTES = 1024 * 1024
# Not being there is the usual answer, not a reason to say anything.
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


@dataclass(frozen=True)
class Skipped:
    """A place or an entry the scan could not read, and why (one line)."""

    where: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "why": self.why}


@dataclass(frozen=True)
class Places:
    """What discovery reads: the environment, the home and project folders, the running Python;
    and what it skipped (filled in as it goes)."""

    environ: Mapping[str, str]
    home: Path
    cwd: Path
    running: str | None = sys.executable
    system: str = "Windows" if _WINDOWS else ("Darwin" if sys.platform == "darwin" else "Linux")
    runner: object = field(default=None)  # procs.run or a stand-in (tests)
    skipped: list[Skipped] = field(default_factory=list, compare=False)

    def skip(self, where: object, why: str) -> None:
        self.skipped.append(Skipped(str(where), why))


def places_from(environ: Mapping[str, str], cwd: Path | None = None, running: str | None = sys.executable) -> Places:
    home = Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())
    return Places(environ=environ, home=home, cwd=cwd or Path.cwd(), running=running)


def which(name: str, places: Places) -> str | None:
    return shutil.which(name, path=places.environ.get("PATH", ""))


def venv_python(folder: Path) -> Path:
    """The interpreter of a venv or conda folder (whether or not it is still there)."""
    windows = (folder / "Scripts" / "python.exe", folder / "python.exe")
    for candidate in windows:
        if _exists(candidate):
            return candidate
    return folder / "bin" / "python"


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def why(exc: OSError) -> str:
    """An OSError as the end of a "skipped" line: "permission denied", "file name too long"."""
    return (exc.strerror or type(exc).__name__).lower()


def path_problem(text: str) -> str | None:
    """Why ``text`` can be no folder on this machine (a NUL, not absolute), else None."""
    if "\0" in text:
        return "it holds a NUL character"
    if not os.path.isabs(text):
        return "not an absolute folder (not resolved against the current folder)"
    return None


def kind_of(path: Path, places: Places, is_dir: bool = True, where: Path | None = None) -> bool:
    """Whether ``path`` is a folder (or, ``is_dir=False``, a regular file); a path that is there
    but cannot be looked at is skipped (as ``where``, default the path) with the reason, one that
    is not there is just False."""
    try:
        return path.is_dir() if is_dir else path.is_file()
    except ValueError:
        places.skip(where or path, "it holds a NUL character")
    except OSError as exc:
        if exc.errno not in _ABSENT:
            places.skip(where or path, why(exc))
    return False


def children(folder: Path, places: Places) -> list[Path]:
    """The entries of ``folder``, sorted; [] when it is not there; skipped when it cannot be read."""
    try:
        return sorted(folder.iterdir())
    except ValueError:
        places.skip(folder, "it holds a NUL character")
    except OSError as exc:
        if exc.errno not in _ABSENT:
            places.skip(folder, f"cannot be read ({why(exc)})")
    return []


class Unreadable(EnvcheckError):
    """A small file that is there but is no regular file, too big, or cannot be read: the reason."""


def read_small(path: Path, kind: str) -> bytes | None:
    """A small file (a listing, a kernel.json) through the bounded reader: None when it is not
    there; ``Unreadable`` (one line: "is a pipe (FIFO), not a kernel.json") otherwise."""
    if not os.path.lexists(path):
        return None
    return read_user_bytes(
        path, kind, Unreadable, label="", max_bytes=LISTING_MAX_BYTES, message=_reason, stdin_hint=False
    )


def _reason(_name: str, reason: str) -> str:
    return reason
