"""The NVIDIA kernel module as the kernel reports it (Linux).

``/proc/driver/nvidia/version`` exists only while the module is loaded; ``/sys/module/nvidia``
also tells a loaded module whose version file is unreadable apart from no module at all.
Comparing this version with the one NVML reports exposes a driver upgraded without a reboot.
"""

from __future__ import annotations

import dataclasses
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
        return DriverFacts(
            status=SKIPPED, error=f"the kernel module is a Linux fact; {system} reports its driver through NVML"
        )
    return dataclasses.replace(_loaded_module(root), **installed_module(root))


def _loaded_module(root: Path) -> DriverFacts:
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


# Where distributions, NVIDIA's installer and DKMS put the module under /lib/modules/<release>.
_MODULE_DIRS = (
    "updates/dkms",
    "kernel/drivers/video",
    "kernel/drivers/gpu/drm/nvidia",
    "extra",
    "updates",
    "kernel/nvidia",
    "video",
)
_MODULE_NAMES = ("nvidia.ko", "nvidia.ko.xz", "nvidia.ko.zst", "nvidia.ko.gz")
_MODINFO_VERSION = re.compile(rb"(?:^|\x00)version=([0-9][0-9.]*)\x00")
MAX_MODULE_BYTES = 256 * 1024 * 1024


def installed_module(root: Path) -> dict:
    """The driver as installed, whether or not it is loaded: module files for the running kernel,
    their version, and what DKMS has built."""
    release = _read_first_line(root / "proc/sys/kernel/osrelease") or (
        platform.release() if root == Path("/") else None
    )
    files: list[str] = []
    base = root / "lib/modules" / (release or "unknown")
    for sub in _MODULE_DIRS:
        for name in _MODULE_NAMES:
            candidate = base / sub / name
            if candidate.is_file() and str(candidate) not in files:
                files.append(str(candidate))
    dkms = []
    dkms_root = root / "var/lib/dkms/nvidia"
    try:
        for version_dir in sorted(dkms_root.iterdir())[:20]:
            if not version_dir.is_dir() or version_dir.is_symlink():
                continue
            kernels = sorted(k.name for k in version_dir.iterdir() if k.is_dir() and k.name not in ("build", "source"))[
                :20
            ]
            dkms.extend(f"{version_dir.name}/{k}" for k in kernels)
    except OSError:
        pass
    display = [str(Path("/") / Path(f).relative_to(root)) if root != Path("/") else f for f in files]
    return {
        "kernel_release": release or None,
        "module_files": tuple(display),
        "module_file_version": module_file_version(Path(files[0])) if files else None,
        "dkms": tuple(dkms),
    }


def module_file_version(path: Path) -> Optional[str]:
    """The ``version=`` a kernel module carries in its .modinfo section (uncompressed, .xz or .gz)."""
    try:
        if path.name.endswith(".xz"):
            # lazy and guarded: importing lzma can fail on some systems, and the try handles it
            import lzma

            with lzma.open(path) as fh:
                data = fh.read(MAX_MODULE_BYTES)
        elif path.name.endswith(".gz"):
            # lazy and guarded: importing gzip can fail on some systems, and the try handles it
            import gzip

            with gzip.open(path) as fh:
                data = fh.read(MAX_MODULE_BYTES)
        elif path.name.endswith(".zst"):
            return None  # no zstd in the standard library; the file's presence is what counts
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_MODULE_BYTES)
    except (OSError, EOFError, ValueError):
        return None
    match = _MODINFO_VERSION.search(data)
    return match.group(1).decode() if match else None


def parse_kernel_module_version(line: str) -> Optional[str]:
    match = _VERSION_IN_TEXT.search(line) or _ANY_VERSION.search(line)
    return match.group(1) if match else None


def _read_first_line(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace").strip().splitlines()[0].strip() or None
    except (OSError, IndexError):
        return None
