"""Which vendor's GPU stack a log runs on, read from that stack's own marks (``log_gpu_stack``,
``log_gpu_vendor``), and what that means for NVIDIA's messages in it.

AMD's ROCm is NVIDIA's stack ported name for name: HIP is CUDA's runtime API turned into
``hip*`` calls (hipify), and the frameworks built on it keep the CUDA words in what they print.
PyTorch's ROCm build is ``torch.cuda`` and says "CUDA out of memory" and "CUDA error: invalid
device function" for HIP's hipErrorOutOfMemory and hipErrorInvalidDeviceFunction (its hipified
c10/cuda sources); TensorFlow's ROCm build loads its libraries through the CUDA build's loader
("Couldn't open CUDA library libMIOpen.so", "Unable to load cuDNN DSO" from miopen_dnn.cc);
llama.cpp's HIP build is ggml-cuda.cu compiled by hipcc ("CUDA error 98 ... invalid device
function", 98 being hipErrorInvalidDeviceFunction in hip_runtime_api.h, where CUDA's is 98 too);
RCCL is NCCL's source under hipify, with NCCL's log lines and words. Intel's oneAPI stack
(Level Zero's ze_result_t, the unified runtime's ur_result_t, SYCL's PI_ERROR_* codes, PyTorch's
``xpu`` device, Intel's extensions for PyTorch and TensorFlow) names its own errors, but runs the
same frameworks. So a line in NVIDIA's words is not NVIDIA's where the log shows the program on
another vendor's stack: what the catalogue knows of the CUDA stack (drivers, CUDA and cuDNN
releases, compute capabilities, nvidia-smi) does not apply to it.

Sources: hip_runtime_api.h (hipError_t), https://rocm.docs.amd.com/projects/HIP/en/latest/reference/api_syntax.html
(HIP keeps CUDA's API, renamed), https://rocm.docs.amd.com/projects/HIPIFY/en/latest/ (hipify),
https://github.com/ROCm/rccl (NCCL ported), ze_api.h (ze_result_t), ur_api.h (ur_result_t),
https://docs.pytorch.org/docs/stable/notes/hip.html ("PyTorch for HIP intentionally reuses the
existing torch.cuda interfaces"), https://docs.pytorch.org/docs/stable/notes/get_start_xpu.html.
"""

from __future__ import annotations

import re

from .lines import lines_with

# The ROCm stack's own marks in what a program prints: the libraries a ROCm build loads (HIP's
# libamdhip64, formerly libhip_hcc; the HSA runtime; MIOpen, rocBLAS, RCCL, the hip* libraries),
# the install folder (/opt/rocm, C:\Program Files\AMD\ROCm), a PyTorch wheel's "+rocm" local
# version and collect_env's ROCm lines, HIP's own error names and words (hipError_t, "HIP error",
# "HIP out of memory", PyTorch's AMD_SERIALIZE_KERNEL and TORCH_USE_HIP_DSA hints), the HIP and
# HSA runtimes' source files and statuses (hip_code_object.cpp, rocdevice.cpp, AMD_LOG_LEVEL's
# ":3:hip_module.cpp", hsa_status_t's HSA_STATUS_*), MIOpen's and rocBLAS's messages, ggml's
# "found 1 ROCm devices", TensorFlow's ROCm sources. (RCCL's own lines, NCCL's format with its
# hipified source paths, are another program's line by line: parts.another_programs_line.)
_ROCM = re.compile(
    r"\b(?:libamdhip64|libhip_hcc|libhsa-runtime64|libMIOpen|librocblas|librccl|libhipblas[\w-]{0,8}|"
    r"libhipfft[\w-]{0,8}|libhiprand|libhiprng|librocm_smi64|libamd_comgr)\.so|\bamdhip64(?:_\d{1,2})?\.dll\b|"
    r"(?<![\w.])/opt/rocm(?:-\d{1,2}\.\d{1,2}(?:\.\d{1,2})?)?(?:/|\b)|\\AMD\\ROCm\\\d|"
    r"\d\+rocm\d|\bROCM used to build PyTorch: \d|\bHIP runtime version: \d|"
    r"(?-i:\bhipError[A-Z]\w{2,60})|(?-i:\bHIP error\b)|\bHIP out of memory\b|\bHIP kernel errors\b|"
    r"(?-i:\bAMD_SERIALIZE_KERNEL\b|\bTORCH_USE_HIP_DSA\b|\bPYTORCH_HIP_ALLOC_CONF\b|\bHSA_OVERRIDE_GFX_VERSION\b)|"
    r"\bhip_code_object\.cpp\b|\brocdevice\.cpp\b|^:\d:hip_\w{1,40}\.cpp\b|(?-i:\bHSA_STATUS_ERROR\w{0,60})|"
    r"\bMIOpen(?:\(HIP\))?: (?:Error|Warning)\b|(?-i:\bmiopenStatus[A-Z]\w{1,40})|\brocBLAS error\b|"
    r"\bfound \d{1,2} ROCm devices?\b|\bfailed to initialize ROCm\b|"
    r"\bstream_executor/rocm/|\b(?:rocm_(?:driver|dnn|blas|fft|gpu_executor|platform)|miopen_dnn)\.cc\b|"
    r"\btensorflow[-_]rocm\b",
    re.I | re.M,
)
_ROCM_HINTS = (
    ".so", "amdhip64", "rocm", "hip", "amd_serialize_kernel", "torch_use_hip_dsa", "hsa_", "miopen", "rocblas",
)  # fmt: skip

