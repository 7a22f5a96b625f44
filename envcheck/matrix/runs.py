"""The one question every command asks of a GPU: does this TensorFlow build run on it, with this
driver? doctor (each GPU's chain), plan (which releases a card can take), matrix (``matrix gpu``)
and explain ask it here and nowhere else.

NVIDIA's rules, as the CUDA C++ Programming Guide and the CUDA Compatibility guide state them:

- Binary compatibility: a cubin (``sm_XY``) runs on a GPU of the same major compute capability and
  an equal or higher minor one (``sm_80`` code runs on 8.0, 8.6 and 8.9; never on 9.0 or 7.5).
- PTX compatibility: PTX for ``compute_XY`` can be compiled, by the driver at load time (JIT), for
  any GPU of capability X.Y or higher.
- The driver can only JIT-compile PTX of a CUDA release it supports: minor-version compatibility
  lets code built with CUDA 12.5 run on a 12.0 driver, but not JIT-compile 12.5's PTX there
  (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). A GPU served only by PTX needs the driver the build's
  CUDA release itself asks for, not the major's minor-version floor.
- A GPU architecture gets no driver after its last branch (Kepler: 470): a build whose CUDA needs a
  later driver never runs on it.
- Nor before its first: a card is driven only by the driver branches from the one released with
  the first CUDA that lists its compute capability (CUDA's release notes give both: compute
  capability 12.0 came with CUDA 12.8 and its 570 driver), so an older build on a newer card still
  needs that driver.
- PTX serves a newer card only where the code is compiled by the driver. From TensorFlow 2.16,
  TensorFlow compiles its kernels for the card's own architecture at run time (XLA, on by default
  under Keras 3, and its kernel generator) with the PTX ISA of the CUDA release it was built with;
  a card newer than that release (a Blackwell card under the CUDA 12.3-12.5 of TensorFlow
  2.16-2.21) cannot be targeted and its kernels do not load (``Matrix.ptx_serves``; the PTX ISA's
  release notes give each ISA's targets).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from packaging.version import Version

from envcheck.errors import UsageError
from envcheck.matrix.model import Matrix, TfBuild, as_version, code_for

NATIVE = "native"  # a cubin (SASS) for the GPU's architecture
PTX = "ptx"  # only PTX, which the driver JIT-compiles at the first start
NONE = "none"  # no code the GPU can run

BINARY_COMPATIBILITY = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
PTX_COMPATIBILITY = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#ptx-compatibility"
PTX_JIT_AND_MINOR_VERSIONS = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
CUDA_RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
PTX_ISA_TARGETS = "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#release-notes"
KERAS_JIT_COMPILE = "https://keras.io/api/models/model_training_apis/"
# What TensorFlow 2.16-2.21 wheels do on a Blackwell card, as their users reported it:
# CUDA_ERROR_INVALID_PTX from the kernel generator (2.16.2, 2.20), XLA's LLVM refusing the target
# ("PTX version 8.5 does not support target 'sm_120'", 2.21 and nightly), only self-built wheels
# or NVIDIA's containers working.
TF_ON_BLACKWELL = (
    "https://github.com/tensorflow/tensorflow/issues/101746",
    "https://github.com/tensorflow/tensorflow/issues/111958",
    "https://github.com/tensorflow/tensorflow/issues/89272",
)
SOURCES = (
    BINARY_COMPATIBILITY,
    PTX_COMPATIBILITY,
    PTX_JIT_AND_MINOR_VERSIONS,
    CUDA_RELEASE_NOTES,
    PTX_ISA_TARGETS,
    KERAS_JIT_COMPILE,
    *TF_ON_BLACKWELL,
)


@dataclass(frozen=True)
class GpuRun:
    """The answer, with what it rests on."""

    runs: Optional[bool]  # None when the facts do not tell (capability, code list or driver unknown)
    code: Optional[str]  # NATIVE, PTX or NONE; None when the capability or the build's code is unknown
    entry: Optional[str]  # the build's entry that serves the GPU: "sm_80", "compute_90"
    driver_needed: Optional[Version]  # the oldest driver that runs the build on this GPU here
    reason: str  # one line: why it runs, or why not
    sources: tuple[str, ...] = SOURCES
    # The CUDA release (major.minor) whose driver ``driver_needed`` is, when that is the GPU's own
    # first CUDA (the card is newer than the build's CUDA) rather than the build's CUDA.
    card_cuda: Optional[str] = None


@lru_cache(maxsize=4096)  # a pure function of its arguments, asked for each GPU by every rule
def runs_on_gpu(
    matrix: Matrix,
    *,
    archs: tuple[str, ...],
    cuda: object,
    compute_capability: object,
    os: str,
    driver: object = None,
    tf: object = None,
) -> GpuRun:
    """Whether a build with code ``archs`` built with CUDA ``cuda`` runs on a GPU of
    ``compute_capability`` on ``os``, with ``driver`` (None: with any driver this GPU can get);
    ``tf``, the build's release, decides whether its PTX serves a card newer than its CUDA
    (``Matrix.ptx_serves``; None: as PTX always did)."""
    cc = _capability(compute_capability)
    if cc is None:
        return GpuRun(None, None, None, None, "its compute capability is not known")
    if not archs:
        return GpuRun(None, None, None, None, "the build's GPU code is not known")
    code, entry = code_for(archs, cc)
    if code == NONE:
        return GpuRun(False, NONE, None, None, f"the build has code for {', '.join(archs)} only, none for {cc}")
    if code == PTX and not matrix.ptx_serves(_text(tf), _text(cuda), f"{cc.major}.{cc.minor}"):
        first = matrix.first_cuda(f"{cc.major}.{cc.minor}")
        return GpuRun(
            False,
            NONE,
            None,
            None,
            f"the build has no cubin for {cc}, and TensorFlow {_minor(tf)} compiles its kernels for the card at run "
            f"time with CUDA {_minor(cuda)}'s PTX ISA, which predates compute capability {cc} (first in CUDA "
            f"{_minor(first.version) if first else '?'}): its kernels do not load",
        )
    need = _driver_needed(matrix, cuda, os, code)
    served = f"{entry} code" if code == NATIVE else f"only {entry} PTX, which the driver JIT-compiles"
    arch = matrix.architecture(cc)
    # The card's own first CUDA, when its driver is more than the build asks for.
    first = matrix.first_driver(f"{cc.major}.{cc.minor}", os)
    card = _minor(first[0].version) if first is not None and (need is None or first[1] > need) else None
    if card is not None:
        need = first[1]
    if need is not None and arch is not None and arch.supports_driver(need) is False:
        return GpuRun(
            False,
            code,
            entry,
            need,
            f"{served}; CUDA {_minor(cuda)} needs driver {need} or newer, and {arch.name} GPUs get no driver "
            f"after the {arch.last_driver_branch} branch",
        )
    have = _version(driver)
    if have is None:
        runs = None if driver is not None else True
        return GpuRun(runs, code, entry, need, served, card_cuda=card)
    if arch is not None and arch.supports_driver(have) is False:
        return GpuRun(
            False,
            code,
            entry,
            need,
            f"driver {driver} does not drive {arch.name} GPUs (their last branch is {arch.last_driver_branch})",
        )
    if need is not None and have < need and card is not None:
        why = (
            f"{served}; driver {driver} predates GPUs of compute capability {cc}: the first CUDA release for "
            f"them, {card}, came with driver {need}, and an older branch does not drive them"
        )
        return GpuRun(False, code, entry, need, why, card_cuda=card)
    if need is not None and have < need:
        why = (
            f"{served}: PTX from CUDA {_minor(cuda)} needs driver {need} or newer to JIT-compile (minor-version "
            "compatibility does not cover the JIT)"
            if code == PTX
            else f"{served}; driver {driver} is older than {need}, the oldest that runs CUDA {_minor(cuda)}"
        )
        return GpuRun(False, code, entry, need, why)
    return GpuRun(True, code, entry, need, served, card_cuda=card)


def release_runs_on_gpu(matrix: Matrix, build: TfBuild, compute_capability: object, os: str, driver: object = None):
    """``runs_on_gpu`` for a matrix row: its code list and its CUDA (a CPU build runs on no GPU)."""
    if not build.gpu or build.cuda is None:
        return GpuRun(False, NONE, None, None, f"TensorFlow {build.label} on {build.os} is a CPU-only build")
    return runs_on_gpu(
        matrix,
        archs=build.compute_capabilities,
        cuda=build.cuda,
        compute_capability=compute_capability,
        os=os,
        driver=driver,
        tf=build.tf,
    )


def _text(value: object) -> Optional[str]:
    return None if value is None else str(value)


def _driver_needed(matrix: Matrix, cuda: object, os: str, code: str) -> Optional[Version]:
    if cuda is None or _version(cuda) is None:
        return None
    need = matrix.driver_requirement(str(cuda), os, PTX if code == PTX else None)
    return need.minimum if need is not None else None


def _capability(value: object) -> Optional[Version]:
    try:
        parsed = as_version(str(value)) if value is not None else None
    except UsageError:  # a capability that is no version is unknown
        return None
    return parsed if parsed is not None and len(parsed.release) >= 2 else None


def _version(value: object) -> Optional[Version]:
    if value is None:
        return None
    try:
        return as_version(str(value))
    except UsageError:  # a driver that is no version is unknown
        return None


def _minor(version: object) -> str:
    return ".".join(str(version).split(".")[:2])
