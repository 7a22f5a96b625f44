"""The parts of the stack under and beside TensorFlow: the NVIDIA kernel module (NVRM), the
container toolkit, NCCL's shared memory, CUPTI, JAX's version check and pip's CUDA-wheel
conflicts. Each message is written from the format string of the source that prints it (named in
the pattern's ``sources``); the ranking rules read the message's own parts (the reason after a
failed system call, NVML's error, the library JAX names) or another message of the same log."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from tests.explain.test_explain_source_families import CATALOGUE, assert_explained


def _explain(text: str):
    return {e.id: e for e in explain(CATALOGUE.scan_text(text))}


# (message, pattern id, first cause id)
MESSAGES = [
    # jaxlib's version check, jaxlib 0.4 wording and the plugin's newer one
    (
        "CUDA backend failed to initialize: Found cuSOLVER version 11002, but JAX was built against version 11401, which is newer.",
        "jax-cuda-library-too-old",
        "library-older-than-build",
    ),
    ("Outdated cuDNN installation found.", "jax-cuda-library-too-old", "library-older-than-build"),
    # NCCL's shared memory: the reason after the failed call picks the cause
    (
        "include/shm.h:31 NCCL WARN Call to shm_open failed : Permission denied",
        "nccl-shm-segment-failed",
        "dev-shm-permissions",
    ),
    (
        "misc/shmutils.cc:72 NCCL WARN Call to posix_fallocate failed : No space left on device",
        "nccl-shm-segment-failed",
        "nccl-shm-too-small",
    ),
    (
        "Error while attaching to shared memory segment /dev/shm/nccl-Qw3s1z (size 0), error: No such file or directory (2)",
        "nccl-shm-segment-failed",
        "nccl-shm-not-shared",
    ),
    (
        "include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-0a1b2c3d-0-1-2 (size 9637888)",
        "nccl-shm-segment-failed",
        "nccl-shm-too-small",
    ),
    # NCCL's sockets: the operating system's reason and the address NCCL published pick the cause
    (
        "n7:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to fe80::42:acff:fe11:2%eth1<40001> failed : Software caused connection abort",
        "nccl-socket-connect-failed",
        "nccl-network-interface",
    ),
    (
        "w1:1203:1227 [0] misc/socket.cc:480 NCCL WARN socketStartConnect: Connect to 172.17.0.3<38847> failed : Connection timed out",
        "nccl-socket-connect-failed",
        "nccl-network-interface",
    ),
    (
        "w1:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to 10.1.2.3<21724> failed : Connection refused",
        "nccl-socket-connect-failed",
        "nccl-peer-exited",
    ),
    (
        "w1:39964:40044 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer w2<57557>",
        "nccl-socket-connect-failed",
        "nccl-peer-exited",
    ),
    # the container toolkit: NVML's error says which part of the host driver is missing
    (
        "stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown",
        "nvidia-container-cli-no-nvml",
        "driver-not-loaded",
    ),
    (
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown.",
        "nvidia-container-cli-no-nvml",
        "host-driver-missing",
    ),
    # CUPTI
    (
        "E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1419] function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback, this)failed with error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
        "cupti-insufficient-privileges",
        "cupti-admin-only",
    ),
    (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcupti.so.11.2'; dlerror: libcupti.so.11.2: cannot open shared object file: No such file or directory",
        "cupti-not-loaded",
        "cupti-not-on-path",
    ),
    # the kernel module's firmware, alone
    (
        "nvidia 0000:01:00.0: Direct firmware load for nvidia/550.54.14/gsp_ga10x.bin failed with error -2",
        "nvrm-gsp-firmware-missing",
        "gsp-firmware-not-installed",
    ),
    # pip's resolver and its conflict warning
    (
        'tensorflow 2.16.1 requires nvidia-cudnn-cu12==8.9.7.29; extra == "and-cuda", but you have nvidia-cudnn-cu12 9.1.0.70 which is incompatible.',
        "pip-nvidia-wheel-conflict",
        "cuda-wheels-pinned-apart",
    ),
    # Kubernetes: the scheduler's resource check and the device plugin's own report
    (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
        "k8s-insufficient-gpu",
        "container-runtime-not-configured",
    ),
    (
        "E1102 08:00:01.000000       1 factory.go:113] If this is a GPU node, did you configure the NVIDIA Container Toolkit?",
        "k8s-device-plugin-no-gpu",
        "container-runtime-not-configured",
    ),
    # the runtime Docker is configured with, and the tools the toolkit mounts
    (
        'docker: Error response from daemon: OCI runtime create failed: exec: "nvidia-container-runtime-hook": executable file not found in $PATH: unknown.',
        "nvidia-runtime-binary-missing",
        "container-toolkit-missing",
    ),
    (
        'OCI runtime create failed: runc create failed: unable to start container process: exec: "nvidia-smi": executable file not found in $PATH: unknown.',
        "container-nvidia-smi-missing",
        "gpus-flag-missing",
    ),
    # PyTorch's driver check without the space before the parenthesis (PyTorch 0.1)
    (
        "The NVIDIA driver on your system is too old(found version 8000).",
        "torch-driver-too-old",
        "torch-driver-too-old",
    ),
]


@pytest.mark.parametrize("message, pattern_id, first", MESSAGES)
def test_message_is_explained_with_the_cause_its_parts_name_first(message, pattern_id, first):
    assert_explained(message, pattern_id, False, first)


def test_jax_names_the_library_and_both_versions():
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "CUDA backend failed to initialize: Found CUDA version 12010, but JAX was built against version 12020, which is newer."
        )
    )
    assert explanation.id == "jax-cuda-library-too-old"
    assert (explanation.variables["jax_library"], explanation.variables["found"], explanation.variables["built"]) == (
        "CUDA",
        "12010",
        "12020",
    )


def test_the_plugin_report_is_one_explanation_of_the_outdated_library():
    # the plugin prints the backend line and the library's own line; the more specific one explains both
    log = (
        "RuntimeError: Backend 'cuda' failed to initialize: Unable to use CUDA because of the following issues with CUDA components:\n"
        "Outdated cuDNN installation found.\n"
        "Version JAX was built against: 8907\n"
    )
    found = _explain(log)
    assert list(found) == ["jax-cuda-library-too-old"]
    assert found["jax-cuda-library-too-old"].variables["jax_library"] == "cuDNN"


def test_a_jax_backend_line_alone_keeps_its_general_explanation():
    found = _explain("RuntimeError: Backend 'cuda' failed to initialize: FAILED_PRECONDITION: No visible GPU devices.")
    assert list(found) == ["jax-cuda-backend-failed"]


def test_cuda_not_initialized_inside_jaxs_check_is_jaxs_not_a_fork():
    jax_line = (
        "CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:90: operation gpuDeviceGetAttribute("
        " &major, GPU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) failed: CUDA_ERROR_NOT_INITIALIZED"
    )
    assert list(_explain(jax_line)) == ["jax-cuda-backend-failed"]
    # without JAX's line the same status is TensorFlow's fork problem
    tf_line = "E tensorflow/stream_executor/cuda/cuda_driver.cc:1204] could not retrieve CUDA device count: CUDA_ERROR_NOT_INITIALIZED: initialization error"
    assert list(_explain(tf_line)) == ["cuda-not-initialized-after-fork"]


def test_nvrm_api_mismatch_reads_the_newer_wording_with_the_client_process():
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "NVRM: API mismatch: the client 'kwin_wayland' (pid 1005) NVRM: has the version 595.84, but this kernel module has NVRM: the version 595.80.  Please make sure that this"
        )
    )
    assert explanation.id == "nvrm-api-mismatch"
    assert explanation.variables["client"] == "595.84"
    assert explanation.variables["kernel"] == "595.80"  # not "595.80." with the sentence's full stop
    assert explanation.variables["client_process"] == "kwin_wayland"
    assert explanation.causes[0].id == "driver-upgraded-no-reboot"


def test_missing_firmware_beside_an_api_mismatch_ranks_mixed_packages_first():
    # a module that finds neither matching libraries nor its own firmware is installed apart from
    # them: a reboot loads the same module again
    log = (
        "[    8.402113] NVRM: API mismatch: the client has the version 565.77, but\n"
        "               NVRM: this kernel module has the version 565.57.01.  Please\n"
        "[    9.118210] nvidia 0000:41:00.0: Direct firmware load for nvidia/565.57.01/gsp_ga10x.bin failed with error -2\n"
    )
    found = _explain(log)
    assert found["nvrm-api-mismatch"].causes[0].id == "driver-packages-mixed"
    assert found["nvrm-gsp-firmware-missing"].causes[0].id == "driver-packages-mixed"
    assert found["nvrm-gsp-firmware-missing"].variables["firmware_version"] == "565.57.01"


def test_a_windows_cupti_dll_gets_powershell_only():
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "Could not load dynamic library 'cupti64_2020.3.0.dll'; dlerror: cupti64_2020.3.0.dll not found"
        )
    )
    assert explanation.id == "cupti-not-loaded"
    shells = {c.shell for c in explanation.fix.commands} | {
        c.shell for cause in explanation.causes for part in (cause.tell, cause.fix) if part for c in part.commands
    }
    assert shells == {"powershell"}


@pytest.mark.parametrize(
    "line",
    [
        # other drivers' firmware, another program's shared memory, other packages' pins
        "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_mes.bin failed with error -2",
        "nouveau 0000:01:00.0: Direct firmware load for nvidia/ga102/gsp/gsp-535.113.01.bin failed with error -2",
        "pulseaudio: shm_open() failed: Permission denied",
        "tensorflow 2.15.0 requires numpy<2.0.0,>=1.23.5, but you have numpy 2.0.1 which is incompatible.",
        "Found CUDA version 12.2, but PyTorch was built against version 11.8",
        "rocm-smi: Error: Could not load ROCm SMI library",
        "rocprofiler: insufficient privileges to read performance counters",
        "amdgpu: API mismatch: the client has the version 6.2, but the kernel driver has 6.1",
        "0/3 nodes are available: 3 Insufficient amd.com/gpu.",
        'exec: "rocm-smi": executable file not found in $PATH',
        "undefined symbol: rcclCommRegister",
    ],
)
def test_look_alikes_from_other_software_are_not_explained(line):
    assert CATALOGUE.scan_text(line).ids == []


def test_an_nccl_symbol_is_explained_as_nccl_not_as_any_undefined_symbol():
    line = (
        "ImportError: /venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister"
    )
    found = _explain(line)
    assert list(found) == ["nccl-symbol-missing"]
    assert found["nccl-symbol-missing"].variables["symbol"] == "ncclCommRegister"
    assert found["nccl-symbol-missing"].causes[0].id == "mixed-library-versions"
    # another library's symbol stays the loader's general explanation
    other = (
        "ImportError: /venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: cudnnGetVersion"
    )
    assert list(_explain(other)) == ["loader-undefined-symbol"]


def test_the_scheduler_names_the_mig_resource():
    (explanation,) = explain(CATALOGUE.scan_text("0/4 nodes are available: 4 Insufficient nvidia.com/mig-1g.10gb."))
    assert explanation.variables["resource"] == "nvidia.com/mig-1g.10gb"


def test_a_peer_that_went_away_puts_the_interface_last():
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "w1:39964:40044 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer w2<57557>"
        )
    )
    assert explanation.causes[-1].id == "nccl-network-interface"


def test_nccls_retry_notice_alone_is_not_a_failure():
    # NCCL retries while the other rank is still starting; only the final WARN is the failure
    found = explain(
        CATALOGUE.scan_text("w1:941227:943077 [0] NCCL INFO Call to connect returned Connection refused, retrying")
    )
    # an INFO record of NCCL's: a notice, nothing to act on
    assert [(e.id, e.harmless) for e in found] == [("nccl-info-record", True)]
