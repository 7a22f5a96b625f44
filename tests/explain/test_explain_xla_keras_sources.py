"""A sweep of what XLA's GPU compiler and runtime, TensorFlow's tf2xla/jit, tf.distribute and Keras'
mixed-precision check print, read from their sources at a release tag. Each row names the source
file, the format string it logs or raises, a line rendered from it with the log prefix of that
generation, and what `envcheck explain` must make of it:

- a pattern id: that pattern explains the line (and an error is never called harmless);
- ``harmless``: the line is recognised, and every explanation of it is harmless;
- ``quiet``: a routine notice that nothing acts on (no explanation, or only harmless ones).

The table makes the sweep repeatable: a new release's wording goes in as a row, and a row that
stops holding fails here."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()

TF = "https://github.com/tensorflow/tensorflow/blob"
XLA = "https://github.com/openxla/xla/blob"
TFK = "https://github.com/keras-team/keras/blob"

# (source at a tag, format string, rendered line, expected)
SWEEP = [
    # ptxas and the PTX -> SASS step
    (
        f"{TF}/v2.4.0/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc",
        "*** WARNING *** Invoking the PTX->SASS JIT from driver version %s, which is older than 396.20.0.",
        "2021-03-02 10:11:12.123456: W tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:230] *** WARNING *** Invoking the PTX->SASS JIT from driver version 390.87, which is older than 396.20.0. These versions are known to miscompile XLA code, leading to incorrect results or invalid-address errors.",
        "xla-driver-jit-miscompile",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc",
        "Failed to compile ptx to cubin.  Will attempt to let GPU driver compile the ptx. %s",
        "2021-03-02 10:11:12.123456: W tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:448] Failed to compile ptx to cubin.  Will attempt to let GPU driver compile the ptx. Internal: ptxas exited with non-zero error code -1, output:",
        "ptxas-failed",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc",
        "Can't find ptxas binary in ${CUDA_DIR}/bin.  Will back to the GPU driver for PTX -> sass compilation.",
        "2021-03-02 10:11:12.123456: W tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:70] Can't find ptxas binary in ${CUDA_DIR}/bin.  Will back to the GPU driver for PTX -> sass compilation.  This is OK so long as you don't see a warning below about an out-of-date driver version.",
        # the source says it is fine unless a warning about the driver follows
        "harmless",
    ),
    (
        f"{TF}/v2.12.0/tensorflow/compiler/xla/stream_executor/gpu/asm_compiler.cc",
        "Falling back to the CUDA driver for PTX compilation; ptxas does not support CC %d.%d",
        "2023-06-19 17:03:27.840554: W tensorflow/compiler/xla/stream_executor/gpu/asm_compiler.cc:231] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 9.0",
        "harmless",
    ),
    (
        f"{TF}/v2.5.0/tensorflow/stream_executor/gpu/asm_compiler.cc",
        "Your CUDA software stack is old. We fallback to the NVIDIA driver for some compilation. ... The ptxas error was: %s",
        "2021-06-19 17:03:27.840554: W tensorflow/stream_executor/gpu/asm_compiler.cc:235] Your CUDA software stack is old. We fallback to the NVIDIA driver for some compilation. Update your CUDA version to get the best performance. The ptxas error was: ptxas fatal   : Value 'sm_86' is not defined for option 'gpu-name'",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/stream_executor/cuda/subprocess_compilation.cc",
        "ptxas %s has a bug that we think can affect XLA. Please use a different version.",
        "E0000 00:00:1755011248.049012     142 subprocess_compilation.cc:350] INTERNAL: ptxas 12.3.103 has a bug that we think can affect XLA. Please use a different version.",
        "ptxas-failed",
    ),
    (
        f"{XLA}/main/xla/stream_executor/cuda/subprocess_compilation.cc",
        "ptxas exited with non-zero error code %d, output: %s",
        "E0000 00:00:1755011248.049012     142 subprocess_compilation.cc:300] INTERNAL: ptxas exited with non-zero error code 255, output: ptxas fatal   : Value 'sm_120a' is not defined for option 'gpu-name'",
        # ptxas' own words in the output name the cause: the more specific message explains the line
        "ptxas-unknown-gpu-target",
    ),
    (
        f"{XLA}/main/xla/service/gpu/nvptx_compiler.cc",
        "XLA requires ptxas version %s or higher",
        "W0000 00:00:1755011248.049012     142 op_kernel.cc:1839] OP_REQUIRES failed at xla_ops.cc:580 : INTERNAL: XLA requires ptxas version 11.8 or higher",
        "ptxas-below-xla-minimum",
    ),
    (
        f"{XLA}/main/xla/service/gpu/nvptx_compiler.cc",
        "The NVIDIA driver's CUDA version is %s which is older than the PTX compiler version (%s).",
        "W0000 00:00:1755011248.049012     142 nvptx_compiler.cc:930] The NVIDIA driver's CUDA version is 12.2 which is older than the PTX compiler version (12.5.82). Because the driver is older than the PTX compiler version, XLA is disabling parallel compilation, which may slow down compilation.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/stream_executor/cuda/ptx_compiler_impl.cc",
        "PTX compilation failed with error code %d: %s",
        "E0000 00:00:1755011248.049012     142 ptx_compiler.cc:100] INTERNAL: PTX compilation failed with error code 7: ptxas application ptx input, line 9; fatal   : Unsupported .version 8.4; current version is '8.3'",
        "ptxas-unsupported-version",
    ),
    # libdevice
    (
        f"{XLA}/main/xla/service/gpu/llvm_gpu_backend/nvptx_backend.cc",
        "Can't find libdevice directory %s. This may result in compilation or runtime failures, ...",
        "W0000 00:00:1739677334.593337    3089 nvptx_backend.cc:579] Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the program we try to run uses routines from libdevice.",
        "libdevice-not-found",
    ),
    (
        f"{TF}/v2.11.0/tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc",
        "libdevice not found at %s",
        "W tensorflow/core/framework/op_kernel.cc:1830] OP_REQUIRES failed at xla_ops.cc:362 : INTERNAL: libdevice not found at ./libdevice.10.bc",
        "libdevice-not-found",
    ),
    # autotuners
    (
        f"{XLA}/main/xla/service/gpu/autotuning/conv_algorithm_picker.cc",
        "Failed to determine best cudnn convolution algorithm for:\\n%s\\n\\nOriginal error: %s",
        "jaxlib.xla_extension.XlaRuntimeError: UNKNOWN: Failed to determine best cudnn convolution algorithm for:",
        "xla-conv-autotune-failed",
    ),
    (
        f"{TF}/v2.9.0/tensorflow/compiler/xla/service/gpu/gpu_conv_algorithm_picker.cc",
        "Failed to determine best cudnn convolution algorithm: %s\\n\\nConvolution performance may be suboptimal.",
        "2022-05-02 10:11:12.123456: W tensorflow/compiler/xla/service/gpu/gpu_conv_algorithm_picker.cc:816] Failed to determine best cudnn convolution algorithm: Internal: All algorithms tried for %cudnn-conv.3 = (f32[32,64,56,56]{3,2,1,0}, u8[0]{0}) custom-call() failed. Falling back to default algorithm.",
        "xla-conv-autotune-failed",
    ),
    (
        f"{XLA}/main/xla/service/gpu/autotuning/conv_algorithm_picker.cc",
        "Omitted potentially buggy algorithm %s for conv %s",
        "I0000 00:00:1755011248.049012     142 conv_algorithm_picker.cc:1013] Omitted potentially buggy algorithm eng14{k25=0} for conv %cudnn-conv.1 = (f32[64,3,3,3]{3,2,1,0}, u8[0]{0}) custom-call()",
        "harmless",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/compiler/xla/service/gpu/gpu_conv_algorithm_picker.cc",
        "None of the algorithms provided by cuDNN heuristics worked; trying fallback algorithms.",
        "2021-03-02 10:11:12.123456: W tensorflow/stream_executor/cuda/cuda_dnn.cc:729] None of the algorithms provided by cuDNN heuristics worked; trying fallback algorithms.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/stream_executor/gpu/gpu_timer.cc",
        "Skipping the delay kernel, measurement accuracy will be reduced",
        "W0000 00:00:1755011248.049012     142 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/stream_executor/gpu/gpu_timer.cc",
        "Delay kernel timed out: measured time has sub-optimal accuracy. ...",
        "W0000 00:00:1755011248.049012     142 gpu_timer.cc:88] Delay kernel timed out: measured time has sub-optimal accuracy. There may be a missing warmup execution, please investigate in Nsight Systems.",
        "harmless",
    ),
    # memory during compile and run
    (
        f"{TF}/v2.16.1/third_party/xla/xla/service/hlo_rematerialization.cc",
        "Can't reduce memory use below %s (%d bytes) by rematerialization; only reduced to %s (%d bytes), down from %s (%d bytes) originally",
        "2024-04-21 19:01:14.883021: W external/local_xla/xla/service/hlo_rematerialization.cc:2941] Can't reduce memory use below 17.97GiB (19297974672 bytes) by rematerialization; only reduced to 20.51GiB (22027581828 bytes), down from 20.67GiB (22193496744 bytes) originally",
        "xla-rematerialization-over-memory",
    ),
    (
        f"{XLA}/main/xla/stream_executor/integrations/tf_allocator_adapter.cc",
        "Out of memory while trying to allocate %s.",
        "W external/local_xla/xla/stream_executor/integrations/tf_allocator_adapter.cc:49] RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4294967296 bytes.",
        "xla-out-of-memory",
    ),
    (
        f"{XLA}/main/xla/pjrt/pjrt_stream_executor_client.cc",
        "Execution of replica %d failed: %s",
        "E external/local_xla/xla/pjrt/pjrt_stream_executor_client.cc:2985] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4294967296 bytes.",
        "xla-out-of-memory",
    ),
    (
        f"{XLA}/main/xla/pjrt/gpu/gpu_helpers.cc",
        "XLA backend allocating %d bytes on device %d for BFCAllocator.",
        "I0000 00:00:1755011248.049012     142 gpu_helpers.cc:114] XLA backend allocating 12775243776 bytes on device 0 for BFCAllocator.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/pjrt/gpu/gpu_helpers.cc",
        "XLA backend will use up to %d bytes on device %d for CollectiveBFCAllocator.",
        "I0000 00:00:1755011248.049012     142 gpu_helpers.cc:154] XLA backend will use up to 4258414592 bytes on device 0 for CollectiveBFCAllocator.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/pjrt/gpu/se_gpu_pjrt_client.cc",
        "Using BFC allocator.",
        "I0000 00:00:1755011248.049012     142 se_gpu_pjrt_client.cc:951] Using BFC allocator.",
        "harmless",
    ),
    # the kernel generator's runtime and loading compiled kernels
    (
        f"{TF}/v2.12.0/tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc",
        "'%s' failed with '%s'",
        "tensorflow.python.framework.errors_impl.InternalError: 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_UNSUPPORTED_PTX_VERSION'",
        "cuda-unsupported-ptx-version",
    ),
    (
        f"{TF}/v2.12.0/tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc",
        "'%s' failed with '%s'",
        "tensorflow.python.framework.errors_impl.InternalError: 'cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, 0, stream, params, nullptr)' failed with 'CUDA_ERROR_INVALID_HANDLE'",
        "cuda-invalid-handle",
    ),
    # tf2xla and jit
    (
        f"{TF}/v2.15.0/tensorflow/compiler/tf2xla/xla_compiler.cc",
        "Detected unsupported operations when trying to compile graph %s on %s: %s (%s)",
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: Detected unsupported operations when trying to compile graph __inference_train_step_1234[_XlaMustCompile=true,config_proto=3175580994766145631,executor_type=11160318154034397263] on XLA_GPU_JIT: StringFormat (No registered 'StringFormat' OpKernel for XLA_GPU_JIT devices compatible with node {{node StringFormat}}){{node StringFormat}}",
        "xla-unsupported-op-for-jit",
    ),
    (
        f"{TF}/v2.15.0/third_party/xla/xla/service/service.cc",
        "XLA service %p initialized for platform %s (this does not guarantee that XLA will be used). Devices:",
        "I tensorflow/compiler/xla/service/service.cc:173] XLA service 0x55d8f3a0 initialized for platform CUDA (this does not guarantee that XLA will be used). Devices:",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/third_party/xla/xla/service/service.cc",
        "  StreamExecutor device (%d): %s, %s",
        "I tensorflow/compiler/xla/service/service.cc:181]   StreamExecutor device (0): NVIDIA GeForce RTX 3090, Compute Capability 8.6",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/compiler/jit/device_compiler.h",
        "Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.",
        "I0000 00:00:1755011248.049012     142 device_compiler.h:188] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.",
        "harmless",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/compiler/jit/xla_gpu_device.cc",
        "Not creating XLA devices, tf_xla_enable_xla_devices not set",
        "I tensorflow/compiler/jit/xla_gpu_device.cc:99] Not creating XLA devices, tf_xla_enable_xla_devices not set",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/compiler/jit/mark_for_compilation_pass.cc",
        "(One-time warning): Not using XLA:CPU for cluster because envvar TF_XLA_FLAGS=--tf_xla_cpu_global_jit was not set. ...",
        "W tensorflow/compiler/jit/mark_for_compilation_pass.cc:1590] (One-time warning): Not using XLA:CPU for cluster because envvar TF_XLA_FLAGS=--tf_xla_cpu_global_jit was not set.  If you want XLA:CPU, either set that envvar, or use experimental_jit_scope to enable XLA:CPU.",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/compiler/mlir/mlir_graph_optimization_pass.cc",
        "disabling MLIR crash reproducer, set env var `MLIR_CRASH_REPRODUCER_DIRECTORY` to enable.",
        "I0000 00:00:1755011248.049012     142 mlir_graph_optimization_pass.cc:401] disabling MLIR crash reproducer, set env var `MLIR_CRASH_REPRODUCER_DIRECTORY` to enable.",
        "harmless",
    ),
    # tf.distribute
    (
        f"{TF}/v2.4.0/tensorflow/python/distribute/cross_device_ops.py",
        "Some requested devices in `tf.distribute.Strategy` are not visible to TensorFlow: %s",
        "WARNING:tensorflow:Some requested devices in `tf.distribute.Strategy` are not visible to TensorFlow: /job:localhost/replica:0/task:0/device:GPU:1,/job:localhost/replica:0/task:0/device:GPU:0",
        "distribute-devices-not-visible",
    ),
    (
        f"{TF}/v1.15.0/tensorflow/python/distribute/cross_device_ops.py",
        "Not all devices in `tf.distribute.Strategy` are visible to TensorFlow.",
        "WARNING:tensorflow:Not all devices in `tf.distribute.Strategy` are visible to TensorFlow.",
        "distribute-devices-not-visible",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/python/distribute/cross_device_ops.py",
        "There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce.",
        "WARNING:tensorflow:There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce.",
        "distribute-devices-not-visible",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/python/distribute/cross_device_ops.py",
        "NCCL is not supported when using virtual GPUs, fallingback to reduction to one device",
        "WARNING:tensorflow:NCCL is not supported when using virtual GPUs, fallingback to reduction to one device",
        "harmless",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/python/distribute/cross_device_ops.py",
        "Efficient allreduce is not supported for %d IndexedSlices",
        "WARNING:tensorflow:Efficient allreduce is not supported for 2 IndexedSlices",
        "harmless",
    ),
    # Keras' mixed-precision check
    (
        f"{TFK}/v2.15.0/keras/mixed_precision/device_compatibility_check.py",
        "%s\\nYour GPU may run slowly with dtype policy mixed_float16 because it does not have compute capability of at least 7.0. Your GPU:\\n",
        "WARNING:tensorflow:Your GPU may run slowly with dtype policy mixed_float16 because it does not have compute capability of at least 7.0. Your GPU:",
        "harmless",
    ),
    (
        f"{TFK}/v2.15.0/keras/mixed_precision/device_compatibility_check.py",
        "%s\\nThe dtype policy mixed_float16 may run slowly because this machine does not have a GPU. ...",
        "WARNING:tensorflow:The dtype policy mixed_float16 may run slowly because this machine does not have a GPU. Only Nvidia GPUs with compute capability of at least 7.0 run quickly with mixed_float16.",
        "harmless",
    ),
    (
        f"{TFK}/v2.15.0/keras/mixed_precision/device_compatibility_check.py#L132",
        "%s\\nYour GPU will likely run quickly with dtype policy mixed_float16 as it has compute capability of at least 7.0. Your GPU: %s",
        "INFO:tensorflow:Mixed precision compatibility check (mixed_float16): OK",
        "harmless",
    ),
    # the second pass: autotuner comparisons, NCCL, slow compiles, Keras 3
    (
        f"{XLA}/main/xla/service/gpu/autotuning/conv_algorithm_picker.cc",
        "Results mismatch between different convolution algorithms. This is likely a bug/unexpected loss of precision in cudnn.\\n%s for %s vs %s",
        "2024-03-06 09:57:23.380707: E external/local_xla/xla/service/gpu/conv_algorithm_picker.cc:705] Results mismatch between different convolution algorithms. This is likely a bug/unexpected loss of precision in cudnn.",
        "xla-autotune-results-mismatch",
    ),
    (
        f"{XLA}/main/xla/service/gpu/autotuning/gemm_algorithm_picker.cc",
        "Results mismatch between different GEMM algorithms. This is likely a bug/unexpected loss of precision.",
        "E0000 00:00:1755011248.049012     142 gemm_algorithm_picker.cc:371] Results mismatch between different GEMM algorithms. This is likely a bug/unexpected loss of precision.",
        "xla-autotune-results-mismatch",
    ),
    (
        f"{TF}/v2.12.0/tensorflow/compiler/xla/service/gpu/gemm_algorithm_picker.cc",
        "Failed to find best cuBLAS algorithm, GEMM performance might be suboptimal: %s",
        "2023-03-02 10:11:12.123456: W tensorflow/compiler/xla/service/gpu/gemm_algorithm_picker.cc:231] Failed to find best cuBLAS algorithm, GEMM performance might be suboptimal: INTERNAL: All algorithms tried for %cublas-gemm.1 = f32[128,10]{1,0} custom-call() failed. Falling back to default algorithm.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/service/slow_operation_alarm.cc",
        "Very slow compile?  If you want to file a bug, run with envvar XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.",
        "E external/org_tensorflow/tensorflow/compiler/xla/service/slow_operation_alarm.cc:55] Very slow compile?  If you want to file a bug, run with envvar XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/service/gpu/nccl_api_stub.cc",
        "XLA compiled without NCCL support",
        "W external/local_xla/xla/service/gpu/runtime/nccl_all_reduce_thunk.cc:70] UNIMPLEMENTED: XLA compiled without NCCL support",
        "xla-built-without-nccl",
    ),
    (
        f"{XLA}/main/xla/backends/gpu/collectives/nccl_errors.cc",
        "%s:%d: NCCL operation %s failed: %s. Last NCCL warning(error) log entry (may be unrelated) '%s'.",
        "E0000 00:00:1755011248.049012     142 nccl_api.cc:300] INTERNAL: NCCL operation ncclCommInitRankConfig(&comm, nranks, id, rank, &config) failed: unhandled cuda error (run with NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated) 'Cuda failure 'out of memory''.",
        "nccl-cuda-failure",  # the NCCL warning XLA quotes names the CUDA error
    ),
    (
        f"{XLA}/main/xla/backends/gpu/collectives/nccl_errors.cc",
        "%s:%d: NCCL operation %s failed: %s. Last NCCL warning(error) log entry (may be unrelated) '%s'.",
        "E0000 00:00:1755011248.049012     142 nccl_api.cc:300] INTERNAL: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled system error (run with NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated) 'Error while creating shared memory segment'.",
        "nccl-system-error",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/python/distribute/mirrored_strategy.py",
        "Using MirroredStrategy with devices %r",
        "INFO:tensorflow:Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:GPU:0', '/job:localhost/replica:0/task:0/device:GPU:1')",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/python/distribute/collective_all_reduce_strategy.py",
        "Collective ops is not configured at program startup. Some performance features may not be enabled.",
        "WARNING:tensorflow:Collective ops is not configured at program startup. Some performance features may not be enabled.",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/python/distribute/mirrored_strategy.py",
        "Using MirroredStrategy with devices %r (only the CPU: no GPU is visible)",
        "INFO:tensorflow:Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:CPU:0',)",
        "quiet",
    ),
    (
        f"{TFK}/v3.9.0/keras/src/trainers/trainer.py#L213",
        "Model doesn't support `jit_compile=True`. Proceeding with `jit_compile=False`.",
        "/usr/local/lib/python3.11/site-packages/keras/src/trainers/trainer.py:212: UserWarning: Model doesn't support `jit_compile=True`. Proceeding with `jit_compile=False`.",
        "harmless",
    ),
    (
        f"{XLA}/main/xla/service/gpu/nvptx_compiler.cc",
        "Couldn't read CUDA driver version.",
        "W0000 00:00:1755011248.049012     142 nvptx_compiler.cc:201] Couldn't read CUDA driver version.",
        "quiet",
    ),
    # the third pass: a GPU newer than XLA's LLVM, the fusion autotuner
    (
        f"{XLA}/main/xla/service/gpu/llvm_gpu_backend/nvptx_backend.cc",
        "Unknown compute capability %s. Defaulting to telling LLVM that we're compiling for %s",
        "W0000 00:00:1755011248.049012     142 nvptx_backend.cc:123] Unknown compute capability 12.0. Defaulting to telling LLVM that we're compiling for sm_90",
        "xla-gpu-newer-than-llvm",
    ),
    (
        f"{TF}/v2.12.0/tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc",
        "Unknown compute capability (%d, %d) .Defaulting to telling LLVM that we're compiling for sm_%d",
        "2023-02-02 10:11:12.123456: W tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc:101] Unknown compute capability (9, 0) .Defaulting to telling LLVM that we're compiling for sm_86",
        "xla-gpu-newer-than-llvm",
    ),
    (
        f"{XLA}/main/xla/service/gpu/autotuning/gemm_fusion_autotuner.cc",
        "Autotuning failed for HLO: %s with error: %s",
        "E0000 00:00:1755011248.049012     142 pjrt_stream_executor_client.cc:3084] Execution of replica 0 failed: INTERNAL: Autotuning failed for HLO: %gemm_fusion_dot.3 = f32[64,64]{1,0} fusion(f32[64,32]{1,0} %p0, f32[32,64]{1,0} %p1), kind=kCustom with error: NOT_FOUND: No valid config found!",
        "xla-autotuning-failed",
    ),
    # the fourth pass: no XLA compiler for CUDA, Keras 3's jit and export checks
    (
        f"{TF}/v2.15.0/tensorflow/compiler/jit/xla_platform_info.cc",
        "Could not find compiler for platform %s: %s",
        "W tensorflow/core/framework/op_kernel.cc:1816] OP_REQUIRES failed at xla_ops.cc:503 : UNIMPLEMENTED: Could not find compiler for platform CUDA: NOT_FOUND: could not find registered compiler for platform CUDA -- was support for that platform linked in?",
        "xla-no-cuda-compiler",
    ),
    (
        f"{TFK}/v3.9.0/keras/src/trainers/trainer.py#L174",
        "If `run_eagerly` is True, then `jit_compile` cannot also be True. Disabling `jit_compile`.",
        "/usr/local/lib/python3.11/site-packages/keras/src/trainers/trainer.py:174: UserWarning: If `run_eagerly` is True, then `jit_compile` cannot also be True. Disabling `jit_compile`.",
        "harmless",
    ),
    (
        f"{TFK}/v3.9.0/keras/src/backend/jax/export.py#L173",
        "JAX backend is using GPU for export, but installed TF package cannot access GPU, ...",
        "/usr/local/lib/python3.11/site-packages/keras/src/backend/jax/export.py:173: UserWarning: JAX backend is using GPU for export, but installed TF package cannot access GPU, so reloading the model with the TF runtime in the same environment will not work.",
        "keras-jax-export-tf-no-gpu",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/python/distribute/cross_device_ops.py",
        "Nccl kernel is not found, not using nccl allreduce.",
        "WARNING:tensorflow:Nccl kernel is not found, not using nccl allreduce.",
        "harmless",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/python/distribute/cross_device_ops.py",
        "Efficient allreduce is not supported for IndexedSlices.",
        "WARNING:tensorflow:Efficient allreduce is not supported for IndexedSlices.",
        "harmless",
    ),
    (
        f"{TF}/v2.15.0/tensorflow/python/distribute/mirrored_run.py",
        "Using %s eagerly has significant overhead currently. ...",
        "WARNING:tensorflow:Using MirroredStrategy eagerly has significant overhead currently. We will be working on improving this in the future, but for now please wrap `call_for_each_replica` or `experimental_run` or `run` inside a tf.function to get the best performance.",
        "harmless",
    ),
    # ptxas' own words, as XLA passes them through
    (
        f"{XLA}/main/xla/stream_executor/cuda/subprocess_compilation.cc",
        "ptxas fatal   : Value '%s' is not defined for option 'gpu-name'",
        "ptxas fatal   : Value 'sm_90a' is not defined for option 'gpu-name'",
        "ptxas-unknown-gpu-target",
    ),
    (
        f"{XLA}/main/xla/stream_executor/cuda/subprocess_compilation.cc",
        "ptxas %s, line %d; fatal   : Unsupported .target '%s'",
        "ptxas /tmp/tempfile-host-4b3ba6c8-12345-5f1e0f, line 5; fatal   : Unsupported .target 'sm_120'",
        "ptxas-unknown-gpu-target",
    ),
]

ERRORS = [row for row in SWEEP if row[3] not in ("harmless", "quiet")]


@pytest.mark.parametrize("source, fmt, line, expected", SWEEP, ids=[f"{i}-{r[3]}" for i, r in enumerate(SWEEP)])
def test_a_source_message_is_read_as_its_source_means_it(source, fmt, line, expected):
    assert source.startswith("https://github.com/") and "/blob/" in source
    result = CATALOGUE.scan_text(line)
    explanations = explain(result)
    if expected == "quiet":
        assert all(e.harmless for e in explanations)
    elif expected == "harmless":
        assert explanations, "a routine notice should be recognised"
        assert all(e.harmless for e in explanations)
    else:
        assert expected in result.ids
        (explanation,) = [e for e in explanations if e.id == expected]
        assert not explanation.harmless


def test_no_error_of_the_sweep_is_called_harmless():
    for _, _, line, expected in ERRORS:
        flagged = [e.id for e in explain(CATALOGUE.scan_text(line)) if e.harmless]
        assert expected not in flagged


def test_the_sweep_covers_the_families():
    assert len(SWEEP) >= 40
    assert len(ERRORS) >= 15


def test_the_rematerialization_warning_reads_the_sizes():
    (explanation,) = explain(
        CATALOGUE.scan_text(SWEEP[[r[3] for r in SWEEP].index("xla-rematerialization-over-memory")][2])
    )
    assert explanation.variables["limit"] == "17.97GiB"
    assert explanation.variables["needed"] == "20.51GiB"


def test_the_unsupported_op_is_named():
    (explanation,) = explain(CATALOGUE.scan_text(SWEEP[[r[3] for r in SWEEP].index("xla-unsupported-op-for-jit")][2]))
    assert explanation.variables["op"] == "StringFormat"
    assert explanation.variables["device"] == "XLA_GPU_JIT"


def test_the_gpu_newer_than_xla_names_both_architectures():
    line = SWEEP[[r[3] for r in SWEEP].index("xla-gpu-newer-than-llvm")][2]
    (explanation,) = explain(CATALOGUE.scan_text(line))
    assert (explanation.variables["cc"], explanation.variables["sm"]) == ("12.0", "sm_90")


def test_a_cpu_only_strategy_is_not_called_harmless():
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "WARNING:tensorflow:There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce."
        )
    )
    assert not explanation.harmless
