"""The NVIDIA kernel module as the kernel reports it (Linux).

``/proc/driver/nvidia/version`` exists only while the module is loaded; ``/sys/module/nvidia``
also tells a loaded module whose version file is unreadable apart from no module at all.
Comparing this version with the one NVML reports exposes a driver upgraded without a reboot.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path
from typing import Optional

from envcheck.facts import ERROR, MISSING, SKIPPED, DriverFacts

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024"
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (...)"
_VERSION_IN_TEXT = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)*)")
_ANY_VERSION = re.compile(r"\b(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)\b")


def probe_driver(root: Path = Path("/"), system: Optional[str] = None) -> DriverFacts:
    system = system or platform.system()
    if system != "Linux":
        return DriverFacts(status=SKIPPED, error=f"the kernel module is a Linux fact; {system} reports its driver through NVML")
    version_file = root / "proc/driver/nvidia/version"
    module_version = _read_first_line(root / "sys/module/nvidia/version")
    module_present = (root / "sys/module/nvidia").is_dir()
    nouveau = (root / "sys/module/nouveau").is_dir()
    try:
        text = version_file.read_text(errors="replace")
    except FileNotFoundError:
        return DriverFacts(
            status=ERROR if module_present else MISSING,
            loaded=module_present,
            module_version=module_version,
            nouveau_loaded=nouveau,
            error=(
                f"{version_file} is missing although the nvidia module is loaded"
                if module_present
                else "the nvidia kernel module is not loaded"
            ),
        )
    except OSError as exc:
        return DriverFacts(
            status=ERROR,
            loaded=module_present,
            module_version=module_version,
            nouveau_loaded=nouveau,
            error=f"cannot read {version_file}: {exc.strerror or exc}",
        )
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return DriverFacts(
        loaded=True,
        version=parse_kernel_module_version(first),
        module_version=module_version,
        text=first or None,
        open_module=("Open Kernel Module" in first) if first else None,
        nouveau_loaded=nouveau,
    )


def parse_kernel_module_version(line: str) -> Optional[str]:
    match = _VERSION_IN_TEXT.search(line) or _ANY_VERSION.search(line)
    return match.group(1) if match else None


def _read_first_line(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace").strip().splitlines()[0].strip() or None
    except (OSError, IndexError):
        return None

