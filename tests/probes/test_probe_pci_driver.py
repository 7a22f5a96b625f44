"""PCI and kernel-driver probes over built sysfs and /proc trees."""

from __future__ import annotations

import pytest

from envcheck.probes.driver import parse_kernel_module_version, probe_driver
from envcheck.probes.pci import probe_pci

PCI_IDS = """\
# a trimmed pci.ids: vendor lines at column 0, devices after one tab, subsystems after two
10de  NVIDIA Corporation
\t1c03  GP106 [GeForce GTX 1060 6GB]
\t\t1043 85ac  GeForce GTX 1060 6GB
\t20b2  GA100 [A100 SXM4 80GB]
\t10f1  GP106 High Definition Audio Controller
10df  Emulex Corporation
\t1c03  Not an NVIDIA device despite the same id
"""


def test_nvidia_gpu_without_a_driver_is_still_found(make_tree):
    make_tree.pci("0000:01:00.0", "0x10de", "0x1c03", "0x030000", subsystem=("0x1043", "0x85ac"))
    make_tree.file("usr/share/misc/pci.ids", PCI_IDS)
    facts = probe_pci(make_tree.root, system="Linux")
    assert facts.status == "ok"
    (gpu,) = facts.devices
    assert gpu.address == "0000:01:00.0"
    assert gpu.device_id == "0x1c03"
    assert gpu.driver is None
    assert gpu.name == "GP106 [GeForce GTX 1060 6GB]"
    assert gpu.subsystem == "0x1043:0x85ac"


def test_bound_driver_and_3d_controller_class(make_tree):
    make_tree.pci("0000:07:00.0", "0x10de", "0x20b2", "0x030200", driver="nvidia")
    make_tree.pci("0000:0f:00.0", "0x10DE", "0x20B2", "0x030200", driver="nouveau")
    make_tree.file("usr/share/hwdata/pci.ids", PCI_IDS)  # the Fedora location
    facts = probe_pci(make_tree.root, system="Linux")
    assert [(d.address, d.driver, d.device_id) for d in facts.devices] == [
        ("0000:07:00.0", "nvidia", "0x20b2"),
        ("0000:0f:00.0", "nouveau", "0x20b2"),
    ]
    assert {d.name for d in facts.devices} == {"GA100 [A100 SXM4 80GB]"}


def test_other_vendors_and_the_cards_audio_function_are_not_gpus(make_tree):
    make_tree.pci("0000:00:02.0", "0x8086", "0x3e92", "0x030000", driver="i915")  # Intel iGPU
    make_tree.pci("0000:01:00.1", "0x10de", "0x10f1", "0x040300", driver="snd_hda_intel")  # HDMI audio
    make_tree.pci("0000:02:00.0", "0x10df", "0x1c03", "0x030000")  # same device id, other vendor
    facts = probe_pci(make_tree.root, system="Linux")
    assert facts.status == "missing"
    assert facts.devices == ()


def test_without_pci_ids_the_device_has_no_name(make_tree):
    make_tree.pci("0000:01:00.0", "0x10de", "0x2684", "0x030000", driver="nvidia")
    (gpu,) = probe_pci(make_tree.root, system="Linux").devices
    assert gpu.name is None and gpu.device_id == "0x2684"


def test_unreadable_bus_is_an_error_and_other_systems_are_skipped(make_tree):
    facts = probe_pci(make_tree.root, system="Linux")
    assert facts.status == "error" and "sys/bus/pci/devices" in facts.error
    assert probe_pci(make_tree.root, system="Windows").status == "skipped"


# --- kernel driver ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, version, open_module",
    [
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024", "550.54.15", False),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.154.05  Release Build  "
            "(dvs-builder@U16-T02-35-3)  Thu Dec 28 22:36:52 UTC 2023",
            "535.154.05",
            True,
        ),
        ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  470.239.06  Wed Feb 28 2024", "470.239.06", False),
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  418.87.01  Wed Sep 25 06:00:38 UTC 2019", "418.87.01", False),
    ],
)
def test_kernel_module_version_is_read(make_tree, line, version, open_module):
    make_tree.file("proc/driver/nvidia/version", line + "\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    make_tree.file("sys/module/nvidia/version", version + "\n")
    facts = probe_driver(make_tree.root, system="Linux")
    assert facts.status == "ok" and facts.loaded
    assert facts.version == version == facts.module_version
    assert facts.open_module is open_module
    assert facts.text == line
    assert facts.nouveau_loaded is False


def test_no_module_is_missing_and_nouveau_is_noticed(make_tree):
    make_tree.file("sys/module/nouveau/parameters/modeset", "1\n")
    facts = probe_driver(make_tree.root, system="Linux")
    assert facts.status == "missing" and facts.loaded is False
    assert facts.nouveau_loaded is True
    assert facts.version is None


def test_module_loaded_without_proc_entry_is_an_error(make_tree):
    make_tree.file("sys/module/nvidia/version", "550.54.15\n")
    facts = probe_driver(make_tree.root, system="Linux")
    assert facts.status == "error"
    assert facts.loaded is True and facts.module_version == "550.54.15"


def test_driver_probe_is_skipped_off_linux(make_tree):
    assert probe_driver(make_tree.root, system="Windows").status == "skipped"


def test_version_parser_ignores_dates_and_gcc_versions():
    assert (
        parse_kernel_module_version(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.157  Wed Oct 12 09:19:07 UTC 2022"
        )
        == "390.157"
    )
    assert parse_kernel_module_version("nothing here") is None
