"""Every documented cause of the messages most often posted, with the tells that rank them.

- A line a pattern explains that names a status of the CUDA stack (CUresult, cudaError_t,
  cudnnStatus_t, ...) gives the pattern's causes first and then the status's other causes from
  cuda_status.yaml: a status has the same causes wherever it is printed. A signal's or a Windows
  code's causes are any crashing program's and are not added to a pattern that narrows them.
- "no kernel image is available": the GPU can also be older than the oldest architecture the build
  carries (the CUDA C++ Programming Guide's binary compatibility): the framework's own "too old"
  warning, or a compute capability of 3.x or below that the log prints, ranks it first.
- CUDA_ERROR_ILLEGAL_ADDRESS: which kernel made the access tells the causes apart; compute-sanitizer
  names it ("=========     at void cudnn::..."), and a library's kernel ranks the library's bug
  first, the program's own error check its own kernel.
- "Failed to get convolution algorithm" reports that cuDNN could not start, so its causes are those
  of cuDNN's start: a driver older than the build's CUDA (TensorFlow's "Possibly insufficient driver
  version" hint) and CUDA's per-user cache of compiled code left unusable (~/.nv).
"""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


def _of(text: str, pattern_id: str):
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert found, (text, [e.id for e in _explained(text)])
    return found[0]


def _ids(explanation) -> list[str]:
    return [c.id for c in explanation.causes]


# --- a status's causes beside a pattern's -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        "2024-01-02 10:11:12.123456: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: failed call to cuInit: CUDA_ERROR_UNKNOWN",
    ],
)
def test_cuinit_unknown_error_gives_the_status_s_container_cause_too(text):
    explanation = _of(text, "cuinit-unknown-error")
    given = _ids(explanation)
    # the pattern's own first, then what NVIDIA's table adds (a container's cgroup reloaded)
    assert given[0] == "nvidia-uvm-not-loaded"
    assert "container-cgroup-reloaded" in given
    assert given.index("container-cgroup-reloaded") > given.index("no-nvidia-gpu")


def test_cudnn_internal_error_gives_the_cache_cause_and_keeps_memory_first():
    given = _ids(
        _of(
            "E tensorflow/stream_executor/cuda/cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
            "cudnn-handle-failed",
        )
    )
    assert given[0] == "gpu-memory-preallocated"
    assert "cuda-cache-unwritable" in given
    # NOT_INITIALIZED has no such cause in the table, and none is added
    not_init = _ids(_of("Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-handle-failed"))
    assert "cuda-cache-unwritable" not in not_init


def test_a_signal_s_causes_are_not_added_to_a_pattern_that_narrows_them():
    # SIGILL's own causes (any program's) stay out of the illegal-instruction pattern's answer
    explanation = _of("Illegal instruction (core dumped)", "illegal-instruction")
    assert set(_ids(explanation)) <= {
        c.id for c in next(p for p in CATALOGUE.patterns if p.id == "illegal-instruction").causes
    }


# --- no kernel image: a GPU older than the build's oldest architecture --------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # the framework's own warning (PyTorch's capability check), then the failure
        "Found GPU0 GeForce 820M which is of cuda capability 2.1.\n    PyTorch no longer supports this GPU because it is too old.\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        # deviceQuery's line about the GPU (NVIDIA's sample), then a program's own wording of the status
        'Device 0: "NVIDIA GeForce GT 720"\n  CUDA Capability Major/Minor version number:    3.5\n'
        "ERROR: CUDA error: no kernel image is available for execution on the device, line 590, file tests.cu",
        # TensorFlow 1.x's device line for a Kepler GPU, and the driver API's name for the status
        "name: GeForce GTX 780 major: 3 minor: 5 memoryClockRate(GHz): 0.9\n"
        "InternalError: Failed to load in-memory CUBIN: CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on the device",
    ],
)
def test_an_old_gpu_ranks_compute_capability_too_low_first(text):
    assert _ids(_of(text, "no-kernel-image-for-device"))[0] == "compute-capability-too-low"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        # compute capability 5.0 (TensorFlow 2.3's wheels left it out): not older than every build
        "compute capability: 5.0\nno kernel image is available for execution on the device",
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
    ],
)
def test_without_an_old_gpu_the_build_lacking_the_architecture_stays_first(text):
    given = _ids(_of(text, "no-kernel-image-for-device"))
    assert given[0] == "release-lacks-arch"
    assert "compute-capability-too-low" in given


