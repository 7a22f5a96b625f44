"""CUDA and cuDNN library file names: which family a file belongs to, and (through the matrix)
which TensorFlow releases load it.

The digits in a file name are not a CUDA version to be read off: ``cudart64_110.dll`` serves every
CUDA 11.x, ``cudart64_12.dll`` every 12.x, ``cufft64_10.dll`` ships with CUDA 11. What a name
means is what the matrix says about the builds that load it (``Matrix.library_use``); the
functions here only take names apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from packaging.version import Version

    from envcheck.matrix.model import TfBuild

# The display name of each family, for sentences ("the cuDNN library").
FAMILY_TITLES = {
    "cudart": "CUDA runtime",
    "cudnn": "cuDNN",
    "cublas": "cuBLAS",
    "cublaslt": "cuBLASLt",
    "cufft": "cuFFT",
    "curand": "cuRAND",
    "cusolver": "cuSOLVER",
    "cusparse": "cuSPARSE",
    "nvjitlink": "nvJitLink",
    "nccl": "NCCL",
    "nvcuda": "the CUDA driver library",
    "cuda": "the CUDA driver library",
    "cupti": "CUPTI",
    "nvinfer": "TensorRT",
}


@lru_cache(maxsize=8192)  # every rule asks about the same few hundred paths
def basename(path: str) -> str:
    """The file name of a Windows or POSIX path."""
    return re.split(r"[\\/]", path)[-1]


def library_family(filename: str) -> str:
    """ "cudart64_100.dll" -> "cudart", "libcudnn.so.9" -> "cudnn", "cublasLt64_12.dll" -> "cublaslt",
    "libcudnn_ops_infer.so.8" -> "cudnn"."""
    base = basename(filename)
    if base.lower().startswith("lib"):
        base = base[3:]
    match = re.match(r"[A-Za-z]+", base)
    family = (match.group(0) if match else base).lower()
    return "cudnn" if family.startswith("cudnn") else family


def library_os(filename: str) -> str:
    """The OS whose loader asks for a file of this name: "windows", "macos" or "linux"."""
    lowered = basename(filename).lower()
    if lowered.endswith(".dll"):
        return "windows"
    if lowered.endswith(".dylib"):
        return "macos"
    return "linux"


def name_version(filename: str) -> str:
    """The version digits a file name carries, as written: "100" for cudart64_100.dll, "11.0" for
    libcudart.so.11.0, "" when it has none. What they mean depends on the family and the CUDA
    generation; ask the matrix (``Matrix.library_use``) rather than reading them."""
    lowered = basename(filename).lower()
    windows = re.fullmatch(r"[a-z_]+?64_(\d{1,4})\.dll", lowered)
    if windows:
        return windows.group(1)
    linux = re.fullmatch(r"lib[a-z_]+?\.so((?:\.\d+)*)", lowered)
    if linux:
        return linux.group(1).lstrip(".")
    mac = re.fullmatch(r"lib[a-z_]+?((?:\.\d+)*)\.dylib", lowered)
    if mac:
        return mac.group(1).lstrip(".")
    return ""


@lru_cache(maxsize=16384)
def same_library(candidate: str, wanted: str, windows: bool) -> bool:
    """Whether a file name answers the loader's request for ``wanted`` (a DLL name or a soname):
    Windows compares names without case; on Linux ``libcudart.so.12.4.127`` answers ``libcudart.so.12``."""
    a, b = basename(candidate), basename(wanted)
    if windows:
        return a.lower() == b.lower()
    return a == b or a.startswith(b + ".")


@dataclass(frozen=True)
class LibraryUse:
    """What the matrix says about one library file name on one OS."""

    name: str
    family: str
    os: str
    builds: tuple["TfBuild", ...]  # the release rows that load exactly this name, oldest first
    cuda: tuple["Version", ...]  # the CUDA versions those builds were built with
    cudnn: tuple["Version", ...]

    @property
    def known(self) -> bool:
        return bool(self.builds)

    @property
    def title(self) -> str:
        return FAMILY_TITLES.get(self.family, self.family)

    def distinct_builds(self) -> tuple["TfBuild", ...]:
        """The release rows without patch rows that repeat their minor release's CUDA and cuDNN."""
        minors = {(str(b.tf), b.cuda, b.cudnn) for b in self.builds}
        return tuple(
            b
            for b in self.builds
            if not (len(str(b.tf).split(".")) > 2 and (".".join(str(b.tf).split(".")[:2]), b.cuda, b.cudnn) in minors)
        )

    def generation(self) -> str:
        """ "CUDA 11.x", "cuDNN 8", "CUDA 10.0": what the name stands for, by the builds that load
        it (cudart64_110.dll serves every CUDA 11); "" when no release in the matrix loads it."""
        if not self.builds:
            return ""
        if self.family == "cudnn":
            majors = sorted({v.release[0] for v in self.cudnn})
            return "cuDNN " + "/".join(str(m) for m in majors) if majors else "cuDNN"
        versions = sorted(set(self.cuda))
        if not versions:
            return ""
        majors = sorted({v.release[0] for v in versions})
        if len(versions) == 1:
            return f"CUDA {versions[0]}"
        if len(majors) == 1:
            return f"CUDA {majors[0]}.x"
        return "CUDA " + ", ".join(str(v) for v in versions)

    def releases(self) -> str:
        """ "TensorFlow 2.4 (CUDA 11.0, cuDNN 8.0) and 2.5-2.10 (CUDA 11.2, cuDNN 8.1)": the releases
        that load the name, consecutive ones built with the same pair as one range; "" for none."""
        groups: list[list["TfBuild"]] = []
        for build in self.distinct_builds():
            if groups and (groups[-1][-1].cuda, groups[-1][-1].cudnn) == (build.cuda, build.cudnn):
                groups[-1].append(build)
            else:
                groups.append([build])
        parts = [
            f"{g[0].tf if len(g) == 1 else f'{g[0].tf}-{g[-1].tf}'} (CUDA {g[0].cuda}, cuDNN {g[0].cudnn})"
            for g in groups
        ]
        if not parts:
            return ""
        return "TensorFlow " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1])
