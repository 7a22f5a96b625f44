"""The kernel driver's Xid numbers as a table: every number of nverror.h (NVIDIA's open kernel
modules) with its name, a meaning only where NVIDIA's catalogue gives one, and the class of fault
that ranks nvrm-xid's causes. The lines are written from the driver's format string (kernel_rc.c:
"NVRM: Xid (PCI:%04x:%02x:%02x[ GPU-I:%02u[ GPU-CI:%02u]]): %d, pid=%s, name=%s, %s") in the
forms the kernel log is read in (dmesg, dmesg -T, journalctl -k, syslog, nvidia-bug-report),
with numbers no thread showed; every rule has a close case it must not take."""

from __future__ import annotations

import pytest
import yaml

from envcheck.explain import explain
from envcheck.explain.statuses import STATUS_FILE, load_statuses
from envcheck.resources import data_file
from tests.explain.test_explain_source_families import CATALOGUE

XIDS = {s.value: s for s in load_statuses().statuses if s.enum == "NVIDIA Xid"}
CLASSES = {"application", "memory", "nvlink", "bus", "microcontroller", "gsp", "driver", "recovery"}


def _xid(text: str):
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == "nvrm-xid"]
    return found[0] if found else None


def _raw_xid_values() -> list[dict]:
    data = yaml.safe_load(data_file(STATUS_FILE).read_text(encoding="utf-8"))
    (table,) = [t for t in data["tables"] if t["enum"] == "NVIDIA Xid"]
    return table["values"]


