"""Machines described to the probes: sysfs and /proc trees, and what the fake NVML says.

Shared by the tests and by ``make_facts_fixtures.py``, so a committed snapshot and the test that
checks it for drift describe the same machine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fake_nvml"))

import fakenvml


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def pci_device(
    root: Path,
    address: str,
    vendor: str,
    device: str,
    cls: str,
    driver: str | None = None,
    subsystem: tuple[str, str] | None = None,
) -> None:
    """One PCI function as sysfs shows it, with its driver symlink when a driver is bound."""
    base = root / "sys/bus/pci/devices" / address
    write(base / "vendor", vendor + "\n")
    write(base / "device", device + "\n")
    write(base / "class", cls + "\n")
    if subsystem:
        write(base / "subsystem_vendor", subsystem[0] + "\n")
        write(base / "subsystem_device", subsystem[1] + "\n")
    if driver:
        drivers = root / "sys/bus/pci/drivers" / driver
        drivers.mkdir(parents=True, exist_ok=True)
        (base / "driver").symlink_to(os.path.relpath(drivers, base))


# --- a two-GPU A100 server with driver 550.54.15 (CUDA 12.4) ------------------------------------

SERVER_DRIVER = "550.54.15"
SERVER_GPUS = (
    fakenvml.a100(0, procs=[(31337, "python3", 2048)], mem_used_mb=2052),
    fakenvml.a100(1),
)
SERVER_NVML = dict(gpus=SERVER_GPUS, driver_version=SERVER_DRIVER, cuda_version=12040, nvml_version="12.550.54.15")
SERVER_PCI_IDS = "10de  NVIDIA Corporation\n\t20b2  GA100 [A100 SXM4 80GB]\n"
# Where the real library of that driver lives; the snapshot names it instead of the test's build folder.
SERVER_NVML_LIBRARY = f"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{SERVER_DRIVER}"


def build_server_tree(root: Path) -> Path:
    """sysfs and /proc of the server: both GPUs bound to the nvidia module, the module loaded."""
    for gpu in SERVER_GPUS:
        address = "0000:" + gpu["pci"].split(":", 1)[1].lower()
        pci_device(root, address, "0x10de", "0x20b2", "0x030200", driver="nvidia", subsystem=("0x10de", "0x1463"))
    write(root / "usr/share/misc/pci.ids", SERVER_PCI_IDS)
    write(
        root / "proc/driver/nvidia/version",
        f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {SERVER_DRIVER}  Tue Mar  5 22:23:56 UTC 2024\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
    )
    write(root / "sys/module/nvidia/version", SERVER_DRIVER + "\n")
    return root
