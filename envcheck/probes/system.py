"""Facts about the operating system and the environment variables that change TF's GPU use."""

from __future__ import annotations

import getpass
import platform
import re
import socket
from collections.abc import Mapping
from pathlib import Path

from envcheck.facts import ERROR, EnvFacts, PlatformFacts

# The only variables ever recorded, by exact name: what changes how TensorFlow, CUDA, cuDNN, NCCL
# and XLA find and use the GPU, and where libraries and environments are. No prefix is trusted:
# Terraform and OpenTofu keep credentials under TF_ (TF_HTTP_PASSWORD, TF_ENCRYPTION, TF_VAR_*,
# TF_TOKEN_*), and any tool may invent a CUDA_ or NCCL_ name. Every other variable is left out
# of the snapshot entirely, value and name alike: a name can say what a person keeps where.
ENV_ALLOW_EXACT = frozenset(
    {
        # search paths and environments
        "PATH",
        "LD_LIBRARY_PATH",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "VIRTUAL_ENV",
        "CUDA_HOME",
        "CUDA_ROOT",
        "CUDA_PATH",
        "CUDNN_PATH",
        # which GPUs, in which order (CUDA, and the NVIDIA container runtime)
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        # CUDA behaviour
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_CACHE_DISABLE",
        "CUDA_CACHE_MAXSIZE",
        "CUDA_CACHE_PATH",
        "CUDA_FORCE_PTX_JIT",
        "CUDA_DISABLE_PTX_JIT",
        "CUDA_MODULE_LOADING",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "CUDA_MPS_PIPE_DIRECTORY",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
        # TensorFlow's own
        "TF_CPP_MIN_LOG_LEVEL",
        "TF_CPP_MAX_VLOG_LEVEL",
        "TF_CPP_VMODULE",
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "TF_GPU_ALLOCATOR",
        "TF_GPU_THREAD_MODE",
        "TF_GPU_THREAD_COUNT",
        "TF_GPU_HOST_MEM_LIMIT_IN_MB",
        "TF_FORCE_UNIFIED_MEMORY",
        "TF_CUDA_HOST_MEM_LIMIT_IN_MB",
        "TF_ENABLE_ONEDNN_OPTS",
        "TF_DISABLE_MKL",
        "TF_NUM_INTEROP_THREADS",
        "TF_NUM_INTRAOP_THREADS",
        "TF_DETERMINISTIC_OPS",
        "TF_CUDNN_DETERMINISTIC",
        "TF_CUDNN_USE_AUTOTUNE",
        "TF_CUDNN_USE_FRONTEND",
        "TF_CUDNN_WORKSPACE_LIMIT_IN_MB",
        "TF_USE_CUBLASLT",
        "TF_ENABLE_AUTO_MIXED_PRECISION",
        "TF_XLA_FLAGS",
        "TF_USE_LEGACY_KERAS",
        "TF2_BEHAVIOR",
        "TF_CUDA_PATHS",
        # NCCL (multi-GPU collectives)
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "NCCL_P2P_DISABLE",
        "NCCL_P2P_LEVEL",
        "NCCL_SHM_DISABLE",
        "NCCL_IB_DISABLE",
        "NCCL_SOCKET_IFNAME",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_LAUNCH_MODE",
        # XLA
        "XLA_FLAGS",
    }
)
# Windows keeps one variable per installed toolkit: CUDA_PATH_V10_0, CUDA_PATH_V12_5. The whole
# name has that shape (digits only), so nothing else can ride on it.
_CUDA_PATH_VERSIONED = re.compile(r"CUDA_PATH_V\d{1,3}_\d{1,3}")

_TF_CPU_FLAGS = ("avx", "avx2", "avx512f", "fma", "sse4_1", "sse4_2")


def allowed_variable(name: str) -> bool:
    return name in ENV_ALLOW_EXACT or _CUDA_PATH_VERSIONED.fullmatch(name) is not None


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
        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return None


def _has_home() -> bool:
    try:
        Path.home()
        return True
    except RuntimeError:
        return False
