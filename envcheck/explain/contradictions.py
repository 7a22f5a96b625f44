"""Causes that what the rest of the input shows rules out or points at (``context``).

A message's causes are ranked from the message; the log around it may know better. Each rule
reads the context variables (``log_*``) and either drops a cause, with the reason (a cause the
log contradicts is not listed), or moves it first. Rules only use facts the log states: where it
says nothing, the causes stay as the message ranked them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from envcheck.explain.build_facts import same_cuda_files
from envcheck.explain.catalogue import cudnn_version_text
from envcheck.explain.derivers import cuda_library_version
from envcheck.explain.status_causes import _driver_runs_log_cuda


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
    if variables.get("log_gpu_present") == "yes":
        return "the log shows an NVIDIA GPU (nvidia-smi lists one, or the report names it)"
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
    keras = _major_minor(variables.get("log_keras", ""))
    if keras and keras[0] == 3:  # Keras 3 installed beside an older TensorFlow is still Keras 3
        return None
    if keras and keras[0] < 3:
        return f"the log shows Keras {variables['log_keras']}, a Keras 2 release"
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


def _cudnn_not_a_newer_minor(variables: dict[str, str]) -> Optional[str]:
    # cuda_dnn.cc prints both versions; "a newer minor release" needs the same major and a higher minor
    loaded, compiled = (
        cudnn_version_text(variables.get("loaded", ""))[0],
        cudnn_version_text(variables.get("compiled", ""))[0],
    )
    if loaded and compiled and loaded[0] != compiled[0]:
        return f"the loaded cuDNN ({variables['loaded']}) is of another major than the one TensorFlow was built with"
    if loaded and compiled and loaded[:2] < compiled[:2]:
        return (
            f"the loaded cuDNN ({variables['loaded']}) is an older minor release than the one TensorFlow was built with"
        )
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


def _gpu_build_on_this_system(variables: dict[str, str]) -> Optional[str]:
    """TensorFlow 2.10 was the last release with a GPU build for native Windows (the pip install
    page, the 2.11 release notes): the cause is ruled out for a log from another system, or from
    an older TensorFlow on Windows."""
    system = variables.get("log_os", "")
    if system in ("linux", "wsl", "macos"):
        return f"the log comes from {_SYSTEM_TITLES.get(system, 'WSL')}, not native Windows"
    if variables.get("log_hosted"):  # Colab and Kaggle run their notebooks on Linux
        return (
            f"the log comes from a hosted notebook ({variables['log_hosted']}), which runs on Linux, not native Windows"
        )
    tf = _major_minor(variables.get("log_tf", ""))
    if system == "windows" and tf and tf <= (2, 10):
        return f"the log shows TensorFlow {variables['log_tf']}, which still had a native Windows GPU build (2.10 was the last)"
    return None


# TensorFlow's wheels were built against NumPy 1.x up to 2.17; 2.18 is the first built for NumPy 2
# (its release notes), which reads both.
_TF_FIRST_NUMPY2 = (2, 18)


def _numpy_major(variables: dict[str, str]) -> Optional[int]:
    return _leading_number(variables.get("log_numpy", ""))


def _numpy_newer_than_build(variables: dict[str, str]) -> Optional[str]:
    """NumPy 2 beside a TensorFlow built against NumPy 1.x: the NumPy installed is not older than
    the build's, so "NumPy too old" is not what failed."""
    tf = _major_minor(variables.get("log_tf", ""))
    if (_numpy_major(variables) or 0) >= 2 and tf and tf < _TF_FIRST_NUMPY2:
        return (
            f"the log shows NumPy {variables['log_numpy']} and TensorFlow {variables['log_tf']}, which was"
            " built against NumPy 1.x: NumPy is newer than the build, not older"
        )
    return None


def _numpy_1(variables: dict[str, str]) -> Optional[str]:
    if _numpy_major(variables) == 1:
        return f"the log shows NumPy {variables['log_numpy']}: NumPy 2's binary break needs NumPy 2 installed"
    return None


def _numpy2_beside_numpy1_build(variables: dict[str, str]) -> bool:
    tf = _major_minor(variables.get("log_tf", ""))
    return (_numpy_major(variables) or 0) >= 2 and not (tf and tf >= _TF_FIRST_NUMPY2)


