"""What the installed TensorFlow build loads (file names from the matrix) and what the library
probe found for each name: the model the library rules and the link summary read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from envcheck.facts import ERROR, SKIPPED, LibraryCopy
from envcheck.machine import ABSENT, parse_version
from envcheck.matrix.libraries import basename, library_family
from envcheck.rules.engine import Context
from envcheck.rules.pip_cuda import installed_cuda_wheels

CUDA_RUNTIME = ("cudart",)
CUDNN = ("cudnn",)
MATH = ("cublas", "cublaslt", "cufft", "curand", "cusolver", "cusparse")
FAMILY_TITLES = {
    "cudart": "CUDA runtime",
    "cudnn": "cuDNN",
    "cublas": "cuBLAS",
    "cublaslt": "cuBLASLt",
    "cufft": "cuFFT",
    "curand": "cuRAND",
    "cusolver": "cuSOLVER",
    "cusparse": "cuSPARSE",
}


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


def libraries_apply(ctx: Context) -> bool:
    """Library checks mean something for a CUDA build of a known release, where a GPU may be, with
    a library probe that ran, and unless TF already ran every op on the GPU (then they were found)."""
    facts = ctx.facts
    return (
        ctx.is_cuda_tf is True
        and ctx.tf_build is not None
        and ctx.gpu_presence != ABSENT
        and facts.libraries.status not in (SKIPPED, ERROR)
        and not ctx.tf_gpu_ops_all_passed
    )


def needed(ctx: Context, families: tuple[str, ...]) -> list[Needed]:
    def compute() -> list[Needed]:
        build = ctx.tf_build
        return [
            Needed(name, library_family(name), ctx.winner_for(name), tuple(ctx.copies_named(name)))
            for name in (build.libraries if build is not None else ())
        ]

    return [n for n in ctx.memo("needed_libraries", compute) if n.family in families]


def all_needed(ctx: Context) -> list[Needed]:
    return needed(ctx, CUDA_RUNTIME + CUDNN + MATH)


def missing(ctx: Context, families: tuple[str, ...]) -> list[Needed]:
    if not libraries_apply(ctx):
        return []
    return [
        n
        for n in needed(ctx, families)
        if not n.usable and not ctx.mapped_into_tf(n.name) and n.family not in broken_wheel_families(ctx)
    ]


def broken_wheel_families(ctx: Context) -> set[str]:
    """Families whose pip wheel is installed but gives no loadable copy: EC-LIB-006's finding
    (reinstall the wheel), more precise than "the library is missing"."""
    return {family for _dist, family, _broken in broken_wheels(ctx)}


def broken_wheels(ctx: Context) -> list[tuple]:
    def compute():
        facts = ctx.facts
        if facts.libraries.status in (SKIPPED, ERROR) or ctx.build_os != "linux":
            return []
        out = []
        for dist, family in installed_cuda_wheels(facts):
            lib = next((x for x in facts.libraries.libraries if x.family == family), None)
            pip_copies = [c for c in (lib.copies if lib else ()) if c.origin == "pip"]
            broken = [c for c in pip_copies if c.loads is False]
            if not pip_copies or broken:
                out.append((dist, family, broken))
        return out

    return ctx.memo("broken_wheels", compute)


def other_versions(ctx: Context, family: str, name: str) -> list[LibraryCopy]:
    """Copies of the same library under another version's file name (cudart64_90.dll for _100)."""
    windows = ctx.build_os == "windows"
    out = []
    for lib in ctx.facts.libraries.libraries:
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


def unusable(copy: LibraryCopy, family: str, build) -> Optional[str]:
    if copy.loads is False:
        return "fails to load"
    if family == "cudnn" and build is not None and build.cudnn is not None:
        have = parse_version(copy.reported_version)
        if have is not None and have.release[:2] < build.cudnn.release[:2]:
            return f"cuDNN {have}, older than {build.cudnn}"
    return None


def toolkit_fits(ctx: Context, version: object, cuda: object) -> bool:
    """Whether a CUDA toolkit of ``version`` serves code built with ``cuda``: the same release, or
    the same major where the matrix records minor-version compatibility. Unknown is no mismatch."""
    have, want = parse_version(version), parse_version(cuda)
    if have is None or want is None:
        return True
    if have.release[0] == want.release[0] and ctx.matrix.minor_compat_floor(want.release[0], "linux") is not None:
        return True
    return have.release[:2] == want.release[:2]


def toolkit_of(ctx: Context, copy: LibraryCopy):
    """The CUDA toolkit whose folder holds ``copy``, if the probe recorded one."""
    windows = ctx.build_os == "windows"
    where = copy.directory.lower() if windows else copy.directory
    for toolkit in ctx.facts.libraries.toolkits:
        root = (toolkit.path.lower() if windows else toolkit.path).rstrip("\\/")
        if where == root or where.startswith(root + ("\\" if windows else "/")):
            return toolkit
    return None
