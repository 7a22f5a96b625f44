"""Build the fake libnvidia-ml.so.1 and describe a machine to it (see fake_nvml.c for the knobs)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

SOURCE = Path(__file__).resolve().parent / "fake_nvml.c"

# Library variants: compile-time flags that remove entry points, as older drivers lack them.
VARIANTS = {
    "current": (),
    "old": ("-DOMIT_NEWER_ENTRY_POINTS",),
    "ancient": ("-DOMIT_NEWER_ENTRY_POINTS", "-DOMIT_INIT_WITH_FLAGS"),
}


def compiler() -> Optional[str]:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def build(out_dir: Path, variant: str = "current") -> Path:
    """Compile the fake into ``out_dir/libnvidia-ml.so.1`` and return the directory."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) on PATH")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "libnvidia-ml.so.1"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O1",
            "-Wall",
            "-Werror",
            "-Wl,-soname,libnvidia-ml.so.1",
            *VARIANTS[variant],
            "-o",
            str(target),
            str(SOURCE),
        ],
        check=True,
        capture_output=True,
    )
    return out_dir


def environment(
    gpus: tuple[Mapping[str, Any], ...] = (),
    driver_version: Optional[str] = "550.54.15",
    cuda_version: Optional[int] = 12040,
    nvml_version: Optional[str] = "12.550.54.15",
    init_error: Optional[int] = None,
    count_error: Optional[int] = None,
    pairs: Optional[Mapping[tuple[int, int], tuple[int, int, int, int]]] = None,
) -> dict[str, str]:
    """FAKE_NVML_* variables describing a machine.

    Each GPU is a mapping with any of: name, uuid, serial, pci, pci_device_id, cc, mem_total_mb,
    mem_used_mb, mig (bool), procs (list of (pid, name, used_mb)), error (handle return code),
    fail (mapping query -> return code), and what decides its speed: pcie (current gen, current
    width, max gen, max width[, GPU's own max gen]), clocks (sm, sm max, memory, memory max MHz),
    events (the clock event reasons' bit mask), temp (celsius, slowdown celsius), power (usage,
    limit, default limit in mW), util (gpu %, memory %), persistence (bool), compute_mode (int),
    ecc (enabled, corrected volatile, uncorrected volatile, uncorrected aggregate), retired
    (single-bit pages, double-bit pages, pending), remap (correctable, uncorrectable, pending,
    failure), numa (node), cpus (a CPU list such as "0-15,32-47"), nvlink (active, links).
    ``pairs`` maps (a, b), a < b, to (topology level, P2P read, P2P write, P2P NVLink status).
    """
    env: dict[str, str] = {"FAKE_NVML_GPU_COUNT": str(len(gpus))}
    for (a, b), answer in (pairs or {}).items():
        env[f"FAKE_NVML_PAIR_{a}_{b}"] = ",".join(str(int(v)) for v in answer)
    for key, value in (
        ("DRIVER_VERSION", driver_version),
        ("CUDA_VERSION", cuda_version),
        ("NVML_VERSION", nvml_version),
        ("INIT_ERROR", init_error),
        ("COUNT_ERROR", count_error),
    ):
        if value is not None:
            env[f"FAKE_NVML_{key}"] = str(value)
    for index, gpu in enumerate(gpus):
        prefix = f"FAKE_NVML_GPU{index}_"
        for key in ("name", "uuid", "serial", "pci", "pci_device_id", "cc", "mem_total_mb", "mem_used_mb", "error"):
            if gpu.get(key) is not None:
                env[prefix + key.upper()] = str(gpu[key])
        if gpu.get("mig") is not None:
            env[prefix + "MIG"] = "1" if gpu["mig"] else "0"
        if gpu.get("procs"):
            env[prefix + "PROCS"] = ",".join(f"{pid}:{name}:{mb}" for pid, name, mb in gpu["procs"])
        if gpu.get("fail"):
            env[prefix + "FAIL"] = ",".join(f"{query}={code}" for query, code in gpu["fail"].items())
        for key in ("pcie", "clocks", "temp", "power", "util", "ecc", "retired", "remap", "nvlink"):
            if gpu.get(key) is not None:
                env[prefix + key.upper()] = ",".join(str(int(v)) for v in gpu[key])
        for key in ("events", "persistence", "compute_mode", "numa"):
            if gpu.get(key) is not None:
                env[prefix + key.upper()] = hex(int(gpu[key]))
        if gpu.get("cpus") is not None:
            env[prefix + "CPUS"] = ",".join(hex(w) for w in cpu_mask_words(gpu["cpus"]))
    return env


def cpu_mask_words(cpu_list: str) -> list[int]:
    """ "0-3,8" -> the 64-bit words of NVML's CPU affinity mask ([0x10f])."""
    cpus: set[int] = set()
    for part in cpu_list.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    words = [0] * (max(cpus) // 64 + 1)
    for cpu in cpus:
        words[cpu // 64] |= 1 << (cpu % 64)
    return words


def healthy(index: int, **overrides: Any) -> dict[str, Any]:
    """An A100 under load with nothing wrong: x16 Gen4, full clocks, cool, ECC clean, NUMA node 0."""
    gpu = a100(
        index,
        pcie=(4, 16, 4, 16, 4),
        clocks=(1410, 1410, 1593, 1593),
        events=0,
        temp=(55, 88),
        power=(250_000, 400_000, 400_000),
        util=(97, 60),
        persistence=True,
        compute_mode=0,
        ecc=(1, 0, 0, 0),
        retired=(0, 0, 0),
        remap=(0, 0, 0, 0),
        numa=0,
        cpus="0-31",
        nvlink=(12, 12),
    )
    gpu.update(overrides)
    return gpu


def a100(index: int, **overrides: Any) -> dict[str, Any]:
    """One A100-SXM4-80GB as a DGX-style server reports it."""
    gpu = {
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": f"GPU-4c2a9f3e-1b7d-4e0a-9c61-0000000000{index:02d}",
        "serial": f"13232210{index:05d}",
        "pci": f"00000000:{0x07 + 8 * index:02X}:00.0",
        "pci_device_id": "0x20B210DE",
        "cc": "8.0",
        "mem_total_mb": 81920,
        "mem_used_mb": 4,
        "mig": False,
    }
    gpu.update(overrides)
    return gpu