def _python_version_fits(variables: dict[str, str]) -> Optional[str]:
    """The log's Python is the one the wheel was built for, or (for an unpinned requirement) one
    that current TensorFlow releases have wheels for: the Python version is not what pip refused."""
    python, wheel = variables.get("log_python", ""), variables.get("wheel_python", "")
    if python and wheel and python == wheel:
        return f"the log shows Python {python}, the version the wheel's cp tag names"
    if variables.get("log_python_pin") == "yes":
        return f"the log shows Python {python}, which the pinned TensorFlow release has wheels for"
    fits = variables.get("log_python_tf", "")
    if fits and fits != "none" and "==" not in variables.get("requirement", "==") and not variables.get("pip_versions"):
        return f"the log shows Python {python}, which TensorFlow {fits.replace('-', ' to ')} have wheels for"
    return None


def _pinned_version_not_offered(variables: dict[str, str]) -> bool:
    """pip lists the releases it found wheels for (``from versions: ...``, for this interpreter and
    system); a pinned release outside a non-empty list has no wheel for this Python."""
    offered = [v.strip() for v in variables.get("pip_versions", "").split(",") if v.strip() and v.strip() != "none"]
    pinned = variables.get("requirement", "").partition("==")[2].strip()
    return bool(offered) and bool(pinned) and pinned not in offered


def _python_version_differs(variables: dict[str, str]) -> bool:
    python, wheel = variables.get("log_python", ""), variables.get("wheel_python", "")
    return bool(python and wheel and python != wheel)


def _pip_found_wheels(variables: dict[str, str]) -> Optional[str]:
    offered = [v.strip() for v in variables.get("pip_versions", "").split(",") if v.strip() and v.strip() != "none"]
    if offered:
        return (
            f"pip found TensorFlow wheels for this interpreter ({offered[0]} to {offered[-1]}), which it"
            " would not for a 32-bit Python"
        )
    return None


def _release_at_least(version: str, floor: tuple[int, int]) -> bool:
    release = _major_minor(version)
    return len(release) == 2 and release >= floor


def _other_system_wheel(variables: dict[str, str]) -> bool:
    wheel, system = variables.get("wheel_os", ""), variables.get("log_os", "")
    system = "linux" if system == "wsl" else system
    return bool(wheel and system and wheel != system)


_SYSTEM_TITLES = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}


def _no_tensorflow_reservation(variables: dict[str, str]) -> Optional[str]:
    """TensorFlow's allocator takes nearly all of each visible GPU's memory when its process starts
    (TensorFlow's GPU guide, "Limiting GPU memory growth"); PyTorch's caching allocator takes memory
    as tensors need it and reserves none at start (PyTorch's CUDA semantics, "Memory management").
    A PyTorch process that shows no TensorFlow holds no such reservation: memory another program
    holds is ``other-process-holds-gpu``."""
    if variables.get("log_framework") == "pytorch":
        return "the log comes from PyTorch, not TensorFlow; PyTorch reserves no GPU memory when it starts"
    return None


def _torch_shown(variables: dict[str, str]) -> bool:
    """The log shows PyTorch (alone or beside TensorFlow): its message may be PyTorch's build's."""
    return variables.get("log_framework") == "pytorch" or bool(variables.get("log_torch_too"))


def _build_has_machine_code(variables: dict[str, str]) -> Optional[str]:
    """The log's TensorFlow release carries machine code (a cubin) for the compute capability the log
    shows (the matrix's build row, from the wheel's fatbinaries): its kernels, and those of the CUDA
    libraries of its release, which compiled for that architecture, have code the GPU loads."""
    if _torch_shown(variables) or variables.get("log_gpu_supported") != "native":
        return None
    return (
        f"TensorFlow {variables.get('log_tf')}'s build carries machine code for compute capability"
        f" {variables.get('log_gpu_cc')}, the GPU the log shows"
    )


def _gpu_not_older_than_build(variables: dict[str, str]) -> Optional[str]:
    """The build carries code for the GPU's compute capability (machine code, or PTX of an
    architecture at or below it): the GPU is not older than the oldest architecture it has."""
    supported = variables.get("log_gpu_supported", "")
    if _torch_shown(variables) or supported not in ("native", "ptx"):
        return None
    code = "machine code" if supported == "native" else "PTX"
    return (
        f"TensorFlow {variables.get('log_tf')}'s build carries {code} for compute capability"
        f" {variables.get('log_gpu_cc')}: the GPU is not older than the build's architectures"
    )


def _cudnn_major_shown(variables: dict[str, str]) -> Optional[str]:
    """The cuDNN the log shows installed is of the major the log's TensorFlow build loads (the
    matrix's build row; the library's file name carries only the major, libcudnn.so.8,
    cudnn64_8.dll): no other major is what the loader met. A message that prints its own loaded
    and compiled versions (cuda_dnn.cc's check) is judged by those."""
    if variables.get("log_cudnn_for_tf") != "same" or variables.get("loaded") or variables.get("compiled"):
        return None
    return (
        f"the log shows cuDNN {variables.get('log_cudnn')}, the major TensorFlow {variables.get('log_tf')}"
        " was built with"
    )


