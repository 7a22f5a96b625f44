"""TensorFlow's memory messages read from the allocators that print them.

- Which memory ran out is the allocator's: ``GPU_0_bfc`` is the GPU's pool, ``gpu_host_bfc``
  (TF 1.x ``cuda_host_bfc``) the pool of pinned host RAM that gpu_process_state.cc creates with its
  own limit, TF_GPU_HOST_MEM_LIMIT_IN_MB (64 GiB unless set); StreamExecutor's HostAllocate
  ("failed to alloc N bytes on host: CUDA_ERROR_...") pins RAM, DeviceAllocate ("failed to
  allocate X (N bytes) from device") takes the GPU's memory.
- The sizes rank the causes: the device's memory when TensorFlow found it (TF 1.x "Free memory"
  under half of "Total memory", or the memory it gave the device under half of the GPU's) says
  another process held the GPU; the BFC dump's Stats say whether the request is as large as the
  whole pool, whether the pool had the bytes free but no block as large (fragmentation), whether
  it could not grow to its limit, or whether it is in use to its limit; a pinned request of a few
  kilobytes is no shortage of RAM.
"""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _found(text: str) -> dict[str, list[str]]:
    return {e.id: [c.id for c in e.causes] for e in explain(CATALOGUE.scan_text(text))}


def _causes(text: str, pattern_id: str) -> list[str]:
    return _found(text)[pattern_id]


GPU_OOM_TF2 = (
    "W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to "
    "allocate 560.44MiB (rounded to 587661312)requested by op _EagerConst"
)
GPU_OOM_TF1 = (
    "W tensorflow/core/common_runtime/bfc_allocator.cc:279] Allocator (GPU_0_bfc) ran out of memory trying to "
    "allocate 1.22GiB.  Current allocation summary follows."
)
OOM_TENSOR = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
    "shape[64,256,56,56] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)


def _stats(limit: int, in_use: int, largest: int | None = None, region: int | None = None) -> str:
    lines = [
        "I tensorflow/core/common_runtime/bfc_allocator.cc:1080] Stats: ",
        f"Limit:                      {limit}",
        f"InUse:                      {in_use}",
        f"MaxInUse:                   {in_use}",
        "NumAllocs:                       1234",
    ]
    if largest is not None:
        lines.append(f"LargestFreeBlock:           {largest}")
    if region is not None:
        lines.append(
            f"I tensorflow/core/common_runtime/bfc_allocator.cc:1083] total_region_allocated_bytes_: {region} "
            f"memory_limit_: {limit} available bytes: {limit - region} curr_region_allocation_bytes_: {2 * region}"
        )
    return "\n".join(lines)


# --- the facts the log shows ---------------------------------------------------------------------

TF1_DEVICE = """I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found device 0 with properties:
name: GeForce RTX 2070 major: 7 minor: 5 memoryClockRate(GHz): 1.62
pciBusID: 0000:01:00.0
totalMemory: 8.00GiB freeMemory: {free}"""
TF0_DEVICE = """I tensorflow/core/common_runtime/gpu/gpu_init.cc:102] Found device 0 with properties:
name: Tesla K80
major: 3 minor: 7 memoryClockRate (GHz) 0.8235
pciBusID 0000:05:00.0
Total memory: 8.92GiB
Free memory: {free}"""
TF2_DEVICE = """I tensorflow/core/common_runtime/gpu/gpu_device.cc:1561] Found device 0 with properties:
pciBusID: 0000:01:00.0 name: GeForce RTX 2080 computeCapability: 7.5
coreClock: 1.71GHz coreCount: 46 deviceMemorySize: 7.79GiB deviceMemoryBandwidth: 417.29GiB/s
I tensorflow/core/common_runtime/gpu/gpu_device.cc:1402] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with {mb} MB memory) -> physical GPU (device: 0, name: GeForce RTX 2080, pci bus id: 0000:01:00.0, compute capability: 7.5)"""


