"""A kernel's own assert() that failed on the device (``log_device_assert``): CUDA prints one
"<file>:<line>: <function>: block: [x,y,z], thread: [x,y,z] Assertion `<expression>` failed." per
failing thread (the CUDA C++ Programming Guide, "Assertion"), and the status it leaves is
cudaErrorAssert, which leaves the process's context unusable. The CUDA statuses the process reports
after it (cuBLAS failing to create its handle or to run a GEMM, an illegal address, a launch
failure) are that assert's, the program's own data (an index or label out of range): none is
explained as the GPU setup's. Running out of memory is not among them, and a log without the assert
keeps every explanation.

The lines are written here from the formats named (PyTorch's ATen kernels' assert expressions,
its "CUDA error: <text>" and "when calling `<call>`" wording), not taken from any thread."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context
from envcheck.explain.explanations import cuda_library_status

CATALOGUE = load_patterns()

ASSERTS = [
    # Linux builds name the kernel's function
    "/opt/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectSmallIndex: block: [12,0,0], "
    "thread: [3,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
    "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
    "thread: [17,0,0] Assertion `t >= 0 && t < n_classes` failed.",
    # Windows builds leave the function out
    "C:\\actions-runner\\_work\\pytorch\\aten\\src\\ATen\\native\\cuda\\IndexKernel.cu:94: block: [3,0,0], "
    'thread: [40,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.',
    # the status itself, by its text or its name
    "RuntimeError: CUDA error: device-side assert triggered",
    "RuntimeError: copy_if failed to synchronize: cudaErrorAssert: device-side assert triggered",
]

AFTER = [
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, "
    "&alpha, a, lda, b, ldb, &beta, c, ldc)`",
    "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "RuntimeError: CUDA error: unspecified launch failure",
    "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
]


def _acted(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text)) if not e.harmless]


@pytest.mark.parametrize("line", AFTER)
def test_a_status_alone_is_explained(line):
    assert _acted(line)


@pytest.mark.parametrize("line", AFTER)
@pytest.mark.parametrize("assertion", ASSERTS)
def test_a_status_after_a_device_assert_is_the_programs_own(assertion, line):
    assert read_context(assertion).get("log_device_assert")
    assert _acted(assertion + "\n" + line) == []
    assert _acted(line + "\n" + assertion) == []  # the driver's printf may come after the traceback


def test_running_out_of_memory_after_an_assert_is_still_explained():
    text = ASSERTS[0] + "\nRuntimeError: CUDA error: out of memory"
    assert _acted(text)


@pytest.mark.parametrize(
    "lookalike",
    [
        # PyTorch's hint at the end of every CUDA error since 2.0: no assert failed
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        # glibc's failed assert() in a host program, not a kernel's
        "python3: ../sysdeps/x86/dl-prop.h:88: _dl_process_cet_property_note: Assertion `0' failed.",
        # a block and a thread named by a program's own log, no assertion
        "launching kernel with block: [256,1,1], thread: [128,1,1]",
    ],
)
def test_look_alikes_are_no_device_assert(lookalike):
    assert not read_context(lookalike).get("log_device_assert")
    text = lookalike + "\n" + AFTER[0]
    assert _acted(text) == ["cuda-math-library-status"]


def test_only_the_cuda_stacks_statuses_are_left_by_an_assert():
    assert cuda_library_status({"status_enum": "cublasStatus_t", "status_name": "CUBLAS_STATUS_EXECUTION_FAILED"})
    assert cuda_library_status({"status_enum": "cudaError_t", "status_name": "cudaErrorIllegalAddress"})
    assert not cuda_library_status({"status_enum": "cudaError_t", "status_name": "cudaErrorMemoryAllocation"})
    assert not cuda_library_status({"status_enum": "CUresult", "status_name": "CUDA_ERROR_OUT_OF_MEMORY"})
    assert not cuda_library_status({"status_enum": "POSIX signals", "status_name": "SIGSEGV"})
    assert not cuda_library_status({})


def test_a_setup_error_in_the_same_log_is_still_explained():
    text = (
        ASSERTS[0]
        + "\nCould not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory"
    )
    ids = [e.id for e in explain(CATALOGUE.scan_text(text))]
    assert ids