# cause id -> the rule that rules it out (the reason, or None)
RULED_OUT_BY_LOG: dict[str, Callable[[dict[str, str]], Optional[str]]] = {
    "no-nvidia-gpu": _no_gpu,
    "driver-upgraded-no-reboot": _no_reboot,
    "driver-not-installed": _no_driver,
    "tf1-api-in-tf2": _tf1_api,
    "keras3-with-tf-keras-code": _keras3,
    "cudnn-too-old": _cudnn_too_old,
    "cudnn-minor-differs": _cudnn_not_a_newer_minor,
    "container-without-gpu": _not_in_a_linux_container,
    "gpus-flag-missing": _not_in_a_linux_container,
    "container-driver-capabilities": _not_in_a_linux_container,
    "wsl-libcuda-path": _not_under_wsl,
    "wsl-driver-missing": _not_under_wsl,
    "module-not-built-for-kernel": _no_kernel_module_under_wsl,
    "secure-boot-unsigned-module": _no_kernel_module_under_wsl,
    "other-driver-holds-gpu": _no_kernel_module_under_wsl,
    "tf-windows-gpu-ended": _gpu_build_on_this_system,
    "cudnn-other-major": _cudnn_major_shown,
    # the matrix's build row for the log's TensorFlow against the GPU the log shows
    "release-lacks-arch": _build_has_machine_code,
    "compute-capability-too-low": _gpu_not_older_than_build,
    "gpu-memory-preallocated": _no_tensorflow_reservation,
    "numpy-too-old": _numpy_newer_than_build,
    "numpy2-abi": _numpy_1,
    "python-version-unsupported": _python_version_fits,
    "python-32-bit": _pip_found_wheels,
    # a name ml_dtypes removed was there from its first release: the module asking is the older one
    "ml-dtypes-too-old": lambda v: (
        f"ml_dtypes had {v.get('name', 'the name')} from its first release until {v['ml_dtypes_removed_in']} removed it"
        if v.get("ml_dtypes_removed_in")
        else None
    ),  # fmt: skip
}


def _same_cuda_release(variables: dict[str, str]) -> Optional[bool]:
    """Whether the CUDA the log shows installed (nvcc's release, a printed CUDA version) is the one
    the missing CUDA runtime belongs to: True, False, or None when the log or the file name does not
    say. A runtime's soname names its release: libcudart.so.10.1 is CUDA 10.1 only, while from CUDA 11
    every minor release ships the major's soname (libcudart.so.11.0, cudart64_110.dll, cudart64_12.dll)."""
    if variables.get("dlerror_reason", "not-found") != "not-found":
        return None  # (a loader's own reason, a wrong architecture or a missing dependency, says more)
    return same_cuda_files(variables.get("log_cuda", ""), variables.get("cuda_version", ""))


def _build_cuda_installed(variables: dict[str, str]) -> Optional[bool]:
    """Whether the CUDA the log shows installed is the release the log's TensorFlow was built with
    (``build_facts``: the matrix's build row). The file name the loader asked for says more, so it
    decides first (``_same_cuda_release``); this answers when the message names no CUDA file."""
    by_file = _same_cuda_release(variables)
    if by_file is not None:
        return by_file
    if variables.get("dlerror_reason", "not-found") != "not-found":
        return None
    # the runtime's file name follows the release that way; the math libraries have their own
    # numbering (CUDA 11.0's libcusolver.so.10, 11.1's libcusolver.so.11)
    if variables.get("family", "cudart") != "cudart":
        return None
    return {"same": True, "other": False}.get(variables.get("log_cuda_for_tf", ""))


def _file_on_disk(variables: dict[str, str]) -> bool:
    """The log shows the very file the loader could not open, at a path (an ls, find or ldconfig
    line): the file is installed, outside the folders the loader searches. dlopen(3) looks in
    LD_LIBRARY_PATH, the ld.so cache and /lib, /usr/lib; LoadLibrary in the DLL search order (PATH,
    os.add_dll_directory) and nowhere else."""
    wanted = variables.get("library", "").lower()
    shown = variables.get("log_library_files", "")
    return bool(wanted) and wanted in shown.split(",")