@pytest.mark.parametrize(
    "log, held",
    [
        (TF1_DEVICE.format(free="6.57GiB"), False),
        (TF1_DEVICE.format(free="305.44MiB"), True),
        (TF0_DEVICE.format(free="8.10GiB"), False),
        (TF0_DEVICE.format(free="148.69MiB"), True),
        (TF2_DEVICE.format(mb="6198"), False),
        (TF2_DEVICE.format(mb="203"), True),
        # the program set the device's memory itself: its size is that setting, not what was free
        (
            TF2_DEVICE.format(mb="1024")
            + "\ntf.config.set_logical_device_configuration(gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=1024)])",
            False,
        ),
        (TF2_DEVICE.format(mb="2048") + "\nconfig.gpu_options.per_process_gpu_memory_fraction = 0.25", False),
    ],
)
def test_memory_held_elsewhere_at_start(log, held):
    facts = read_context(log)
    assert (facts.get("log_gpu_held_elsewhere") == "yes") is held
    assert "log_gpu_memory_total" in facts


@pytest.mark.parametrize(
    "dump, fact",
    [
        (_stats(6586200064, 2000000000, largest=300000000), "log_bfc_fragmented"),  # 4.5 GB free, no 560 MB block
        (_stats(6586200064, 6586000000, largest=200000), "log_bfc_full"),
        (_stats(400000000, 100000000), "log_bfc_over_limit"),  # 560 MiB asked of a 400 MB pool
        (_stats(6586200064, 1200000000, region=1300000000), "log_bfc_growth_refused"),  # could not grow
    ],
)
def test_the_dump_says_what_the_pool_did(dump, fact):
    facts = read_context(GPU_OOM_TF2 + "\n" + dump)
    derived = {
        k for k in ("log_bfc_fragmented", "log_bfc_full", "log_bfc_over_limit", "log_bfc_growth_refused") if k in facts
    }
    assert derived == {fact}


def test_a_retry_notice_is_no_failed_request():
    notice = (
        "W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran out of memory trying to "
        "allocate 1.02GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean "
        "that there could be performance gains if more memory were available."
    )
    facts = read_context(notice + "\n" + _stats(400000000, 100000000))
    assert "log_bfc_request" not in facts and "log_bfc_over_limit" not in facts


def test_largest_free_block_as_large_as_the_request_is_not_fragmentation():
    facts = read_context(GPU_OOM_TF2 + "\n" + _stats(6586200064, 2000000000, largest=900000000))
    assert "log_bfc_fragmented" not in facts


# --- the ranking -----------------------------------------------------------------------------------


@pytest.mark.parametrize("message, pattern_id", [(GPU_OOM_TF2, "bfc-allocator-out-of-memory"), (GPU_OOM_TF1, "bfc-allocator-out-of-memory"), (OOM_TENSOR, "oom-allocating-tensor")])  # fmt: skip
def test_alone_the_batch_comes_first(message, pattern_id):
    assert _causes(message, pattern_id)[0] == "batch-too-large"


@pytest.mark.parametrize("message, pattern_id", [(GPU_OOM_TF1, "bfc-allocator-out-of-memory"), (OOM_TENSOR, "oom-allocating-tensor")])  # fmt: skip
@pytest.mark.parametrize("device", [TF1_DEVICE.format(free="305.44MiB"), TF0_DEVICE.format(free="148.69MiB"), TF2_DEVICE.format(mb="203")])  # fmt: skip
def test_a_gpu_mostly_taken_at_start_puts_the_other_process_first(message, pattern_id, device):
    assert _causes(device + "\n" + message, pattern_id)[0] == "other-process-holds-gpu"
    # and a GPU that was free leaves the batch first
    free = TF1_DEVICE.format(free="7.60GiB")
    assert _causes(free + "\n" + message, pattern_id)[0] == "batch-too-large"


def test_a_full_pool_on_a_gpu_taken_at_start_is_the_other_process():
    log = TF1_DEVICE.format(free="305.44MiB") + "\n" + GPU_OOM_TF1 + "\n" + _stats(2000000000, 1990000000)
    assert read_context(log).get("log_bfc_full") == "yes"
    assert _causes(log, "bfc-allocator-out-of-memory")[0] == "other-process-holds-gpu"


