"""Logs built from the compatibility matrix: for every TensorFlow release it holds and each system,
a log that prints that release's version the ways TensorFlow and its users print it, the versions
of the CUDA stack beside it, then the failure a mismatch produces. What a user relies on holds for
every one of them: the version is read, the CUDA the release loads is the matrix's, a cause the
printed versions contradict is not listed, the cause they confirm comes first."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context
from envcheck.matrix import load_matrix
from tests.hypothesis_budget import examples

CATALOGUE = load_patterns()
MATRIX = load_matrix()
_BUILD_OS = {"linux": "linux", "wsl": "linux", "windows": "windows"}

# (system, the matrix's GPU build row) for every minor release the matrix holds
BUILDS = [
    (system, build)
    for system in ("linux", "wsl", "windows")
    for build in MATRIX.tf_releases(_BUILD_OS[system])
    if not build.is_patch_row and build.gpu and build.cuda is not None and any("cudart" in n for n in build.libraries)
]
CUDA_RELEASES = sorted({tuple(r.version.release[:2]) for r in MATRIX.cuda_releases()})


def _mm(version) -> tuple[int, int]:
    release = version.release if hasattr(version, "release") else tuple(int(p) for p in str(version).split("."))
    return (release[0], release[1] if len(release) > 1 else 0)


def _tf_version(build, patch: int) -> str:
    return f"{build.label}.{patch}"


def _dist(build, gpu_name: bool) -> str:
    # tensorflow-gpu was published up to 2.11 (1.x and 2.0 needed it for the GPU build)
    old = _mm(build.tf) <= (2, 0)
    return "-gpu" if old or (gpu_name and _mm(build.tf) <= (2, 11)) else ""


# the ways a log prints TensorFlow's version: (label, the lines, given the version, the
# distribution's suffix, the system)
def _spellings(version: str, dist: str, system: str) -> dict[str, str]:
    wheel_tag = "win_amd64" if system == "windows" else "manylinux2010_x86_64"
    site = (
        "C:\\Users\\me\\anaconda3\\Lib\\site-packages\\"
        if system == "windows"
        else "/home/me/.local/lib/python3.8/site-packages/"
    )
    under = dist.replace("-", "_")
    return {
        "repl": f">>> import tensorflow as tf\n>>> print(tf.__version__)\n{version}",
        "notebook": f"In [2]: tf.__version__\nOut[2]: '{version}'",
        "same-line": f"tf.__version__ = {version}",
        "pip-freeze": f"absl-py==0.12.0\ntensorflow{dist}=={version}\ntermcolor==1.1.0",
        "pip-list": f"Package              Version\n-------------------- -------\ntensorflow{dist}       {version}",
        "pip-show": f"Name: tensorflow{dist}\nVersion: {version}\nSummary: TensorFlow is an open source machine learning framework for everyone.",
        "prose": f"TensorFlow version: {version}",
        "short": f"TF version: {version}",
        "installed": f"Successfully installed tensorboard-2.4.1 tensorflow{dist}-{version}",
        "satisfied": f"Requirement already satisfied: tensorflow{dist} in {site.rstrip(chr(92) + '/')} ({version})",
        "wheel": f"Processing ./tensorflow{under}-{version}-cp38-cp38-{wheel_tag}.whl",
        "dist-info": f"{site}tensorflow{under}-{version}.dist-info",
    }


SPELLINGS = sorted(_spellings("2.4.1", "", "linux"))
# another package's version, next to TensorFlow's: it must not count
LOOKALIKES = (
    "tensorflow-estimator      {other}",
    "tensorboard==7.{other}",
    "Name: tensorflow-estimator\nVersion: {other}",
    "tensorflow_estimator-{other}.dist-info",
    "Requirement already satisfied: tensorflow-estimator in /usr/lib/python3/dist-packages ({other})",
)


def _cudart(build) -> str:
    """The CUDA runtime's file name the build loads, as the matrix names it (each release its own
    before CUDA 11, the major's from 11 on: libcudart.so.10.1, libcudart.so.11.0, cudart64_110.dll)."""
    return next(name for name in build.libraries if "cudart" in name)


def _loader_error(build, system: str) -> str:
    name = _cudart(build)
    tf = _mm(build.tf)
    if system == "windows":
        if tf < (1, 14):
            return (
                f"ImportError: Could not find '{name}'. TensorFlow requires that this DLL be installed in a directory"
                " that is named in your %PATH% environment variable."
            )
        return (
            f"2021-03-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not"
            f" load dynamic library '{name}'; dlerror: {name} not found"
        )
    if tf < (1, 14):
        return f"ImportError: {name}: cannot open shared object file: No such file or directory"
    verb = "dlopen" if tf < (2, 1) else "load dynamic"
    return (
        f"2021-03-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not"
        f" {verb} library '{name}'; dlerror: {name}: cannot open shared object file: No such file or directory"
    )


