"""Causes from NVIDIA's troubleshooting documents, each decided by what the log shows: the Docker
that runs the container (Docker Desktop's virtual machine, the snap's confined daemon), the
container's device cgroup the toolkit may not change (rootless engines, unprivileged LXC, kernels
without cgroup BPF), NCCL's host-memory paths and its PCI view under WSL 2, and a virtual
machine's BAR layout."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()

NO_NVML = (
    "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
    "cannot open shared object file: no such file or directory: unknown."
)
NO_DRIVER = 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'


def _explained(text: str) -> dict:
    return {e.id: e for e in explain(CATALOGUE.scan_text(text))}


def _causes(text: str, pattern_id: str) -> list[str]:
    return [c.id for c in _explained(text)[pattern_id].causes]


# --- which Docker runs the container --------------------------------------------------------


@pytest.mark.parametrize(
    "line, engine",
    [
        ("I run the stack in Docker Desktop 4.26.1 (on Ubuntu 23.10).", "desktop"),
        ("note I have installed as well docker-desktop initially", "desktop"),
        ("desktop-linux *   Docker Desktop   unix:///home/me/.docker/desktop/docker.sock", "desktop"),
        ('        "Name": "desktop-linux",', "desktop"),
        ("$ /snap/bin/docker run --gpus all ubuntu nvidia-smi", "snap"),
        ("$ sudo snap list docker", "snap"),
        ("$ sudo snap services docker", "snap"),
    ],
)
def test_the_docker_engine_is_read_from_its_words_and_paths(line, engine):
    assert read_context(line)["log_docker_engine"].lower() == engine


@pytest.mark.parametrize(
    "line",
    [
        "docker run --gpus all ubuntu nvidia-smi",
        "I take snapshots of my docker volumes",
        "Desktop environment: GNOME",
        "/home/me/snap/firefox/common",
    ],
)
def test_other_words_name_no_engine(line):
    assert "log_docker_engine" not in read_context(line)


def test_docker_desktop_on_linux_puts_its_virtual_machine_first():
    text = NO_NVML + "\nDocker Desktop 4.18.0 on Ubuntu 22.04"
    assert _causes(text, "nvidia-container-cli-no-nvml")[0] == "docker-daemon-without-host-driver"


def test_a_snap_docker_puts_its_confinement_first():
    text = "$ snap list docker\ndocker  24.0.5  2904  latest/stable  canonical**\n" + NO_NVML
    assert _causes(text, "nvidia-container-cli-no-nvml")[0] == "docker-daemon-without-host-driver"


def test_docker_desktop_on_windows_keeps_the_windows_driver_first():
    # Docker Desktop on Windows gives GPUs through WSL 2: the Windows driver is what is missing
    text = "I installed docker-desktop 4.24 in Windows 10 19042.928\n" + NO_NVML
    assert read_context(text)["log_docker_engine"] == "desktop-windows-or-macos"
    assert _causes(text, "nvidia-container-cli-no-nvml")[0] == "host-driver-missing"


def test_under_wsl_the_windows_build_and_wsl_kernel_are_a_cause():
    text = "$ ls /usr/lib/wsl/lib\nlibcuda.so  libd3d12.so  libdxcore.so\n" + NO_NVML
    assert "wsl-kernel-without-dxg" in _causes(text, "nvidia-container-cli-no-nvml")


def test_without_a_sign_of_the_engine_the_host_driver_stays_first():
    causes = _causes(NO_NVML, "nvidia-container-cli-no-nvml")
    assert causes[0] == "host-driver-missing"
    assert "docker-daemon-without-host-driver" in causes
    # the WSL cause applies only where the log shows WSL or Windows
    assert "wsl-kernel-without-dxg" not in causes


def test_docker_desktops_context_explains_no_gpu_driver_on_linux():
    text = NO_DRIVER + "\ndesktop-linux *   Docker Desktop   unix:///home/ann/.docker/desktop/docker.sock"
    assert _causes(text, "docker-gpu-driver-missing")[0] == "docker-daemon-without-host-driver"


def test_a_snap_docker_without_the_runtime_puts_its_own_configuration_first():
    text = "$ sudo snap services docker\ndocker.dockerd  enabled  active  -\n" + NO_DRIVER
    assert _causes(text, "docker-gpu-driver-missing")[0] == "container-runtime-not-configured"


def test_no_gpu_driver_without_a_sign_keeps_the_missing_toolkit_first():
    assert _causes(NO_DRIVER, "docker-gpu-driver-missing")[0] == "container-toolkit-missing"


# --- the container's device cgroup ------------------------------------------------------------


V1_DENIED = (
    "nvidia-container-cli: mount error: open failed: /sys/fs/cgroup/devices/user.slice/devices.allow: permission denied"
)
V2_DENIED = (
    "stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: mount error: failed to add device rules: "
    "unable to find any existing device filters attached to the cgroup: bpf_prog_query(BPF_CGROUP_DEVICE) "
    "failed: operation not permitted: unknown."
)


@pytest.mark.parametrize("text", [V1_DENIED, V2_DENIED])
def test_a_refused_device_cgroup_names_rootless_engines_first(text):
    found = _explained(text)
    assert "container-cli-device-cgroup-denied" in found
    # the generic step pattern is the fallback: the specific one explains the line
    assert "nvidia-container-cli-stage-error" not in found
    causes = [c.id for c in found["container-cli-device-cgroup-denied"].causes]
    assert causes[0] == "container-cli-lacks-privileges"
    assert causes[-1] in ("kernel-without-cgroup-bpf", "container-toolkit-bpf-filter-rebuild-failed")
    assert "container-engine-in-unprivileged-lxc" in causes


def test_a_kernel_without_cgroup_bpf_comes_first_when_the_query_is_not_implemented():
    text = (
        "nvidia-container-cli: mount error: failed to add device rules: unable to find any existing device "
        "filters attached to the cgroup: bpf_prog_query(BPF_CGROUP_DEVICE) failed: function not implemented: unknown"
    )
    assert _causes(text, "container-cli-device-cgroup-denied")[0] == "kernel-without-cgroup-bpf"


@pytest.mark.parametrize(
    "step",
    [
        "unable to replace original device filters program with new one: failed to call BPF_PROG_ATTACH "
        "(BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI): can't attach program: invalid argument: unknown",
        "unable to generate new device filter program from existing programs: unable to create new device "
        "filters program: load program: invalid argument: last insn is not an exit or jmp",
    ],
)
def test_a_device_program_the_kernel_refuses_names_the_toolkits_rebuild_first(step):
    text = "nvidia-container-cli: mount error: failed to add device rules: " + step
    assert _causes(text, "container-cli-device-cgroup-denied")[0] == "container-toolkit-bpf-filter-rebuild-failed"


@pytest.mark.parametrize(
    "line",
    [
        # runc's own device filter: no NVIDIA helper in it
        "runc create failed: error setting cgroup config for procHooks process: bpf_prog_query(BPF_CGROUP_DEVICE) failed: invalid argument",
        "echo 'c 195:* rwm' > /sys/fs/cgroup/devices/docker/devices.allow",
        # another step of the helper keeps its own pattern
        "nvidia-container-cli: mount error: stat failed: /proc/driver/nvidia/gpus/0000:3b:00.0: no such file or directory: unknown.",
    ],
)
def test_other_cgroup_lines_are_not_the_toolkits_device_rules(line):
    assert "container-cli-device-cgroup-denied" not in _explained(line)


# --- NCCL's shared memory and PCI view --------------------------------------------------------


def test_an_empty_segment_name_means_the_ranks_took_different_host_memory_paths():
    text = (
        "d4f:13740:13740 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching to shared memory segment "
        "/dev/shm/nccl- (size 0), error: No such file or directory (2)"
    )
    assert _causes(text, "nccl-shm-segment-failed")[0] == "nccl-host-memory-paths-differ"


def test_a_named_segment_missing_keeps_the_unshared_dev_shm_first():
    text = (
        "g148:14937:69361 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory segment "
        "/dev/shm/nccl-glnlGK (size 14156128), error: No such file or directory (2)"
    )
    causes = _causes(text, "nccl-shm-segment-failed")
    assert causes[0] == "nccl-shm-not-shared"
    assert "nccl-host-memory-paths-differ" in causes


@pytest.mark.parametrize(
    "line",
    [
        "misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes",
        "[2026-04-22 21:34:20] host:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend "
        "/dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)",
    ],
)
def test_a_segment_that_could_not_be_extended_is_a_full_dev_shm(line):
    assert _causes(line, "nccl-shm-segment-failed")[0] == "nccl-shm-too-small"


@pytest.mark.parametrize(
    "line",
    [
        "resize2fs: failed to extend /dev/sda1 to 1048576 blocks",
        "[1723337199.099229] [w03:1382 :0]     tl_shm_team.c:617  TL_SHM ERROR Child failed to attach to shmseg, errno: Invalid argument",
    ],
)
def test_other_programs_shared_memory_lines_are_not_ncc_ls(line):
    assert "nccl-shm-segment-failed" not in _explained(line)


PCI_PATH = "graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:21/../../0000:21:00.0"


def test_no_pci_path_under_wsl_names_wsl_first():
    text = "Linux DESKTOP 5.15.133.1-microsoft-standard-WSL2 #1 SMP\n" + PCI_PATH
    assert _causes(text, "nccl-gpu-pci-path-missing")[0] == "nccl-wsl-no-pci-tree"


def test_no_pci_path_elsewhere_keeps_both_causes():
    causes = _causes(PCI_PATH, "nccl-gpu-pci-path-missing")
    assert set(causes) == {"nccl-wsl-no-pci-tree", "nccl-sysfs-without-gpu"}


@pytest.mark.parametrize(
    "line",
    [
        "realpath: /sys/class/pci_bus/0000:21: No such file or directory",
        "NCCL INFO Topology detection: network path /sys/devices/pci0000:00/0000:00:01.0 is not a PCI device (vendor 1af4)",
    ],
)
def test_other_sysfs_lines_are_not_ncc_ls_missing_gpu(line):
    assert "nccl-gpu-pci-path-missing" not in _explained(line)


# --- a virtual machine's BAR layout ------------------------------------------------------------


def test_an_invalid_bar_lists_the_hypervisors_layout_after_the_firmware():
    text = "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n NVRM: BAR2 is 0M @ 0x0 (PCI:0000:00:05.0)"
    assert _causes(text, "nvrm-pci-bar-invalid") == ["above-4g-decoding-off", "gpu-passthrough-bar-layout"]


# --- NCCL's memory pool -----------------------------------------------------------------------


def test_an_unsupported_call_in_the_communicators_set_up_names_the_memory_pool_first():
    text = "node3:7101:7130 [1] init.cc:421 NCCL WARN Cuda failure 801 'operation not supported'"
    assert _causes(text, "nccl-cuda-failure")[0] == "nccl-memory-pool-unsupported"


@pytest.mark.parametrize(
    "line",
    [
        # the same error from another of NCCL's files (its P2P transport's cuMem calls)
        "h1:4410:4502 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'operation not supported'",
        # another error from init.cc
        "h1:4410:4502 [0] init.cc:421 NCCL WARN Cuda failure 'out of memory'",
    ],
)
def test_other_failures_keep_the_memory_pool_out_of_first_place(line):
    causes = _causes(line, "nccl-cuda-failure")
    assert causes[0] != "nccl-memory-pool-unsupported"