# The libraries whose file names carry the CUDA major (libcudart.so.11.0, libcublas.so.12,
# libnvrtc.so.11.2, cudart64_110.dll, cupti64_2023...): cuFFT, cuRAND, cuSOLVER and cuSPARSE number
# their own releases (CUDA 12's libcufft.so.11), so their suffix names no CUDA major.
_CUDA_MAJOR_FAMILIES = frozenset({"cudart", "cublas", "nvrtc", "nvjitlink", "cupti"})


def _leading_number(version: str) -> Optional[int]:
    head = version.split(".")[0]
    return int(head) if head.isdigit() and len(head) <= 4 else None


def _other_cuda_major(variables: dict[str, str]) -> bool:
    """The log shows another CUDA major than the one the missing file belongs to: the same library
    with another major on disk (an ls, find or ldconfig line), or the CUDA release it prints
    (nvcc's, a PyTorch wheel's +cuNNN tag). The loader opens the exact file name a module lists
    (ld.so(8): DT_NEEDED), and from CUDA 11 on each major's files carry its number, so another
    major's copy never satisfies it."""
    family, version = cuda_library_version(variables.get("library", ""))
    wanted = _leading_number(version)
    if family not in _CUDA_MAJOR_FAMILIES or wanted is None:
        return False
    for shown in filter(None, variables.get("log_library_files", "").split(",")):
        other_family, other_version = cuda_library_version(shown)
        other = _leading_number(other_version)
        if other_family == family and other is not None and other != wanted:
            return True
    installed = _leading_number(variables.get("log_cuda", ""))
    return installed is not None and installed != wanted


def _cudnn_major(version: str) -> Optional[int]:
    """cuDNN's major from either form the log prints it in ("8.9.2", or the integer 8902, 90300)."""
    number = _leading_number(version)
    if number is None:
        return None
    return number // 1000 if number >= 1000 and "." not in version else number


def _needed_major(variables: dict[str, str]) -> Optional[tuple[str, int, Optional[int]]]:
    """(family, the major the file named after a provider's "with error" carries, the major the
    log shows of it) for ONNX Runtime's provider libraries: the provider links against one CUDA
    and one cuDNN major (its requirements table), and the loader names the file it lacks."""
    family, version = cuda_library_version(variables.get("needed_lib", ""))
    wanted = _leading_number(version)
    if wanted is None or family not in _CUDA_MAJOR_FAMILIES | {"cudnn"}:
        return None
    shown: Optional[int] = None
    for name in filter(None, variables.get("log_library_files", "").split(",")):
        other_family, other_version = cuda_library_version(name)
        if other_family == family and _leading_number(other_version) is not None:
            shown = _leading_number(other_version)
            if shown != wanted:
                break
    if shown is None:
        shown = (
            _cudnn_major(variables.get("log_cudnn", ""))
            if family == "cudnn"
            else _leading_number(variables.get("log_cuda", ""))
        )
    return family, wanted, shown


def _provider_needs_other_major(variables: dict[str, str]) -> bool:
    needed = _needed_major(variables)
    return needed is not None and needed[2] is not None and needed[2] != needed[1]


def _provider_needs_shown_major(variables: dict[str, str]) -> bool:
    needed = _needed_major(variables)
    return needed is not None and needed[2] == needed[1]


def _cvd_indexes(variables: dict[str, str]) -> Optional[list[int]]:
    """The device indexes CUDA_VISIBLE_DEVICES is set to in the log ([] for "" ), None when the log
    does not set it."""
    value = variables.get("log_cvd", "")
    if not value:
        return None
    if value == "empty":
        return []
    parts = value.split(",")
    if not (parts[0].lstrip("-").isdigit() and len(parts[0]) <= 4):
        # a GPU or MIG UUID names a device this log cannot check; anything else is no identifier,
        # and CUDA makes no device visible when the first entry is invalid
        return None if parts[0].lower().startswith(("gpu-", "mig-")) else []
    return [int(part) for part in parts if part.lstrip("-").isdigit() and len(part) <= 4]


def _cvd_hides_all(variables: dict[str, str]) -> bool:
    """CUDA_VISIBLE_DEVICES set to "" or to a negative index only: CUDA enumerates no device (the
    CUDA C++ Programming Guide, CUDA environment variables: the devices before the first invalid
    index are visible, none when it comes first)."""
    indexes = _cvd_indexes(variables)
    return indexes is not None and (not indexes or indexes[0] < 0)


def _cvd_names_missing_gpu(variables: dict[str, str]) -> bool:
    """CUDA_VISIBLE_DEVICES lists an index above 0 first: on a machine with fewer GPUs that index
    does not exist, and CUDA then enumerates nothing (index 0 exists wherever any GPU does)."""
    indexes = _cvd_indexes(variables)
    return bool(indexes) and indexes[0] > 0