def _same_files(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] == b[0] if a[0] >= 11 or b[0] >= 11 else a == b


def _prefix(system: str) -> str:
    if system == "windows":
        return "PS C:\\Users\\me> python train.py\n"
    if system == "wsl":
        return "me@PC:/mnt/c/work$ uname -r\n5.15.90.1-microsoft-standard-WSL2\n"
    return "me@box:/home/me$ python train.py\n"


def _explained(text: str, pattern_id: str):
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    assert found, text
    return found[0]


def _all_text(explanation) -> str:
    fix = explanation.fix
    parts = [explanation.cause, getattr(fix, "text", "") or ""]
    parts += [c.text for c in explanation.causes]
    parts += [getattr(c.fix, "text", "") or "" for c in explanation.causes if c.fix is not None]
    for f in [fix, *(c.fix for c in explanation.causes)]:
        for command in getattr(f, "commands", ()) or ():
            parts.append(str(getattr(command, "text", command)))
    return "\n".join(parts)


# --- the version is read, whichever way it is printed, and a neighbour's is not ------------------


@settings(max_examples=examples(300), deadline=None)
@given(
    st.sampled_from(BUILDS),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from(SPELLINGS),
    st.sampled_from(LOOKALIKES),
)
def test_the_tensorflow_version_is_read_however_it_is_printed(row, patch, gpu_name, spelling, lookalike):
    system, build = row
    version = _tf_version(build, patch)
    printed = _spellings(version, _dist(build, gpu_name), system)[spelling]
    other = lookalike.format(other="9.9.9")
    for text in (printed, f"{other}\n{printed}", f"{printed}\n{other}"):
        assert read_context(_prefix(system) + text).get("log_tf") == version, text
    assert "log_tf" not in read_context(_prefix(system) + other)


# --- the CUDA runtime that release loads, missing -----------------------------------------------


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(BUILDS), st.sampled_from(SPELLINGS), st.sampled_from(CUDA_RELEASES), st.integers(0, 2))
def test_a_missing_cuda_runtime_is_judged_by_the_release_the_log_shows(row, spelling, installed, patch):
    system, build = row
    built = _mm(build.cuda)
    version = _tf_version(build, patch)
    text = (
        _prefix(system)
        + _spellings(version, _dist(build, False), system)[spelling]
        + f"\n$ nvcc --version\nCuda compilation tools, release {installed[0]}.{installed[1]}, V{installed[0]}.{installed[1]}.0\n"
        + _loader_error(build, system)
    )
    pattern = "win-cudart-dll-not-found" if system == "windows" and _mm(build.tf) < (1, 14) else None
    found = [
        e
        for e in explain(CATALOGUE.scan_text(text))
        if e.variables.get("library", "").startswith(("libcudart", "cudart"))
    ]
    assert found, text
    explanation = found[0] if pattern is None else _explained(text, pattern)
    assert explanation.variables.get("log_tf") == version
    # the CUDA the release was built with is the matrix's
    assert explanation.variables.get("log_tf_cuda") == str(build.cuda)
    ids = [c.id for c in explanation.causes]
    if _same_files(installed, built):
        # the release's CUDA is installed: not found where the loader looks
        assert ids[0] in ("cuda-lib-not-on-path", "cuda-bin-not-on-path"), (text, ids)
    else:
        assert ids[0] == "cuda-not-installed", (text, ids)
        # every CUDA release it tells to install is the build's (its major from CUDA 11 on)
        for named in re.findall(
            r"\binstall(?:ing)? (?:the )?CUDA (?:Toolkit )?(\d{1,2})\.(\d)", _all_text(explanation)
        ):
            wanted = (int(named[0]), int(named[1]))
            assert _same_files(wanted, built), (text, named, _all_text(explanation))


def _build_info(build, system: str) -> str:
    """tf.sysconfig.get_build_info() as Python prints it: the versions the build was made with."""
    major, minor = _mm(build.cuda)
    cuda = f"64_{major}{minor}" if system == "windows" else f"{major}.{minor}"
    cudnn = str(build.cudnn).split(".")[0]
    return (
        ">>> tf.sysconfig.get_build_info()\n"
        f"{{'cpu_compiler': 'gcc', 'cuda_compute_capabilities': ['sm_60', 'compute_70'], 'cuda_version': '{cuda}',"
        f" 'cudnn_version': '{'64_' if system == 'windows' else ''}{cudnn}', 'is_cuda_build': True, 'is_rocm_build': False}}"
    )