def test_a_project_s_own_kernel_on_an_old_gpu_is_its_own_build_first():
    text = "CUDA Capability Major/Minor version number:    3.7\ncudaCheckError() failed : no kernel image is available for execution on the device"
    assert _ids(_of(text, "no-kernel-image-for-device"))[0] == "custom-build-arch"


@pytest.mark.parametrize(
    "text, capability",
    [
        ("  CUDA Capability Major/Minor version number:    3.5", "3.5"),
        ("CUDA Capability Major/Minor version number: 8.6", "8.6"),
    ],
)
def test_device_query_s_capability_is_read(text, capability):
    assert read_context(text).get("log_gpu_cc") == capability


def test_a_capability_in_prose_is_not_device_query_s():
    assert "log_gpu_cc" not in read_context("the minor version number of the CUDA release is 3.5")


# --- an illegal memory access: whose kernel made it --------------------------------------------------

SANITIZED = (
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at {frame}\n"
    "=========     by thread (95,0,0) in block (147,0,0)\n"
)


@pytest.mark.parametrize(
    "frame, kernel",
    [
        ("void cudnn::cnn::reduce_wgrad_nchw_helper<float, float>(void *, const void *, T1, int, int)+0x8d0", "cudnn"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, T2, T3)+0x1a0",
            "at",
        ),
        (
            "0x2f0 in void cublasLt::splitKreduce_kernel<32, 16, int, float>(cublasLt::cublasSplitKParams<float>)",
            "cublasLt",
        ),
    ],
)
def test_a_library_s_kernel_named_by_compute_sanitizer_ranks_the_library_s_bug_first(frame, kernel):
    text = SANITIZED.format(frame=frame)
    assert read_context(text).get("log_fault_kernel") == kernel
    assert _ids(_of(text, "cuda-illegal-address"))[0] == "library-kernel-bug"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        # the program's own kernel under compute-sanitizer: a file of the project, not a library's namespace
        SANITIZED.format(frame="0x1a40 in /home/user/proj/kernels.cu:12:scatter_kernel(float*, int)"),
        # a library namespace in an ordinary line is no sanitizer report
        "RuntimeError: CUDA error: an illegal memory access was encountered\nat void cudnn::cnn::conv_kernel()",
    ],
)
def test_without_a_library_kernel_the_program_s_own_fault_is_first(text):
    given = _ids(_of(text, "cuda-illegal-address"))
    assert given[0] == "application-fault"
    assert {"library-kernel-bug", "mixed-library-versions", "gpu-hardware-or-power"} <= set(given)


def test_the_driver_api_s_illegal_address_has_the_same_causes():
    text = "F tensorflow/stream_executor/cuda/cuda_driver.cc:1011] Check failed: could not synchronize on CUDA context: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
    assert _ids(_of(text, "cuda-illegal-address"))[:4] == [
        "application-fault",
        "library-kernel-bug",
        "mixed-library-versions",
        "gpu-hardware-or-power",
    ]


# --- cuDNN failed to start: the convolution's error -------------------------------------------------


def test_conv_algorithm_failed_gives_the_causes_of_cudnn_s_start():
    given = _ids(
        _of(
            "Failed to get convolution algorithm. This is probably because cuDNN failed to initialize",
            "conv-algorithm-failed",
        )
    )
    assert given[0] == "gpu-memory-preallocated"
    assert {"driver-too-old-for-cudnn", "cuda-cache-unwritable"} <= set(given)


def test_tensorflow_s_driver_hint_ranks_the_old_driver_first():
    text = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Possibly insufficient driver version: 418.56.0\n"
        "tensorflow.python.framework.errors_impl.UnknownError:  Failed to get convolution algorithm. "
        "This is probably because cuDNN failed to initialize, so try looking to see if a warning log message was printed above."
    )
    assert _ids(_of(text, "conv-algorithm-failed"))[0] == "driver-too-old-for-cudnn"


def test_the_cache_cause_gives_commands_for_the_log_s_system():
    explanation = _of(
        r"C:\Users\me\project> python train.py"
        "\nFailed to get convolution algorithm. This is probably because cuDNN failed to initialize",
        "conv-algorithm-failed",
    )
    cache = next(c for c in explanation.causes if c.id == "cuda-cache-unwritable")
    shells = {command.shell for command in cache.fix.commands}
    assert "powershell" in shells
