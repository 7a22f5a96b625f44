"""Small filesystem helpers: atomic writes, and reading the files a user names."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` so readers see the old file or the new one, never half of one."""
    import tempfile  # only writers pay for it; readers sit on the start-up path

    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def read_user_text(path: str | os.PathLike, kind: str, error: type[Exception]) -> str:
    """Read a file the user named (a snapshot, a patterns file) as UTF-8 text.

    Every failure is one ``error`` line starting with the path: missing, a directory, unreadable,
    or not UTF-8. ``kind`` names what was expected ("a facts file").
    """
    p = Path(path)
    try:
        if p.is_dir():
            raise error(f"{path}: is a directory, not {kind}")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except PermissionError:
        raise error(f"{path}: permission denied") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file (not UTF-8)") from None