@pytest.mark.parametrize(
    "number, name",
    [
        (13, "ROBUST_CHANNEL_GR_EXCEPTION"),
        (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT"),
        (48, "ROBUST_CHANNEL_GPU_ECC_DBE"),
        (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"),
        (119, "GSP_RPC_TIMEOUT"),
        (140, "UNRECOVERABLE_ECC_ERROR_ESCAPE"),
        (171, "UNCORRECTABLE_DRAM_ERROR"),
        (176, "PCIE_CORRECTABLE_ERROR_FAULT"),
    ],
)
def test_the_table_has_the_headers_name_of_each_number(number, name):
    assert XIDS[number].mnemonic == name


def test_the_table_covers_the_header_without_gaps_beyond_its_reserved_numbers():
    # nverror.h leaves 14-15, 17-18, 24-26, 37, 46, 49-57, 66-67, 106-107, 109-118 (bar 110) unnamed
    named = {n for n, s in XIDS.items() if s.mnemonic}
    assert set(range(58, 66)) <= named and set(range(119, 177)) <= named and set(range(1, 14)) <= named
    assert len(named) >= 140


def test_no_meaning_is_invented_for_a_number_known_only_by_its_header_name():
    for value in _raw_xid_values():
        if value.get("class_from") == "name":  # a class read from the name: the meaning says so
            assert "no meaning given here" in value["meaning"], value["name"]
        assert value.get("class", "") in CLASSES | {""}, value["name"]
    header_only = [v for v in _raw_xid_values() if "no meaning given here" in v["meaning"]]
    assert all("source" not in v for v in header_only)  # no page is claimed for a meaning not read


def test_every_class_the_pattern_ranks_by_is_one_the_table_uses():
    used = {s.kind for s in XIDS.values()} - {""}
    assert used == CLASSES
    ranked = set()
    for cause in CATALOGUE.get("nvrm-xid").causes:
        for condition in (cause.first_if, cause.when):
            ranked |= {
                v for name, values in (condition.variables if condition else ()) for v in values if name == "xid_class"
            }
    assert ranked == CLASSES  # every class ranks or admits a cause


@pytest.mark.parametrize(
    "line",
    [
        "[ 4120.118734] NVRM: Xid (PCI:0000:c1:00): 171, pid=90211, name=torchrun, Ch 00000004",  # dmesg
        "[Tue Mar  3 02:11:09 2026] NVRM: Xid (PCI:0000:c1:00): 171, pid='<unknown>', name=<unknown>, details",  # dmesg -T
        "Mar 03 02:11:09 gpu-node-17 kernel: NVRM: Xid (PCI:0000:c1:00): 171, pid=90211, name=python3.12, x",  # journalctl -k
        "2026-03-03T02:11:09.118734+00:00 gpu-node-17 kernel: [ 4120.118734] NVRM: Xid (PCI:0000:c1:00): 171, x",  # rsyslog
        "Mar  3 02:11:09 gpu-node-17 kernel: [ 4120.1] NVRM: Xid (PCI:0000:c1:00 GPU-I:03): 171, pid=90211, x",  # MIG
        "NVRM: Xid (PCI:0000:c1:00 GPU-I:03 GPU-CI:01): 171, pid=90211, name=python, x",  # MIG compute instance
        "NVRM: Xid (0000:c1:00): 171, Ch 00000004",  # older drivers print the address without "PCI:"
    ],
)
def test_an_xid_line_is_read_in_each_form_the_kernel_log_has(line):
    found = _xid(line)
    assert found is not None, line
    assert found.variables["xid"] == "171" and found.variables["pci"] == "0000:c1:00"
    assert found.variables["xid_name"] == "UNCORRECTABLE_DRAM_ERROR" and found.variables["xid_class"] == "memory"
    assert found.causes[0].id == "gpu-hardware-or-power"


@pytest.mark.parametrize(
    "xid, first",
    [
        ("146", "gpu-hardware-or-power"),  # NVLINK_TLW_ERROR: an NVLink number nobody pasted
        ("167", "gpu-hardware-or-power"),  # PCIE_FATAL_TIMEOUT
        ("169", "gpu-hardware-or-power"),  # SEC2_HALT_ERROR: one of the GPU's micro-controllers
        ("95", "gpu-hardware-or-power"),  # an uncontained ECC error
        ("120", "gsp-firmware"),  # GSP_ERROR
        ("119", "gsp-firmware"),  # GSP_RPC_TIMEOUT
        ("68", "application-fault"),  # NVDEC0: an application error in NVIDIA's device plugin
        ("43", "application-fault"),
        ("11", "application-fault"),  # the catalogue's RESTART_APP, then CHECK_APP/CUDA
    ],
)
def test_the_xids_class_ranks_the_causes(xid, first):
    found = _xid(f"kernel: NVRM: Xid (PCI:0000:41:00): {xid}, pid=5120, name=python, Ch 00000001")
    assert found.causes[0].id == first


@pytest.mark.parametrize("xid", ["48", "13", "79", "146", "38"])
def test_the_gsp_firmware_cause_is_only_for_the_gsp_xids(xid):
    found = _xid(f"NVRM: Xid (PCI:0000:41:00): {xid}, pid=5120, name=python")
    assert "gsp-firmware" not in [c.id for c in found.causes]


@pytest.mark.parametrize("xid, given", [("31", True), ("13", True), ("38", True), ("48", False), ("79", False)])
def test_the_driver_release_cause_is_for_the_classes_the_table_says_a_driver_error_causes(xid, given):
    found = _xid(f"NVRM: Xid (PCI:0000:41:00): {xid}, pid=5120, name=python")
    causes = [c.id for c in found.causes]
    assert ("driver-release" in causes) is given
    if xid == "38":
        assert causes[0] == "driver-release"
    elif given:
        assert causes[0] == "application-fault"


def test_a_header_only_number_says_it_has_its_name_only_and_no_meaning():
    found = _xid("NVRM: Xid (PCI:0000:41:00): 150, pid=5120, name=python")
    assert "NVLINK_MSE_ERROR" in found.meaning and "no meaning given here" in found.meaning


def test_a_number_beyond_the_table_is_still_the_drivers_record_without_a_class():
    found = _xid("NVRM: Xid (PCI:0000:41:00): 231, pid=5120, name=python")
    assert found.variables["xid"] == "231" and found.variables["xid_class"] == ""
    assert "newer than the header" in found.meaning


@pytest.mark.parametrize(
    "line",
    [
        "I keep getting Xid 79 on this box, any idea?",  # prose
        "after the update the kernel log shows Xid 119 every few hours",
        "sudo dmesg | grep -i 'NVRM: Xid'",  # the command that looks for them
        "NVRM: GPU at PCI:0000:41:00: GPU-b850f46d-d5ea-c752-ddf3-c4453e44d3f7",  # the line before an Xid
        "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  595.45.04",
        "xid_errors: 0, xid_last: none",  # a monitoring tool's counters
    ],
)
def test_a_line_that_only_names_an_xid_is_not_one(line):
    assert _xid(line) is None
