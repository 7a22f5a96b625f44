"""Spellings of known messages that newer releases print, and causes a single-answer pattern named
apart from the catalogue's own vocabulary.

Each change is written from the printing source: PyTorch's device count (c10/cuda/CUDAFunctions.cpp,
device_count_impl) prints a status it has no words for as "Error <n>: <cudaGetErrorString>"; XLA's
NVPTXCompiler prints the PTX compiler's version with or without brackets; PyTorch's MPS allocator
formats sizes in binary units in newer releases; nvcc's "Unsupported gpu architecture" is quoted
without its "nvcc fatal :" by CMake and by people; ptxas and nvcc failures have the causes the
catalogue already names for the same tools (an older toolkit first on PATH, an old wheel, tools
not installed).
"""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


def _one(text: str, pattern_id: str):
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert len(found) == 1, [e.id for e in _explained(text)]
    return found[0]


TORCH_COUNT = (
    "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
    "functions before calling NumCudaDevices() that might have already set an error? Error {n}: {text} "
    "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)"
)


@pytest.mark.parametrize(
    ("number", "text", "status", "first"),
    [
        (802, "system not yet initialized", "cudaErrorSystemNotReady", "fabric-manager-not-running"),
        (3, "initialization error", "cudaErrorInitializationError", None),
        (101, "invalid device ordinal", "cudaErrorInvalidDevice", None),
    ],
)
def test_torch_device_count_names_the_runtime_status_by_its_text(number, text, status, first) -> None:
    explanation = _one(TORCH_COUNT.format(n=number, text=text), "cuda-runtime-status")
    assert explanation.variables["status_name"] == status
    assert not explanation.harmless
    if first is not None:
        assert explanation.causes[0].id == first


def test_torch_device_count_text_decides_over_the_number() -> None:
    # the number is the build's CUDA release's: a text that names another status wins
    explanation = _one(TORCH_COUNT.format(n=9999, text="system not yet initialized"), "cuda-runtime-status")
    assert explanation.variables["status_name"] == "cudaErrorSystemNotReady"


def test_torch_device_count_status_with_its_own_pattern_is_not_doubled() -> None:
    text = TORCH_COUNT.format(n=804, text="forward compatibility was attempted on non supported HW")
    assert [e.id for e in _explained(text)] == ["cuda-compat-not-supported"]


@pytest.mark.parametrize(
    "text",
    [
        "HTTP Error 802: system not yet initialized",
        "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
        "NumCudaDevices() that might have already set an error? Error 710: device-side assert triggered",
    ],
)
def test_look_alikes_of_the_device_count_frame_stay_quiet(text) -> None:
    assert "cuda-runtime-status" not in [e.id for e in _explained(text)]


@pytest.mark.parametrize(
    ("text", "ptxas"),
    [
        (
            "W external/local_xla/xla/service/gpu/nvptx_compiler.cc:930] The NVIDIA driver's CUDA version is 12.4 "
            "which is older than the PTX compiler version 12.5.82. Because the driver is older than the PTX "
            "compiler version, XLA is disabling parallel compilation, which may slow down compilation.",
            "12.5.82",
        ),
        (
            "The NVIDIA driver's CUDA version is 12.2 which is older than the ptxas CUDA version (12.3.107). "
            "Because the driver is older than the ptxas version, XLA is disabling parallel compilation",
            "12.3.107",
        ),
        (
            "The NVIDIA driver's CUDA version is 12.8 which is older than the PTX compiler version 12.9. Because",
            "12.9",
        ),
    ],
)
def test_xla_driver_older_than_ptx_compiler_in_either_spelling(text, ptxas) -> None:
    explanation = _one(text, "xla-driver-older-than-ptxas")
    assert explanation.variables["ptxas"] == ptxas
    assert explanation.harmless


def test_xla_driver_version_alone_stays_quiet() -> None:
    assert "xla-driver-older-than-ptxas" not in [e.id for e in _explained("The NVIDIA driver's CUDA version is 12.4")]