@settings(max_examples=examples(150), deadline=None)
@given(st.sampled_from(BUILDS), st.sampled_from(SPELLINGS))
def test_the_build_info_names_no_installed_cuda(row, spelling):
    """get_build_info()'s CUDA and cuDNN are the build's: they say nothing of what is installed."""
    system, build = row
    text = (
        _prefix(system)
        + _spellings(_tf_version(build, 0), _dist(build, False), system)[spelling]
        + "\n"
        + _build_info(build, system)
        + "\n"
        + _loader_error(build, system)
    )
    found = [
        e
        for e in explain(CATALOGUE.scan_text(text))
        if e.variables.get("library", "").startswith(("libcudart", "cudart"))
    ]
    assert found, text
    variables = found[0].variables
    assert "log_cuda" not in variables and "log_cudnn" not in variables, text
    assert "log_cuda_for_tf" not in variables and "log_cudnn_for_tf" not in variables, text


# --- the cuDNN library that release loads, missing ------------------------------------------------


def _cudnn_file(build) -> str:
    return next(name for name in build.libraries if "cudnn" in name)


def _cudnn_printed(version: str, form: str) -> str:
    major, minor, patch = (version.split(".") + ["0", "0"])[:3]
    return {
        "header": f"$ cat /usr/include/cudnn_version.h | grep CUDNN_MAJOR -A 2\n#define CUDNN_MAJOR {major}\n"
        f"#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n--",
        "prose": f"cuDNN version: {version}",
        "template": f"CUDA/cuDNN version: 11.2/{version}",
    }[form]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.sampled_from([b for b in BUILDS if _mm(b[1].tf) >= (1, 14) and any("cudnn" in n for n in b[1].libraries)]),
    st.sampled_from(SPELLINGS),
    st.sampled_from(("header", "prose", "template")),
    st.booleans(),
)
def test_a_missing_cudnn_is_judged_by_the_printed_cudnn(row, spelling, form, same_major):
    system, build = row
    built = _cudnn_parts(build)
    shown = f"{built[0]}.{built[1]}.{built[2]}" if same_major else f"{built[0] - 1}.4.1"
    name = _cudnn_file(build)
    verb = "dlopen" if _mm(build.tf) < (2, 1) else "load dynamic"
    reason = (
        f"{name} not found"
        if system == "windows"
        else f"{name}: cannot open shared object file: No such file or directory"
    )
    text = (
        _prefix(system)
        + _spellings(_tf_version(build, 0), _dist(build, False), system)[spelling]
        + "\n"
        + _cudnn_printed(shown, form)
        + "\nW tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not"
        + f" {verb} library '{name}'; dlerror: {reason}"
    )
    found = [e for e in explain(CATALOGUE.scan_text(text)) if "cudnn" in e.variables.get("library", "")]
    assert found, text
    explanation = found[0]
    ids = [c.id for c in explanation.causes]
    if same_major:
        # the build's major is shown installed: no other major, and not found where the loader looks
        assert "cudnn-other-major" not in ids, (text, ids)
        assert ids[0] in ("cudnn-lib-not-on-path", "cudnn-not-on-path"), (text, ids)
    else:
        assert ids[0] == "cudnn-other-major", (text, ids)


# --- cuDNN: the loaded release against the one the build was compiled with ------------------------


def _cudnn_parts(build) -> tuple[int, int, int]:
    parts = [int(p) for p in str(build.cudnn).split(".")] + [0, 0]
    return parts[0], parts[1], parts[2]


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(BUILDS), st.sampled_from(SPELLINGS), st.sampled_from(("older", "newer", "other-major")))
def test_a_cudnn_mismatch_is_judged_by_the_printed_versions(row, spelling, which):
    system, build = row
    major, minor, patch = _cudnn_parts(build)
    compiled = f"{major}.{minor}.{patch}"
    if which == "older":
        if minor == 0:
            return
        loaded = f"{major}.{minor - 1}.0"
    elif which == "newer":
        loaded = f"{major}.{minor + 1}.0"
    else:
        loaded = f"{major + 1}.0.0"
    text = (
        _prefix(system)
        + _spellings(_tf_version(build, 0), _dist(build, False), system)[spelling]
        + "\nE tensorflow/stream_executor/cuda/cuda_dnn.cc:363] Loaded runtime CuDNN library: "
        + f"{loaded} but source was compiled with: {compiled}.  CuDNN library major and minor version needs to match"
        " or have higher minor version in case of CuDNN 7.0 or later version."
    )
    explanation = _explained(text, "cudnn-version-mismatch")
    ids = [c.id for c in explanation.causes]
    if which == "older":
        assert ids[0] == "cudnn-too-old", (text, ids)
    else:
        # never "an older cuDNN was loaded" when the printed loaded one is newer
        assert "cudnn-too-old" not in ids, (text, ids)
    if which == "other-major":
        assert "cudnn-minor-differs" not in ids, (text, ids)


