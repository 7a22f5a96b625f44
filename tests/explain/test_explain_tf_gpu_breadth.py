"""The causes of TensorFlow's GPU messages ranked from the parts of the message and of the log: the
allocator TF_GPU_ALLOCATOR chose, the cuBLAS status, the device list an op error prints, the host
name op_registry prints, the routine that failed before "Blas GEMM launch failed". Each message is
written from the format string of the source that prints it (named in the pattern's ``sources``),
with the parts a run fills in chosen here."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _explained(text: str):
    return {e.id: e for e in explain(CATALOGUE.scan_text(text))}


def _causes(text: str, pattern_id: str) -> list[str]:
    explanations = _explained(text)
    assert pattern_id in explanations, sorted(explanations)
    return [cause.id for cause in explanations[pattern_id].causes]


# (log, pattern id, first cause id)
RANKED = [
    # XLA's libdevice search (nvptx_libdevice_path.cc): the pip wheel route comes first
    (
        "W0000 00:00:1700000000.2 31 gpu_backend_lib.cc:579] Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the program we try to run uses routines from libdevice.",
        "libdevice-not-found",
        "cuda-nvcc-wheel-missing",
    ),
    # cuda_blas.cc, DoBlasInternalImpl: the status names the cause
    (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:652] failed to run cuBLAS routine cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED",
        "cublas-routine-failed",
        "release-lacks-arch",
    ),
    (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:428] failed to run cuBLAS routine: CUBLAS_STATUS_ALLOC_FAILED",
        "cublas-routine-failed",
        "gpu-memory-preallocated",
    ),
    # matmul_op_impl.h's "Blas GEMM launch failed" after the line that says why
    (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:428] failed to run cuBLAS routine: CUBLAS_STATUS_EXECUTION_FAILED\n"
        "  (0) Internal: Blas GEMM launch failed : a.shape=(64, 2), b.shape=(2, 128), m=64, n=128, k=2",
        "blas-launch-failed",
        "release-lacks-arch",
    ),
    (
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:238] failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED\n"
        "W tensorflow/core/common_runtime/base_collective_executor.cc:217] BaseCollectiveExecutor::StartAbort Internal: Blas xGEMM launch failed",
        "blas-launch-failed",
        "other-process-holds-gpu",
    ),
    (
        "InternalError: Blas GEMM launch failed : a.shape=(64, 2), b.shape=(2, 128), m=64, n=128, k=2",
        "blas-launch-failed",
        "gpu-memory-preallocated",
    ),
    # op_kernel.cc's device list without a GPU under an NCCL kernel error
    (
        'InvalidArgumentError: No OpKernel was registered to support Op \'NcclAllReduce\' used by {{node Adam/NcclAllReduce}} with these attrs: [reduction="sum", T=DT_FLOAT, num_devices=2, shared_name="c0"]\n'
        "Registered devices: [CPU, XLA_CPU]",
        "nccl-allreduce-no-kernel",
        "tf-registered-no-gpu",
    ),
    (
        'InvalidArgumentError: No OpKernel was registered to support Op \'NcclAllReduce\' used by {{node Adam/NcclAllReduce}} with these attrs: [reduction="sum", T=DT_FLOAT, num_devices=2, shared_name="c0"]\n'
        "Registered devices: [CPU, GPU]",
        "nccl-allreduce-no-kernel",
        "nccl-not-on-windows",
    ),
    # op.cc, OpRegistry::LookUp: the host name says which system runs it
    (
        "NotFoundError: Op type not registered 'NcclAllReduce' in binary running on Studio-Mini.local. Make sure the Op and Kernel are registered in the binary running in this process.",
        "nccl-op-not-registered",
        "build-without-nccl",
    ),
    (
        "InvalidArgumentError: Op type not registered 'NcclAllReduce' in binary running on DESKTOP-4Q2R7TZ. Make sure the Op and Kernel are registered in the binary running in this process.",
        "nccl-op-not-registered",
        "nccl-not-on-windows",
    ),
    (
        "ValueError: Op type not registered 'NcclBroadcast' in binary running on 5f0c2e9a1b7d. Make sure the Op and Kernel are registered in the binary running in this process.",
        "nccl-op-not-registered",
        "nccl-not-on-windows",
    ),
    # TensorFlow 2.0-2.4's asm_compiler.cc for a CUDA 8 ptxas; XLA's minimum ptxas check
    (
        "W tensorflow/stream_executor/gpu/asm_compiler.cc:63] You are using ptxas 8.x, but TF requires ptxas 9.x (and strongly prefers >= 9.2.88).  Compilation of XLA kernels below will likely fail.",
        "ptxas-known-miscompile",
        "old-ptxas-on-path",
    ),
    (
        "W tensorflow/core/framework/op_kernel.cc:1839] OP_REQUIRES failed at xla_ops.cc:580 : INTERNAL: XLA requires ptxas version 11.8 or higher",
        "ptxas-below-xla-minimum",
        "old-ptxas-on-path",
    ),
    # gpu_device.cc, CreateGPUDevice; gpu_cudamallocasync_allocator.cc, SetStreamAndPreallocateMemory
    (
        "tensorflow.python.framework.errors_impl.InternalError: No allocator statistics",
        "gpu-allocator-no-statistics",
        "cuda-malloc-async-early-release",
    ),
    (
        "F tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc:390] Trying to set the stream twice. This isn't supported.",
        "cuda-malloc-async-stream-twice",
        "cuda-malloc-async-session-recreated",
    ),
    # tf.__internal__ reached by a tf_keras or keras that is not TensorFlow's pair; keras.__version__
    (
        "AttributeError: module 'tensorflow._api.v2.compat.v2.__internal__' has no attribute 'register_load_context_function'",
        "keras-tf-versions-mismatch",
        "keras-tf-pair-mismatch",
    ),
    (
        "ImportError: cannot import name '__version__' from 'keras' (/opt/venv/lib/python3.9/site-packages/keras/__init__.py)",
        "keras-tf-versions-mismatch",
        "keras-tf-pair-mismatch",
    ),
    # Keras 3's KerasTensor.__tf_tensor__
    (
        "ValueError: A KerasTensor cannot be used as input to a TensorFlow function. A KerasTensor is a symbolic placeholder for a shape and dtype.",
        "keras3-unsupported-code",
        "keras3-with-tf-keras-code",
    ),
]


@pytest.mark.parametrize(("log", "pattern_id", "first"), RANKED, ids=[f"{p}-{f}" for _, p, f in RANKED])
def test_cause_ranked_first_from_the_message(log, pattern_id, first):
    assert _causes(log, pattern_id)[0] == first


def test_arch_cause_only_for_statuses_that_mean_it():
    """A cuBLAS out of memory is not a missing architecture: that cause is not listed at all."""
    causes = _causes("failed to run cuBLAS routine: CUBLAS_STATUS_ALLOC_FAILED", "cublas-routine-failed")
    assert "release-lacks-arch" not in causes
    assert "release-lacks-arch" in _causes(
        "failed to run cuBLAS routine: CUBLAS_STATUS_ARCH_MISMATCH", "cublas-routine-failed"
    )


@pytest.mark.parametrize(
    "line",
    [
        "Registered devices: [CPU, GPU, XLA_CPU, XLA_GPU]",
        "Registered devices: [CPU, GPU]",
        "Registered kernels:",
    ],
)
def test_a_device_list_with_a_gpu_is_not_reported(line):
    assert "registered-devices-without-gpu" not in _explained(line)


def test_device_list_without_gpu_is_explained_with_its_devices():
    (explanation,) = explain(CATALOGUE.scan_text("Registered devices: [CPU, XLA_CPU]"))
    assert explanation.id == "registered-devices-without-gpu"
    assert explanation.variables["devices"] == "CPU, XLA_CPU"
    assert explanation.harmless is False


def test_xla_minimum_is_read_from_the_message():
    (explanation,) = explain(CATALOGUE.scan_text("InternalError: XLA requires ptxas version 12.3 or higher"))
    assert explanation.id == "ptxas-below-xla-minimum"
    assert explanation.variables["minimum"] == "12.3"
    assert "12.3" in explanation.title