@pytest.mark.parametrize("message, pattern_id", [(GPU_OOM_TF2, "bfc-allocator-out-of-memory"), (GPU_OOM_TF2 + "\n" + OOM_TENSOR, "oom-allocating-tensor")])  # fmt: skip
def test_the_dump_ranks_the_causes(message, pattern_id):
    fragmented = message + "\n" + _stats(6586200064, 2000000000, largest=300000000)
    assert _causes(fragmented, pattern_id)[0] == "gpu-memory-fragmented"
    refused = message + "\n" + _stats(6586200064, 1200000000, region=1300000000)
    assert _causes(refused, pattern_id)[0] == "other-process-holds-gpu"
    full = message + "\n" + _stats(6586200064, 6586000000, largest=200000)
    assert _causes(full, pattern_id)[0] == "batch-too-large"


def test_fragmentation_is_named_for_a_tensor_only_when_the_dump_shows_it():
    assert "gpu-memory-fragmented" not in _causes(OOM_TENSOR, "oom-allocating-tensor")


def test_a_device_request_on_a_gpu_taken_at_start():
    line = "E tensorflow/stream_executor/cuda/cuda_driver.cc:936] failed to allocate 203.69M (213581824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"
    assert (
        _causes(TF1_DEVICE.format(free="305.44MiB") + "\n" + line, "cuda-out-of-memory")[0] == "other-process-holds-gpu"
    )


# --- pinned host memory is RAM ---------------------------------------------------------------------

HOST_POOL = [
    "W tensorflow/core/common_runtime/bfc_allocator.cc:467] Allocator (gpu_host_bfc) ran out of memory trying to allocate 3.81GiB (rounded to 4096000000)requested by op IteratorGetNext",
    "W tensorflow/core/common_runtime/bfc_allocator.cc:273] Allocator (cuda_host_bfc) ran out of memory trying to allocate 3.72GiB.  Current allocation summary follows.",
    "W0000 00:00:1755011248.049012     142 bfc_allocator.cc:501] Allocator (gpu_host_bfc) ran out of memory trying to allocate 12.00GiB (rounded to 12884901888)requested by op _EagerConst",
]


@pytest.mark.parametrize("line", HOST_POOL)
def test_the_host_pool_is_not_the_gpu(line):
    found = _found(line)
    assert "host-bfc-allocator-out-of-memory" in found and "bfc-allocator-out-of-memory" not in found
    assert found["host-bfc-allocator-out-of-memory"][0] == "host-memory-exhausted"
    assert (
        _causes(line + "\n" + _stats(68719476736, 68719476736), "host-bfc-allocator-out-of-memory")[0]
        == "host-allocator-limit"
    )
    wsl = "Linux box 5.15.90.1-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n" + line
    assert _causes(wsl, "host-bfc-allocator-out-of-memory")[0] == "pinned-memory-limit"


def test_the_host_pools_retry_notice_stays_harmless():
    notice = (
        "W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (gpu_host_bfc) ran out of memory trying to "
        "allocate 1.02GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory were available."
    )
    (only,) = explain(CATALOGUE.scan_text(notice))
    assert only.id == "allocator-not-a-failure" and only.harmless


HOST_ALLOC = [
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:868] failed to alloc 4294967296 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    "E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:1629] failed to alloc 2147483648 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    "E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:796] failed to alloc 12524123136 bytes on host: CUDA_ERROR_OPERATING_SYSTEM: OS call failed or operation not supported on this OS",
    "W .\\tensorflow/core/common_runtime/device/device_host_allocator.h:46] could not allocate pinned host memory of size: 34359738368",
    "W external/local_xla/xla/stream_executor/integrations/device_host_allocator.h:51] could not allocate pinned host memory of size: 2147483648",
    # a narrow terminal's cut after the status
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:893] failed to alloc 4294967296 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of m\nemory",
]


@pytest.mark.parametrize("line", HOST_ALLOC)
def test_pinning_ram_is_not_gpu_memory(line):
    found = _found(line)
    assert set(found) == {"pinned-host-memory-failed"}
    assert found["pinned-host-memory-failed"][0] == "host-memory-exhausted"
    assert "gpu-memory-preallocated" not in found["pinned-host-memory-failed"]


@pytest.mark.parametrize(
    "where",
    [
        "Linux box 5.15.90.1-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux",
        "docker run --gpus all -it tensorflow/tensorflow:2.4.0-gpu python train.py",
    ],
)
def test_wsl_or_a_container_caps_what_may_be_pinned(where):
    assert _causes(where + "\n" + HOST_ALLOC[0], "pinned-host-memory-failed")[0] == "pinned-memory-limit"