# --- the driver against the CUDA the release runs -----------------------------------------------


def _driver_floor(build, system: str):
    requirement = MATRIX.driver_requirement(str(build.cuda), "windows" if system == "windows" else "linux")
    return None if requirement is None else requirement.minimum


def _smi(driver: str, cuda: str) -> str:
    return (
        "+-----------------------------------------------------------------------------+\n"
        f"| NVIDIA-SMI {driver}    Driver Version: {driver}    CUDA Version: {cuda}     |\n"
        "|-------------------------------+----------------------+----------------------+"
    )


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(BUILDS), st.sampled_from(SPELLINGS), st.booleans())
def test_an_old_driver_is_judged_by_the_cuda_the_release_runs(row, spelling, too_old):
    system, build = row
    floor = _driver_floor(build, system)
    if floor is None:
        return
    major = floor.release[0]
    driver = f"{major - 5}.00" if too_old else f"{major + 5}.10"
    driver_cuda = "9.0" if too_old else "12.8"
    text = (
        _prefix(system)
        + _spellings(_tf_version(build, 0), _dist(build, False), system)[spelling]
        + "\n"
        + _smi(driver, driver_cuda)
        + "\nInternalError: CUDA runtime implicit initialization on GPU:0 failed."
        " Status: CUDA driver version is insufficient for CUDA runtime version"
    )
    explanations = explain(CATALOGUE.scan_text(text))
    ids = [c.id for e in explanations for c in e.causes]
    if too_old:
        assert ids and ids[0] == "cuda-driver-too-old", (text, ids)


# --- the driver library and the kernel module -----------------------------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(
    st.sampled_from([b for b in BUILDS if b[0] != "windows"]),
    st.sampled_from(SPELLINGS),
    st.sampled_from(("kernel-reported", "proc", "nvrm-loading")),
    st.booleans(),
)
def test_a_driver_mismatch_is_judged_by_both_printed_versions(row, spelling, kernel_form, split):
    system, build = row
    user, kernel = "535.104.5", ("470.57.2" if split else "535.104.5")
    kernel_line = {
        "kernel-reported": f"I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:200] kernel reported version is: {kernel}",
        "proc": f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {kernel}  Sat Aug 19 01:13:15 UTC 2023",
        "nvrm-loading": f"[    5.123456] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {kernel}  Sat Aug 19 01:13:15 UTC 2023",
    }[kernel_form]
    text = (
        _prefix(system)
        + _spellings(_tf_version(build, 0), _dist(build, False), system)[spelling]
        + f"\nI tensorflow/stream_executor/cuda/cuda_diagnostics.cc:176] libcuda reported version is: {user}\n"
        + kernel_line
        + "\nE tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit:"
        " CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination"
    )
    explanation = _explained(text, "cuda-driver-mismatch")
    ids = [c.id for c in explanation.causes]
    if split:
        assert ids[0] == "driver-upgraded-no-reboot", (text, ids)
    else:
        assert "driver-upgraded-no-reboot" not in ids, (text, ids)


# --- no kernel image: the GPU against the architectures the release was built for ------------------


_CAPABILITIES = ("3.0", "3.5", "5.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "12.0")


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(BUILDS), st.sampled_from(SPELLINGS), st.sampled_from(_CAPABILITIES))
def test_no_kernel_image_is_judged_by_the_release_and_the_gpu(row, spelling, capability):
    system, build = row
    if not build.compute_capabilities:
        return
    major, minor = capability.split(".")
    device = (
        f"I tensorflow/core/common_runtime/gpu/gpu_device.cc:1561] Found device 0 with properties:\n"
        f"name: NVIDIA GPU major: {major} minor: {minor} memoryClockRate(GHz): 1.7"
        if _mm(build.tf) < (2, 0)
        else f"I tensorflow/core/common_runtime/gpu/gpu_device.cc:1716] Found device 0 with properties:\n"
        f"pciBusID: 0000:01:00.0 name: NVIDIA GPU computeCapability: {capability}"
    )
    text = (
        _prefix(system)
        + _spellings(_tf_version(build, 0), _dist(build, False), system)[spelling]
        + "\n"
        + device
        + "\nInternalError: CUDA error: no kernel image is available for execution on the device"
    )
    explanation = _explained(text, "no-kernel-image-for-device")
    ids = [c.id for c in explanation.causes]
    support = MATRIX.support(build, capability)
    if support == "none":
        assert ids[0] == "release-lacks-arch", (text, ids)
    else:
        # the build carries code for the GPU: it is not older than the build's architectures
        assert "compute-capability-too-low" not in ids, (text, ids)
    if support == "native":
        # ... and the build has its machine code
        assert "release-lacks-arch" not in ids, (text, ids)
        assert ids[0] == "custom-build-arch", (text, ids)
