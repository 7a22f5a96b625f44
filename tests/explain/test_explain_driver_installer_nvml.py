"""NVIDIA's installer, nvidia-persistenced and PyTorch's NVML messages, each written from the format
string of the source that prints it (nvidia-installer's kernel.c and misc.c, nvidia-persistenced.c,
torch/cuda/__init__.py, c10/cuda/CUDACachingAllocator.cpp) with the parts a run fills in chosen
here: each is explained by its own pattern, with the cause the log's facts point to first, and a
look-alike stays quiet."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from envcheck.explain.context import read_context
from tests.explain.test_explain_source_families import CATALOGUE


def _only(text: str, pattern_id: str):
    result = CATALOGUE.scan_text(text)
    explanations = [e for e in explain(result) if e.id == pattern_id]
    assert len(explanations) == 1, result.ids
    return explanations[0]


def _first(text: str, pattern_id: str) -> str:
    return _only(text, pattern_id).causes[0].id


# (message, pattern id, first cause id): wordings of other releases, modules, paths and wraps
MESSAGES = [
    # kernel.c: both wordings of the loaded-module check, any of the driver's modules
    (
        "ERROR: An NVIDIA kernel module 'nvidia-modeset' appears to already be loaded in your kernel.",
        "nvidia-installer-module-loaded",
        "gpu-programs-hold-module",
    ),
    (
        "WARNING: An NVIDIA kernel module 'nvidia-peermem' appears to be already loaded in your kernel.  "
        "This may be because it is in use (for example, by an X server, a CUDA program, or the NVIDIA "
        "Persistence Daemon)",
        "nvidia-installer-module-loaded",
        "gpu-programs-hold-module",
    ),
    # hard-wrapped by the installer's terminal width, read joined
    (
        "ERROR: An NVIDIA kernel module 'nvidia-uvm' appears to already be loaded in\n"
        "       your kernel.  This may be because it is in use",
        "nvidia-installer-module-loaded",
        "gpu-programs-hold-module",
    ),
    # the same check run inside a container: the host's modules are what it sees
    (
        "$ docker run -it --rm ubuntu:22.04 bash\n"
        "ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded in your kernel.",
        "nvidia-installer-module-loaded",
        "installer-in-container",
    ),
    # misc.c: nouveau in use, and the note that its blacklist files exist already
    (
        "ERROR: The Nouveau kernel driver is currently in use by your system.  This driver is "
        "incompatible with the NVIDIA driver, and must be disabled before proceeding.",
        "nvidia-installer-nouveau-in-use",
        "other-driver-holds-gpu",
    ),
    (
        "WARNING: One or more modprobe configuration files to disable Nouveau are already present at: "
        "/usr/lib/modprobe.d/nvidia-installer-disable-nouveau.conf, /etc/modprobe.d/nvidia-installer-disable-nouveau.conf.  "
        "Please be sure you have rebooted your system since these files were written.",
        "nvidia-installer-nouveau-in-use",
        "nouveau-blacklist-not-applied",
    ),
    # kernel.c: no kernel sources, on any distribution's wording of the prefix
    (
        "-> Kernel source path: ''\nERROR: Unable to find the kernel source tree for the currently running kernel.",
        "nvidia-installer-no-kernel-source",
        "kernel-headers-missing",
    ),
    # kernel.c test_kernel_module(): the probable reason decides the first cause
    (
        "ERROR: The kernel module failed to load. Secure boot is enabled on this system, so this is likely "
        "because it was not signed by a key that is trusted by the kernel.",
        "nvidia-installer-module-unsigned",
        "secure-boot-unsigned-module",
    ),
    (
        "ERROR: The kernel module failed to load. CONFIG_MODULE_SIG_FORCE is set on the target kernel, so "
        "this is likely because it was not signed by a key that is trusted by the kernel.",
        "nvidia-installer-module-unsigned",
        "kernel-forces-module-signatures",
    ),
    (
        "The signed kernel module failed to load, because the kernel does not trust any key which is capable "
        "of verifying the module signature.",
        "nvidia-installer-module-unsigned",
        "signed-module-key-not-enrolled",
    ),
    # an unsigned module without a stated reason, in a log whose mokutil line says Secure Boot is on
    (
        "$ mokutil --sb-state\nSecureBoot enabled\n"
        "ERROR: The kernel module failed to load, possibly because it was not signed by a key that is trusted by the kernel.",
        "nvidia-installer-module-unsigned",
        "secure-boot-unsigned-module",
    ),
    # misc.c: any of the development tools
    (
        "ERROR: Unable to find the development tool `ld` in your path; please make sure that you have the package 'binutils' installed.",
        "nvidia-installer-build-tool-missing",
        "nvidia-installer-build-tool-missing",
    ),
    # nvidia-persistenced.c: the parent's line, its reason read from the daemon's syslog lines
    (
        "Mar 02 09:10:11 gpu01 nvidia-persistenced[2211]: Failed to query NVIDIA devices. Please ensure that the "
        "NVIDIA device files (/dev/nvidia*) exist, and that user 998 has read and write permissions for those files.\n"
        "Mar 02 09:10:11 gpu01 nvidia-persistenced[2210]: nvidia-persistenced failed to initialize. Check syslog for more details.",
        "nvidia-persistenced-failed",
        "driver-not-loaded",
    ),
    (
        "Jan 05 10:00:01 gh nvidia-persistenced[901]: NUMA: Failed to open /sys/devices/system/memory/memory312/state: Permission denied\n"
        "Jan 05 10:00:01 gh nvidia-persistenced[900]: nvidia-persistenced failed to initialize. Check syslog for more details.",
        "nvidia-persistenced-failed",
        "persistenced-needs-root",
    ),
    (
        "nvidia-persistenced[77]: Failed to open libnvidia-cfg.so.1: libnvidia-cfg.so.1: cannot open shared object file\n"
        "nvidia-persistenced[76]: nvidia-persistenced failed to initialize. Check syslog for more details.",
        "nvidia-persistenced-failed",
        "driver-packages-mixed",
    ),
    (
        "nvidia-persistenced[77]: Unable to find any NVIDIA devices\n"
        "nvidia-persistenced failed to initialize. Check syslog for more details.",
        "nvidia-persistenced-failed",
        "no-nvidia-gpu",
    ),
    # torch/cuda/__init__.py, any release's line number and install path
    (
        "/home/u/.local/lib/python3.12/site-packages/torch/cuda/__init__.py:734: UserWarning: Can't initialize NVML",
        "torch-nvml-init-warning",
        "driver-not-loaded",
    ),
    (
        "$ docker exec -it trainer python -c 'import torch; print(torch.cuda.device_count())'\n"
        "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:611: UserWarning: Can't initialize NVML",
        "torch-nvml-init-warning",
        "container-cgroup-reloaded",
    ),
    # CUDACachingAllocator.cpp: which NVML call failed decides the first cause
    (
        'RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":963, please report a bug to PyTorch.',
        "torch-allocator-nvml-assert",
        "driver-upgraded-no-reboot",
    ),
    (
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "C:\\actions-runner\\_work\\pytorch\\c10\\cuda\\CUDACachingAllocator.cpp":1211, please report a bug to PyTorch.',
        "torch-allocator-nvml-assert",
        "batch-too-large",
    ),
    # the same assert in a log that names the MIG device, and one from a Jetson
    (
        "CUDA_VISIBLE_DEVICES=MIG-5d2c3b4a-0000-1111-2222-333344445555\n"
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":1154, please report a bug to PyTorch.',
        "torch-allocator-nvml-assert",
        "mig-nvml-restricted",
    ),
    (
        "running on a Jetson AGX Orin (JetPack 6)\n"
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/opt/pytorch/pytorch/c10/cuda/CUDACachingAllocator.cpp":995, please report a bug to PyTorch.',
        "torch-allocator-nvml-assert",
        "tegra-without-nvml",
    ),
]

# (text, pattern id that must not explain it)
NOT_THESE = [
    ("An NVIDIA kernel module 'nvidia-drm' was unloaded", "nvidia-installer-module-loaded"),
    ("the nouveau kernel driver is not currently in use", "nvidia-installer-nouveau-in-use"),
    ("Unable to find the kernel headers package in the mirror", "nvidia-installer-no-kernel-source"),
    ("The kernel module was signed by a key that is trusted by the kernel", "nvidia-installer-module-unsigned"),
    ("Unable to find the development version of the package", "nvidia-installer-build-tool-missing"),
    ("nvidia-persistenced: device 0000:3b:00.0 - registered", "nvidia-persistenced-failed"),
    ("UserWarning: Can't get nvml device count", "torch-nvml-init-warning"),
    (
        'RuntimeError: CUDA_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/driver_api.cpp":27',
        "torch-allocator-nvml-assert",
    ),
]


@pytest.mark.parametrize("message, pattern_id, first", MESSAGES, ids=[f"{m[1]}-{m[2]}" for m in MESSAGES])
def test_source_message_is_explained_with_the_logs_cause_first(message, pattern_id, first):
    explanation = _only(message, pattern_id)
    assert explanation.harmless is False
    assert explanation.causes[0].id == first


@pytest.mark.parametrize("text, pattern_id", NOT_THESE, ids=[n[1] for n in NOT_THESE])
def test_a_line_that_only_looks_like_it_is_not_claimed(text, pattern_id):
    assert pattern_id not in CATALOGUE.scan_text(text).ids


def test_the_container_cause_is_offered_only_in_a_container():
    line = "ERROR: An NVIDIA kernel module 'nvidia' appears to already be loaded in your kernel."
    assert "installer-in-container" not in [c.id for c in _only(line, "nvidia-installer-module-loaded").causes]
    in_docker = "root@3f2a1b9c8d7e:/# ls /.dockerenv\n/.dockerenv\n" + line
    assert _first(in_docker, "nvidia-installer-module-loaded") == "installer-in-container"


def test_the_module_name_is_read():
    line = "ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded in your kernel."
    assert _only(line, "nvidia-installer-module-loaded").variables["module"] == "nvidia-drm"


def test_the_driver_mismatch_is_only_a_cause_when_nvml_did_not_start():
    init = 'NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "x.cpp":1'
    query = 'NVML_SUCCESS == r INTERNAL ASSERT FAILED at "x.cpp":1'
    pci = "NVML_SUCCESS == DriverAPI::get()->nvmlDeviceGetHandleByPciBusId_v2_( pci_id, &nvml_device) INTERNAL ASSERT FAILED"
    assert "driver-upgraded-no-reboot" in [c.id for c in _only(init, "torch-allocator-nvml-assert").causes]
    for text in (query, pci):
        causes = [c.id for c in _only(text, "torch-allocator-nvml-assert").causes]
        assert causes[0] == "batch-too-large"
        assert "driver-upgraded-no-reboot" not in causes


@pytest.mark.parametrize(
    "log, first",
    [
        (
            "modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-51-generic\n",
            "module-not-built-for-kernel",
        ),
        (
            "Error! Bad return status for module build on kernel: 6.8.0-51-generic (x86_64)\n",
            "module-not-built-for-kernel",
        ),
        ("[    4.1] NVRM: GPU 0000:01:00.0 is already bound to nouveau.\n", "other-driver-holds-gpu"),
        ("ERROR: The Nouveau kernel driver is currently in use by your system.\n", "other-driver-holds-gpu"),
        ("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n", "secure-boot-unsigned-module"),
        ("$ docker run --rm my-image nvidia-smi\n", "container-without-gpu"),
        ("", "module-not-built-for-kernel"),
    ],
)
def test_nvidia_smi_without_a_driver_ranks_by_what_the_log_shows(log, first):
    text = (
        log
        + "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
    )
    assert _first(text, "nvidia-smi-no-driver") == first


def test_the_container_cause_of_nvidia_smi_needs_a_container():
    line = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    assert "container-without-gpu" not in [c.id for c in _only(line, "nvidia-smi-no-driver").causes]


@pytest.mark.parametrize(
    "text, facts",
    [
        ("nvidia-persistenced[9]: NUMA: Failed to enable NUMA memory Auto-Online", {"log_persistenced": "NUMA"}),
        ("the job ran on a MIG 3g.40gb slice", {"log_mig": "MIG"}),
        ("CUDA_VISIBLE_DEVICES=MIG-GPU-5d2c3b4a-0000-1111-2222-333344445555/1/0", {"log_mig": "MIG"}),
        ("$ cat /etc/nv_tegra_release", {"log_tegra": "nv_tegra_release"}),
        ("Jetson Orin Nano", {"log_tegra": "Jetson"}),
    ],
)
def test_the_facts_are_read_from_the_log(text, facts):
    context = read_context(text)
    for name, value in facts.items():
        assert context.get(name) == value


@pytest.mark.parametrize(
    "text, name",
    [
        ("migration of the database finished", "log_mig"),
        ("MIGRATE-5d2c3b4a-0000-1111", "log_mig"),
        ("integrated tegrastats output", "log_tegra"),
        ("nvidia-persistenced: NUMA enabled", "log_persistenced"),
    ],
)
def test_look_alikes_are_not_facts(text, name):
    assert name not in read_context(text)


@pytest.mark.parametrize(
    "line, xid",
    [
        (
            "Jun 3 02:11:09 node4 kernel: XID 48 An uncorrectable double bit error (DBE) has been detected on GPU (0000:3b:00.0)",
            "48",
        ),
        ("XID 63 Dynamic Page Retirement: New retired page, reload the driver to activate. (0x00000000004f2a00)", "63"),
        ("XID 64 Dynamic Page Retirement: Fatal error, unable to retire page (0x0000000000a1b000)", "64"),
    ],
)
def test_the_page_retirement_guides_xid_forms_are_read_by_number(line, xid):
    explanation = _only(line, "nvrm-xid")
    assert explanation.variables["xid"] == xid
    assert explanation.causes[0].id == "gpu-hardware-or-power"


@pytest.mark.parametrize(
    "line",
    [
        "Dynamic Page Retirement: Enabled",
        "Retired Pages: Double Bit ECC: 0, Pending Page Blacklist: No",
        "XID 48 events are counted by DCGM",
    ],
)
def test_page_retirement_status_lines_are_not_xids(line):
    assert "nvrm-xid" not in CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "log, first",
    [
        # nvmlErrorString() of the status nvidia-smi got for the device, in any wording of a reset
        ("Unable to determine the device handle for GPU 0000:3B:00.0: GPU requires reset", "gpu-needs-reset"),
        ("Unable to determine the device handle for GPU0000:17:00.0: The GPU requires a reset", "gpu-needs-reset"),
        (
            "Unable to determine the device handle for GPU 0000:01:00.0: Insufficient Permissions",
            "device-files-not-accessible",
        ),
        (
            "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost.  Reboot the system to recover this GPU",
            "gpu-fallen-off-bus",
        ),
        ("Unable to determine the device handle for GPU0000:4F:00.0: Unknown Error", "gpu-fallen-off-bus"),
        (
            "$ docker exec -it trainer nvidia-smi\nUnable to determine the device handle for GPU0000:65:00.0: Unknown Error",
            "container-cgroup-reloaded",
        ),
    ],
)
def test_the_device_handle_failure_ranks_by_nvmls_status(log, first):
    assert _first(log, "nvidia-smi-device-handle-failed") == first


def test_the_status_causes_are_offered_only_for_their_status():
    causes = [
        c.id
        for c in _only(
            "Unable to determine the device handle for GPU0000:4F:00.0: Unknown Error",
            "nvidia-smi-device-handle-failed",
        ).causes
    ]
    assert "gpu-needs-reset" not in causes
    assert "device-files-not-accessible" not in causes
    assert "container-cgroup-reloaded" not in causes
    in_container = (
        "$ docker exec -it t nvidia-smi\nUnable to determine the device handle for GPU0000:4F:00.0: GPU is lost"
    )
    assert _first(in_container, "nvidia-smi-device-handle-failed") == "gpu-fallen-off-bus"


def test_a_module_the_installer_built_in_a_container_is_the_containers_first():
    line = "ERROR: Unable to load the kernel module 'nvidia.ko'."
    assert (
        _first("root@4c1d2e3f5a6b:/apollo# ls /.dockerenv\n" + line, "nvidia-kernel-module-load-failed")
        == "installer-in-container"
    )
    causes = [c.id for c in _only(line, "nvidia-kernel-module-load-failed").causes]
    assert causes[0] != "installer-in-container" and causes[-1] == "installer-in-container"


@pytest.mark.parametrize(
    "log, first",
    [
        (
            "error starting plugins: error visiting device: error getting device memory info: Insufficient Permissions",
            "device-files-not-accessible",
        ),
        (
            "$ nvidia-smi -L\nGPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n  MIG 3g.40gb Device 0: (UUID: MIG-5d2c3b4a-0000-1111-2222-333344445555)\n"
            "E0407 94 main.go:188] error building MIG device map: error getting parent memory info: Insufficient Permissions",
            "mig-nvml-restricted",
        ),
        (
            "pynvml.NVMLError_NoPermission: Insufficient Permissions\nthe container runs on a MIG slice",
            "mig-nvml-restricted",
        ),
    ],
)
def test_nvmls_permission_status_names_mig_monitoring_where_the_log_shows_mig(log, first):
    assert _first(log, "nvml-status") == first


def test_a_go_errors_wrapping_is_read_only_around_an_nvml_string():
    assert "nvml-status" not in CATALOGUE.scan_text("error getting device token: Not Found").ids
    assert "nvml-status" not in CATALOGUE.scan_text("error getting device list: permission denied").ids
