"""Small filesystem helpers: atomic writes, and reading the files a user names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO


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


def open_user_file(path: str | os.PathLike, kind: str, error: type[Exception], label: str | None = None) -> BinaryIO:
    """Open a file the user named for binary reading; every failure is one ``error`` line.

    The line starts with ``label`` (default: the path) and names what went wrong: missing, a
    directory (``kind`` says what was expected, "a facts file"), no permission, unreadable.
    """
    name = label if label is not None else str(path)
    try:
        if Path(path).is_dir():
            raise error(f"{name}: is a directory, not {kind}")
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not {kind}") from None
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except PermissionError:
        raise error(f"{name}: permission denied") from None
    except OSError as exc:
        raise error(f"{name}: cannot read: {exc.strerror or exc}") from None


def read_user_text(path: str | os.PathLike, kind: str, error: type[Exception]) -> str:
    """Read a file the user named (a snapshot, a patterns file) as UTF-8 text, errors as above."""
    with open_user_file(path, kind, error) as fh:
        try:
            raw = fh.read()
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file (not UTF-8)") from None
