"""Facts about the operating system and the environment variables that change TF's GPU use."""

from __future__ import annotations

import os
import platform
import re
import socket
from pathlib import Path
from typing import Mapping

from envcheck.facts import ERROR, EnvFacts, PlatformFacts

# The only variables whose values are ever recorded. Everything else (tokens, passwords, ...)
# never reaches a snapshot.
ENV_ALLOW_EXACT = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_ROOT",
    "CUDNN_PATH",
    "LD_LIBRARY_PATH",
    "PATH",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "VIRTUAL_ENV",
    "NVIDIA_VISIBLE_DEVICES",
    "XLA_FLAGS",
)
ENV_ALLOW_PREFIXES = ("CUDA_PATH", "TF_")
# Terraform shares the TF_ prefix and keeps credentials and variables there: never record them.
ENV_DENY_PREFIXES = ("TF_VAR_", "TF_TOKEN_", "TF_CLI_", "TF_WORKSPACE", "TF_LOG", "TF_INPUT", "TF_IN_AUTOMATION", "TF_DATA_DIR")

_TF_CPU_FLAGS = ("avx", "avx2", "avx512f", "fma", "sse4_1", "sse4_2")


def allowed_variable(name: str) -> bool:
    if name.startswith(ENV_DENY_PREFIXES):
        return False
    return name in ENV_ALLOW_EXACT or name.startswith(ENV_ALLOW_PREFIXES)


def probe_environment(environ: Mapping[str, str]) -> EnvFacts:
    variables = {k: environ[k] for k in sorted(environ) if allowed_variable(k)}
    return EnvFacts(variables=variables)


def probe_platform(environ: Mapping[str, str], root: Path = Path("/")) -> PlatformFacts:
    """OS facts. ``root`` is the filesystem root, so tests can hand in a built tree."""
    try:
        system = platform.system()
        release = platform.release()
        wsl = detect_wsl(release, root)
        os_name = {"Windows": "windows", "Darwin": "macos"}.get(system, "linux")
        if wsl:
            os_name = "wsl"
        cpu, flags = _cpu_info(root)
        return PlatformFacts(
            system=system,
            os=os_name,
            release=release,
            version=platform.version(),
            machine=platform.machine(),
            distro=_distro(root, system),
            glibc=_glibc(),
            wsl=wsl,
            hostname=socket.gethostname() or None,
            user=environ.get("USER") or environ.get("USERNAME") or _login_name(),
            home=str(Path.home()) if _has_home() else None,
            cpu=cpu,
            cpu_flags=flags,
        )
    except Exception as exc:  # noqa: BLE001 - probes never raise
        return PlatformFacts(status=ERROR, error=f"{type(exc).__name__}: {exc}")


def detect_wsl(release: str, root: Path = Path("/")) -> int | None:
    """2 for WSL2, 1 for WSL1, None elsewhere (from the kernel release and /proc/version)."""
    text = release
    try:
        text += " " + (root / "proc/version").read_text(errors="replace")
    except OSError:
        pass
    lowered = text.lower()
    if "microsoft" not in lowered and "wsl" not in lowered:
        return None
    if "wsl2" in lowered or "microsoft-standard" in lowered:
        return 2
    return 1


def _distro(root: Path, system: str) -> str | None:
    if system == "Windows":
        return f"Windows {platform.release()}"
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]}"
    try:
        text = (root / "etc/os-release").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.M)
    return match.group(1) if match else None


def _glibc() -> str | None:
    lib, version = platform.libc_ver()
    return version if lib == "glibc" and version else None


def _cpu_info(root: Path) -> tuple[str | None, tuple[str, ...]]:
    try:
        text = (root / "proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return (platform.processor() or None), ()
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags_line = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    return (model.group(1).strip() if model else None), tuple(f for f in _TF_CPU_FLAGS if f in flags)


def _login_name() -> str | None:
    try:
        import getpass

        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return None


def _has_home() -> bool:
    try:
        Path.home()
        return True
    except RuntimeError:
        return False


def environ_snapshot() -> dict[str, str]:
    return dict(os.environ)