# cause id -> the rule that says the log points at it
POINTED_AT_BY_LOG: dict[str, Callable[[dict[str, str]], bool]] = {
    "driver-upgraded-no-reboot": lambda v: _driver_split(v) is True,
    # the CUDA the runtime belongs to is installed, or the file itself is on disk: it is not found
    # where the loader looks
    "cuda-lib-not-on-path": lambda v: _build_cuda_installed(v) is True or _file_on_disk(v),
    "cuda-bin-not-on-path": lambda v: _build_cuda_installed(v) is True or _file_on_disk(v),
    # the file itself on disk, or the log shows cuDNN installed of the major the build loads
    "cudnn-lib-not-on-path": lambda v: _file_on_disk(v) or bool(_cudnn_major_shown(v)),
    "cudnn-not-on-path": lambda v: _file_on_disk(v) or bool(_cudnn_major_shown(v)),
    # another CUDA release is installed: the one this TensorFlow was built for is not
    "cuda-not-installed": lambda v: _build_cuda_installed(v) is False and not _file_on_disk(v),
    # the log shows the library or the CUDA of another major than the file asked for
    "other-cuda-major": lambda v: _other_cuda_major(v) and not _file_on_disk(v),
    # the log's cuDNN is another major than the build's (the file name carries the major)
    "cudnn-other-major": lambda v: v.get("log_cudnn_for_tf") == "other-major" and not _file_on_disk(v),
    # the build carries no code the GPU can run (the matrix: the build's cubins and PTX)
    "release-lacks-arch": lambda v: v.get("log_gpu_unsupported") == "yes",
    # TensorFlow after 2.10 on native Windows: there is no GPU build to find the GPU with
    "tf-windows-gpu-ended": lambda v: v.get("log_tf_no_gpu_build") == "windows",
    # the log shows another vendor's GPU (an AMD Radeon or Instinct, an Intel Arc) and no NVIDIA one
    # (``gpu_stacks``): the CUDA build has no NVIDIA GPU to find
    "no-nvidia-gpu": lambda v: v.get("log_gpu_vendor") in ("amd", "intel"),
    # the value of CUDA_VISIBLE_DEVICES the log shows
    "cvd-hides-all": _cvd_hides_all,
    "cvd-out-of-range": _cvd_names_missing_gpu,
    # the Microsoft Store's Python runs packaged, with its own DLL search
    "msstore-python": lambda v: v.get("log_python_store") == "yes",
    # an ONNX Runtime provider names the CUDA or cuDNN file it lacks: the log shows that library
    # (or that CUDA, that cuDNN) of another major, or of the same one
    "onnxruntime-cuda-major-mismatch": _provider_needs_other_major,
    "onnxruntime-cuda-libraries-missing": _provider_needs_shown_major,
    # the log shows a driver older than the CUDA release it also shows (nvidia-smi's "CUDA
    # Version", or the driver against that release's minimum in the compatibility matrix)
    "cuda-driver-too-old": lambda v: _driver_older_than_log_cuda(v),  # defined below
    # NumPy 2 beside a TensorFlow built for NumPy 1.x (before 2.18)
    "numpy2-abi": _numpy2_beside_numpy1_build,
    # Keras 3 installed (keras 3.x in the log): code for Keras 2 meets it
    "keras3-with-tf-keras-code": lambda v: (_leading_number(v.get("log_keras", "")) or 0) == 3,
    # no TensorFlow wheel for the log's Python: none at all, not the pinned release, not the wheel's
    "python-version-unsupported": lambda v: (
        v.get("log_python_tf") == "none"
        or v.get("log_python_pin") == "no"
        or _pinned_version_not_offered(v)
        or _python_version_differs(v)
    ),  # fmt: skip
    # the wrapt or typing_extensions release the log shows past the ones TensorFlow's wrappers take
    "wrapt-too-new-for-tf": lambda v: _release_at_least(v.get("log_wrapt", ""), (1, 15)),
    "typing-extensions-too-new-for-tf": lambda v: _release_at_least(v.get("log_typing_extensions", ""), (4, 6)),
    # TensorFlow 2.13 caps typing-extensions below 4.6.0 (its setup.py)
    "tf-pins-typing-extensions": lambda v: _major_minor(v.get("log_tf", "")) == (2, 13),
    # a wheel for another operating system than the log's
    "package-not-for-platform": _other_system_wheel,
}


def _driver_older_than_log_cuda(variables: dict[str, str]) -> bool:
    return _driver_runs_log_cuda(variables) is False


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
