"""NVIDIA GPUs on the PCI bus, read from sysfs: present even when no driver is installed.

This is what tells "no NVIDIA GPU here" apart from "a GPU the driver does not drive": the kernel
lists every PCI function under ``/sys/bus/pci/devices`` whatever driver (if any) is bound to it.
"""

from __future__ import annotations

import os
import platform
from dataclasses import replace
from pathlib import Path
from typing import Optional

from envcheck.facts import ERROR, MISSING, OK, SKIPPED, PciDevice, PciFacts
from envcheck.probes.gpu_speed import read_sysfs_link

NVIDIA_VENDOR_ID = "0x10de"
DISPLAY_CLASS_PREFIX = "0x03"  # VGA (0x0300), 3D controller (0x0302, data-centre cards), other display

# Where distributions install the PCI ID database, relative to the filesystem root.
PCI_IDS_FILES = ("usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids", "usr/share/pci.ids")


def probe_pci(root: Path = Path("/"), system: Optional[str] = None) -> PciFacts:
    """NVIDIA display/3D devices; ``missing`` when the bus has none, ``skipped`` off Linux."""
    system = system or platform.system()
    if system != "Linux":
        return PciFacts(status=SKIPPED, error=f"PCI devices are read from sysfs, which {system} does not have")
    bus = root / "sys/bus/pci/devices"
    try:
        entries = sorted(os.listdir(bus))
    except OSError as exc:
        return PciFacts(
            status=ERROR,
            error=f"cannot list {bus}: {exc.strerror or exc}",
        )
    devices = []
    for address in entries:
        device = read_device(bus / address, address)
        if device is not None:
            devices.append(device)
    if devices:
        names = product_names(root, [d.device_id for d in devices])
        devices = [_with_name(d, names) for d in devices]
    return PciFacts(
        status=OK if devices else MISSING,
        devices=tuple(devices),
    )


def read_device(path: Path, address: str) -> Optional[PciDevice]:
    """The device at ``path`` if it is an NVIDIA display/3D function, else None."""
    vendor = _read_attr(path / "vendor")
    if vendor != NVIDIA_VENDOR_ID:
        return None
    class_code = _read_attr(path / "class") or ""
    if not class_code.startswith(DISPLAY_CLASS_PREFIX):
        return None  # the HDMI audio and USB-C functions of the same card
    sub_vendor = _read_attr(path / "subsystem_vendor")
    sub_device = _read_attr(path / "subsystem_device")
    link, numa_node, local_cpus = read_sysfs_link(path)
    return PciDevice(
        address=address,
        vendor_id=vendor,
        device_id=_read_attr(path / "device") or "",
        class_code=class_code,
        driver=_bound_driver(path),
        subsystem=f"{sub_vendor}:{sub_device}" if sub_vendor and sub_device else None,
        link=link,
        numa_node=numa_node,
        local_cpus=local_cpus,
    )


def _read_attr(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace").strip().lower()
    except OSError:
        return None


def _bound_driver(path: Path) -> Optional[str]:
    try:
        return os.path.basename(os.readlink(path / "driver"))
    except OSError:
        return None


def _with_name(device: PciDevice, names: dict[str, str]) -> PciDevice:
    name = names.get(device.device_id)
    return replace(device, name=name) if name else device


def product_names(root: Path, device_ids: list[str]) -> dict[str, str]:
    """Device id ("0x1c03") -> product name from the first pci.ids found, for NVIDIA only."""
    wanted = {d.lower().removeprefix("0x") for d in device_ids}
    for relative in PCI_IDS_FILES:
        try:
            with open(root / relative, encoding="utf-8", errors="replace") as fh:
                return _nvidia_names(fh, wanted)
        except OSError:
            continue
    return {}


def _nvidia_names(lines, wanted: set[str]) -> dict[str, str]:
    """Parse just the NVIDIA vendor block: vendor lines start at column 0, devices after one tab."""
    found: dict[str, str] = {}
    in_nvidia = False
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            if in_nvidia:
                break  # the block is over; the rest of the file is other vendors
            in_nvidia = line[:4].lower() == NVIDIA_VENDOR_ID[2:]
            continue
        if in_nvidia and not line.startswith("\t\t"):
            device_id, _, name = line.strip().partition(" ")
            if device_id.lower() in wanted:
                found["0x" + device_id.lower()] = name.strip()
    return found
