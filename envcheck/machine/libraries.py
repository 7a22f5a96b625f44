"""What the installed TensorFlow build loads (file names from the matrix) and what the library
probe found for each name: which copy the loader takes, which are missing, which shadow others.
The library rules, the link summaries, each GPU's libraries link and explain read it here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from envcheck.facts import ERROR, SKIPPED, LibraryCopy
from envcheck.machine.values import ABSENT, parse_version
from envcheck.matrix.libraries import basename, library_family

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.machine.view import Machine

CUDA_RUNTIME = ("cudart",)
CUDNN = ("cudnn",)
MATH = ("cublas", "cublaslt", "cufft", "curand", "cusolver", "cusparse")
ALL = CUDA_RUNTIME + CUDNN + MATH


@dataclass(frozen=True)
class Needed:
    """One library file the build loads and what the probe found for it."""

    name: str  # the file name TF asks the loader for
    family: str
    winner: Optional[LibraryCopy]  # the copy the loader takes
    copies: tuple[LibraryCopy, ...]  # every copy with that name, loader path or not

    @property
    def usable(self) -> bool:
        return self.winner is not None and self.winner.loads is not False

    @property
    def off_path(self) -> tuple[LibraryCopy, ...]:
        return tuple(c for c in self.copies if not c.on_loader_path)


def read_needed(m: "Machine") -> tuple[Needed, ...]:
    build = m.tf_build
    return tuple(
        Needed(name, library_family(name), m.winner_for(name), tuple(m.copies_named(name)))
        for name in (build.libraries if build is not None else ())
    )


def libraries_apply(m: "Machine") -> bool:
    """Library checks mean something for a CUDA build of a known release, where a GPU may be, with
    a library probe that ran, and unless TF already ran every op on the GPU (then they were found)."""
    return (
        m.is_cuda_tf is True
        and m.tf_build is not None
        and m.gpu_presence != ABSENT
        and m.facts.libraries.status not in (SKIPPED, ERROR)
        and not m.tf_gpu_ops_all_passed
    )


def needed(m: "Machine", families: tuple[str, ...]) -> list[Needed]:
    return [n for n in m.needed_libraries if n.family in families]


def all_needed(m: "Machine") -> list[Needed]:
    return needed(m, ALL)


def missing(m: "Machine", families: tuple[str, ...]) -> list[Needed]:
    """The files of these families TF loads that the loader cannot take (a broken pip wheel's are
    EC-LIB-006's, more precise than "missing")."""
    if not libraries_apply(m):
        return []
    broken = broken_wheel_families(m)
    return [n for n in needed(m, families) if not n.usable and not m.mapped_into_tf(n.name) and n.family not in broken]


def unusable(m: "Machine") -> list[Needed]:
    """Every file TF loads that the loader cannot take or takes in a copy TF cannot use (a cuDNN
    older than the build's), for whatever reason: a GPU's libraries link."""
    if not libraries_apply(m):
        return []
    build = m.tf_build
    return [
        n
        for n in all_needed(m)
        if not m.mapped_into_tf(n.name) and (not n.usable or copy_problem(n.winner, n.family, build) is not None)
    ]


def state(n: Needed, build=None) -> str:
    if n.winner is not None and n.winner.loads is False:
        return f"fails to load ({n.winner.load_error or 'no reason given'})"
    problem = copy_problem(n.winner, n.family, build) if n.winner is not None else None
    if problem is not None:
        return f"is taken from {n.winner.path} ({problem})"
    if n.off_path:
        return "is not on the loader's path"
    return "is missing"


def broken_wheel_families(m: "Machine") -> set[str]:
    """Families whose pip wheel is installed but gives no loadable copy."""
    return {wheel.family for wheel in m.broken_wheels}


# A library's name is short: bounded repeats keep the search linear on a long error text.
_LIBRARY = (
    re.compile(r"([A-Za-z0-9_]{1,128}\.dll)"),
    re.compile(r"(lib[A-Za-z0-9_+-]{1,128}\.so(?:\.\d{1,9}){0,8})"),
)


def library_named_in(error: str) -> Optional[str]:
    """The first DLL or shared library a message names."""
    for pattern in _LIBRARY:
        match = pattern.search(error)
        if match:
            return match.group(1)
    return None


def library_in_import_error(m: "Machine") -> Optional[str]:
    """The CUDA library TensorFlow's failed import names (cudart64_100.dll), or None."""
    tf = m.facts.tensorflow
    if tf.error_kind != "import_failed" or not tf.error:
        return None
    name = library_named_in(tf.error)
    return name if name is not None and library_family(name) in ALL else None


def other_versions(m: "Machine", family: str, name: str) -> list[LibraryCopy]:
    """Copies of the same library under another version's file name (cudart64_90.dll for _100)."""
    windows = m.platform.windows_libraries
    out = []
    for lib in m.facts.libraries.libraries:
        if lib.family != family:
            continue
        for copy in lib.copies:
            if windows and basename(copy.path).lower() == name.lower():
                continue
            if not windows and (basename(copy.path) == name or basename(copy.path).startswith(name + ".")):
                continue
            out.append(copy)
    return out


def copy_version(copy: LibraryCopy) -> str:
    return copy.reported_version or copy.file_version or "unknown version"


def same_file(a: LibraryCopy, b: LibraryCopy) -> bool:
    return a.path == b.path or (a.realpath is not None and a.realpath == b.realpath)


def copy_problem(copy: LibraryCopy, family: str, build) -> Optional[str]:
    """Why the loader cannot use this copy for the build ("fails to load", an older cuDNN), or None."""
    if copy.loads is False:
        return "fails to load"
    if family == "cudnn" and build is not None and build.cudnn is not None:
        have = parse_version(copy.reported_version)
        if have is not None and have.release[:2] < build.cudnn.release[:2]:
            return f"cuDNN {have}, older than {build.cudnn}"
    return None


def toolkit_fits(m: "Machine", version: object, cuda: object) -> bool:
    """Whether a CUDA toolkit of ``version`` serves code built with ``cuda``: the same release, or
    the same major where the matrix records minor-version compatibility. Unknown is no mismatch."""
    have, want = parse_version(version), parse_version(cuda)
    if have is None or want is None:
        return True
    if have.release[0] == want.release[0] and m.matrix.minor_compat_floor(want.release[0], m.os) is not None:
        return True
    return have.release[:2] == want.release[:2]


def toolkit_of(m: "Machine", copy: LibraryCopy):
    """The CUDA toolkit whose folder holds ``copy``, if the probe recorded one."""
    windows = m.platform.windows_libraries
    where = copy.directory.lower() if windows else copy.directory
    for toolkit in m.facts.libraries.toolkits:
        root = (toolkit.path.lower() if windows else toolkit.path).rstrip("\\/")
        if where == root or where.startswith(root + ("\\" if windows else "/")):
            return toolkit
    return None
