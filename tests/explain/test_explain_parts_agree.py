"""A pattern claims a message only when the message's parts agree with its causes: the status
number or name and its table, the library named, the module named. A changed part changes the
explanation or withdraws the cause; a status no pattern is written for is read from its table
(cuda_status.yaml), never given the nearest pattern's story."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.explain import explain, load_patterns
from envcheck.explain.statuses import load_statuses
from tests.hypothesis_budget import examples

CATALOGUE = load_patterns()
TABLES = load_statuses()


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


def _cause_ids(text: str) -> set[str]:
    return {c.id for e in _explained(text) for c in e.causes}


def _values(enum: str) -> list:
    # success and a status of the program's own (a device-side assert) are named by no explanation
    return [s for s in TABLES.statuses if s.enum == enum and s.value != 0 and not s.programs_own]


# --- cuInit's "UNKNOWN ERROR (N)": N is a CUresult ---------------------------------------------
# TensorFlow prints a CUresult it has no name for as UNKNOWN ERROR (N). Only 999 is
# CUDA_ERROR_UNKNOWN, whose causes (nvidia_uvm not loaded, a bad uvm state) cuinit-unknown-error
# gives; 34 and 303 have patterns of their own; any other N is read from the CUresult table.
_OWN_PATTERN = {999: "cuinit-unknown-error", 34: "cuinit-stub-library", 303: "cuinit-no-driver"}


@pytest.mark.parametrize("status", _values("CUresult"), ids=lambda s: f"{s.value}")
def test_a_cuinit_number_is_read_as_its_curesult(status):
    text = (
        f"E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: UNKNOWN ERROR ({status.value})"
    )
    (explanation,) = _explained(text)
    if status.value in _OWN_PATTERN:
        assert explanation.id == _OWN_PATTERN[status.value]
        return
    # the pattern written for that status, when there is one, else the table's reading
    owner = CATALOGUE.status_owner(status.name)
    assert explanation.id == (owner.id if owner is not None else "cuda-driver-status")
    assert explanation.variables["status_name"] == status.name
    assert "nvidia-uvm-not-loaded" not in {c.id for c in explanation.causes}


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, 9999).filter(lambda n: n not in {s.value for s in _values("CUresult")}))
def test_a_cuinit_number_no_table_knows_gets_no_story(number):
    text = f"failed call to cuInit: UNKNOWN ERROR ({number})"
    assert not _cause_ids(text) & {"nvidia-uvm-not-loaded", "uvm-bad-state", "no-nvidia-gpu", "driver-not-installed"}


def test_the_unknown_curesult_keeps_its_causes():
    for text in ("failed call to cuInit: UNKNOWN ERROR (999)", "failed call to cuInit: CUDA_ERROR_UNKNOWN"):
        assert _explained(text)[0].causes[0].id == "nvidia-uvm-not-loaded"


# --- a status in any spelling -------------------------------------------------------------------
# A pattern written for a status (its regex is the status's name) explains that status however the
# message spells it: the runtime API's text (PyTorch's "CUDA error: out of memory"), a number next
# to the library's name, the twin name in the other API. Every other status keeps the table's reading.
_RUNTIME = _values("cudaError_t")


@pytest.mark.parametrize("status", [s for s in _RUNTIME if s.strings], ids=lambda s: s.name)
def test_a_runtime_status_text_gets_the_pattern_written_for_it(status):
    ids = [e.id for e in _explained(f"RuntimeError: CUDA error: {status.strings[0]}")]
    owner = CATALOGUE.status_owner(status.name)
    if owner is not None:
        assert ids == [owner.id]
    else:  # the table's reading (or none, for a text the tables share): never another status's story
        assert set(ids) <= {"cuda-runtime-status"}


def test_owners_are_the_patterns_that_name_a_status():
    assert CATALOGUE.status_owner("cudaErrorMemoryAllocation").id == "cuda-out-of-memory"
    assert CATALOGUE.status_owner("CUDA_ERROR_OUT_OF_MEMORY").id == "cuda-out-of-memory"
    assert CATALOGUE.status_owner("cudaErrorNoDevice").id == "cuinit-no-device"
    assert CATALOGUE.status_owner("cudaErrorInvalidResourceHandle") is None  # a twin it does not own
    assert CATALOGUE.status_owner("cudaErrorMisalignedAddress") is None
    assert _explained("cuCtxCreate failed with CUresult = 2")[0].causes[0].id == "other-process-holds-gpu"


# --- handle creation: the statuses whose causes the handle patterns give --------------------------
# cudnnCreate and cublasCreate fail for want of memory or with a library that does not belong to
# the CUDA runtime (NOT_INITIALIZED, ALLOC_FAILED, and TensorFlow's INTERNAL_ERROR); another status
# (BAD_PARAM ...) is that status, read from its table; ARCH_MISMATCH (a GPU too old) is cudnn-arch-mismatch.
_HANDLE_STATUSES = {"NOT_INITIALIZED", "ALLOC_FAILED", "INTERNAL_ERROR"}
_CUDNN = sorted({s.name for s in _values("cudnnStatus_t") + _values("cudnnStatus_t (cuDNN 7 and 8)")})
_CUBLAS = sorted({s.name for s in _values("cublasStatus_t")})


@pytest.mark.parametrize("name", _CUDNN)
def test_a_cudnn_handle_status_decides_the_causes(name):
    text = f"E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: {name}"
    (explanation,) = _explained(text)
    if name.removeprefix("CUDNN_STATUS_") in _HANDLE_STATUSES:
        assert explanation.id == "cudnn-handle-failed"
        assert explanation.causes[0].id == "gpu-memory-preallocated"
    elif name.endswith("ARCH_MISMATCH"):  # a GPU this cuDNN does not support: its own pattern
        assert explanation.id == "cudnn-arch-mismatch"
        assert explanation.causes[0].id == "compute-capability-too-low"
    else:
        assert explanation.id == "cudnn-status"
        assert explanation.variables["status_name"] == name
        causes = {c.id for c in explanation.causes}
        if name.endswith("DEVICE_ALLOCATION_FAILED"):  # its own table's meaning is "the GPU is full"
            assert "gpu-memory-preallocated" in causes
        else:
            assert "gpu-memory-preallocated" not in causes


@pytest.mark.parametrize("name", _CUBLAS)
def test_a_cublas_handle_status_decides_the_causes(name):
    text = f"E tensorflow/stream_executor/cuda/cuda_blas.cc:226] failed to create cublas handle: {name}"
    (explanation,) = _explained(text)
    if name.removeprefix("CUBLAS_STATUS_") in _HANDLE_STATUSES:
        assert explanation.id == "cublas-handle-failed"
    else:
        assert explanation.id == "cuda-math-library-status"
        assert explanation.variables["status_name"] == name


# --- the library named ---------------------------------------------------------------------------
_CUDA_LIBRARIES = ["cublas", "cudart", "cufft", "curand", "cusolver", "cusparse"]


@pytest.mark.parametrize("family", [*_CUDA_LIBRARIES, "cudnn"])
@pytest.mark.parametrize("version", ["5", "7", "8.0", "9.0", "10.0"])
def test_the_library_named_decides_cuda_or_cudnn(family, version):
    causes = _cause_ids(
        f"ImportError: lib{family}.so.{version}: cannot open shared object file: No such file or directory"
    )
    if family == "cudnn":
        assert "cudnn-not-installed" in causes and "cuda-not-installed" not in causes
    else:
        assert "cuda-not-installed" in causes and "cudnn-not-installed" not in causes


# --- the module named ----------------------------------------------------------------------------
# "DLL load failed while importing M": TensorFlow's own module (or none named, before Python 3.8)
# may lack a CUDA or cuDNN DLL; another package's module says nothing about TensorFlow's CUDA.
_TF_CUDA_CAUSES = {"cudnn-not-on-path", "cuda-not-installed"}


@pytest.mark.parametrize("module", ["", "_pywrap_tensorflow_internal", "_pywrap_tensorflow"])
def test_tensorflows_module_keeps_the_cuda_causes(module):
    named = f" while importing {module}" if module else ""
    assert _TF_CUDA_CAUSES <= _cause_ids(
        f"ImportError: DLL load failed{named}: The specified module could not be found."
    )


@settings(max_examples=examples(60), deadline=None)
@given(st.from_regex(r"\A_?[a-z][a-z0-9_]{0,20}\Z").filter(lambda m: not m.startswith("_pywrap_tensorflow")))
def test_another_packages_module_gets_no_cuda_cause(module):
    causes = _cause_ids(
        f"ImportError: DLL load failed while importing {module}: The specified module could not be found."
    )
    assert causes and not causes & _TF_CUDA_CAUSES
    assert "python38-dll-search" in causes


def test_pytorchs_thc_line_is_read_by_its_text_not_its_number():
    # THC's error number follows the CUDA release of the build (38 was cudaErrorNoDevice before
    # CUDA 10.1, 100 since): the text cudaGetErrorString printed decides.
    for number in (38, 100):
        text = f"THCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=109 error={number} : no CUDA-capable device is detected"
        assert _explained(text)[0].id == "cuinit-no-device"


@pytest.mark.parametrize("library", ["libfoo.so.3", "libopenblas.so.0", "ctranslate264_4.dll", "libtorch_cuda.so.2"])
def test_another_library_in_ctranslate2s_message_is_not_a_cuda_release(library):
    assert not _explained(f"RuntimeError: Library {library} is not found or cannot be loaded")


@pytest.mark.parametrize(
    "library", ["cublas64_12.dll", "libcublas.so.12", "cudnn_ops_infer64_8.dll", "libcudnn_ops.so.9"]
)
def test_a_cuda_library_in_ctranslate2s_message_is_one(library):
    causes = _cause_ids(f"RuntimeError: Library {library} is not found or cannot be loaded")
    assert "cuda-not-installed" in causes


@pytest.mark.parametrize(
    ("dylib", "cuda"), [("libomp.dylib", False), ("libcudart.10.0.dylib", True), ("libcudnn.7.dylib", True)]
)
def test_macos_says_cuda_only_for_a_cuda_library(dylib, cuda):
    text = (
        f"ImportError: dlopen(/Users/u/venv/lib/python3.9/site-packages/x/_x.so, 6): Library not loaded: @rpath/{dylib}"
    )
    causes = [c.id for c in _explained(text)[0].causes]
    assert ("cuda-on-macos" in causes) is cuda and (causes[0] == "cuda-on-macos") is cuda
