"""The causes of a status (``status_causes`` in cuda_status.yaml): where only a status is recognised,
the explanation carries the status's documented causes, ranked by what the message and the log
show, each with how to tell it apart and a fix; a pattern that explains the message keeps its own
causes; a cause the log's versions contradict is named as ruled out, not listed."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import yaml

from envcheck.explain import explain, load_patterns
from envcheck.explain.catalogue import PATTERN_ID, fill
from envcheck.explain.status_causes import VERSION_CHECKS, causes_of, load_status_causes
from envcheck.explain.statuses import STATUS_FILE, StatusTableError, load_statuses
from envcheck.resources import data_file

CATALOGUE = load_patterns()
RAW = yaml.safe_load(data_file(STATUS_FILE).read_text(encoding="utf-8"))
SECTION = RAW["status_causes"]
CATALOGUE_CAUSE_IDS = {c.id for p in CATALOGUE.patterns for c in p.causes}


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


def _one(text: str):
    (explanation,) = _explained(text)
    return explanation


def _ids(explanation) -> list[str]:
    return [c.id for c in explanation.causes]


# --- the data: every cause has its words, its tell, its fix and its source ------------------------


def test_every_cause_has_text_tell_fix_and_an_nvidia_or_framework_source():
    assert SECTION["sources"] and all(s.startswith("https://") for s in SECTION["sources"])
    for cause_id, cause in SECTION["causes"].items():
        assert PATTERN_ID.match(cause_id), cause_id
        assert cause["text"].strip().endswith(".") and len(cause["text"]) > 40, cause_id
        assert cause["tell"]["text"].strip() and cause["fix"]["text"].strip(), cause_id
        assert cause["source"].startswith("https://"), cause_id
        for command in [*cause["tell"].get("commands", []), *cause["fix"].get("commands", [])]:
            assert command.get("shell", "any") in ("any", "bash", "powershell"), cause_id


def test_every_table_keeps_its_sources():
    for table in RAW["tables"]:
        assert any(s.startswith("https://") for s in table["sources"]), table["enum"]


# Nothing a user pastes may delete, reset, kill or overwrite (sudo is only for reading, loading a
# module or starting a service).
_UNSAFE = re.compile(
    r"(?<!-)\brm\b|rmmod|modprobe -r|\breboot\b|shutdown|nvidia-smi -r\b|--gpu-reset|\bkill\b|\bdd\b|"
    r">\s*/(?!dev/null)|\|\s*(?:ba)?sh\b"
)


def test_every_command_is_safe_to_paste_as_it_stands():
    for cause_id, cause in SECTION["causes"].items():
        for part in ("tell", "fix"):
            for command in cause[part].get("commands", []):
                # no placeholder: a status's causes are the same for every message (braces are doubled)
                assert all(name is None for _, name, _, _ in string.Formatter().parse(command["line"])), cause_id
                line = fill(command["line"], {})
                assert not _UNSAFE.search(line), (cause_id, line)
                assert not re.search(r"<\w+>|\bCONTAINER\b|\bPID\b", line), (cause_id, line)  # nothing to edit first


def test_a_cause_the_catalogue_names_keeps_its_id():
    # the same cause, named by a pattern and by a status, has one id (so the two answers agree)
    shared = set(SECTION["causes"]) & CATALOGUE_CAUSE_IDS
    assert {
        "cvd-hides-all",
        "driver-upgraded-no-reboot",
        "gpu-memory-preallocated",
        "other-process-holds-gpu",
        "release-lacks-arch",
        "cuda-driver-too-old",
        "nccl-shm-too-small",
        "container-cgroup-reloaded",
        "gpu-fallen-off-bus",
        "gpu-memory-taken-before-cublas",
    } <= shared
    # the cuinit pattern for CUDA_ERROR_UNKNOWN and the table's causes for it agree
    unknown = next(p for p in CATALOGUE.patterns if p.id == "cuinit-unknown-error")
    assert {c.id for c in unknown.causes} <= {c.template.id for c in causes_of("CUDA_ERROR_UNKNOWN")}


def test_every_status_named_exists_and_has_causes_for_a_log_that_shows_nothing():
    tables = load_statuses()
    for entry in SECTION["statuses"]:
        for name in entry["names"]:
            assert tables.by_name(name), name
            assert causes_of(name), name


def test_the_statuses_people_meet_have_causes():
    wanted = """CUDA_ERROR_NO_DEVICE cudaErrorInsufficientDriver CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE CUDA_ERROR_NOT_INITIALIZED CUDA_ERROR_UNKNOWN
    CUDA_ERROR_OPERATING_SYSTEM CUDA_ERROR_SYSTEM_NOT_READY CUDA_ERROR_NOT_PERMITTED CUDA_ERROR_STUB_LIBRARY
    CUDA_ERROR_DEVICE_UNAVAILABLE CUDA_ERROR_OUT_OF_MEMORY CUDA_ERROR_LAUNCH_FAILED CUDA_ERROR_ILLEGAL_ADDRESS
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES CUDA_ERROR_NO_BINARY_FOR_GPU CUDA_ERROR_INVALID_PTX
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION CUDA_ERROR_JIT_COMPILER_NOT_FOUND CUDA_ERROR_ECC_UNCORRECTABLE
    cudaErrorSystemNotReady cudaErrorNotPermitted cudaErrorLaunchOutOfResources
    CUDNN_STATUS_NOT_INITIALIZED CUDNN_STATUS_INTERNAL_ERROR CUDNN_STATUS_EXECUTION_FAILED
    CUDNN_STATUS_ARCH_MISMATCH CUDNN_STATUS_BAD_PARAM CUDNN_STATUS_NOT_SUPPORTED CUDNN_STATUS_ALLOC_FAILED
    CUDNN_STATUS_VERSION_MISMATCH CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED
    CUBLAS_STATUS_NOT_INITIALIZED CUBLAS_STATUS_ALLOC_FAILED CUBLAS_STATUS_EXECUTION_FAILED
    CUBLAS_STATUS_ARCH_MISMATCH CUBLAS_STATUS_INTERNAL_ERROR CUBLAS_STATUS_NOT_SUPPORTED
    CUBLAS_STATUS_LICENSE_ERROR CUDNN_STATUS_LICENSE_ERROR
    ncclUnhandledCudaError ncclSystemError ncclInternalError ncclInvalidUsage ncclRemoteError
    NVML_ERROR_DRIVER_NOT_LOADED NVML_ERROR_LIBRARY_NOT_FOUND NVML_ERROR_NO_PERMISSION NVML_ERROR_GPU_IS_LOST
    NVML_ERROR_UNINITIALIZED NVML_ERROR_FUNCTION_NOT_FOUND NVML_ERROR_LIB_RM_VERSION_MISMATCH""".split()
    assert [name for name in wanted if not causes_of(name)] == []


def test_twins_and_cudnn_sub_codes_take_the_causes_they_share():
    assert causes_of("cudaErrorNoDevice") == causes_of("CUDA_ERROR_NO_DEVICE")
    # cuDNN 9's NOT_SUPPORTED sub-codes take NOT_SUPPORTED's causes; a BAD_PARAM sub-code says more
    # than its category (a null pointer is no layer configuration), so it takes none
    assert causes_of("CUDNN_STATUS_NOT_SUPPORTED_SHAPE") == causes_of("CUDNN_STATUS_NOT_SUPPORTED")
    assert causes_of("CUDNN_STATUS_BAD_PARAM_NULL_POINTER") == ()


# --- a status-only line, family by family: its documented causes, the right one first -------------


@pytest.mark.parametrize(
    "text, first, among",
    [
        # CUDA runtime, behind TensorFlow's "failed. Status:" frame
        (
            "cudaGetDeviceCount() failed. Status: cudaErrorSystemNotReady",
            "fabric-manager-not-running",
            {"persistence-mode-off"},
        ),
        # CUDA driver, by number
        ("cuCtxCreate failed with CUresult = 802", "fabric-manager-not-running", set()),
        (
            "jax: CUDA_ERROR_OPERATING_SYSTEM: OS call failed or operation not supported on this OS",
            "os-blocks-gpu-access",
            {"wsl-gpu-paravirtualisation-off"},
        ),
        ("mylib: CUDA_ERROR_NOT_PERMITTED", "container-cgroup-reloaded", {"uvm-bad-state"}),
        ("mylib: CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "container-driver-capabilities", {"ptx-jit-library-missing"}),
        ("mylib: CUDA_ERROR_ECC_UNCORRECTABLE", "gpu-memory-ecc-error", {"ecc-retirement-pending"}),
        ("mylib: cudaErrorLaunchOutOfResources", "kernel-launch-too-large", set()),
        # cuDNN
        (
            "mylib: CUDNN_STATUS_NOT_INITIALIZED",
            "gpu-memory-preallocated",
            {"other-process-holds-gpu", "cudnn-incompatible", "driver-too-old-for-cudnn"},
        ),
        (
            "E external/xla: CUDNN_STATUS_INTERNAL_ERROR in foo",
            "gpu-memory-exhausted-cudnn",
            {"earlier-cuda-error", "release-lacks-arch"},
        ),
        ("mylib: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "cudnn-copies-mixed", {"cudnn-version-mismatch"}),
        # cuBLAS behind an unfamiliar wrapper
        (
            "mylib.GemmError: backend returned CUBLAS_STATUS_NOT_INITIALIZED",
            "gpu-memory-taken-before-cublas",
            {"gpu-memory-preallocated", "mixed-library-versions"},
        ),
        (
            "mylib.GemmError: backend returned CUBLAS_STATUS_EXECUTION_FAILED",
            "release-lacks-arch",
            {"mixed-library-versions", "earlier-cuda-error"},
        ),
        # cuBLAS's reference: "usually caused by compute capability lower than 5.0"
        (
            "mylib.GemmError: backend returned CUBLAS_STATUS_ARCH_MISMATCH",
            "compute-capability-too-low",
            {"dtype-needs-newer-gpu"},
        ),
        # NCCL
        ("ncclInternalError: Internal check failed.", "nccl-version-conflict", {"nccl-bug-or-memory-corruption"}),
        (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, "
            "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.1",
            "ranks-share-device",
            {"nccl-calls-differ-between-ranks"},
        ),
        # NVML, by pynvml's class
        (
            "pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.",
            "driver-upgraded-no-reboot",
            {"driver-packages-mixed", "driver-files-baked-into-image"},
        ),
        ("pynvml.NVMLError_GpuIsLost: GPU is lost", "gpu-fallen-off-bus", {"gpu-hardware-or-power"}),
        ("pynvml.NVMLError_NoPermission: Insufficient Permissions", "device-files-not-accessible", set()),
        ("mylib: NVML_ERROR_FUNCTION_NOT_FOUND", "driver-older-than-nvml-call", {"driver-files-baked-into-image"}),
    ],
)
def test_a_status_only_line_gets_its_documented_causes(text, first, among):
    explanation = _one(text)
    assert explanation.id.endswith("-status"), explanation.id  # only the status was recognised
    assert _ids(explanation)[0] == first
    assert among <= set(_ids(explanation))
    assert explanation.cause == explanation.causes[0].text
    for cause in explanation.causes:
        assert cause.tell is not None and cause.tell.text and cause.fix is not None and cause.fix.text, cause.id
    # the explanation's fix is the first cause's own
    assert explanation.fix == explanation.causes[0].fix


def test_a_status_without_causes_keeps_its_meaning_alone():
    # look-alike: a status the data gives no causes (a profiler notice) keeps the table's meaning
    explanation = _one("mylib: CUDA_ERROR_PROFILER_DISABLED")
    assert _ids(explanation) == ["cuda-driver-status"]
    assert "profiler" in explanation.cause


# --- the context ranks them --------------------------------------------------------------------


def test_the_log_s_platform_ranks_and_filters_the_causes():
    wsl = "I dso_loader: Successfully opened dynamic library /usr/lib/wsl/lib/libcuda.so.1\njax: CUDA_ERROR_OPERATING_SYSTEM"
    assert _ids(_one(wsl))[0] == "wsl-gpu-paravirtualisation-off"
    windows = "File C:\\Users\\me\\train.py, line 3\nmylib: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"
    linux = "File /home/me/train.py, line 3\nmylib: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"
    assert _ids(_one(windows))[0] == "windows-display-driver-reset"
    assert "windows-display-driver-reset" not in _ids(_one(linux))  # Windows' watchdog, not Linux's
    assert _ids(_one(linux))[0] == "application-fault"
    # a Linux-only cause (a kernel module) is not offered for a Windows log
    assert "driver-not-loaded" not in _ids(_one("C:\\Users\\me> python t.py\nmylib: NVML_ERROR_DRIVER_NOT_LOADED"))
    assert "driver-not-loaded" in _ids(_one("mylib: NVML_ERROR_DRIVER_NOT_LOADED"))


def test_a_gpu_newer_than_the_log_s_cuda_puts_the_missing_architecture_first():
    plain = "E external/xla: CUDNN_STATUS_INTERNAL_ERROR in foo"
    newer = "name: NVIDIA GeForce RTX 4090 major: 8 minor: 9\ntorch 1.12.1+cu113\n" + plain
    assert _ids(_one(plain))[0] == "gpu-memory-exhausted-cudnn"
    assert _ids(_one(newer))[0] == "release-lacks-arch"


def test_a_driver_the_log_shows_too_old_puts_that_cause_first_and_a_new_enough_one_drops_it():
    line = "mylib: CUDNN_STATUS_NOT_INITIALIZED"
    old = _one("Driver Version: 470.82.01\nCuda compilation tools, release 12.2, V12.2.140\n" + line)
    assert _ids(old)[0] == "driver-too-old-for-cudnn" and old.dropped == ()
    new = _one("Driver Version: 550.54.14\nCuda compilation tools, release 12.2, V12.2.140\n" + line)
    assert "driver-too-old-for-cudnn" not in _ids(new)
    ((cause_id, why),) = new.dropped
    assert cause_id == "driver-too-old-for-cudnn" and "550.54.14" in why and "12.2" in why
    assert new.to_dict()["ruled_out_by_the_log"] == [{"id": "driver-too-old-for-cudnn", "why": why}]
    # CUDA 12's minor-version floor (525.60.13 on Linux) runs 12.2 as well; 520 does not
    floor = _one("Driver Version: 525.60.13\nCuda compilation tools, release 12.2, V12.2.140\n" + line)
    assert "driver-too-old-for-cudnn" not in _ids(floor)
    below = _one("Driver Version: 520.61.05\nCuda compilation tools, release 12.2, V12.2.140\n" + line)
    assert _ids(below)[0] == "driver-too-old-for-cudnn"
    # a log that shows no versions keeps the cause where the data file ranks it
    assert _ids(_one(line))[-1] == "driver-too-old-for-cudnn"


def test_the_catalogue_s_log_rules_apply_to_status_causes_too():
    # the log shows an NVIDIA GPU in use: "no NVIDIA GPU" is ruled out, as for a pattern's cause
    text = "Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 10 MB memory) -> physical GPU (device: 0, name: Tesla T4)\nmylib: CUDA_ERROR_STUB_LIBRARY"
    explanation = _one(text)
    assert "no-nvidia-gpu" not in _ids(explanation)
    assert "no-nvidia-gpu" in {cause_id for cause_id, _ in explanation.dropped}
    assert "no-nvidia-gpu" in _ids(_one("mylib: CUDA_ERROR_STUB_LIBRARY"))


# --- a pattern that explains the message: its own causes first, then the status's others ----------


@pytest.mark.parametrize(
    "text, pattern_id",
    [
        # (INTERNAL_ERROR: the status's causes include some the pattern does not name)
        ("could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR", "cudnn-handle-failed"),
        (
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
            "nccl-system-error",
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
            "cuda-driver-mismatch",
        ),
        # another wording (TensorFlow 1.x's cuda_driver.cc) and another status (CUDA_ERROR_UNKNOWN)
        (
            "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_UNKNOWN",
            "cuinit-unknown-error",
        ),
    ],
)
def test_a_pattern_explained_line_gives_its_own_causes_then_the_status_s_others(text, pattern_id):
    explanation = _one(text)
    assert explanation.id == pattern_id
    pattern = next(p for p in CATALOGUE.patterns if p.id == pattern_id)
    own = {c.id for c in pattern.causes}
    given = _ids(explanation)
    status = {c.template.id for c in causes_of(explanation.variables["status_name"])}
    # every cause given is the pattern's or the status's, and the pattern's come first
    assert set(given) <= own | status
    firsts = [cause_id in own for cause_id in given]
    assert firsts == sorted(firsts, reverse=True), given
    # the status's causes the pattern does not name are all there, after the pattern's
    assert status - own and (status - own) <= set(given)


def test_a_pattern_of_one_cause_stays_a_single_answer():
    # a pattern whose one cause is its own answer (its cause id is the pattern's id) is not given
    # the status's causes, even where its line names a status that has them
    checked = 0
    for pattern in CATALOGUE.patterns:
        if pattern.fallback or len(pattern.causes) != 1 or pattern.causes[0].id != pattern.id:
            continue
        for example in pattern.examples:
            explanation = next((e for e in _explained(example) if e.id == pattern.id), None)
            if explanation is None or not causes_of(explanation.variables.get("status_name", "")):
                continue
            checked += 1
            assert _ids(explanation) == [pattern.id], (pattern.id, example)
    assert checked


# --- the loader refuses a malformed section --------------------------------------------------------


def _with(tmp_path: Path, change) -> Path:
    data = yaml.safe_load(data_file(STATUS_FILE).read_text(encoding="utf-8"))
    change(data["status_causes"])
    path = tmp_path / "cuda_status.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda s: s["causes"]["cvd-hides-all"].pop("tell"), "needs 'tell'"),
        (lambda s: s["causes"]["cvd-hides-all"].pop("source"), "needs 'source'"),
        (lambda s: s.pop("sources"), "'sources'"),
        (lambda s: s["statuses"][0]["names"].append("CUDA_ERROR_NO_SUCH_THING"), "names no status"),
        (lambda s: s["statuses"][0]["causes"].append("no-such-cause"), "not a known cause"),
        (lambda s: s["statuses"][0]["causes"].append({"id": "no-nvidia-gpu", "unless": "bogus"}), "unknown check"),
        (
            lambda s: s["statuses"][0]["causes"].append({"id": "no-nvidia-gpu", "first_if": {"vars": {"nope": ["x"]}}}),
            "condition on 'nope'",
        ),
        (lambda s: s["causes"]["cvd-hides-all"].update(os=["amiga"]), "'os'"),
        (lambda s: s["statuses"].append(dict(s["statuses"][0])), "given twice"),
    ],
)
def test_a_malformed_section_is_refused_with_the_reason(tmp_path, change, words):
    with pytest.raises(StatusTableError, match=re.escape(words)):
        load_status_causes(_with(tmp_path, change))


def test_the_version_checks_are_the_ones_the_data_names():
    named = {
        ref.get(key)
        for entry in SECTION["statuses"]
        for ref in entry["causes"]
        if isinstance(ref, dict)
        for key in ("unless", "first_when")
    } - {None}
    assert named == set(VERSION_CHECKS)


# NCCL's result printed as ncclGetErrorString's text (not its name) is that status all the same
@pytest.mark.parametrize(
    "line, status",
    [
        (
            "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
            "ncclSystemError",
        ),
        ("Test NCCL failure all_reduce.cu:91 'unhandled cuda error'", "ncclUnhandledCudaError"),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, remote process exited "
            "or there was a network error, NCCL version 2.19.3",
            "ncclRemoteError",
        ),
        ("NCCL error in: ProcessGroupNCCL.cpp:47, invalid usage, NCCL version 2.10.3", "ncclInvalidUsage"),
    ],
)
def test_nccls_printed_result_is_its_status(line, status):
    (explanation,) = _explained(line)
    assert explanation.variables.get("status_name") == status


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: internal error",  # no NCCL on the line: whose internal error is not said
        "NCCL version 2.18.1+cuda12.1",
        "ValueError: invalid argument passed to torch.distributed.init_process_group (backend='nccl')",
    ],
)
def test_a_line_without_nccls_result_gets_no_nccl_status(line):
    assert all(not (e.variables.get("status_name") or "").startswith("nccl") for e in _explained(line))


def test_ncclsystemerror_printed_as_text_gets_the_statuss_documented_causes():
    line = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8"
    (explanation,) = _explained(line)
    by_name = {c.id for e in _explained("ncclSystemError") for c in e.causes}
    assert by_name and by_name <= {c.id for c in explanation.causes}
