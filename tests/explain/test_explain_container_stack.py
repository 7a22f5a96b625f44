"""nvidia-container-cli's steps, Singularity/Apptainer's --nv, and the kernel driver's other
"fallen off the bus" wording. Each message is written from the format string of the program that
prints it (libnvidia-container's src/cli/configure.c: "<step> error: <detail>", with the older
releases' details; Singularity's --nv warnings; the driver's three-line NVRM notice), with other
versions, paths and devices than any thread showed; every rule has a close case it must not take."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from tests.explain.test_explain_source_families import CATALOGUE


def _explain(text: str):
    return {e.id: e for e in explain(CATALOGUE.scan_text(text))}


def _first(text: str, pattern_id: str) -> str:
    found = _explain(text)
    assert pattern_id in found, sorted(found)
    return found[pattern_id].causes[0].id


# (message, pattern id, first cause): the step nvidia-container-cli names picks the cause
STEPS = [
    (
        "stderr: nvidia-container-cli: container error: cgroup subsystem devices not found: unknown.",
        "nvidia-container-cli-stage-error",
        "container-cli-cgroup-v2-unsupported",
    ),
    (
        "Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli.real: container error: failed to get device cgroup mount path: no cgroup mount found: unknown.",
        "nvidia-container-cli-stage-error",
        "container-cli-cgroup-v2-unsupported",
    ),
    (
        "nvidia-container-cli: ldcache error: process /sbin/ldconfig.real failed with error code: 127: unknown.",
        "nvidia-container-cli-stage-error",
        "container-ldconfig-path-wrong",
    ),
    (
        "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/0f1e/merged/run/nvidia-persistenced/socket: no such device or address: unknown.",
        "nvidia-container-cli-stage-error",
        "container-mount-driver-files-failed",
    ),
    (
        "nvidia-container-cli: mount error: stat failed: /proc/driver/nvidia/gpus/0000:af:00.0: no such file or directory: unknown.",
        "nvidia-container-cli-stage-error",
        "container-mount-driver-files-failed",
    ),
    (
        "nvidia-container-cli: permission error: capability change failed: operation not permitted: unknown.",
        "nvidia-container-cli-stage-error",
        "container-cli-lacks-privileges",
    ),
    (
        "nvidia-container-cli: initialization error: cuda error: unknown error",
        "nvidia-container-cli-stage-error",
        "driver-upgraded-no-reboot",
    ),
    (
        "nvidia-container-cli: detection error: nvml error: unknown error",
        "nvidia-container-cli-stage-error",
        "driver-upgraded-no-reboot",
    ),
]


@pytest.mark.parametrize("message, pattern_id, first", STEPS)
def test_the_failed_step_picks_the_cause(message, pattern_id, first):
    assert _first(message, pattern_id) == first


def test_a_step_keeps_its_detail_whole_and_drops_runcs_suffix():
    (explanation,) = explain(
        CATALOGUE.scan_text("nvidia-container-cli: initialization error: cuda error: unknown error: unknown.")
    )
    assert explanation.title.endswith("initialization step: cuda error: unknown error")


def test_a_step_a_specific_pattern_knows_is_left_to_it():
    found = _explain("nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.")
    assert "nvidia-container-cli-no-nvml" in found
    assert "nvidia-container-cli-stage-error" not in found


@pytest.mark.parametrize(
    "line",
    [
        "kubelet: container error: back-off restarting failed container",
        "nvidia-container-cli: info",
        "nvidia-container-cli -k -d /dev/tty info",
        "containerd: mount error: no such file",  # another program's step words, not the toolkit's
    ],
)
def test_other_programs_steps_are_not_the_toolkits(line):
    assert "nvidia-container-cli-stage-error" not in _explain(line)


def test_the_requirement_with_spaces_around_the_operator_is_read():
    # libnvidia-container 1.0 printed the condition as "cuda >= 9.2"; later ones as "cuda>=9.2"
    message = 'stderr: exec command: [/usr/bin/nvidia-container-cli --load-kmods configure --require=cuda>=9.1 --pid=4101 /var/lib/docker/overlay2/ab/merged]\\\\nnvidia-container-cli: requirement error: unsatisfied condition: cuda >= 9.1\\\\n\\"": unknown.'
    found = _explain(message)
    assert found["container-cuda-requirement-unmet"].causes[0].id == "cuda-driver-too-old"
    assert "cuda >= 9.1" in found["container-cuda-requirement-unmet"].title


def test_a_mig_device_named_the_old_way_is_told_apart():
    message = (
        "nvidia-container-cli.real: device error: MIG-GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789/3/0: unknown device"
    )
    assert _first(message, "container-unknown-device") == "container-mig-device-old-name"
    # an index the host lacks stays the out-of-range cause, also from the .real binary
    assert _first("nvidia-container-cli.real: device error: 3: unknown device", "container-unknown-device") == (
        "container-device-index-out-of-range"
    )


def test_the_imex_parse_error_is_the_toolkit_default():
    message = "stderr: nvidia-container-cli: error parsing IMEX info: unsupported IMEX channel value: all"
    assert _first(message, "container-imex-channels-invalid") == "container-toolkit-imex-default"
    assert "container-imex-channels-invalid" not in _explain("error parsing IPEX info: unsupported value")


@pytest.mark.parametrize(
    "message",
    [
        "INFO:    Could not find any nv files on this host!",
        "WARNING: Could not find any NVIDIA libraries on this host!",
        "INFO:    Could not find any NVIDIA binaries on this host!",
        "WARNING: Could not find the Nvidia SMI binary to bind into container",
    ],
)
def test_singularity_nv_without_driver_files(message):
    assert _first(message, "singularity-nv-no-driver-files") == "host-driver-missing"


@pytest.mark.parametrize(
    "line",
    [
        "INFO:    Could not find any ROCm libraries on this host!",  # --rocm's, not --nv's
        "WARNING: Could not find any ROCm devices on this host!",
        "Found NV library: /usr/lib64/libnvidia-ml.so.1",
    ],
)
def test_singularity_rocm_and_found_lines_are_not_nv_failures(line):
    assert "singularity-nv-no-driver-files" not in _explain(line)


def test_the_three_line_fallen_off_notice_is_xid_79():
    message = (
        "[ 912.004512] NVRM: The NVIDIA GPU 0000:41:00.0\n"
        "               NVRM: (PCI ID: 10de:2330) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    found = _explain(message)
    assert found["nvrm-xid"].causes[0].id == "gpu-hardware-or-power"
    assert "Xid 79" in found["nvrm-xid"].title
    # the one-line form names the address
    one_line = "NVRM: The NVIDIA GPU 0000:41:00.0 NVRM: (PCI ID: 10de:2330) installed in this system has NVRM: fallen off the bus and is not responding to commands."
    assert "0000:41:00.0" in _explain(one_line)["nvrm-xid"].title


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07",
        "fallen off the bus and is not responding to commands",  # without NVRM: not the kernel driver's line
    ],
)
def test_driver_lines_that_are_not_a_fallen_gpu(line):
    assert "nvrm-xid" not in _explain(line)


def test_no_cgroups_is_a_cause_of_nvml_unknown_in_a_container():
    causes = [c.id for c in _explain("Failed to initialize NVML: Unknown Error")["container-lost-gpu-access"].causes]
    assert causes[:2] == ["container-cgroup-reloaded", "toolkit-no-cgroups"]


def test_a_host_without_nvidia_gpu_is_among_the_no_nvml_causes():
    message = "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown."
    causes = [c.id for c in _explain(message)["nvidia-container-cli-no-nvml"].causes]
    assert causes[0] == "host-driver-missing" and "no-nvidia-gpu" in causes


def test_xid_45_is_read_as_the_xid_it_names():
    # the driver's cleanup after an earlier error names that error; NVLink 5 Xids are the hardware's
    found = _explain(
        "kernel: NVRM: Xid (PCI:0000:9a:00): 45, pid=7721, name=python3, Ch 00000002 caused by previous Xid 144"
    )
    assert "Xid 144" in found["nvrm-xid"].title
    assert found["nvrm-xid"].causes[0].id == "gpu-hardware-or-power"
    # a cleanup that names nothing stays Xid 45, the application's side first
    plain = _explain("NVRM: Xid (PCI:0000:9a:00): 45, pid=7721, name=python3, Ch 00000002")
    assert "Xid 45" in plain["nvrm-xid"].title
    assert plain["nvrm-xid"].causes[0].id == "application-fault"


@pytest.mark.parametrize(
    "xid, first",
    [
        ("63", "gpu-hardware-or-power"),  # a row remapping recorded: a reset puts it into effect
        ("74", "gpu-hardware-or-power"),  # NVLink
        ("94", "gpu-hardware-or-power"),  # a contained ECC error
        ("149", "gpu-hardware-or-power"),  # NVLink 5 NETIR
        ("13", "application-fault"),  # a graphics engine exception: the program's own access
        ("31", "application-fault"),  # an MMU fault
    ],
)
def test_the_xid_number_ranks_hardware_or_the_program(xid, first):
    found = _explain(f"NVRM: Xid (PCI:0000:3b:00): {xid}, pid=4410, name=python3, Ch 00000010")
    assert found["nvrm-xid"].causes[0].id == first


def test_a_spaced_condition_without_the_toolkits_words_is_not_a_requirement_error():
    assert "container-cuda-requirement-unmet" not in _explain(
        "unsatisfied condition: cuda >= 9.1 (from a build script)"
    )


def test_insufficient_permissions_from_nvidia_smi_names_the_device_files():
    found = _explain("Failed to initialize NVML: Insufficient Permissions")
    assert found["nvml-no-permission"].causes[0].id == "device-files-not-accessible"
    # NVML's other status texts stay with the status table
    assert "nvml-no-permission" not in _explain("Failed to initialize NVML: Not Supported")


@pytest.mark.parametrize(
    "message, first",
    [
        # NCCL's CUDACHECK, old and new wordings: the CUDA error picks the cause
        ("node3:2291:2330 [2] include/alloc.h:185 NCCL WARN Cuda failure 'out of memory'", "gpu-memory-preallocated"),
        ("node3:2291:2330 [2] NCCL WARN Cuda failure 2 'out of memory'", "gpu-memory-preallocated"),
        (
            "w0:771:802 [1] transport/p2p.cc:301 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'",
            "nccl-p2p-broken",
        ),
        (
            "w0:771:802 [1] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported between these two devices",
            "nccl-p2p-broken",
        ),
        ("w0:771:802 [1] NCCL WARN Cuda failure 'an illegal memory access was encountered'", "nccl-cuda-call-failed"),
    ],
)
def test_ncclss_cuda_failure_is_read_by_its_cuda_error(message, first):
    assert _first(message, "nccl-cuda-failure") == first


@pytest.mark.parametrize(
    "line",
    [
        "Build failure 'missing header'",
        "w0:771:802 [1] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via P2P/IPC",
        "w0:771:802 [1] NCCL INFO Could not enable P2P between dev 0(=1a000) and dev 1(=1b000)",
    ],
)
def test_lines_that_are_not_a_cuda_failure_inside_nccl(line):
    assert "nccl-cuda-failure" not in _explain(line)
