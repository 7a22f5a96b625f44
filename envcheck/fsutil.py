"""Small filesystem helpers: atomic writes, and reading the files a user names.

Every file a user names (a snapshot, a matrix, a patterns file, a log) is opened here, and only a
regular file (or ``-``, standard input) is read: a FIFO would block the open forever, a device
(``/dev/zero``, ``/dev/urandom``) would be read until memory runs out. The open itself never
blocks (``O_NONBLOCK``), the type is checked on the open descriptor, and what is read whole has a
size cap per kind; a log is streamed, so it has none.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Optional

MIB = 1024 * 1024

FACTS_FILE = "a facts file"
MATRIX_FILE = "a matrix file"
PATTERNS_FILE = "a patterns file"
LOG_FILE = "a log file"

# What a file read whole may hold. A real snapshot is tens of kilobytes (the largest in the tests
# about 25 KB, with every installed package listed), the bundled matrix and patterns files about
# 110 KB: the caps leave a hundredfold room and still bound memory.
MAX_BYTES: dict[str, int] = {FACTS_FILE: 16 * MIB, MATRIX_FILE: 16 * MIB, PATTERNS_FILE: 8 * MIB}
DEFAULT_MAX_BYTES = 16 * MIB

Message = Callable[[str, str], str]


def _plain(name: str, reason: str) -> str:
    return f"{name}: {reason}"


def atomic_write_bytes(path: str | os.PathLike, data: bytes, mode: Optional[int] = None) -> None:
    """Write ``data`` so readers see the old file or the new one, never half of one.

    ``mode`` is the new file's permission bits (default: mkstemp's 0600).
    """
    import tempfile  # only writers pay for it; readers sit on the start-up path

    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str, mode: Optional[int] = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_user_file(
    path: str | os.PathLike,
    kind: str,
    error: type[Exception],
    label: str | None = None,
    message: Message = _plain,
    stdin_hint: bool = True,
) -> BinaryIO:
    """Open a regular file the user named for binary reading; every failure is one ``error`` line.

    The line starts with ``label`` (default: the path) and names what went wrong: missing, a
    directory, a pipe or a device (``kind`` says what was expected, "a facts file"), no
    permission, unreadable. Opening never blocks, even on a FIFO nobody writes to.
    """
    name = label if label is not None else str(path)
    if not str(path):
        raise error(message(name.rstrip(), "needs a path, got an empty string"))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        if not hasattr(os, "O_NONBLOCK"):  # Windows: no FIFOs to block on, but no devices either
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise error(message(name, f"is {_what(mode)}, not {kind}"))
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise error(message(name, f"is a directory, not {kind}")) from None
    except FileNotFoundError:
        raise error(message(name, "no such file")) from None
    except PermissionError:
        raise error(message(name, "permission denied")) from None
    except OSError as exc:
        raise error(message(name, f"cannot read: {exc.strerror or exc}")) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            hint = (
                "; give its contents on standard input with '-' instead" if stat.S_ISFIFO(mode) and stdin_hint else ""
            )
            raise error(message(name, f"is {_what(mode)}, not {kind}{hint}"))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_user_bytes(
    path: str | os.PathLike,
    kind: str,
    error: type[Exception],
    label: str | None = None,
    max_bytes: Optional[int] = None,
    message: Message = _plain,
    stdin_hint: bool = True,
) -> bytes:
    """A whole user file (``-``: standard input), at most ``max_bytes`` (default: the kind's cap)."""
    name = label if label is not None else str(path)
    limit = max_bytes if max_bytes is not None else MAX_BYTES.get(kind, DEFAULT_MAX_BYTES)
    too_big = f"more than {_size(limit)}, the most envcheck reads as {kind}"
    if str(path) == "-":
        try:
            raw = sys.stdin.buffer.read(limit + 1)
        except OSError as exc:
            raise error(message("standard input", f"cannot read: {exc.strerror or exc}")) from None
        if len(raw) > limit:
            raise error(message("standard input", too_big))
        return raw
    with open_user_file(path, kind, error, label=label, message=message, stdin_hint=stdin_hint) as fh:
        try:
            if os.fstat(fh.fileno()).st_size > limit:
                raise error(message(name, too_big))
            raw = fh.read(limit + 1)  # /proc files say size 0; the read itself is bounded too
        except OSError as exc:
            raise error(message(name, f"cannot read: {exc.strerror or exc}")) from None
    if len(raw) > limit:
        raise error(message(name, too_big))
    return raw


def read_user_text(
    path: str | os.PathLike,
    kind: str,
    error: type[Exception],
    label: str | None = None,
    max_bytes: Optional[int] = None,
    message: Message = _plain,
) -> str:
    """Read a file the user named (a snapshot, a patterns file) as UTF-8 text, errors as above."""
    raw = read_user_bytes(path, kind, error, label=label, max_bytes=max_bytes, message=message)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        name = "standard input" if str(path) == "-" else (label if label is not None else str(path))
        raise error(message(name, "not a text file (not UTF-8)")) from None


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB and limit % MIB == 0 else f"{limit} bytes"
