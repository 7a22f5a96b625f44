"""Driver, kernel-module, container and NCCL messages, each written from the format string of the
source that prints it (named beside it and in the pattern's ``sources``), with the parts a run
fills in chosen here: each must be explained by its own pattern with the cause that the source's
condition (or the log around it) implies first, and a look-alike must stay quiet."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from envcheck.explain.context import read_context
from envcheck.explain.derivers import memory_size
from tests.explain.test_explain_source_families import CATALOGUE, assert_explained

# (family, message, pattern id, harmless, first cause id)
MESSAGES = [
    (
        "kernel",  # open-gpu-kernel-modules kernel-open/nvidia/nv.c, the legacy-GPU notice
        "[   12.5] NVRM: The NVIDIA GeForce GT 730 GPU installed in this system is\n"
        "[   12.5] NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please\n"
        "[   12.5] NVRM:  visit http://www.nvidia.com/object/unix.html for more\n"
        "[   12.5] NVRM:  information.  The 550.54.14 NVIDIA driver will ignore\n"
        "[   12.5] NVRM:  this GPU.  Continuing probe...\n"
        "[   12.5] NVRM: No NVIDIA GPU found.",
        "nvrm-no-devices-probed",
        False,
        "gpu-unsupported-by-driver",
    ),
    (
        "kernel",  # nv.c: no GPU taken, without a reason in the log: another driver is the likelier
        "[    3.1] NVRM: No NVIDIA GPU found.",
        "nvrm-no-devices-probed",
        False,
        "other-driver-holds-gpu",
    ),
    (
        "harmless",  # tensorflow/compiler/tf2tensorrt/common/utils (py_utils), quoted without its prefix
        "Could not find TensorRT",
        "tensorrt-not-found",
        True,
        "tensorrt-not-found",
    ),
    (
        "nccl",  # nccl-tests src/common.h, NCCLCHECK: "%s: Test NCCL failure %s:%d '%s'"
        "node7: Test NCCL failure all_reduce.cu:51 'unhandled system error'",
        "nccl-system-error",
        False,
        "nccl-shm-too-small",
    ),
    (
        "nccl",  # PyTorch NCCLUtils.hpp: "NCCL error in: %s:%d, %s", quoted from the file name on
        "RuntimeError: ProcessGroupNCCL.cpp:1191, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.14.3",
        "nccl-system-error",
        False,
        "nccl-shm-too-small",
    ),
    (
        "nccl",  # src/transport/net_socket.cc "NET/Socket : Using%s" (" [%d]%s:%s" each), then the error
        "host1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0> [1]docker0:172.17.0.1<0> [2]veth1a2b3c4:fe80::1%veth1a2b3c4<0>\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.14.3",
        "nccl-system-error",
        False,
        "nccl-network-interface",
    ),
    (
        "containers",  # libnvidia-container src/cli/common.c, the requirement check, under Docker Desktop
        "PS C:\\Users\\ada> docker run --gpus all img\n"
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6, please update your driver to a newer version, or use an earlier cuda container: unknown.",
        "container-cuda-requirement-unmet",
        False,
        "cuda-driver-too-old",
    ),
    (
        "memory",  # c10/cuda/CUDACachingAllocator.cpp before 2.1: the GPU full, PyTorch holding a fifth of it
        "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 15.90 GiB total capacity; 2.10 GiB already allocated; 40.50 MiB free; 3.02 GiB reserved in total by PyTorch)",
        "torch-cuda-out-of-memory",
        False,
        "other-process-holds-gpu",
    ),
    (
        "memory",  # the same format, PyTorch holding nearly all of the GPU: its own model and batch
        "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 15.90 GiB total capacity; 14.80 GiB already allocated; 40.50 MiB free; 15.10 GiB reserved in total by PyTorch)",
        "torch-cuda-out-of-memory",
        False,
        "batch-too-large",
    ),
    (
        "memory",  # CUDACachingAllocator.cpp from 2.1, "Process %d has %s memory in use" for another process
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.60 GiB of which 100.00 MiB is free. Process 4242 has 17.00 GiB memory in use. Including non-PyTorch memory, this process has 6.40 GiB memory in use. Of the allocated memory 5.90 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.",
        "torch-cuda-out-of-memory",
        False,
        "other-process-holds-gpu",
    ),
    (
        # the same format with free memory left, but more asked than is free while PyTorch itself
        # holds most of the GPU (18.1 of 23.6 GiB, nothing else in or beside the process): the
        # model and batch
        "memory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 23.60 GiB of which 5.00 GiB is free. Including non-PyTorch memory, this process has 18.40 GiB memory in use. Of the allocated memory 18.00 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.",
        "torch-cuda-out-of-memory",
        False,
        "batch-too-large",
    ),
    (
        "memory",  # free memory left and little of it PyTorch's: nothing says where the memory went
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 23.60 GiB of which 5.00 GiB is free. Including non-PyTorch memory, this process has 4.40 GiB memory in use. Of the allocated memory 4.00 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.",
        "torch-cuda-out-of-memory",
        False,
        "gpu-memory-held-by-other-framework",
    ),
    (
        "kernel",  # kernel/module/main.c: a module outside the kernel's tree, loaded
        "[    4.2] dxgkrnl: loading out-of-tree module taints kernel.",
        "kernel-module-taint-notice",
        True,
        "kernel-module-taint-notice",
    ),
]

# (text, pattern id that must not explain it)
NOT_THESE = [
    ("The 470.xx Legacy drivers are supported through the end of 2024", "nvrm-no-devices-probed"),
    ("Could not find TensorRT-LLM engine files in ./engines", "tensorrt-not-found"),
    ("RuntimeError: CUDA error: device-side assert triggered", "cuda-runtime-status"),
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCTensorMath.cu line=26 error=710 : device-side assert triggered",
        "cuda-runtime-status",
    ),
    ("pip: unhandled system error while unpacking the wheel", "nccl-system-error"),
    ("grep taints kernel.log", "kernel-module-taint-notice"),
]


@pytest.mark.parametrize("family, message, pattern_id, harmless, first", MESSAGES, ids=[m[2] for m in MESSAGES])
def test_source_message_is_explained_with_its_cause_first(family, message, pattern_id, harmless, first):
    assert_explained(message, pattern_id, harmless, first)


@pytest.mark.parametrize("text, pattern_id", NOT_THESE, ids=[n[1] for n in NOT_THESE])
def test_a_line_that_only_looks_like_it_is_not_claimed(text, pattern_id):
    assert pattern_id not in CATALOGUE.scan_text(text).ids


def test_nvidia_smi_without_a_driver_gives_way_to_the_kernel_logs_reason():
    log = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"
        "NVRM:  supported through the NVIDIA 390.xx Legacy drivers. Please\n"
    )
    assert CATALOGUE.scan_text(log).ids == ["nvrm-no-devices-probed"]
    assert CATALOGUE.scan_text(log.splitlines()[0]).ids == ["nvidia-smi-no-driver"]


def test_a_kernel_assert_leaves_other_runtime_errors_explained():
    assert CATALOGUE.scan_text("RuntimeError: CUDA error: misaligned address").ids == ["cuda-runtime-status"]


def test_the_nccl_interface_list_is_read_for_bridges_only():
    bridged = read_context("NCCL INFO NET/Socket : Using [0]ens5:10.1.2.3<0> [1]br-0123456789ab:172.18.0.1<0>")
    assert bridged["log_nccl_bridge"] == "br-0123456789ab"
    plain = read_context("NCCL INFO NET/Socket : Using [0]ens5:10.1.2.3<0> [1]ib0:10.9.0.3<0>")
    assert "log_nccl_bridge" not in plain
    assert "log_nccl_bridge" not in read_context("docker network create br-0123456789ab")


def test_a_container_requirement_on_windows_gets_a_command_windows_runs():
    log = next(m[1] for m in MESSAGES if m[2] == "container-cuda-requirement-unmet")
    (explanation,) = explain(CATALOGUE.scan_text(log))
    assert all(c.shell in ("any", "powershell") for c in explanation.causes[0].tell.commands)


def test_a_driver_mismatch_names_mixed_driver_packages():
    (explanation,) = explain(
        CATALOGUE.scan_text("Error 803: system has unsupported display driver / cuda driver combination")
    )
    assert [c.id for c in explanation.causes] == ["driver-upgraded-no-reboot", "stray-libcuda", "driver-packages-mixed"]


@pytest.mark.parametrize(
    "text, size",
    [
        ("10.76 GiB", 10.76 * 2**30),
        ("26.12 MiB", 26.12 * 2**20),
        ("0 bytes", 0.0),
        ("512 KB", 512 * 2**10),
        ("ten GiB", None),
    ],
)
def test_allocator_sizes_are_read_in_bytes(text, size):
    assert memory_size(text) == size


@pytest.mark.parametrize(
    "log, newer",
    [
        ("torch 1.6.0+cu101 on a GeForce RTX 3090", "yes"),
        ("torch 1.9.0+cu111 on a GeForce RTX 3090", None),
        ("major: 8 minor: 9 memoryClockRate (GHz) 2.5\nCUDA version: 11.2", "yes"),
        ("compute capability: 7.5\nCUDA version: 10.0", None),
        ("torch 1.6.0+cu101", None),
    ],
)
def test_a_gpu_newer_than_the_logs_cuda_is_read(log, newer):
    assert read_context(log).get("log_gpu_newer_than_cuda") == newer


@pytest.mark.parametrize(
    "cuda, first",
    [("10.1, V10.1.243", "release-lacks-arch"), ("11.2, V11.2.152", "gpu-memory-preallocated")],
)
def test_a_cudnn_handle_failure_on_a_gpu_newer_than_the_cuda_names_the_build_first(cuda, first):
    # cuda_dnn.cc's handle failure in a log naming an RTX 30 (8.6) and the CUDA toolkit: 10.1
    # predates 8.6, 11.2 builds for it (and memory stays the first cause)
    log = (
        "Found device 0 with properties: name: GeForce RTX 3080 computeCapability: 8.6\n"
        f"Cuda compilation tools, release {cuda}\n"
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
    )
    (explanation,) = [e for e in explain(CATALOGUE.scan_text(log)) if e.id == "cudnn-handle-failed"]
    assert explanation.causes[0].id == first


def test_a_taint_notice_beside_a_refused_module_is_not_called_harmless():
    log = (
        "nvidia: module license 'NVIDIA' taints kernel.\n"
        "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n"
    )
    explanations = {e.id: e for e in explain(CATALOGUE.scan_text(log))}
    assert not explanations["kernel-module-taint-notice"].harmless
