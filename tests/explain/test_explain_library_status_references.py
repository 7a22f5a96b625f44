"""The causes cuBLAS's and cuDNN's API references give their statuses (cuda_status.yaml's
``status_causes``): CUBLAS_STATUS_ARCH_MISMATCH is "usually caused by compute capability lower
than 5.0", so an older GPU comes first unless the log shows one at 5.0 or above; NOT_SUPPORTED is
a data and compute type combination the GPU cannot run, which an older GPU than the build assumes
also gives; LICENSE_ERROR (both libraries) is a licensed feature without a valid license."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _causes(text: str) -> list[str]:
    """The causes of the one explanation that is not harmless."""
    (explanation,) = [e for e in explain(CATALOGUE.scan_text(text)) if not e.harmless]
    return [c.id for c in explanation.causes]


# --- ARCH_MISMATCH: the GPU's compute capability decides ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "what():  [FT][ERROR] CUDA runtime error: CUBLAS_STATUS_ARCH_MISMATCH attention.cu:90",
        'CUDA error at moe_kernel.cu:132 code=8(CUBLAS_STATUS_ARCH_MISMATCH) "cublasGemmEx(handle)"',
        # the GPU's capability printed below 5.0 (TensorFlow 1.x's device line)
        "name: Tesla K80 major: 3 minor: 7 memoryClockRate(GHz): 0.8235\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  CUDA runtime error: CUBLAS_STATUS_ARCH_MISMATCH gemm.cu:40",
    ],
)
def test_cublas_arch_mismatch_names_a_gpu_below_the_libraries_minimum_first(text):
    causes = _causes(text)
    assert causes[0] == "compute-capability-too-low"
    assert "dtype-needs-newer-gpu" in causes


@pytest.mark.parametrize(
    "device",
    [
        "name: Tesla T4 major: 7 minor: 5 memoryClockRate(GHz): 1.59",
        "Created device /job:localhost/replica:0/task:0/device:GPU:0 with 14800 MB memory:  -> device: 0, "
        "name: Tesla V100-SXM2-16GB, pci bus id: 0000:00:04.0, compute capability: 7.0",
        "name: NVIDIA GeForce RTX 3090",
    ],
)
def test_on_a_gpu_of_5_0_or_newer_the_missing_feature_is_a_number_format(device):
    causes = _causes(f"{device}\nRuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx`")
    assert causes[0] == "dtype-needs-newer-gpu"
    assert causes[-1] == "compute-capability-too-low"


def test_a_printed_capability_alone_is_not_acted_on():
    for line in ("GPU compute capability: 3.0", "name: Tesla K80 major: 3 minor: 7 memoryClockRate(GHz): 0.8235"):
        assert [e.id for e in explain(CATALOGUE.scan_text(line)) if not e.harmless] == []


# --- NOT_SUPPORTED --------------------------------------------------------------------------------


def test_cublas_not_supported_names_the_format_and_an_older_gpu():
    causes = _causes(
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, "
        "opa, opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda)`"
    )
    assert causes[:2] == ["dtype-needs-newer-gpu", "compute-capability-too-low"]


def test_cublas_by_number_15_is_not_supported():
    causes = _causes("cuBLAS error 15 at ggml-cuda.cu:8012: the requested functionality is not supported")
    assert "compute-capability-too-low" in causes


# --- LICENSE_ERROR --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: cuDNN error: CUDNN_STATUS_LICENSE_ERROR",
        "Check failed: status == CUDNN_STATUS_SUCCESS (10 vs. 0)  CUDNN_STATUS_LICENSE_ERROR",
        "cublas error: CUBLAS_STATUS_LICENSE_ERROR",
    ],
)
def test_license_error_names_the_license_and_how_to_check_it(text):
    (explanation,) = [e for e in explain(CATALOGUE.scan_text(text)) if not e.harmless]
    assert [c.id for c in explanation.causes] == ["nvidia-library-license-missing"]
    (cause,) = explanation.causes
    assert "NVIDIA_LICENSE_FILE" in cause.text


def test_other_licenses_are_not_this_cause():
    # cuSOLVER's own license status and a package's license field are other things
    assert "nvidia-library-license-missing" not in _causes("cusolver error: CUSOLVER_STATUS_INVALID_LICENSE")
    assert not explain(CATALOGUE.scan_text("License: Apache Software License"))
