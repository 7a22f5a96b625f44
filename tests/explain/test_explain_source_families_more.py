"""More causes named from what TensorFlow, Keras, XLA, PyTorch, JAX and the other programs on the
CUDA stack print, on Linux, macOS and Windows. As in test_explain_source_families.py, each message
is written from the format string of the source that prints it (the file and function beside it,
and in the pattern's ``sources``), with the parts a run fills in chosen here; none is taken from an
issue thread. Each must be explained by its own pattern, harmless or not as the source means it,
with the cause the source's condition implies first."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from tests.explain.test_explain_source_families import CATALOGUE, assert_explained

# (family, message, pattern id, harmless, first cause id)
MESSAGES = [
    # harmless start-up and progress notices
    (
        "harmless",  # xla/service/computation_placer.cc, RegisterComputationPlacer
        "E0000 00:00:1731000000.000000 99 computation_placer.cc:177] computation placer already registered. Please check linkage and avoid linking the same target more than once.",
        "xla-computation-placer-registered",
        True,
        "xla-computation-placer-registered",
    ),
    (
        "harmless",  # tensorflow/core/common_runtime/gpu/gpu_device.cc (2.4-2.8), CreateDevices
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1871] Adding visible gpu devices: 0",
        "tf-gpu-setup-notices",
        True,
        "tf-gpu-setup-notices",
    ),
    (
        "harmless",  # tensorflow/stream_executor/platform/default/dso_loader.cc (2.4-2.8), GetDsoHandle
        "I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcublas.so.11",
        "tf-gpu-setup-notices",
        True,
        "tf-gpu-setup-notices",
    ),
    (
        "harmless",  # tensorflow/core/framework/local_rendezvous.cc, StartAbort
        "I0000 00:00:1731000000.5 31 local_rendezvous.cc:405] Local rendezvous is aborting with status: OUT_OF_RANGE: End of sequence",
        "tf-data-notices",
        True,
        "tf-data-notices",
    ),
    (
        "harmless",  # tensorflow/core/kernels/data/shuffle_dataset_op.cc
        "I tensorflow/core/kernels/data/shuffle_dataset_op.cc:392] Filling up shuffle buffer (this may take a while): 512 of 1024",
        "tf-data-notices",
        True,
        "tf-data-notices",
    ),
    (
        "harmless",  # tensorflow/compiler/mlir/mlir_graph_optimization_pass.cc
        "I tensorflow/compiler/mlir/mlir_graph_optimization_pass.cc:354] MLIR V1 optimization pass is not enabled",
        "tf-debug-and-compiler-notices",
        True,
        "tf-debug-and-compiler-notices",
    ),
    (
        "harmless",  # ptxas' register-spill warning as XLA passes it through
        "I0000 00:00:1731000000.7 12 asm_compiler.cc:369] ptxas warning : Registers are spilled to local memory in function 'loop_add_fusion', 16 bytes spill stores, 16 bytes spill loads",
        "tf-debug-and-compiler-notices",
        True,
        "tf-debug-and-compiler-notices",
    ),
    (
        "harmless",  # tensorflow/python/eager/polymorphic_function/polymorphic_function.py
        "WARNING:tensorflow:6 out of the last 11 calls to <function train_step at 0x7f3a2b> triggered tf.function retracing. Tracing is expensive.",
        "tf-function-retracing",
        True,
        "tf-function-retracing",
    ),
    (
        "harmless",  # tensorflow/python/autograph/impl/api.py, converted_call
        "WARNING:tensorflow:AutoGraph could not transform <function <lambda> at 0x7f11> and will run it as-is.",
        "autograph-could-not-transform",
        True,
        "autograph-could-not-transform",
    ),
    (
        "keras",  # tensorflow/python/util/deprecation.py, deprecated
        "WARNING:tensorflow:From /home/u/train.py:7: is_gpu_available (from tensorflow.python.framework.test_util) is deprecated and will be removed in a future version.",
        "tf-deprecation-notice",
        True,
        "tf-deprecation-notice",
    ),
    (
        "keras",  # tf_keras/optimizers/optimizer.py, _process_kwargs
        "WARNING:absl:`lr` is deprecated in Keras optimizer, please use `learning_rate` or use the legacy optimizer, e.g.,tf.keras.optimizers.legacy.RMSprop.",
        "tf-deprecation-notice",
        True,
        "tf-deprecation-notice",
    ),
    (
        "keras",  # keras/src/saving/saving_api.py, save_model
        "WARNING:absl:You are saving your model as an HDF5 file via `model.save()` or `keras.saving.save_model(model)`. This file format is considered legacy.",
        "keras-usage-notices",
        True,
        "keras-usage-notices",
    ),
    (
        "other_frameworks",  # torch/storage.py, _warn_typed_storage_removal
        "/usr/lib/python3/site-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.",
        "torch-usage-notices",
        True,
        "torch-usage-notices",
    ),
    (
        "other_frameworks",  # aten/src/ATen/native/transformers/cuda/sdp_utils.cpp
        "UserWarning: Flash attention kernel not used because: (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:723.)",
        "torch-usage-notices",
        True,
        "torch-usage-notices",
    ),
    (
        "harmless",  # tensorflow/core/common_runtime/gpu/gpu_device.cc, device_lib.list_local_devices
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1532] Created device /device:GPU:0 with 14626 MB memory:  -> device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5",
        "gpu-device-created",
        True,
        "gpu-device-created",
    ),
    (
        "compute_capability",  # xla/service/gpu/nvptx_compiler.cc, the older wording of the version check
        "W tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:596] The NVIDIA driver's CUDA version is 11.4 which is older than the PTX compiler version (11.8.89). Because the driver is older than the PTX compiler version, XLA is disabling parallel compilation, which may slow down compilation.",
        "xla-driver-older-than-ptxas",
        True,
        None,
    ),
    # other frameworks on the same CUDA stack
    (
        "other_frameworks",  # jax/_src/xla_bridge.py, the fall-back warning
        "WARNING:2024-01-01 00:00:00,000:jax._src.xla_bridge:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
        "jax-no-gpu-found",
        False,
        "jax-cpu-only-jaxlib",
    ),
    (
        "other_frameworks",  # jax/_src/lib/__init__.py, check_jaxlib_version
        "RuntimeError: jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.6.",
        "jaxlib-version-mismatch",
        False,
        "jaxlib-version-mismatch",
    ),
    (
        "other_frameworks",  # cupy/cuda/compiler.py, compile_using_nvrtc
        "cupy.cuda.compiler.CompileException: nvrtc: error: invalid value for --gpu-architecture (-arch)",
        "cupy-nvrtc-unknown-arch",
        False,
        "cupy-nvrtc-unknown-arch",
    ),
    (
        "other_frameworks",  # onnxruntime/python/onnxruntime_inference_collection.py
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: 'CPUExecutionProvider'",
        "onnxruntime-cuda-provider-unavailable",
        False,
        "onnxruntime-cpu-package",
    ),
    (
        "other_frameworks",  # onnxruntime/core/session/provider_bridge_ort.cc, ProviderLibrary::Get
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1193 onnxruntime::ProviderLibrary::Get] [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file: No such file or directory",
        "onnxruntime-cuda-provider-load-failed",
        False,
        "onnxruntime-cuda-major-mismatch",
    ),
    (
        "windows",  # the same, on Windows
        '[E:onnxruntime:Default, provider_bridge_ort.cc:1426 onnxruntime::ProviderLibrary::Get] [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load "C:\\Python311\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"',
        "onnxruntime-cuda-provider-load-failed",
        False,
        "onnxruntime-cuda-major-mismatch",
    ),
    (
        "other_frameworks",  # bitsandbytes/cextension.py
        "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers and GPU quantization are unavailable.",
        "bitsandbytes-no-gpu",
        False,
        "bitsandbytes-no-gpu",
    ),
    (
        "other_frameworks",  # CTranslate2 src/devices.cc
        "ValueError: This CTranslate2 package was not compiled with CUDA support",
        "ctranslate2-no-cuda",
        False,
        "ctranslate2-no-cuda",
    ),
    (
        "other_frameworks",  # ggml/src/ggml-cuda/ggml-cuda.cu, ggml_cuda_init
        "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected",
        "ggml-cuda-init-failed",
        False,
        "no-nvidia-gpu",
    ),
    (
        "other_frameworks",  # python/triton/runtime/build.py
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
        "triton-no-c-compiler",
        False,
        "triton-no-c-compiler",
    ),
    (
        "other_frameworks",  # xformers/_cpp_lib.py
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for: PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.1.0+cu121)",
        "xformers-build-mismatch",
        False,
        "xformers-build-mismatch",
    ),
    (
        "other_frameworks",  # torch/cuda/__init__.py, _lazy_init
        "RuntimeError: No CUDA GPUs are available",
        "torch-no-cuda-gpus",
        False,
        "visible-devices-empty",
    ),
    (
        "cudnn",  # torch/backends/cudnn/__init__.py, _init
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (8, 9, 7).",
        "torch-cudnn-version-incompatible",
        False,
        "torch-cudnn-version-incompatible",
    ),
    # macOS: PyTorch's MPS back end
    (
        "macos",  # aten/src/ATen/mps/MPSAllocator.mm
        "RuntimeError: MPS backend out of memory (MPS allocated: 9.05 GB, other allocations: 512.00 MB, max allowed: 9.07 GB). Tried to allocate 64.00 MB on private pool.",
        "mps-out-of-memory",
        False,
        "mps-memory-limit",  # the message names the allocator's cap, the lever it offers first
    ),
    (
        "macos",  # aten/src/ATen/mps/MPSFallback.mm
        "NotImplementedError: The operator 'aten::upsample_bicubic2d.out' is not currently implemented for the MPS device.",
        "mps-op-not-implemented",
        False,
        "mps-op-not-implemented",
    ),
    (
        "macos",  # aten/src/ATen/native/mps/OperationUtils.mm
        "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please use float32 instead.",
        "mps-float64",
        False,
        "mps-float64",
    ),
    # Windows
    (
        "windows",  # tensorflow.org/install/pip, native Windows
        "TensorFlow 2.10 was the last TensorFlow release that supported GPU on native-Windows.",
        "tf-windows-gpu-ended",
        False,
        "tf-windows-gpu-ended",
    ),
    (
        "windows",  # Windows system error 1455 as Rust's std::io::Error prints it (safetensors, tokenizers)
        "OSError: The paging file is too small for this operation to complete. (os error 1455)",
        "windows-paging-file-too-small",
        False,
        "paging-file-too-small",
    ),
    (
        "windows",  # the Windows event log's TDR entry (event 4101)
        "Display driver nvlddmkm stopped responding and has successfully recovered.",
        "windows-display-driver-reset",
        False,
        "windows-display-driver-reset",
    ),
    (
        "windows",  # torch/__init__.py, _load_dll_libraries
        "UserWarning: Microsoft Visual C++ Redistributable is not installed, this may lead to the DLL load failure. It can be downloaded at https://aka.ms/vs/16/release/vc_redist.x64.exe",
        "torch-msvc-redist-missing",
        False,
        "torch-msvc-redist-missing",
    ),
    # round 4, second part: more notices, extension builds, MPS
    (
        "keras",  # tf_keras/mixed_precision/device_compatibility_check.py
        "WARNING:tensorflow:Your GPUs may run slowly with dtype policy mixed_float16 because they do not have compute capability of at least 7.0. Your GPUs:",
        "mixed-precision-slow-device",
        True,
        "mixed-precision-slow-device",
    ),
    (
        "harmless",  # tensorflow/core/common_runtime/forward_type_inference.cc
        "W0000 00:00:1731000000.1 7 forward_type_inference.cc:332] Type inference failed. This indicates an invalid graph that escaped type checking. Error message: INVALID_ARGUMENT: expected compatible input types",
        "tf-graph-notices",
        True,
        "tf-graph-notices",
    ),
    (
        "harmless",  # tensorflow/core/grappler/devices.cc, GetNumAvailableGPUs
        "I tensorflow/core/grappler/devices.cc:75] Number of eligible GPUs (core count >= 8, compute capability >= 0.0): 2",
        "tf-runtime-progress-notices",
        True,
        "tf-runtime-progress-notices",
    ),
    (
        "keras",  # tensorflow/python/checkpoint/checkpoint.py
        "WARNING:tensorflow:Detecting that an object or model or tf.train.Checkpoint is being deleted with unrestored values.",
        "tf-checkpoint-unrestored-values",
        True,
        "tf-checkpoint-unrestored-values",
    ),
    (
        "other_frameworks",  # aten/src/ATen/cuda/CublasHandlePool.cpp
        "UserWarning: Attempting to run cuBLAS, but there was no current CUDA context! Attempting to set the primary context... (Triggered internally at ../aten/src/ATen/cuda/CublasHandlePool.cpp:135.)",
        "torch-harmless-notices",
        True,
        "torch-harmless-notices",
    ),
    (
        "other_frameworks",  # jax/_src/xla_bridge.py, a platform that fails to start
        "INFO:jax._src.xla_bridge:Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot open shared object file: No such file or directory",
        "jax-other-backend-skipped",
        True,
        "jax-other-backend-skipped",
    ),
    (
        "driver",  # c10/cuda/CUDAFunctions.cpp, device_count_impl
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
        "torch-cuda-unknown-error",
        False,
        "uvm-bad-state",
    ),
    (
        "other_frameworks",  # torch/serialization.py, validate_cuda_device
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu').",
        "torch-load-cuda-unavailable",
        False,
        "no-nvidia-gpu",
    ),
    (
        "compute_capability",  # nvcc's option check
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
        "nvcc-unsupported-arch",
        False,
        "nvcc-too-old",
    ),
    (
        "linux_libraries",  # torch/utils/cpp_extension.py
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
        "cuda-home-not-set",
        False,
        "cuda-home-not-set",
    ),
    (
        "linux_libraries",  # torch/utils/cpp_extension.py, _check_cuda_version
        "RuntimeError: The detected CUDA version (12.4) mismatches the version that was used to compile PyTorch (11.8). Please make sure to use the same CUDA versions.",
        "torch-extension-cuda-mismatch",
        False,
        "torch-extension-cuda-mismatch",
    ),
    (
        "linux_libraries",  # a C compiler's missing-include error in a GPU package's build
        "/tmp/pip-build/csrc/flash_api.cpp:8:10: fatal error: cuda.h: No such file or directory",
        "cuda-header-missing",
        False,
        "cuda-header-missing",
    ),
    (
        "macos",  # aten/src/ATen/mps/MPSFallback.mm, the CPU fall-back warning
        "UserWarning: The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to run on the CPU. This may have performance implications.",
        "mps-notices",
        True,
        "mps-notices",
    ),
    (
        "macos",  # aten/src/ATen/native/mps/OperationUtils.mm, Placeholder
        "RuntimeError: Placeholder storage has not been allocated on MPS device!",
        "mps-placeholder-not-on-device",
        False,
        "mps-placeholder-not-on-device",
    ),
    (
        "windows",  # Windows' loader, STATUS_DLL_NOT_FOUND (0xC0000135)
        "The code execution cannot proceed because MSVCP140.dll was not found. Reinstalling the program may fix this problem.",
        "win-vcruntime-dll-dialog",
        False,
        "win-vcruntime-dll-dialog",
    ),
    (
        "windows",  # the same, for a CUDA file
        "The code execution cannot proceed because cublas64_11.dll was not found. Reinstalling the program may fix this problem.",
        "win-cuda-dll-dialog",
        False,
        "cuda-dll-folder-not-on-path",
    ),
    (
        "other_frameworks",  # xformers/ops/fmha/dispatch.py, _run_priority_list
        "NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:",
        "xformers-no-operator",
        False,
        "xformers-build-mismatch",
    ),
]

# Lines like the ones above that are not them: no explanation, or not this one.
NOT_THESE = [
    ("ggml_cuda_init: found 2 CUDA devices:", "ggml-cuda-init-failed"),
    ("Local rendezvous is aborting with status: INTERNAL: stream did not block host until done", "tf-data-notices"),
    ("RuntimeError: 2 CUDA GPUs are available", "torch-no-cuda-gpus"),
    ("Using CPUExecutionProvider, CUDAExecutionProvider", "onnxruntime-cuda-provider-unavailable"),
    ("MPS backend available: True", "mps-out-of-memory"),
    ("jaxlib is version 0.4.30", "jaxlib-version-mismatch"),
    ("Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.", "jax-other-backend-skipped"),
    ("fatal error: stdio.h: No such file or directory", "cuda-header-missing"),
    ("nvcc fatal   : Value 'c++20' is not defined for option 'std'", "nvcc-unsupported-arch"),
    ("Profiler found no GPUs to trace", "tf-runtime-progress-notices"),
    ("The code execution cannot proceed because steam_api64.dll was not found.", "win-cuda-dll-dialog"),
    ("The code execution cannot proceed because steam_api64.dll was not found.", "win-vcruntime-dll-dialog"),
]


@pytest.mark.parametrize("family, message, pattern_id, harmless, first", MESSAGES, ids=[m[2] for m in MESSAGES])
def test_source_message_is_explained_with_its_cause_first(family, message, pattern_id, harmless, first):
    assert_explained(message, pattern_id, harmless, first)


@pytest.mark.parametrize("text, pattern_id", NOT_THESE, ids=[n[1] for n in NOT_THESE])
def test_a_line_that_only_looks_like_it_is_not_claimed(text, pattern_id):
    assert pattern_id not in CATALOGUE.scan_text(text).ids


def test_ggml_with_an_old_driver_is_the_driver_explanation():
    result = CATALOGUE.scan_text(
        "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version"
    )
    assert result.ids == ["cuda-driver-too-old"]


def test_a_cpu_only_start_of_jax_is_not_called_harmless():
    (explanation,) = explain(CATALOGUE.scan_text("No GPU/TPU found, falling back to CPU."))
    assert not explanation.harmless
    assert {c.id for c in explanation.causes} >= {"jax-cpu-only-jaxlib", "jax-cuda-plugin-failed", "no-nvidia-gpu"}
