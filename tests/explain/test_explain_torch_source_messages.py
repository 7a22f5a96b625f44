"""PyTorch's own GPU and CUDA messages, read from the source that prints them.

tests/fixtures/torch_cuda_messages.yaml enumerates the formats of PyTorch's CUDA layer across its
releases (torch/cuda/__init__.py's lazy initialisation and capability checks, c10/cuda's device
count, error check and caching allocator, ATen's cuBLAS, cuSOLVER, cuDNN, cuFFT and NVRTC checks,
torch/utils/cpp_extension.py, torch.distributed's NCCL process group, torch/__init__.py's library
loading, torch.compile and its Triton), each filled in with plausible values. Every line is held to
its class: the explanation, harmless or not, and the first cause, which is what the source checked
just before printing (the wheel's architecture list for the capability warnings, the status the
CUDA call returned, the option PYTORCH_CUDA_ALLOC_CONF held). A message of the program's own (a
device-side assert, tensors on two devices) stays unexplained, and so do lines that only look like
these messages.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()
TABLE = yaml.safe_load(
    (Path(__file__).parent.parent / "fixtures" / "torch_cuda_messages.yaml").read_text(encoding="utf-8")
)["messages"]

SAMPLES = [(entry, sample) for entry in TABLE for sample in entry["samples"]]


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


def test_the_table_names_a_source_and_releases_for_every_format():
    ids = [entry["id"] for entry in TABLE]
    assert len(ids) == len(set(ids))
    for entry in TABLE:
        assert entry["source"].startswith("https://"), entry["id"]
        assert entry["releases"] and entry["format"] and entry["samples"], entry["id"]
        for sample in entry["samples"]:
            assert ("quiet" in entry) != ("id" in sample), entry["id"]


@pytest.mark.parametrize("entry, sample", SAMPLES, ids=[f"{e['id']}:{n}" for n, (e, _) in enumerate(SAMPLES)])
def test_each_source_format_is_explained_as_its_source_checked(entry, sample):
    found = _explain(sample["text"])
    if "quiet" in entry:
        assert not found, [e.id for e in found]
        return
    by_id = {e.id: e for e in found}
    assert sample["id"] in by_id, [e.id for e in found]
    explanation = by_id[sample["id"]]
    assert explanation.harmless is sample["harmless"]
    first = explanation.causes[0].id if explanation.causes else explanation.id
    assert first == sample["cause"], [c.id for c in explanation.causes]


@pytest.mark.parametrize(
    "text",
    [
        # cut before the version, or only the hint of PyTorch's messages
        "Found GPU0 GeForce RTX 2080 Ti which requires CUDA",
        "Did you run some cuda functions before calling NumCudaDevices() that might have already set an error?",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        # settings and successful states, as scripts print them
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "CUBLAS_WORKSPACE_CONFIG=:4096:8",
        "torch.distributed.init_process_group(backend='nccl') done: rank 0 of 2",
        "The server socket has started to listen on [::]:29500",
        "Environment variable TORCH_NCCL_ASYNC_ERROR_HANDLING is set to 1",
        "libtorch_cuda.so found in torch/lib",
        "opened libnvrtc-builtins.so.12.1",
        "Found a working triton installation: 3.0.0",
        "cuDNN algorithm found for convolution",
        "Unknown CUDA arch list given; using the default",
        "User provided device_type of 'cuda'",
        "Attempting to deserialize object on CUDA device 0",
        "AssertionError: Invalid device id: expected a string",
        "Some NCCL operations have finished",
        "Distributed package has NCCL built in",
    ],
)
def test_look_alikes_of_the_source_formats_stay_quiet(text):
    assert not _explain(text), [e.id for e in _explain(text)]


@pytest.mark.parametrize(
    "sm, first",
    [
        ("37", "compute-capability-too-low"),
        ("52", "compute-capability-too-low"),
        ("61", "compute-capability-too-low"),
        ("86", "release-lacks-arch"),
        ("90", "release-lacks-arch"),
        ("120", "release-lacks-arch"),
    ],
)
def test_the_cubin_check_ranks_by_the_major_the_wheels_always_carry(sm, first):
    """_check_cubins warns when no sm_ entry of the wheel has the GPU's major; every wheel carries a
    7.x entry, so a 3.x, 5.x or 6.x GPU is below the list and a newer one above it."""
    text = f"NVIDIA GPU with CUDA capability sm_{sm} is not compatible with the current PyTorch installation."
    (explanation,) = _explain(text)
    assert explanation.id == "no-kernel-image-for-device"
    assert explanation.causes[0].id == first


@pytest.mark.parametrize(
    "text, first",
    [
        ("RuntimeError: Unrecognized CachingAllocator option: expandable_segments", "alloc-conf-option-too-new"),
        ("RuntimeError: Expected a single True/False argument for expandable_segments", "alloc-conf-misspelt"),
        ("RuntimeError: garbage_collect_threshold too big, set it 0.0~1.0", "alloc-conf-misspelt"),
    ],
)
def test_the_allocator_settings_name_the_option_it_refused(text, first):
    (explanation,) = _explain(text)
    assert explanation.id == "torch-alloc-conf-invalid" and not explanation.harmless
    assert explanation.causes[0].id == first
    shells = {c.shell for c in explanation.fix.commands}
    assert "powershell" not in shells  # no Windows sign: the bash command only


def test_the_allocator_fix_is_powershell_on_windows():
    text = (
        "C:\\Users\\me\\venv\\lib\\site-packages\\torch\\cuda\\__init__.py:300: "
        "RuntimeError: Unrecognized CachingAllocator option: expandable_segments"
    )
    (explanation,) = _explain(text)
    lines = [c.line for c in explanation.fix.commands]
    assert lines == ["Remove-Item Env:PYTORCH_CUDA_ALLOC_CONF"]


@pytest.mark.parametrize(
    "text, first",
    [
        ("RuntimeError: Distributed package doesn't have NCCL built in", "platform-without-nccl"),
        ("torch.distributed.DistBackendError: NCCL error in: x", None),
    ],
)
def test_nccl_not_built_ranks_the_platform_first(text, first):
    ids = {e.id: e for e in _explain(text)}
    if first is None:
        assert "torch-nccl-not-built" not in ids
        return
    assert ids["torch-nccl-not-built"].causes[0].id == first


def test_nccl_not_built_on_linux_is_the_cpu_wheel_first():
    text = (
        "/home/u/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:1013\n"
        "RuntimeError: Distributed package doesn't have NCCL built in"
    )
    (explanation,) = _explain(text)
    assert explanation.id == "torch-nccl-not-built"
    assert explanation.causes[0].id == "torch-cpu-wheel"


def test_a_timed_out_collective_is_the_watchdogs_reason_not_a_second_message():
    text = (
        "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600083 "
        "milliseconds before timing out.\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Some NCCL operations have failed or timed out. "
        "Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1543] To avoid data inconsistency, we are taking the entire process down."
    )
    assert [e.id for e in _explain(text)] == ["nccl-watchdog-timeout"]


def test_triton_missing_is_windows_first_only_on_windows():
    linux = "torch._inductor.exc.TritonMissing: Cannot find a working triton installation."
    windows = (
        "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\_inductor\\scheduler.py:2300\n"
        "torch._inductor.exc.TritonMissing: Cannot find a working triton installation."
    )
    assert _explain(linux)[0].causes[0].id == "triton-not-installed"
    assert _explain(windows)[0].causes[0].id == "triton-windows"


def test_the_torch_library_an_extension_needs_names_the_cause_by_the_file():
    (old,) = _explain("ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory")
    (cpu,) = _explain("OSError: libtorch_cuda.so: cannot open shared object file: No such file or directory")
    assert old.causes[0].id == "torch-extension-other-torch"
    assert cpu.causes[0].id == "torch-cpu-wheel"


def test_pytorchs_own_cudnn_check_marks_the_log_as_pytorchs():
    """AT_CUDNN_CHECK's "RuntimeError: cuDNN error: CUDNN_STATUS_..." is PyTorch's wording, so
    TensorFlow's start-up reservation is not offered as the cause."""
    text = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    assert read_context(text).get("log_framework") == "pytorch"
    (explanation,) = _explain(text)
    assert "gpu-memory-preallocated" not in [c.id for c in explanation.causes]
    # TensorFlow's wording of the same status keeps its own reading
    tf = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED"
    )
    assert read_context(tf).get("log_framework", "") == ""