# Intel's oneAPI stack: Level Zero's statuses (ze_api.h: ZE_RESULT_*) and loader, the unified
# runtime's (ur_api.h: UR_RESULT_*), SYCL's plug-in interface codes (PI_ERROR_*) and "Native API
# failed", a PyTorch wheel's "+xpu" and its xpu module, Intel's extensions for PyTorch and TensorFlow.
_ONEAPI = re.compile(
    r"(?-i:\b(?:ZE|UR)_RESULT_(?:ERROR_)?[A-Z_]{3,60})|(?-i:\bPI_ERROR_[A-Z_]{3,60})|\blevel[_ ]zero\b|"
    r"\blibze_(?:loader|intel_gpu)\.so|\bze_loader\.dll\b|\bNative API failed\b|\d\+xpu\b|\btorch\.xpu\b|"
    r"\bintel[_-]extension[_-]for[_-](?:pytorch|tensorflow)\b",
    re.I | re.M,
)
_ONEAPI_HINTS = ("ze_", "ur_result", "pi_error", "level", "native api", "xpu", "intel")

# ZLUDA runs programs built for CUDA, unmodified, on AMD GPUs: its own CUDA driver (nvcuda.dll,
# libcuda.so) and its stand-ins for cuBLAS, cuDNN, cuFFT, cuSPARSE and NVRTC hand each call to HIP
# and ROCm's libraries (rocBLAS, MIOpen), so the program is PyTorch's CUDA build ("+cu118") and
# says "CUDA error: CUBLAS_STATUS_NOT_SUPPORTED" for a call rocBLAS could not do. ZLUDA names
# itself: the device name it reports ends in " [ZLUDA]", its launcher is zluda.exe, its releases
# ZLUDA-windows-rocm6-amd64.zip, and the projects that ship it carry its name (ComfyUI-Zluda's
# "ZLUDA" banner). A log that names it (``log_zluda``) runs on AMD's stack although it shows
# CUDA's build: the statuses in NVIDIA's names are what ZLUDA's stand-ins made of HIP's and ROCm's
# failures, while the program's own setup (Windows' loader finding the HIP SDK's DLLs, the
# Python packages) is the machine's as on any other.
_ZLUDA = re.compile(r"\bZLUDA\b", re.I | re.M)
_ZLUDA_HINTS = ("zluda",)

# NVIDIA's stack: its GPUs named (a device line, nvidia-smi and its "Driver Version", the kernel
# module's NVRM) and its software in use (a CUDA build's local version and collect_env's CUDA
# line, the CUDA runtime's file names). A machine with both vendors' GPUs runs either: a log that
# shows NVIDIA's is not read as the other's.
_NVIDIA_GPU = re.compile(
    r"\bDriver Version: \d|\bNVRM\b|\bnvidia-smi\b|"
    r"\bNVIDIA (?:GeForce|Tesla|Quadro|RTX|TITAN|DGX|Jetson|[ABHL]\d{1,3}|T4|V100|P100|GB?\d{3})\b|"
    r"\bGeForce (?:GTX|RTX|GT|MX)\b|\bTesla [KPMVTA]\d{1,3}\b",
    re.I | re.M,
)
_NVIDIA_GPU_HINTS = ("driver version", "nvrm", "nvidia", "geforce", "tesla")
_CUDA_BUILD = re.compile(
    r"\d\+cu\d{2,3}\b|\bCUDA used to build PyTorch: \d|\blibcudart\.so\.\d|\bcudart64_\d{2,3}\.dll\b", re.I | re.M
)
_CUDA_BUILD_HINTS = ("+cu", "cuda used", "cudart")

