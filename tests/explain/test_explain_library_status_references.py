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


# --- cuDNN 9's BAD_PARAM sub-codes and MAPPING_ERROR -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # arguments the layer passes: its shapes and sizes
        (
            "Check failed: status == CUDNN_STATUS_SUCCESS (2005 vs. 0) CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
            "cudnn-unsupported-arguments",
        ),
        ("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH", "cudnn-unsupported-arguments"),
    ],
)
def test_bad_param_sub_codes_say_more_than_their_category(text, first):
    assert _causes(text)[0] == first


def test_a_pointer_sub_code_is_the_calling_code_s_and_takes_no_setup_cause():
    for name in ("CUDNN_STATUS_BAD_PARAM_NULL_POINTER", "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE"):
        assert _causes(f"cudnn_graph.cc:88] {name}") == ["cudnn-status"]


def test_mapping_error_is_an_earlier_fault_unless_the_gpu_is_newer_than_the_build():
    assert _causes("RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR")[0] == "earlier-cuda-error"
    assert _causes("cublas runtime error: CUBLAS_STATUS_MAPPING_ERROR")[0] == "earlier-cuda-error"
    newer = "name: NVIDIA GeForce RTX 3090\ncuda 10.2\nRuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR"
    assert _causes(newer)[0] == "release-lacks-arch"


def test_success_is_no_status_to_act_on():
    assert not [e for e in explain(CATALOGUE.scan_text("status == CUDNN_STATUS_SUCCESS")) if not e.harmless]
