"""Another vendor's GPU stack in the log (``gpu_stacks``): AMD's ROCm and Intel's oneAPI, read from
their own marks (HIP's hipError_t names and library files, the HSA runtime's statuses, MIOpen and
rocBLAS, RCCL's library, a "+rocm" or "+xpu" wheel, Level Zero's ze_result_t and the
unified runtime's ur_result_t). There, NVIDIA's words on a line are the port's (PyTorch's ROCm
build keeps torch.cuda's messages, ggml-cuda.cu compiled by hipcc keeps "CUDA error", TensorFlow's
ROCm build its CUDA loader lines): the CUDA stack's explanations do not apply. The same lines in
an NVIDIA log, one that names an AMD or Intel CPU included, are explained as before. Written from
the sources' formats with other versions, devices and paths than any thread showed."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from envcheck.explain.context import read_context
from envcheck.explain.gpu_stacks import applies_on_another_stack, speaks_of_the_cuda_stack
from tests.explain.test_explain_source_families import CATALOGUE


def _ids(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text))]


# (a log, the stack it runs on): each mark alone, in a wording no corpus entry has
ROCM_LOGS = [
    "2024-05-02 10:11:12.000001: I tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libamdhip64.so.6",
    "ImportError: libhsa-runtime64.so.1: cannot open shared object file: No such file or directory",
    "LD_LIBRARY_PATH=/opt/rocm-6.1.2/lib:/usr/local/lib",
    r"rocBLAS error: Cannot read D:\Program Files\AMD\ROCm\5.7\bin\/rocblas/library/TensileLibrary.dat: No such file or directory",
    "torch                     2.3.1+rocm6.0",
    "ROCM used to build PyTorch: 6.2.41133-dd7f95766",
    "RuntimeError: HIP error: an illegal memory access was encountered",
    "hipErrorOutOfMemory",
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 64.00 MiB.",
    ":1:rocdevice.cpp            :3020: 1234567 us: [pid:4242 tid:0x7f00] Callback: Queue 0x7f00 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
    ":3:hip_module.cpp           :669 : 14629861952 us: [pid:31113 tid:0x7fa5a37fe700] hipLaunchKernel: Returned hipErrorInvalidDeviceFunction :",
    "MIOpen(HIP): Error [Compile] 'hiprtcCompileProgram(prog)' naive_conv.cpp: HIPRTC_ERROR_COMPILATION (6)",
    "ggml_cuda_init: found 2 ROCm devices:",
    "OSError: librccl.so.1: cannot open shared object file: No such file or directory",
    "2.13.0: E tensorflow/compiler/xla/stream_executor/rocm/rocm_driver.cc:302] failed call to hipInit: HIP_ERROR_NoDevice",
    "pip install tensorflow-rocm==2.14.0.600",
]
ONEAPI_LOGS = [
    "RuntimeError: UR error: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
    "level_zero backend failed with error: 2147483646 (UR_RESULT_ERROR_UNKNOWN)",
    "ZE_RESULT_ERROR_DEVICE_LOST",
    "RuntimeError: Native API failed. Native API returns: -997 (The plugin has emitted a backend specific error) -997",
    "torch 2.5.0+xpu",
    "import intel_extension_for_pytorch as ipex",
]


@pytest.mark.parametrize("text", ROCM_LOGS)
def test_rocm_marks_make_a_rocm_log(text):
    facts = read_context(text)
    assert facts.get("log_gpu_stack") == "rocm" and facts.get("log_gpu_vendor") == "amd", facts


@pytest.mark.parametrize("text", ONEAPI_LOGS)
def test_oneapi_marks_make_a_oneapi_log(text):
    facts = read_context(text)
    assert facts.get("log_gpu_stack") == "oneapi" and facts.get("log_gpu_vendor") == "intel", facts


# An NVIDIA log may name AMD's and Intel's CPUs, their integrated graphics, or ROCm somewhere in a
# word: none of it is another vendor's GPU stack, and none is another vendor's GPU.
NVIDIA_LOGS = [
    "CPU: AMD EPYC 7763 64-Core Processor\nRuntimeError: CUDA error: invalid device function",
    "Model name: AMD Ryzen 9 5950X 16-Core Processor\nGPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-5c2d)",
    "AMD Ryzen 7 5800H with Radeon Graphics\nCould not load dynamic library 'libcudart.so.11.0'",
    "AMD Ryzen 5 3550H with Radeon Vega Mobile Gfx\nRuntimeError: CUDA error: out of memory",
    "DirectML adapter: AMD Radeon(TM) Graphics\nRuntimeError: CUDA error: out of memory",
    "Intel(R) Core(TM) i7-10750H CPU @ 2.60GHz, Intel(R) UHD Graphics\nRuntimeError: CUDA error: no kernel image is available for execution on the device",
    "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory",
    "oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions",
    "hipster_model.py: the hipparchus data set",
]


@pytest.mark.parametrize("text", NVIDIA_LOGS)
def test_an_nvidia_log_that_names_an_amd_or_intel_cpu_is_no_other_stack(text):
    facts = read_context(text)
    assert "log_gpu_stack" not in facts and "log_gpu_vendor" not in facts, facts


def test_nvidia_in_use_keeps_a_log_nvidia_s_where_both_show():
    # a machine with both vendors' GPUs, or the CUDA build on a ROCm machine: not the other's stack
    both = "torch 2.4.0+rocm6.1\n|   0  NVIDIA A100-SXM4-80GB   On | 00000000:07:00.0 Off |"
    assert "log_gpu_stack" not in read_context(both) and "log_gpu_vendor" not in read_context(both)
    cuda_build = "/opt/rocm/bin/rocminfo\nCould not load dynamic library 'libcudart.so.12'"
    assert "log_gpu_stack" not in read_context(cuda_build)
    assert read_context(cuda_build).get("log_gpu_vendor") == "amd"


# NVIDIA's words on another vendor's stack: each line alone is explained as NVIDIA's, beside the
# stack's mark it is not
LOOKALIKES = [
    ("RuntimeError: CUDA error: invalid device function", "torch 2.2.2+rocm5.7"),
    (
        "CUDA error 98 at /src/llama.cpp/ggml-cuda.cu:7012: invalid device function",
        "ggml_cuda_init: found 1 ROCm devices:",
    ),
    (
        "I tensorflow/stream_executor/cuda/cuda_dnn.cc:3533] Unable to load cuDNN DSO",
        "Successfully opened CUDA library libhipblas.so locally",
    ),
    ("RuntimeError: CUDA error: out of memory", ":3:hip_memory.cpp :1234 : hipMalloc: Returned hipErrorOutOfMemory"),
    (
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: UR error: UR_RESULT_ERROR_DEVICE_LOST",
    ),
]


@pytest.mark.parametrize(("line", "mark"), LOOKALIKES)
def test_nvidia_words_on_another_stack_are_not_explained_as_nvidia_s(line, mark):
    assert _ids(line), "the line alone is NVIDIA's"
    assert _ids(f"{mark}\n{line}") == []
    # the mark after the line, in a long log, counts the same
    assert _ids("\n".join([line, *(f"step {i} loss 0.1" for i in range(50)), mark])) == []


@pytest.mark.parametrize(
    "cpu", ["AMD EPYC 9654 96-Core Processor", "AMD Ryzen Threadripper PRO 5975WX", "Intel(R) Xeon(R) Gold 6338"]
)
def test_the_same_lines_with_an_amd_or_intel_cpu_stay_nvidia_s(cpu):
    for line, _ in LOOKALIKES:
        alone = _ids(line)
        assert _ids(f"CPU: {cpu}\n{line}") == alone


def test_a_crash_on_the_rocm_stack_is_that_runtime_s_and_its_notices_stay_notices():
    log = (
        "2023-03-01 09:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 FMA\n"
        "2023-03-01 09:00:01.000000: I tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libamdhip64.so\n"
        '/long/path/clr/hipamd/src/hip_code_object.cpp:762: guarantee(false && "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")\n'
        "Aborted (core dumped)"
    )
    found = explain(CATALOGUE.scan_text(log))
    assert [e.id for e in found] == ["cpu-optimized-notice"] and found[0].harmless
    # the same crash after CUDA's loader is explained, its notices are leads to it
    nvidia = log.replace("libamdhip64.so", "libcudart.so.12").replace(
        '/long/path/clr/hipamd/src/hip_code_object.cpp:762: guarantee(false && "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")\n',
        "",
    )
    ids = {e.id: e for e in explain(CATALOGUE.scan_text(nvidia))}
    assert "process-crash-status" in ids and not ids["cpu-optimized-notice"].harmless


def test_python_side_messages_stay_explained_on_another_stack():
    # NumPy's, Keras's and the CPU's messages are the same on every GPU stack
    log = (
        "torch 2.3.0+rocm6.0\nA module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash."
    )
    assert "numpy2-abi" in _ids(log)


def test_no_nvidia_driver_on_an_amd_gpu_puts_no_nvidia_gpu_first():
    message = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"
    for gpu in (
        "GPU: AMD Radeon RX 7900 XTX",
        "Agent 2: Name: gfx1100",
        "GPU: Radeon 6800XT",
        "Marketing Name: AMD Radeon VII",
        "the card is an AMD Radeon 7600",
        "Intel(R) Arc(TM) A770 Graphics",
    ):
        found = explain(CATALOGUE.scan_text(f"{gpu}\n{message}"))
        assert found and found[0].causes[0].id == "no-nvidia-gpu", (gpu, [c.id for c in found[0].causes])
    alone = explain(CATALOGUE.scan_text(message))[0].causes[0].id
    assert alone != "no-nvidia-gpu"  # a container without the GPU is likelier where nothing says
    laptop = explain(CATALOGUE.scan_text(f"AMD Ryzen 7 5800H with Radeon Graphics\n{message}"))[0].causes[0].id
    assert laptop == alone


def test_which_patterns_speak_of_the_cuda_stack():
    by_id = {p.id: p for p in CATALOGUE.patterns}
    for pattern_id in ("cuda-runtime-status", "cudnn-dso-not-loaded", "nccl-system-error", "cuda-out-of-memory"):
        assert speaks_of_the_cuda_stack(by_id[pattern_id]) and not applies_on_another_stack(by_id[pattern_id])
    for pattern_id in ("numpy2-abi", "keras3-unsupported-code", "illegal-instruction", "protobuf-too-new"):
        assert applies_on_another_stack(by_id[pattern_id]), pattern_id
    # the CUDA build's "no NVIDIA driver" is true on such a machine; a crash and records are the other stack's
    assert applies_on_another_stack(by_id["cuinit-no-driver"])
    assert not applies_on_another_stack(by_id["process-crash-status"]) and not applies_on_another_stack(
        by_id["tf-info-record"]
    )


# ZLUDA runs PyTorch's CUDA build on AMD GPUs through HIP and ROCm's libraries: the build's marks
# ("+cu121", cublas64_12.dll) are in its logs, its own name makes the log AMD's (``log_zluda``).
# The statuses in NVIDIA's names are ZLUDA's; Windows' loader errors are the machine's, explained.
ZLUDA_LOGS = [
    "Using device: cuda:0 AMD Radeon RX 7800 XT [ZLUDA]\ntorch 2.4.1+cu121",
    "C:\\tools\\zluda\\zluda.exe -- python main.py\nRuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling "
    "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
    "  ::  ZLUDA detected, disabling non-supported functions.\nRuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
]


@pytest.mark.parametrize("text", ZLUDA_LOGS)
def test_zluda_makes_an_amd_log_with_cudas_build(text):
    facts = read_context(text)
    assert facts.get("log_zluda") == "yes" and facts.get("log_gpu_vendor") == "amd", facts
    assert [e.id for e in explain(CATALOGUE.scan_text(text)) if not e.harmless] == []


def test_a_loader_error_on_zluda_is_still_explained():
    # the HIP SDK's folder missing from PATH: Windows' loader, on any stack
    text = (
        r"OSError: [WinError 126] The specified module could not be found. Error loading "
        r'"D:\apps\comfyui-zluda\venv\Lib\site-packages\torch\lib\cublas64_11.dll" or one of its dependencies.'
    )
    assert read_context(text).get("log_zluda") == "yes"
    assert "windows-dll-load-error" in _ids(text)


def test_the_same_status_without_zluda_is_explained():
    line = ZLUDA_LOGS[1].splitlines()[1]
    assert "cuda-math-library-status" in _ids(line)


def test_zluda_named_in_an_nvidia_log_is_no_other_stack():
    # a machine with an NVIDIA GPU in use that mentions ZLUDA (a folder, a question) stays NVIDIA's
    text = "|   0  NVIDIA GeForce RTX 4070        On  | 00000000:01:00.0 Off |\nI tried ZLUDA before\nRuntimeError: CUDA error: out of memory"
    assert "log_zluda" not in read_context(text) and "log_gpu_stack" not in read_context(text)
    assert "cuda-out-of-memory" in _ids(text)
    # a word that only contains the name is not it
    assert "log_zluda" not in read_context("zludafork_helper: 1\nRuntimeError: CUDA error: out of memory")