@pytest.mark.parametrize(
    "line",
    [
        "W ./tensorflow/core/common_runtime/gpu/pool_allocator.h:195] could not allocate pinned host memory of size: 2304",
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:967] failed to alloc 2304 bytes on host: CUDA_ERROR_UNKNOWN",
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:967] failed to alloc 65536 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    ],
)
def test_a_few_kilobytes_not_pinned_is_no_shortage_of_ram(line):
    assert _causes(line, "pinned-host-memory-failed")[0] == "gpu-memory-preallocated"


def test_a_device_request_stays_gpu_memory():
    line = "E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 3.90G (4185718784 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory"
    assert set(_found(line)) == {"cuda-out-of-memory"}


def test_a_request_over_a_small_pool_on_a_gpu_taken_at_start_is_the_other_process():
    # the pool is small because the GPU was: the request exceeds it, yet the batch is not the cause
    log = TF2_DEVICE.format(mb="203") + "\n" + GPU_OOM_TF2 + "\n" + _stats(213581824, 1000000)
    assert read_context(log).get("log_bfc_over_limit") == "yes"
    assert _causes(log, "bfc-allocator-out-of-memory")[0] == "other-process-holds-gpu"
    alone = GPU_OOM_TF2 + "\n" + _stats(213581824, 1000000)
    assert _causes(alone, "bfc-allocator-out-of-memory")[0] == "batch-too-large"


P40 = """I tensorflow/core/common_runtime/gpu/gpu_device.cc:1405] Found device 0 with properties:
name: Tesla P40 major: 6 minor: 1 memoryClockRate(GHz): 1.531
pciBusID: 0000:84:00.0
totalMemory: 22.38GiB freeMemory: {free}"""
ASK_ALL = "E tensorflow/stream_executor/cuda/cuda_driver.cc:903] failed to allocate 22.38G (24032378880 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"


@pytest.mark.parametrize("free", ["22.21GiB", "10.21GiB"])
def test_a_request_above_the_free_memory_is_a_memory_fraction(free):
    # TensorFlow's own first request is what was free less a reserve: more is per_process_gpu_memory_fraction
    log = P40.format(free=free) + "\n" + ASK_ALL
    assert read_context(log).get("log_device_request_over_free") == "yes"
    assert _causes(log, "cuda-out-of-memory")[0] == "memory-fraction-too-high"


def test_a_request_within_the_free_memory_is_not_a_fraction():
    within = "E tensorflow/stream_executor/cuda/cuda_driver.cc:903] failed to allocate 20.90G (22441230336 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"
    log = P40.format(free="22.21GiB") + "\n" + within
    assert "log_device_request_over_free" not in read_context(log)
    assert _causes(log, "cuda-out-of-memory")[0] == "other-process-holds-gpu"


ASYNC = (
    "E tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc:380] gpu_async_0 cuMemAllocAsync failed "
    "to allocate 2147483648 bytes: CUDA error: out of memory (CUDA_ERROR_OUT_OF_MEMORY)\n"
    " Reported by CUDA: Free memory/Total memory: {free}/25434587136\n"
    "E tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc:385] Stats: Limit:                     23587045376\n"
    "InUse:                 {in_use}\n"
    "MaxInUse:              {in_use}"
)


def test_the_async_allocators_own_pool_ranks_its_failure():
    mine = ASYNC.format(free="120586240", in_use="23400000000")
    assert read_context(mine).get("log_gpu_held_here") == "yes"
    assert _causes(mine, "cuda-out-of-memory")[0] == "batch-too-large"
    theirs = ASYNC.format(free="120586240", in_use="3400000000")
    facts = read_context(theirs)
    assert facts.get("log_gpu_held_elsewhere") == "yes" and "log_gpu_held_here" not in facts
    assert _causes(theirs, "cuda-out-of-memory")[0] == "other-process-holds-gpu"
    # the GPU not full: neither
    roomy = read_context(ASYNC.format(free="12058624000", in_use="3400000000"))
    assert "log_gpu_held_here" not in roomy and "log_gpu_held_elsewhere" not in roomy


def test_stats_on_the_line_of_their_heading_are_read():
    facts = read_context(ASYNC.format(free="120586240", in_use="3400000000"))
    assert facts.get("log_bfc_limit") == "23587045376" and facts.get("log_bfc_in_use") == "3400000000"
