"""Other programs that call the CUDA driver, NVRTC, NVML or cuDNN themselves print what a call
returned in their own formats (``parts._CALL_RETURNED`` and ``parts._OWN_FORMATS``): hashcat's
"<call>(): <text>", OBS Studio's 'CUDA call "<expr>" failed with', darknet's "CUDA Error: <text>"
handed to perror (which appends strerror(errno)), OpenCV's cv::Exception ("OpenCV(<version>)
<file>:<line>: error: (<code>:<name>) <text> in function '<name>'") and the type of a C++ exception
that ended the program in cv:: or dxvk::. Such lines are those programs' messages, get no
explanation, and frame nothing else of theirs; TensorFlow's own lines with the same status in the
same input are still explained.

The lines are written here from each program's format (named beside each), not taken from any
thread."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.parts import MAX_FRAME_HITS, another_programs_line, shows_stack_frame

CATALOGUE = load_patterns()

OTHER_PROGRAMS = [
    # hashcat (src/ext_cuda.c, hc_cuInit and the others): the call, "(): " and what cuGetErrorString
    # gave, or the number when it gave nothing
    "cuInit(): forward compatibility was attempted on non supported HW",
    "cuInit(): no CUDA-capable device is detected",
    "cuCtxCreate(): out of memory",
    "cuInit(): 999",
    "cuModuleLoadDataEx(): the provided PTX was compiled with an unsupported toolchain.",
    "cuLinkAddData(): the provided PTX was compiled with an unsupported toolchain.",
    "nvrtcCompileProgram(): NVRTC_ERROR_COMPILATION",
    "nvmlDeviceGetFanSpeed(): Not Supported",
    "hipModuleLoadData(): hipErrorNoBinaryForGpu",
    # OBS Studio's NVENC plugin (plugins/obs-nvenc, cuda_error_check), with and without the names
    'cuda_ctx_init: CUDA call "cu->cuCtxCreate(&ctx, 0, dev)" failed with CUDA_ERROR_OUT_OF_MEMORY (2): out of memory',
    'error: init_cuda_ctx: CUDA call "cu->cuInit(0)" failed with CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected',
    'nvenc_init_cuda: CUDA call "cu->cuDeviceGet(&device, 0)" failed with 101',
    # darknet (src/dark_cuda.c check_error, then src/utils.c error(), which calls perror)
    "CUDA Error: out of memory: Resource temporarily unavailable",
    "CUDA Error: an illegal memory access was encountered: Success",
    "CUDA Error: no kernel image is available for execution on the device: Invalid argument",
    # OpenCV (modules/core/src/system.cpp, cv::Exception::formatMessage), its CUDA and cuDNN wrappers
    "OpenCV(4.5.1) /build/opencv-4.5.1/modules/dnn/src/cuda4dnn/csl/cudnn.hpp:63: error: (-217:Gpu API call) "
    "CUDNN_STATUS_NOT_SUPPORTED in function 'UniqueHandle'",
    "cv2.error: OpenCV(4.8.0) /io/opencv/modules/core/src/cuda_info.cpp:73: error: (-217:Gpu API call) "
    "CUDA driver version is insufficient for CUDA runtime version in function 'getCudaEnabledDeviceCount'",
    "CUDNN_STATUS_EXECUTION_FAILED in function 'forward'",
    "CUBLAS_STATUS_NOT_INITIALIZED in function 'gemm'",
    # Blender's Cycles (intern/cycles/device/cuda/util.h, cuda_assert): the driver's text, the call
    # as written and Cycles' source file; before Blender 2.90 "CUDA error: %s in %s, line %d"
    "Out of memory in cuMemAlloc_v2(&device_pointer, size) (intern/cycles/device/cuda/device_impl.cpp:720)",
    "Illegal address in cuMemcpyDtoH_v2((char *)mem.host_pointer + offset, (CUdeviceptr)mem.device_pointer + offset, "
    "size) (C:\\blender\\intern\\cycles\\device\\cuda\\device_impl.cpp:1012)",
    "CUDA error: Out of memory in cuLaunchKernel(cuPathTrace, xblocks, yblocks, 1, threads, 1, 1, 0, 0, args, 0), line 1287",
    "CUDA error: Launch exceeded timeout in cuCtxSynchronize(), line 1372",
    # libstdc++'s verbose terminate handler, the exception's type in OpenCV's and DXVK's namespaces
    "terminate called after throwing an instance of 'cv::dnn::cuda4dnn::csl::CUDAException'",
    "terminate called after throwing an instance of 'dxvk::DxvkError'",
    # programs on NVIDIA's Video Codec SDK, which name the SDK's decoder (nvcuvid.h) or encoder
    # (nvEncodeAPI.h) call they made
    "cuvid: Failed cuvidCreateDecoder 3 (CUDA_ERROR_OUT_OF_MEMORY)",
    "cuvidCtxLockCreate(&m_ctxLock, cuContext) returned CUDA_ERROR_INVALID_CONTEXT",
    "Error on nvEncOpenEncodeSessionEx: 10 (NV_ENC_ERR_OUT_OF_MEMORY)",
    "NvEncInitializeEncoder failed with CUDA_ERROR_NOT_SUPPORTED",
]


@pytest.mark.parametrize("line", OTHER_PROGRAMS)
def test_another_programs_own_cuda_line_is_not_explained(line):
    assert another_programs_line(line)
    assert CATALOGUE.scan_text(line).ids == []
    # a time stamp before it changes nothing (the normal form strips it)
    assert CATALOGUE.scan_text(f"2024-03-01 10:00:00.123456: {line}").ids == []


# The same statuses as TensorFlow, its stream executor and PyTorch print them, and the library's own
# "<call> failed" wordings: the stack's messages, explained.
THE_STACKS = [
    (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: "
        "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: forward compatibility was attempted on non supported HW",
        "cuda-compat-not-supported",
    ),
    ("cuInit(0) failed -> CUDA_ERROR_UNKNOWN: unknown error", "cuinit-unknown-error"),
    ("RuntimeError: CUDA error: out of memory", "cuda-out-of-memory"),
    (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED",
        "cudnn-handle-failed",
    ),
    (
        "cuLinkAddData failed: the provided PTX was compiled with an unsupported toolchain.",
        "cuda-unsupported-ptx-version",
    ),
]


@pytest.mark.parametrize("line, pattern_id", THE_STACKS)
def test_the_stacks_own_line_with_the_same_status_is_explained(line, pattern_id):
    assert not another_programs_line(line)
    assert pattern_id in CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "line",
    [
        # a word that merely begins like a driver call, lower-case after "cu": no call name
        "current(): value is 3",
        "customize(): skipped",
        # a member or a field of that name, not the call hashcat names
        "self.cuInit(): returned 0",
        "dl_fn->cuInit(): skipped",
        # perror's strerror must end the line: a status with more after it is not darknet's
        "CUDA Error: out of memory: Success rate 3 of 10",
        # a driver call named in TensorFlow's words, with no Cycles source file or line after it
        "Unexpected Event status: 1 in cuCtxSynchronize()",
        "CUDA error: out of memory in cuMemAlloc(), see the log",
        # a C++ exception of another namespace: std::, a framework's
        "terminate called after throwing an instance of 'std::runtime_error'",
        "terminate called after throwing an instance of 'tensorflow::errors::Internal'",
        # the SDK's names as words, not a call: an FFmpeg decoder's name, NVIDIA's sample class
        "Stream #0:0 -> #0:0 (h264 (h264_cuvid) -> h264 (h264_nvenc))",
        "NvEncoder.cpp: encoder created",
    ],
)
def test_near_misses_of_the_formats_are_not_another_programs(line):
    assert not another_programs_line(line)


def test_tensorflows_failure_in_a_log_with_another_programs_lines_is_still_explained():
    # OBS Studio's line and TensorFlow's about the same driver in one pasted log: TensorFlow's is
    # explained, OBS Studio's is not what it answers
    log = (
        'init_cuda_ctx: CUDA call "cu->cuInit(0)" failed with CUDA_ERROR_UNKNOWN (999): unknown error\n'
        "2024-01-01 10:00:00.000000: E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:268] "
        "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n"
    )
    result = CATALOGUE.scan_text(log)
    assert "cuinit-unknown-error" in result.ids
    assert all(o.first_line == 2 for o in result.occurrences if o.pattern.id == "cuinit-unknown-error")
    # and OBS Studio's line alone is OBS Studio's
    assert CATALOGUE.scan_text(log.splitlines()[0]).ids == []


def test_hashcats_log_with_tensorflows_cudnn_failure_explains_tensorflows():
    log = (
        "hashcat (v6.2.6) starting\n"
        "cuInit(): forward compatibility was attempted on non supported HW\n"
        "nvmlDeviceGetFanSpeed(): Not Supported\n"
        "2024-01-01 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] "
        "Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n"
    )
    assert CATALOGUE.scan_text(log).ids == ["cudnn-handle-failed"]


OPENCV_CRASH = (
    "terminate called after throwing an instance of 'cv::dnn::cuda4dnn::csl::cudnn::cuDNNException'\n"
    "  what():  OpenCV(4.6.0) /opt/opencv/modules/dnn/src/cuda4dnn/csl/cudnn/convolution.hpp:461: error: "
    "(-217:Gpu API call) CUDNN_STATUS_BAD_PARAM in function 'convolve'\n"
    "Aborted (core dumped)\n"
)


def test_a_crash_after_another_programs_cudnn_lines_is_that_programs():
    # the shell's report ends OpenCV's program: OpenCV's lines name cudnn in its own source paths
    # and its exception type, and frame nothing of the stack
    assert CATALOGUE.scan_text(OPENCV_CRASH).ids == []
    assert not shows_stack_frame(OPENCV_CRASH)


def test_the_same_crash_after_a_tensorflow_line_is_the_stacks():
    log = (
        "2024-01-01 10:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1635] Created device "
        "/job:localhost/replica:0/task:0/device:GPU:0 with 9619 MB memory\n" + OPENCV_CRASH
    )
    assert shows_stack_frame(log)
    assert "process-crash-status" in CATALOGUE.scan_text(log).ids


def test_an_input_full_of_another_programs_lines_counts_as_the_stacks_past_the_bound():
    # hashcat's NVML lines name nvml: each is looked at up to the bound, then the input counts
    line = "nvmlDeviceGetFanSpeed(): Not Supported\n"
    assert not shows_stack_frame(line * MAX_FRAME_HITS)
    assert shows_stack_frame(line * (MAX_FRAME_HITS + 1))


def test_an_explanation_is_not_silenced_by_another_programs_line_elsewhere():
    # explain() over the scan: TensorFlow's cuDNN message is answered, hashcat's is not listed
    log = "cuInit(): unknown error\nCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
    assert [e.id for e in explain(CATALOGUE.scan_text(log))] == ["cudnn-handle-failed"]


def test_a_crash_after_blenders_cuda_lines_is_blenders():
    # Cycles names its own cuda/ sources: its lines frame nothing, the crash after them is Blender's
    log = (
        "Invalid context in cuCtxPopCurrent(NULL) (intern/cycles/device/cuda/util.cpp:31)\n"
        "Out of memory in cuStreamCreate(&cuda_stream_, CU_STREAM_NON_BLOCKING) (intern/cycles/device/cuda/queue.cpp:33)\n"
        "Segmentation fault (core dumped)\n"
    )
    assert not shows_stack_frame(log)
    assert CATALOGUE.scan_text(log).ids == []
    ours = "E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: CUDA_ERROR_UNKNOWN\n" + log
    assert {"cuinit-unknown-error", "process-crash-status"} <= set(CATALOGUE.scan_text(ours).ids)