# Another vendor's GPU named as a device (not a CPU's integrated graphics, "AMD Ryzen 7 5800H
# with Radeon Graphics" and its "AMD Radeon(TM) Graphics", nor an Intel laptop's UHD or Iris, which
# sit beside NVIDIA GPUs): AMD's Radeon and Instinct products and their gfx targets (rocminfo's "Name: gfx1031", an ISA
# "amdgcn-amd-amdhsa--gfx90a"), lspci's "[AMD/ATI]"; Intel's Arc and Data Center GPUs.
_AMD_GPU = re.compile(
    r"(?<!with )\bRadeon(?:\(TM\))? (?:RX|Pro|VII|R[579]|HD|Vega)\b|\bRadeon(?:\(TM\))? \d{3,4}(?: ?XTX?)?\b|"
    r"\bAMD Radeon\b(?!(?:\(TM\))? (?:Graphics|Vega \d{1,2} Graphics|Vega Mobile))|"
    r"(?-i:\bRX ?[4-9]\d{2,3}(?: ?XTX?)?\b)|\bAMD Instinct\b|\bInstinct MI\d{2,3}|\bAMD GPUs?\b|"
    r"(?<![\w-])gfx(?:90[0-9a]|94[0-2]|95\d|80[0-3]|10[1-3]\d|11[05]\d|120\d)\b|\[AMD/ATI\]",
    re.I,
)
_INTEL_GPU = re.compile(r"\bIntel(?:\(R\))? Arc(?:\(TM\))?\b|\bIntel(?:\(R\))? Data Center GPU\b", re.I)
_GPU_HINTS = ("radeon", "rx", "instinct", "gfx", "amd/ati", "amd gpu", "arc", "data center gpu")


def _shows(regex: re.Pattern[str], hints: tuple[str, ...], text: str, lowered: str) -> bool:
    if not any(h in lowered for h in hints):
        return False
    return any(regex.search(text, start, end) for start, end in lines_with(hints, text, lowered))


def read_gpu_stack(text: str, lowered: str) -> dict[str, str]:
    """``log_gpu_stack``: "rocm" or "oneapi" where the log shows the program on AMD's or Intel's
    GPU stack and nothing of NVIDIA's in use; ``log_zluda``: "yes" where it shows ZLUDA and no
    NVIDIA GPU; ``log_gpu_vendor``: "amd" or "intel" where it shows
    that vendor's GPU (or its stack) and no NVIDIA GPU. An AMD or Intel CPU says nothing."""
    facts: dict[str, str] = {}
    nvidia_gpu = _shows(_NVIDIA_GPU, _NVIDIA_GPU_HINTS, text, lowered)
    rocm = _shows(_ROCM, _ROCM_HINTS, text, lowered)
    oneapi = _shows(_ONEAPI, _ONEAPI_HINTS, text, lowered)
    if rocm != oneapi and not nvidia_gpu and not _shows(_CUDA_BUILD, _CUDA_BUILD_HINTS, text, lowered):
        facts["log_gpu_stack"] = "rocm" if rocm else "oneapi"
    # ZLUDA runs CUDA's build on ROCm: the build's marks do not make the log NVIDIA's
    zluda = not oneapi and not nvidia_gpu and _shows(_ZLUDA, _ZLUDA_HINTS, text, lowered)
    if zluda:
        facts["log_zluda"] = "yes"
    rocm = rocm or zluda
    if nvidia_gpu:
        return facts
    amd = rocm or _shows(_AMD_GPU, _GPU_HINTS, text, lowered)
    intel = oneapi or _shows(_INTEL_GPU, _GPU_HINTS, text, lowered)
    if amd != intel:
        facts["log_gpu_vendor"] = "amd" if amd else "intel"
    return facts


# What a pattern speaks of: the CUDA stack (its driver, libraries, runtime, GPU and the tools on it)
# by its doctor rules' links (the GPU on the bus, the driver, the compute capability, the CUDA
# libraries) or by its own words.
_CUDA_STACK_LINKS = frozenset({"GPU", "DRV", "CC", "LIB"})
_CUDA_STACK_WORDS = re.compile(
    r"cuda|cudnn|cublas|cufft|curand|cusolver|cusparse|nccl|nvidia|nvml|nvcc|nvrtc|ptx|tensorrt|libcu|"
    r"(?-i:\bcu[A-Z])|\bgpu|\bxla\b|\bdriver",
    re.I,
)


def speaks_of_the_cuda_stack(pattern: object) -> bool:
    """Whether a pattern is about NVIDIA's GPU stack: its rules check one of the stack's links, or
    its title, meaning or needles name the stack."""
    rules = getattr(pattern, "rule_ids", ())
    if {r.split("-")[1] for r in rules if r.count("-") >= 2} & _CUDA_STACK_LINKS:
        return True
    words = " ".join(
        (
            getattr(pattern, "id", ""),
            getattr(pattern, "title", ""),
            getattr(pattern, "meaning", ""),
            *getattr(pattern, "needles", ()),
        )
    )
    return _CUDA_STACK_WORDS.search(words) is not None


def applies_on_another_stack(pattern: object) -> bool:
    """Whether a pattern's explanation holds in a log whose program runs on another vendor's GPU
    stack (``log_gpu_stack``): a message about the Python side (a package, NumPy, Keras, the CPU)
    does; one about the CUDA stack does not, unless it says the CUDA stack found no NVIDIA driver or
    device (``shows: no-gpu``), which is true on such a machine. Neither do a crash's report (the
    other runtime's abort) nor a logging system's records (the other stack's background)."""
    if getattr(pattern, "shows", None) == "no-gpu":
        return True
    if getattr(pattern, "at_end", False) or getattr(pattern, "record", False):
        return False
    return not speaks_of_the_cuda_stack(pattern)
