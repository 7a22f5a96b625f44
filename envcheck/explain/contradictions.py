"""Causes that what the rest of the input shows rules out or points at (``context``).

A message's causes are ranked from the message; the log around it may know better. Each rule
reads the context variables (``log_*``) and either drops a cause, with the reason (a cause the
log contradicts is not listed), or moves it first. Rules only use facts the log states: where it
says nothing, the causes stay as the message ranked them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from envcheck.explain.catalogue import cudnn_version_text


def _major_minor(version: str) -> tuple[int, ...]:
    parts = [
        int(p) for p in version.split(".")[:2] if p.isdigit() and len(p) <= 9
    ]  # a log's text: no int() of 5,000 digits
    return tuple(parts)


def _driver_split(variables: dict[str, str]) -> Optional[bool]:
    """True when the log shows the driver library and the kernel module at different versions,
    False when at the same one, None when it does not show both."""
    user, kernel = variables.get("log_driver", ""), variables.get("log_kernel_driver", "")
    if not user or not kernel:
        return None
    return user.split(".")[:2] != kernel.split(".")[:2]


def _no_gpu(variables: dict[str, str]) -> Optional[str]:
    if variables.get("log_gpu") == "yes":
        return "the log shows an NVIDIA GPU in use (TensorFlow created a GPU device, or nvidia-smi lists one)"
    return None


def _no_reboot(variables: dict[str, str]) -> Optional[str]:
    if _driver_split(variables) is False:
        return f"the log shows the driver library and the kernel module at the same version ({variables['log_driver']})"
    return None


def _no_driver(variables: dict[str, str]) -> Optional[str]:
    if variables.get("log_driver") and variables.get("log_gpu") == "yes":
        return f"the log shows driver {variables['log_driver']} answering"
    return None


def _tf1_api(variables: dict[str, str]) -> Optional[str]:
    if variables.get("log_tf", "").startswith("1."):
        return f"the log shows TensorFlow {variables['log_tf']}, a 1.x release"
    return None


def _keras3(variables: dict[str, str]) -> Optional[str]:
    tf = _major_minor(variables.get("log_tf", ""))
    if tf and tf < (2, 16):
        return f"the log shows TensorFlow {variables['log_tf']}, which comes with Keras 2 (Keras 3 came with 2.16)"
    return None


def _cudnn_too_old(variables: dict[str, str]) -> Optional[str]:
    loaded, compiled = (
        cudnn_version_text(variables.get("loaded", ""))[0],
        cudnn_version_text(variables.get("compiled", ""))[0],
    )
    if loaded and compiled and loaded >= compiled:
        return f"the loaded cuDNN ({variables['loaded']}) is not older than the one TensorFlow was built with"
    return None


def _not_in_a_linux_container(variables: dict[str, str]) -> Optional[str]:
    """A GPU container is Linux (the NVIDIA Container Toolkit runs Linux containers, on Windows
    through WSL 2): a log from native Windows or macOS did not run in one."""
    system = variables.get("log_os", "")
    if system in ("windows", "macos") and not variables.get("log_container"):
        return f"the log comes from native {_SYSTEM_TITLES[system]}, not from a Linux container"
    return None


def _not_under_wsl(variables: dict[str, str]) -> Optional[str]:
    system = variables.get("log_os", "")
    if system in ("windows", "macos", "linux") and variables.get("log_hosted"):
        return f"the log comes from a hosted notebook ({variables['log_hosted']}), a Linux machine, not WSL"
    if system in ("windows", "macos"):
        return f"the log comes from native {_SYSTEM_TITLES[system]}, not from WSL"
    return None


def _no_kernel_module_under_wsl(variables: dict[str, str]) -> Optional[str]:
    """Under WSL 2 the GPU is reached through the Windows driver (/dev/dxg, the CUDA on WSL user
    guide): the distribution has no NVIDIA kernel module to build, sign, load or lose to another."""
    if variables.get("log_os") == "wsl":
        return "the log comes from WSL 2, which reaches the GPU through the Windows driver and loads no NVIDIA kernel module"
    return None


_SYSTEM_TITLES = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}


# cause id -> the rule that rules it out (the reason, or None)
RULED_OUT_BY_LOG: dict[str, Callable[[dict[str, str]], Optional[str]]] = {
    "no-nvidia-gpu": _no_gpu,
    "driver-upgraded-no-reboot": _no_reboot,
    "driver-not-installed": _no_driver,
    "tf1-api-in-tf2": _tf1_api,
    "keras3-with-tf-keras-code": _keras3,
    "cudnn-too-old": _cudnn_too_old,
    "container-without-gpu": _not_in_a_linux_container,
    "gpus-flag-missing": _not_in_a_linux_container,
    "container-driver-capabilities": _not_in_a_linux_container,
    "wsl-libcuda-path": _not_under_wsl,
    "wsl-driver-missing": _not_under_wsl,
    "module-not-built-for-kernel": _no_kernel_module_under_wsl,
    "secure-boot-unsigned-module": _no_kernel_module_under_wsl,
    "other-driver-holds-gpu": _no_kernel_module_under_wsl,
}


def _same_cuda_release(variables: dict[str, str]) -> Optional[bool]:
    """Whether the CUDA the log shows installed (nvcc's release, a printed CUDA version) is the one
    the missing CUDA runtime belongs to: True, False, or None when the log or the file name does not
    say. A runtime's soname names its release: libcudart.so.10.1 is CUDA 10.1 only, while from CUDA 11
    every minor release ships the major's soname (libcudart.so.11.0, cudart64_110.dll, cudart64_12.dll)."""
    installed, wanted = _major_minor(variables.get("log_cuda", "")), _major_minor(variables.get("cuda_version", ""))
    if len(installed) < 2 or not wanted or variables.get("dlerror_reason", "not-found") != "not-found":
        return None  # (a loader's own reason, a wrong architecture or a missing dependency, says more)
    if installed[0] >= 11 or len(wanted) < 2:
        return installed[0] == wanted[0]
    return installed == wanted


# cause id -> the rule that says the log points at it
POINTED_AT_BY_LOG: dict[str, Callable[[dict[str, str]], bool]] = {
    "driver-upgraded-no-reboot": lambda v: _driver_split(v) is True,
    # the CUDA the runtime belongs to is installed: it is not found where the loader looks
    "cuda-lib-not-on-path": lambda v: _same_cuda_release(v) is True,
    "cuda-bin-not-on-path": lambda v: _same_cuda_release(v) is True,
    # another CUDA release is installed: the one this TensorFlow was built for is not
    "cuda-not-installed": lambda v: _same_cuda_release(v) is False,
}


def weigh(causes: tuple, variables: dict[str, str]) -> tuple[tuple, tuple[tuple[str, str], ...]]:
    """(the causes the log does not rule out, those it points at first; the ones dropped, each as
    (cause id, why)). The last cause is never dropped: a message keeps an explanation."""
    dropped = []
    kept = []
    for cause in causes:
        rule = RULED_OUT_BY_LOG.get(cause.id)
        why = rule(variables) if rule is not None else None
        if why:
            dropped.append((cause.id, why))
        else:
            kept.append(cause)
    if not kept:
        return causes, ()
    first = [c for c in kept if POINTED_AT_BY_LOG.get(c.id, lambda v: False)(variables)]
    return (*first, *(c for c in kept if c not in first)), tuple(dropped)