def test_the_cuda_driver_check_names_the_status_by_its_text_but_not_unknown_error():
    (named,) = _explain("RuntimeError: CUDA driver error: device kernel image is invalid")
    assert named.id == "cuda-driver-status" and "CUDA_ERROR_INVALID_IMAGE" in named.title
    assert not _explain("RuntimeError: CUDA driver error: unknown error")


def test_the_device_count_warning_names_its_status_by_number():
    text = (
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? Error 802: system not "
        "yet initialized (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)"
    )
    (explanation,) = _explain(text)
    assert explanation.id == "cuda-runtime-status" and "cudaErrorSystemNotReady" in explanation.title
    assert explanation.causes[0].id == "fabric-manager-not-running"


@pytest.mark.parametrize(
    "text, first",
    [
        # 2.1's wording without this process's line: PyTorch's own share is allocated + unallocated
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
            "23.99 GiB of which 0 bytes is free. Of the allocated memory 21.10 GiB is allocated by PyTorch, and "
            "1.43 GiB is reserved by PyTorch but unallocated.",
            "batch-too-large",
        ),
        # more asked than is free while this process holds most of the GPU
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.96 GiB. GPU 0 has a total capacty "
            "of 23.69 GiB of which 5.25 GiB is free. Including non-PyTorch memory, this process has 18.17 GiB memory "
            "in use. Of the allocated memory 17.88 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch "
            "but unallocated.",
            "batch-too-large",
        ),
        # another process holds the GPU
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of "
            "7.75 GiB of which 20.06 MiB is free. Process 2211 has 6.10 GiB memory in use. Including non-PyTorch "
            "memory, this process has 1.60 GiB memory in use. Of the allocated memory 1.35 GiB is allocated by "
            "PyTorch, and 66.49 MiB is reserved by PyTorch but unallocated.",
            "other-process-holds-gpu",
        ),
        # set_per_process_memory_fraction's cap, in 1.x's and 2.x's places
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity; 17.00 GiB "
            "already allocated; 60.10 GiB free; 18.00 GiB allowed; 17.50 GiB reserved in total by PyTorch)",
            "torch-memory-fraction-cap",
        ),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.14 GiB of which 60.12 GiB is free. Including non-PyTorch memory, this process has 19.01 GiB memory in "
            "use. 18.00 GiB allowed; Of the allocated memory 17.50 GiB is allocated by PyTorch, and 10.00 MiB is "
            "reserved by PyTorch but unallocated.",
            "torch-memory-fraction-cap",
        ),
    ],
)
def test_the_out_of_memory_figures_rank_the_causes(text, first):
    (explanation,) = _explain(text)
    assert explanation.id == "torch-cuda-out-of-memory"
    causes = [c.id for c in explanation.causes]
    assert causes[0] == first
    if first != "torch-memory-fraction-cap":
        assert "torch-memory-fraction-cap" not in causes


def test_an_out_of_memory_with_room_left_and_little_held_names_no_side():
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 7.79 GiB total capacity; 0 bytes "
        "already allocated; 6.31 GiB free; 0 bytes reserved in total by PyTorch)"
    )
    (explanation,) = _explain(text)
    assert explanation.variables.get("held_here", "") == "" and explanation.variables.get("held_elsewhere", "") == ""
