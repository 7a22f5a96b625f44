"""What the compatibility matrix says about the TensorFlow a log shows, next to the rest of the log.

A log that prints TensorFlow's version tells, through the matrix (TensorFlow's tested build
configurations, its Windows and release notes, the wheels' own build info), which CUDA and cuDNN
that build loads, which GPUs it has code for and whether a GPU build exists for the system the log
comes from. Set beside the CUDA, cuDNN and GPU the same log prints, these facts decide between a
message's causes (``contradictions``):

  log_tf_cuda            the CUDA release the build was made with ("11.2")
  log_cuda_for_tf        "same" or "other": whether the CUDA the log shows installed provides the
                         build's libraries (from CUDA 11 on a major's releases share file names,
                         libcudart.so.11.0; before it each release has its own, libcudart.so.10.1)
  log_cudnn_for_tf       "same" or "other-major": the cuDNN the log shows, by major version (the
                         library's file name carries only the major, libcudnn.so.8)
  log_tf_no_gpu_build    "windows": TensorFlow after 2.10 on native Windows, which has no GPU build
  log_gpu_unsupported    "yes": the build has neither machine code nor usable PTX for the GPU's
                         compute capability
  log_gpu_supported      "native" (the build carries machine code for the GPU's compute capability)
                         or "ptx" (PTX the driver compiles for it): the matrix's ``support``
  log_gpu_newer_than_cuda  "yes": the GPU's architecture came after the build's CUDA release, so
                         the CUDA libraries of that release (cuDNN, cuBLAS) have no kernels for it
"""

from __future__ import annotations

from typing import Any, Optional

from envcheck.errors import EnvcheckError
from envcheck.matrix.model import as_version

_BUILD_OS = {"windows": "windows", "macos": "macos"}  # Linux, WSL 2 and unknown use the Linux builds


def _major_minor(text: str) -> Optional[tuple[int, int]]:
    release = _release(text)
    return (release[0], release[1]) if len(release) == 2 else None


def _release(text: str) -> tuple[int, ...]:
    """The major and minor numbers of a version ("11.2.1" -> (11, 2); "12" -> (12,)); a part that is
    no number ends it. A log's text: no int() of thousands of digits."""
    out = []
    for part in text.split(".")[:2]:
        if not (part.isdigit() and len(part) <= 9):
            break
        out.append(int(part))
    return tuple(out)


def same_cuda_files(installed: str, built: str) -> Optional[bool]:
    """Whether CUDA ``installed`` provides the runtime file names of a build made with, or a file
    named for, CUDA ``built`` ("11.2", or "12" from cudart64_12.dll): one major's releases share
    them from CUDA 11 on (libcudart.so.11.0, cudart64_110.dll), each release has its own before it
    (libcudart.so.10.1). None when ``installed`` is no major.minor or ``built`` no version."""
    have, want = _release(installed), _release(built)
    if len(have) < 2 or not want:
        return None
    if have[0] >= 11 or want[0] >= 11 or len(want) < 2:
        return have[0] == want[0]
    return have == want


def build_facts(variables: dict[str, str], matrix: Any) -> dict[str, str]:
    """The facts above for the TensorFlow ``variables["log_tf"]`` names ({} without one or a matrix)."""
    tf = variables.get("log_tf", "")
    if not tf or matrix is None:
        return {}
    try:
        version = as_version(tf)
    except EnvcheckError:
        return {}
    system = variables.get("log_os", "")
    facts: dict[str, str] = {}
    # by minor release: 2.10.1 is a patch of 2.10, the last release with a native Windows GPU build
    if system == "windows" and version.release[:2] > matrix.platform.windows_native_gpu_last.release[:2]:
        facts["log_tf_no_gpu_build"] = "windows"
        return facts
    build = matrix.tf_build(version, _BUILD_OS.get(system, "linux"))
    if build is None or not build.gpu or build.cuda is None:
        return facts
    facts["log_tf_cuda"] = str(build.cuda)
    same = same_cuda_files(variables.get("log_cuda", ""), str(build.cuda))
    if same is not None:
        facts["log_cuda_for_tf"] = "same" if same else "other"
    cudnn, built_cudnn = variables.get("log_cudnn", ""), str(build.cudnn or "")
    if cudnn and built_cudnn and cudnn.split(".")[0].isdigit():
        facts["log_cudnn_for_tf"] = "same" if cudnn.split(".")[0] == built_cudnn.split(".")[0] else "other-major"
    capability = variables.get("log_gpu_cc", "")
    if _major_minor(capability) is None:
        return facts
    try:
        support = matrix.support(build, capability) if build.compute_capabilities else ""
        if support == "none":
            facts["log_gpu_unsupported"] = "yes"
        elif support:
            facts["log_gpu_supported"] = support
        # the CUDA libraries the build bundles or loads (cuDNN, cuBLAS) are those of its release:
        # a GPU that release predates has no kernels in them (``context`` sets the same fact from
        # a printed CUDA version)
        first = matrix.first_cuda(capability)
        if first is not None and variables.get("log_gpu_newer_than_cuda") != "yes":
            if as_version(str(first.version)).release[:2] > build.cuda.release[:2]:
                facts["log_gpu_newer_than_cuda"] = "yes"
    except EnvcheckError:
        pass
    return facts


def python_facts(variables: dict[str, str], matrix: Any) -> dict[str, str]:
    """Which TensorFlow releases have wheels for the Python the log shows, on the log's system
    (the matrix's Python lists, from PyPI's files and tensorflow.org's install page):

      log_python_tf          "2.12-2.20", the oldest and newest such release, or "none"
      log_python_pin         "yes" or "no": whether the release a pip requirement pins
                             (``tensorflow==2.15.0``) has a wheel for that Python
    """
    python = variables.get("log_python", "")
    if not python or matrix is None:
        return {}
    system = _BUILD_OS.get(variables.get("log_os", ""), "linux")
    rows = [b for b in matrix.tf_releases(system) if not b.is_patch_row]
    fits = [b for b in rows if b.supports_python(python)]
    facts = {"log_python_tf": f"{fits[0].label}-{fits[-1].label}" if fits else "none"}
    pinned = variables.get("requirement", "").partition("==")[2].strip()
    if pinned and variables.get("requirement", "").split("==")[0] in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu"):
        try:
            build = matrix.tf_build(pinned.rstrip(".*"), system)
        except EnvcheckError:
            build = None
        if build is not None:
            facts["log_python_pin"] = "yes" if build.supports_python(python) else "no"
    return facts
