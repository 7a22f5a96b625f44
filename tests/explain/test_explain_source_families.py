"""Causes named from what the CUDA stack and TensorFlow print, family by family. Each message here
is written from the format string of the source that prints it (the file and function named
beside it, and in the pattern's ``sources``), with the parts a real run fills in (numbers, paths,
names) chosen here; none is taken from an issue thread. Each must be explained by its pattern,
harmless or not as the source means it, with the cause the source's condition implies first."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()

# (family, message, pattern id, harmless, first cause id)
MESSAGES = [
    # harmless: TensorFlow's, XLA's and the Metal plugin's start-up and progress notices
    (
        "harmless",  # tensorflow/core/grappler/optimizers/meta_optimizer.cc, MetaOptimizer::RunOptimizer
        "W0000 00:00:1700000000.000000 4242 meta_optimizer.cc:966] layout failed: INVALID_ARGUMENT: Size of values 2 does not match size of permutation 4 @ fanin shape in model/dropout/SelectV2-TransposeNHWCToNCHW-LayoutOptimizer",
        "grappler-optimizer-failed",
        True,
        "grappler-optimizer-failed",
    ),
    (
        "harmless",  # xla/service/service.cc, Service::NewService
        "I external/local_xla/xla/service/service.cc:168] XLA service 0x5627a3b0 initialized for platform Host (this does not guarantee that XLA will be used). Devices:",
        "xla-mlir-startup-notices",
        True,
        "xla-mlir-startup-notices",
    ),
    (
        "harmless",  # xla/stream_executor/cuda/cuda_dnn.cc, CudnnSupport::Init
        "I0000 00:00:1700000000.1 77 cuda_dnn.cc:529] Loaded cuDNN version 90300",
        "cudnn-loaded-notice",
        True,
        "cudnn-loaded-notice",
    ),
    (
        "harmless",  # xla/tsl/framework/cpu_allocator_impl.cc, CPUAllocator::AllocateRaw
        "W external/local_tsl/tsl/framework/cpu_allocator_impl.cc:83] Allocation of 614400000 exceeds 10% of free system memory.",
        "cpu-allocation-large-warning",
        True,
        "cpu-allocation-large-warning",
    ),
    (
        "harmless",  # xla/stream_executor/gpu/gpu_timer.cc, GpuTimer::Create
        "W0000 00:00:1700000000.2 88 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced",
        "gpu-timer-delay-kernel",
        True,
        "gpu-timer-delay-kernel",
    ),
    (
        "macos",  # the tensorflow-metal plugin's device line
        "Metal device set to: Apple M2 Max",
        "metal-plugin-notices",
        True,
        "metal-plugin-notices",
    ),
    (
        "macos",  # xla/tsl/platform/profile_utils/cpu_utils.cc, CpuUtils::GetCycleCounterFrequency
        "W tensorflow/tsl/platform/profile_utils/cpu_utils.cc:128] Failed to get CPU frequency: 0 Hz",
        "cpu-frequency-notice",
        True,
        "cpu-frequency-notice",
    ),
    (
        "macos",  # keras/optimizers (2.11-2.15), the Apple silicon check
        "WARNING:absl:At this time, the v2.11+ optimizer `tf.keras.optimizers.SGD` runs slowly on M1/M2 Macs, please use the legacy Keras optimizer instead, located at `tf.keras.optimizers.legacy.SGD`.",
        "keras-legacy-optimizer-mac-notice",
        True,
        "keras-legacy-optimizer-mac-notice",
    ),
    (
        "macos",  # tensorflow/core/framework/op_kernel.cc, FindKernelDef; a macOS path in the same log
        'File "/Users/u/miniforge3/lib/python3.10/site-packages/keras/src/engine/training.py", line 1\n'
        "NotFoundError: Graph execution error: No registered 'RandomUniformInt' OpKernel for 'GPU' devices compatible with node {{node RandomUniformInt}}",
        "no-kernel-for-device-attrs",
        False,
        "metal-plugin-lacks-kernel",
    ),
    (
        "windows",  # pip's src/pip/_internal/commands/install.py, create_os_error_message
        "HINT: This error might have occurred since this system does not have Windows Long Path support enabled.",
        "windows-long-path-install-failed",
        False,
        "windows-long-paths-disabled",
    ),
    (
        "windows",  # pip < 21.0: the same create_env_error_message sentence named EnvironmentError
        "ERROR: Could not install packages due to an EnvironmentError: [Errno 2] No such file or directory: 'C:\\\\Users\\\\jo\\\\AppData\\\\Local\\\\Packages\\\\PythonSoftwareFoundation.Python.3.8_qbz5n2kfra8p0\\\\LocalCache\\\\local-packages\\\\Python38\\\\site-packages\\\\tensorflow\\\\include\\\\external\\\\com_github_grpc_grpc\\\\src\\\\core\\\\lib\\\\security\\\\credentials\\\\plugin\\\\plugin_credentials.h'",
        "windows-long-path-install-failed",
        False,
        "windows-long-paths-disabled",
    ),
    (
        "windows",  # Windows' ERROR_FILENAME_EXCED_RANGE (206) through pip's OSError sentence
        "ERROR: Could not install packages due to an OSError: [WinError 206] The filename or extension is too long: 'C:\\\\Users\\\\jo\\\\envs\\\\tf\\\\Lib\\\\site-packages\\\\tensorflow\\\\include\\\\external'",
        "windows-long-path-install-failed",
        False,
        "windows-long-paths-disabled",
    ),
    (
        "windows",  # pip 9 and older: the unpack's FileNotFoundError escaped as a traceback, in pip-build-*
        "FileNotFoundError: [Errno 2] No such file or directory: 'C:\\\\Users\\\\jo\\\\AppData\\\\Local\\\\Temp\\\\pip-build-k2j4h6\\\\tensorflow-gpu\\\\tensorflow_gpu-1.5.0.data/purelib/tensorflow/include/tensorflow/include/external/eigen_archive/unsupported/Eigen/CXX11/src/Tensor/TensorContractionThreadPool.h'",
        "windows-long-path-install-failed",
        False,
        "windows-long-paths-disabled",
    ),
    # driver and cudnn
    (
        "driver",  # nvidia-smi over NVML (nvmlDeviceGetHandleByIndex's failure, by its error string)
        "Unable to determine the device handle for GPU0000:81:00.0: Unknown Error",
        "nvidia-smi-device-handle-failed",
        False,
        "gpu-fallen-off-bus",
    ),
    (
        "driver",  # ld.so (elf/dl-load.c) starting nvidia-smi
        "nvidia-smi: error while loading shared libraries: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
        "nvidia-smi-no-nvml-library",
        False,
        None,
    ),
    (
        "cudnn",  # tensorflow/stream_executor/cuda/cuda_dnn.cc, a CHECK on cudnnSetStream (cuDNN 7/8 numbering)
        "F tensorflow/stream_executor/cuda/cuda_dnn.cc:535] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.",
        "cudnn-status",
        False,
        None,
    ),
    (
        "cudnn",  # tensorflow/core/kernels/fused_batch_norm_op.cc
        "InternalError: cuDNN launch failure : input shape ([64,256,14,14]) [Op:FusedBatchNormV3]",
        "cudnn-launch-failure",
        False,
        "gpu-memory-exhausted-cudnn",
    ),
    (
        "cudnn",  # tensorflow/core/kernels/gpu_utils.cc, the autotuner's fallback
        "W tensorflow/core/kernels/gpu_utils.cc:69] None of the algorithms provided by cuDNN heuristics worked; trying fallback algorithms.  Conv: batch: 64",
        "cudnn-heuristics-fallback",
        True,
        None,
    ),
    (
        "cudnn",  # tensorflow/stream_executor/cuda/cuda_dnn.cc, CudnnSupport::Init after the handle failure
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:340] Possibly insufficient driver version: 410.48.0",
        "cudnn-driver-version-hint",
        False,
        "driver-too-old-for-cudnn",
    ),
    (
        "driver",  # nvidia-smi with the driver loaded and no GPU driven
        "No devices were found",
        "nvidia-smi-no-devices",
        False,
        "gpu-unsupported-by-driver",
    ),
    (
        "other_frameworks",  # torch/cuda/__init__.py, _lazy_init
        "AssertionError: Torch not compiled with CUDA enabled",
        "torch-cpu-only-build",
        False,
        "torch-cpu-only-build",
    ),
    (
        "other_frameworks",  # c10/cuda/CUDAFunctions.cpp, device_count_impl
        "UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu.",
        "torch-cuda-driver-init-failed",
        False,
        "no-nvidia-gpu",
    ),
    # cuda_math_libraries: cuBLAS and cuFFT
    (
        "cuda_math_libraries",  # xla/stream_executor/cuda/cuda_blas.cc, CUDABlas::Init (cublasGetStatusString)
        "E0000 00:00:1700000000.3 99 cuda_blas.cc:193] failed to create cublas handle: the library was not initialized",
        "cublas-handle-failed",
        False,
        "gpu-memory-preallocated",
    ),
    (
        "cuda_math_libraries",  # tensorflow/stream_executor/stream.cc
        "InternalError: Attempting to perform BLAS operation using StreamExecutor without BLAS support [Op:MatMul]",
        "blas-without-blas-support",
        False,
        "gpu-memory-taken-before-cublas",
    ),
    (
        "cuda_math_libraries",  # tensorflow/core/kernels/matmul_op_impl.h, the GEMV branch
        "InternalError: Blas xGEMV launch failed : a.shape=[1,64,128], b.shape=[1,128,1], m=64, n=1, k=128 [Op:MatMul]",
        "blas-launch-failed",
        False,
        None,
    ),
    (
        "cuda_math_libraries",  # tensorflow/core/kernels/fft_ops.cc, FFTGPUBase::DoFFT
        "InternalError: Failed to create cuFFT batched plan with scratch allocator [Op:FFT2D]",
        "cufft-plan-failed",
        False,
        "gpu-memory-exhausted-cufft",
    ),
    # containers: libnvidia-container's own errors
    (
        "containers",  # src/cli/common.c, the requirement check
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer version, or use an earlier cuda container: unknown.",
        "container-cuda-requirement-unmet",
        False,
        "cuda-driver-too-old",
    ),
    (
        "containers",  # src/cli/common.c, select_devices
        "nvidia-container-cli: device error: 3: unknown device: unknown.",
        "container-unknown-device",
        False,
        "container-device-index-out-of-range",
    ),
    (
        "containers",  # src/nvc_mount.c
        "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/0f/merged/usr/lib/x86_64-linux-gnu/libcuda.so.1: file exists: unknown.",
        "container-image-holds-driver-files",
        False,
        "driver-files-baked-into-image",
    ),
    # wsl
    (
        "wsl",  # nvidia-smi on WSL2 (NVML's initialisation through /usr/lib/wsl/lib)
        "Failed to initialize NVML: GPU access blocked by the operating system",
        "wsl-gpu-access-blocked",
        False,
        "wsl-gpu-paravirtualisation-off",
    ),
    # memory
    (
        "memory",  # tensorflow/core/common_runtime/gpu/gpu_host_allocator.h
        "W tensorflow/core/common_runtime/gpu/gpu_host_allocator.h:44] could not allocate pinned host memory of size: 2147483648",
        "pinned-host-memory-failed",
        False,
        # pinned memory is RAM: a cap below it (WSL 2, a container) goes first only where the log shows one
        "host-memory-exhausted",
    ),
    (
        "memory",  # xla/stream_executor/integrations/tf_allocator_adapter.cc
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes.",
        "xla-out-of-memory",
        False,
        "jax-preallocation",
    ),
    (
        "other_frameworks",  # c10/cuda/CUDACachingAllocator.cpp
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.02 GiB is free.",
        "torch-cuda-out-of-memory",
        False,
        "gpu-memory-held-by-other-framework",
    ),
    # cpu_instructions
    (
        "cpu_instructions",  # tensorflow/core/platform/cpu_feature_guard.cc, CheckFeatureOrDie
        "F tensorflow/core/platform/cpu_feature_guard.cc:37] The TensorFlow library was compiled to use AVX2 instructions, but these aren't available on your machine.",
        "tf-cpu-feature-missing",
        False,
        "cpu-without-avx",
    ),
    # nccl
    (
        "nccl",  # NCCL src/init.cc
        "gpu-node:4242:4300 [1] NCCL WARN Duplicate GPU detected : rank 3 and rank 2 both on CUDA device 41000",
        "nccl-duplicate-gpu",
        False,
        "ranks-share-device",
    ),
    (
        "nccl",  # NCCL src/bootstrap.cc, bootstrapNetInit
        "gpu-node:4242:4242 [0] NCCL WARN Bootstrap : no socket interface found",
        "nccl-no-socket-interface",
        False,
        "nccl-socket-ifname-wrong",
    ),
    (
        "nccl",  # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=BROADCAST, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.",
        "nccl-watchdog-timeout",
        False,
        "rank-stalled-or-diverged",
    ),
    # other_frameworks
    (
        "other_frameworks",  # c10/cuda/CUDAFunctions.cpp, the driver check
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11020).",
        "torch-driver-too-old",
        False,
        "torch-driver-too-old",
    ),
    (
        "other_frameworks",  # jax/_src/xla_bridge.py
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
        "jax-cpu-only-jaxlib",
        False,
        "jax-cpu-only-jaxlib",
    ),
    # kernel: NVIDIA's kernel module
    (
        "kernel",  # kernel-open/nvidia/nv.c
        "NVRM: API mismatch: the client has the version 550.120, but NVRM: this kernel module has the version 550.90.07.",
        "nvrm-api-mismatch",
        False,
        "driver-upgraded-no-reboot",
    ),
    (
        "kernel",  # kernel-open/nvidia/nv-pci.c, nv_pci_probe
        "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid: NVRM: BAR0 is 0M @ 0x0 (PCI:0000:0b:00.0)",
        "nvrm-pci-bar-invalid",
        False,
        "above-4g-decoding-off",
    ),
    (
        "kernel",  # kernel-open/nvidia: the lost-GPU line without the "at PCI:" form
        "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
        "nvrm-xid",
        False,
        None,
    ),
    # numpy_protobuf
    (
        "numpy_protobuf",  # Cython/Utility/ImportExport.c, __Pyx_ImportType
        "ValueError: numpy.ndarray size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject",
        "numpy-ndarray-size-changed",
        False,
        "numpy-older-than-build",
    ),
    # compute_capability / device numbering
    (
        "compute_capability",  # tensorflow/core/common_runtime/gpu/gpu_device.cc
        "InvalidArgumentError: Invalid device ordinal value (2). Valid range is [0, 1].",
        "tf-invalid-device-ordinal",
        False,
        "visible-devices-renumbered",
    ),
    (
        "linux_libraries",  # ld.so (elf/dl-load.c) for a framework's native module linked against CUDA 12
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
        "cuda-library-import-missing",
        False,
        "cuda-pip-wheel-missing",
    ),
    (
        "other_frameworks",  # jaxlib/cuda/versions_helpers.cc
        "RuntimeError: jaxlib/cuda/versions_helpers.cc:81: operation cublasGetProperty(MAJOR_VERSION, &major) failed: The cuBLAS library was not found.",
        "jax-cuda-library-not-found",
        False,
        "cuda-pip-wheel-missing",
    ),
    (
        "compute_capability",  # xla/stream_executor/gpu/asm_compiler.cc, the driver fallback
        "W0000 00:00:1730000000 55 asm_compiler.cc:225] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 12.0",
        "ptxas-too-old-fallback",
        True,
        None,
    ),
    # cuda_runtime
    (
        "cuda_runtime",  # tensorflow's cuda_executor.cc (TF 2.18 and later), the runtime version query
        "E0000 00:00:1730000000.000000 1234 cuda_executor.cc:1228] INTERNAL: CUDA Runtime error: Failed call to cudaGetRuntimeVersion: Error loading CUDA libraries. GPU will not be used.: Error loading CUDA libraries. GPU will not be used.",
        "cannot-dlopen-gpu-libraries",
        False,
        None,
    ),
    (
        "cuda_runtime",  # tensorflow/stream_executor/cuda/cudart_stub.cc
        "InternalError: cudaGetDevice() failed. Status: cudaGetErrorString symbol not found.",
        "cudart-stub-symbol-not-found",
        False,
        "cuda-not-installed",
    ),
]


@pytest.mark.parametrize("family, message, pattern_id, harmless, first", MESSAGES, ids=[m[2] for m in MESSAGES])
def test_source_message_is_explained_with_its_cause_first(family, message, pattern_id, harmless, first):
    assert_explained(message, pattern_id, harmless, first)


def assert_explained(message: str, pattern_id: str, harmless: bool, first) -> None:
    """The message is explained by its own pattern alone, harmless or not as the source means it,
    with ``first`` (when given) as its first cause."""
    result = CATALOGUE.scan_text(message)
    assert result.ids == [pattern_id]
    (explanation,) = explain(result)
    assert explanation.harmless is harmless
    if first is not None:
        assert explanation.causes[0].id == first


def test_breadth_across_families():
    assert len({m[0] for m in MESSAGES}) >= 15


def test_a_cudnn_status_by_number_in_tensorflows_check_is_named():
    (explanation,) = explain(CATALOGUE.scan_text("Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)"))
    assert explanation.variables["status_name"] == "CUDNN_STATUS_MAPPING_ERROR"


def test_the_macos_rosetta_cause_comes_first_in_a_macos_log():
    log = (
        "/Users/u/venv/lib/python3.11/site-packages/tensorflow/__init__.py\n"
        "F tensorflow/core/platform/cpu_feature_guard.cc:37] The TensorFlow library was compiled to use AVX "
        "instructions, but these aren't available on your machine.\n"
        "zsh: abort      python train.py\n"
    )
    (explanation,) = [e for e in explain(CATALOGUE.scan_text(log)) if e.id == "tf-cpu-feature-missing"]
    assert explanation.causes[0].id == "rosetta-x86-python"


@pytest.mark.parametrize(
    "line",
    [
        # a short path that is really absent (a wheel that was never downloaded), old pip's wording
        "ERROR: Could not install packages due to an EnvironmentError: [Errno 2] No such file or directory: 'C:\\\\Users\\\\u\\\\Downloads\\\\tensorflow-2.3.0-cp38-cp38-win_amd64.whl'",
        # 206 outside pip's install sentence (a command line too long for CreateProcess, a linker)
        "FileNotFoundError: [WinError 206] The filename or extension is too long",
        # a short path in pip's temporary folder: a source package without its setup.py, not a long path
        "FileNotFoundError: [Errno 2] No such file or directory: 'C:\\\\Users\\\\jo\\\\AppData\\\\Local\\\\Temp\\\\pip-build-k2j4h6\\\\foo\\\\setup.py'",
        "ERROR: Could not install packages due to an EnvironmentError: [Errno 13] Permission denied: 'C:\\\\Python38\\\\Lib\\\\site-packages\\\\numpy'",
    ],
)
def test_pips_other_install_failures_are_not_called_a_long_path(line):
    assert "windows-long-path-install-failed" not in CATALOGUE.scan_text(line).ids