@pytest.mark.parametrize(
    ("text", "allocated"),
    [
        (
            "MPS backend out of memory (MPS allocated: 15.72 GiB, other allocations: 2.41 MiB, max allowed: "
            "18.13 GiB). Tried to allocate 5.81 GiB on private pool.",
            "15.72 GiB",
        ),
        (
            "RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, "
            "max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool.",
            "8.89 GB",
        ),
        (
            "RuntimeError: MPS backend out of memory (MPS allocated: 0 bytes, other allocations: 0 bytes, max "
            "allowed: 7.93 GB). Tried to allocate 256 bytes on shared pool.",
            "0 bytes",
        ),
    ],
)
def test_mps_out_of_memory_in_decimal_binary_and_byte_units(text, allocated) -> None:
    explanation = _one(text, "mps-out-of-memory")
    assert explanation.variables["allocated"] == allocated
    assert [c.id for c in explanation.causes] == ["mps-memory-limit", "mps-out-of-memory"]


@pytest.mark.parametrize(
    "text",
    [
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
        "Unsupported gpu architecture 'compute_100'",
        "nvcc fatal : Unsupported gpu architecture 'compute_121a'",
        "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin\\nvcc.exe ... "
        "nvcc fatal : Unsupported gpu architecture 'compute_120'",
    ],
)
def test_nvcc_unknown_architecture_first_blames_a_toolkit_older_than_the_gpu(text) -> None:
    explanation = _one(text, "nvcc-unsupported-arch")
    assert [c.id for c in explanation.causes] == ["nvcc-too-old", "older-cuda-toolkit-used"]


def test_nvcc_unknown_architecture_with_two_toolkits_in_the_log_blames_the_older_one_first() -> None:
    log = (
        "-- The CUDA compiler identification is NVIDIA 12.0.140 (/usr/local/cuda-12.0/bin/nvcc)\n"
        "-- Found CUDAToolkit: /usr/local/cuda-12.9/include\n"
        "nvcc fatal   : Unsupported gpu architecture 'compute_100'\n"
    )
    explanation = _one(log, "nvcc-unsupported-arch")
    assert explanation.causes[0].id == "older-cuda-toolkit-used"


def test_nvcc_commands_fit_the_platform() -> None:
    windows = _one(
        "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin\\nvcc.exe: nvcc fatal : "
        "Unsupported gpu architecture 'compute_120'",
        "nvcc-unsupported-arch",
    )
    shells = {cmd.shell for cause in windows.causes if cause.tell for cmd in cause.tell.commands}
    assert "bash" not in shells


@pytest.mark.parametrize(
    "text",
    [
        "Unsupported gpu architecture: the card is too old for this build",
        "nvcc fatal   : Value 'c++20' is not defined for option 'std'",
    ],
)
def test_nvcc_look_alikes_stay_quiet(text) -> None:
    assert "nvcc-unsupported-arch" not in [e.id for e in _explained(text)]


@pytest.mark.parametrize(
    "text",
    [
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ptxas exited with non-zero error code 65280, output: "
        "ptxas /tmp/tempfile-ci-7b9f-5197-629d, line 5; fatal   : Unsupported .version 8.3; current version is '8.2'",
        "ptxas fatal   : Unsupported .version 7.1; current version is '7.0'",
    ],
)
def test_ptxas_older_than_the_ptx_blames_an_older_toolkit_first_on_path(text) -> None:
    explanation = _one(text, "ptxas-unsupported-version")
    assert [c.id for c in explanation.causes] == ["old-ptxas-on-path", "cuda-nvcc-wheel-old"]


def test_no_ptx_compilation_provider_first_blames_missing_compiler_tools() -> None:
    text = (
        "W tensorflow/core/framework/op_kernel.cc:1855] OP_REQUIRES failed at xla_ops.cc:590 : UNAVAILABLE: No PTX "
        "compilation provider is available. Neither ptxas/nvlink nor nvjtlink is available."
    )
    explanation = _one(text, "ptxas-not-found")
    assert [c.id for c in explanation.causes] == ["ptxas-not-installed", "xla-cuda-dir-not-found"]
