"""Snapshots for the rule tests: the named JSON fixtures, and small changes to them.

Variants are built with ``change`` (dataclasses.replace on a dotted path) instead of hundreds of
JSON files, so each case shows exactly what differs from a realistic machine.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

from envcheck.facts import (
    ERROR,
    MISSING,
    SKIPPED,
    CudaToolkit,
    Distribution,
    Facts,
    GpuProcess,
    LibraryCopy,
    LibraryFacts,
    NvmlFacts,
    NvmlGpu,
    PciDevice,
    PlacementResult,
    TensorflowFacts,
    TfDevice,
    load_facts,
)

FACTS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "facts"


@cache
def named(name: str) -> Facts:
    return load_facts(FACTS_DIR / f"{name}.json")


def setup_post() -> Facts:
    """Windows 10, Python 3.7, tensorflow-gpu 1.13.1 with CUDA 9.0 installed: cudart64_100.dll missing."""
    return named("setup_post_win10")


def server() -> Facts:
    """Ubuntu, TF 2.15.1 with its pip CUDA wheels, 4x V100, everything working."""
    return named("multi_gpu_server")


def no_gpu() -> Facts:
    """Linux, TF 2.21 CUDA build, no NVIDIA GPU, a CUDA 13 toolkit in /usr/local/cuda."""
    return named("linux_cuda_build_no_gpu")


def change(obj: Any, changes: dict[str, Any]) -> Any:
    """``change(facts, {"nvml.driver_version": "450.80.02"})``: replace fields on dotted paths."""
    for path, value in changes.items():
        obj = _replace(obj, path.split("."), value)
    return obj


def _replace(obj: Any, parts: list[str], value: Any) -> Any:
    head, rest = parts[0], parts[1:]
    new = value if not rest else _replace(getattr(obj, head), rest, value)
    return dataclasses.replace(obj, **{head: new})


# --- common variants -----------------------------------------------------------------------------


def quick(facts: Facts) -> Facts:
    """The same machine judged without the TF worker (doctor --quick)."""
    return change(facts, {"quick": True, "tensorflow": TensorflowFacts(status=SKIPPED)})


def with_env(facts: Facts, **variables: str) -> Facts:
    merged = dict(facts.env.variables)
    merged.update(variables)
    return change(facts, {"env.variables": merged})


def with_distributions(facts: Facts, *dists: tuple[str, str], drop: tuple[str, ...] = ()) -> Facts:
    kept = [d for d in facts.packages.distributions if d.name not in drop and d.name not in {n for n, _ in dists}]
    kept += [Distribution(name=n, version=v, location="/site-packages") for n, v in dists]
    return change(facts, {"packages.distributions": tuple(sorted(kept, key=lambda d: d.name))})


def with_tf(facts: Facts, distribution: str, version: str, **tf_fields: Any) -> Facts:
    """Another TF distribution installed, seen by the TF worker with ``tf_fields``."""
    others = tuple(d for d in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu") if d != distribution)
    facts = with_distributions(facts, (distribution, version), drop=others)
    return change(
        facts,
        {
            "tensorflow": dataclasses.replace(
                facts.tensorflow, version=version, distribution=distribution, distributions=(distribution,), **tf_fields
            )
        },
    )


def server_gpus(facts: Facts, *gpus: tuple[str, str], **gpu_fields: Any) -> Facts:
    """Replace the server's GPUs by (name, compute capability) pairs; TF sees and uses them all."""
    nvml = tuple(
        NvmlGpu(
            index=i,
            name=name,
            uuid=f"GPU-{i:08d}-0000-0000-0000-000000000000",
            pci_bus_id=f"00000000:{i + 1:02X}:00.0",
            compute_capability=cc,
            memory_total_mb=16384,
            memory_used_mb=300,
            **gpu_fields,
        )
        for i, (name, cc) in enumerate(gpus)
    )
    devices = (TfDevice(name="/physical_device:CPU:0", device_type="CPU"),) + tuple(
        TfDevice(name=f"/physical_device:GPU:{i}", device_type="GPU") for i in range(len(gpus))
    )
    placement = tuple(
        PlacementResult(op=op, requested=f"/GPU:{i}", device=f"/job:localhost/replica:0/task:0/device:GPU:{i}", ok=True)
        for i in range(len(gpus))
        for op in ("matmul", "conv2d")
    )
    pci = tuple(
        PciDevice(
            address=f"0000:{i + 1:02x}:00.0",
            vendor_id="0x10de",
            device_id="0x2204",
            class_code="0x030000",
            driver="nvidia",
            name=name,
        )
        for i, (name, _) in enumerate(gpus)
    )
    return change(
        facts,
        {
            "nvml.gpus": nvml,
            "tensorflow.physical_devices": devices,
            "tensorflow.placement": placement,
            "pci.devices": pci,
        },
    )


def tf_sees_no_gpu(facts: Facts, *log_lines: str) -> Facts:
    return change(
        facts,
        {
            "tensorflow.physical_devices": (TfDevice(name="/physical_device:CPU:0", device_type="CPU"),),
            "tensorflow.placement": tuple(
                PlacementResult(
                    op=op, requested="/CPU:0", device="/job:localhost/replica:0/task:0/device:CPU:0", ok=True
                )
                for op in ("matmul", "conv2d")
            ),
            "tensorflow.log_lines": log_lines,
        },
    )


def no_driver_linux(facts: Facts, pci_driver: str | None = None) -> Facts:
    """The server's cards on the PCI bus with no NVIDIA driver (or another one) bound."""
    pci = tuple(dataclasses.replace(d, driver=pci_driver) for d in facts.pci.devices)
    return change(
        quick(facts),
        {
            "pci.devices": pci,
            "driver": dataclasses.replace(
                facts.driver,
                status=MISSING,
                loaded=False,
                version=None,
                module_version=None,
                text=None,
                error="the nvidia kernel module is not loaded",
            ),
            "nvml": NvmlFacts(
                status=MISSING, error_kind="library_not_found", error="NVML Shared Library Not Found", error_code=12
            ),
        },
    )


def nvml_failure(facts: Facts, kind: str, message: str) -> Facts:
    return change(quick(facts), {"nvml": NvmlFacts(status=ERROR, error_kind=kind, error=message)})


def gpu_failure(facts: Facts, index: int, kind: str, message: str) -> Facts:
    gpus = tuple(
        dataclasses.replace(g, status=ERROR, error_kind=kind, error=message) if g.index == index else g
        for g in facts.nvml.gpus
    )
    return change(facts, {"nvml.gpus": gpus})


def windows_copies(facts: Facts, directory: str, *names: str) -> Facts:
    """Add DLLs in ``directory`` (on PATH, searched first) to a Windows snapshot."""
    from envcheck.probes.library_search import match_library

    libraries = list(facts.libraries.libraries)
    for name in names:
        family, version = match_library(name, "windows")
        copy = LibraryCopy(
            path=f"{directory}\\{name}", directory=directory, origin="PATH", file_version=version, names=(name,)
        )
        for i, lib in enumerate(libraries):
            if lib.family == family:
                libraries[i] = dataclasses.replace(
                    lib, copies=(copy,) + lib.copies, winners={**lib.winners, name: copy.path}
                )
                break
        else:
            libraries.append(LibraryFacts(family=family, copies=(copy,), winner=copy.path, winners={name: copy.path}))
    return change(facts, {"libraries.libraries": tuple(libraries)})


def cuda_10_installed(facts: Facts, without: tuple[str, ...] = ()) -> Facts:
    """The setup post after installing CUDA 10.0 and cuDNN 7.4 (less the files in ``without``)."""
    names = (
        "cudart64_100.dll",
        "cublas64_100.dll",
        "cufft64_100.dll",
        "curand64_100.dll",
        "cusolver64_100.dll",
        "cudnn64_7.dll",
    )
    root = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0"
    toolkit = CudaToolkit(path=root, version="10.0", origin="CUDA_PATH", version_source="CUDA_PATH_V10_0")
    facts = change(facts, {"libraries.toolkits": (toolkit,) + facts.libraries.toolkits})
    # The import error of the original snapshot no longer applies: judge it as a --quick run.
    return windows_copies(quick(facts), root + "\\bin", *(n for n in names if n not in without))


def library_copies(facts: Facts, family: str, *copies: LibraryCopy) -> Facts:
    libraries = tuple(
        dataclasses.replace(lib, copies=copies, winner=copies[0].path if copies else None, winners={})
        if lib.family == family
        else lib
        for lib in facts.libraries.libraries
    )
    return change(facts, {"libraries.libraries": libraries})


def busy_gpu(facts: Facts, used_mb: int) -> Facts:
    gpus = list(facts.nvml.gpus)
    gpus[0] = dataclasses.replace(
        gpus[0], memory_used_mb=used_mb, processes=(GpuProcess(pid=4242, name="python3", used_memory_mb=used_mb - 300),)
    )
    return change(facts, {"nvml.gpus": tuple(gpus)})


def failing_ops(
    facts: Facts, devices: tuple[str, ...], error: str, ops: tuple[str, ...] = ("matmul", "conv2d")
) -> Facts:
    """The placement test's ``ops`` fail with ``error`` on the TensorFlow ``devices`` ("/GPU:2")."""
    placement = tuple(
        dataclasses.replace(p, ok=False, device=None, error=error) if p.requested in devices and p.op in ops else p
        for p in facts.tensorflow.placement
    )
    return change(facts, {"tensorflow.placement": placement})


def unbound_card(facts: Facts, device_id: str, address: str = "0000:99:00.0", name: str | None = None) -> Facts:
    """One more NVIDIA card on the PCI bus that no driver drives (the loaded driver does not list it)."""
    card = PciDevice(address=address, vendor_id="0x10de", device_id=device_id, class_code="0x030000", name=name)
    return change(facts, {"pci.devices": facts.pci.devices + (card,)})


BUSY = "InternalError: CUDA runtime implicit initialization on GPU:2 failed. Status: CUDA-capable device(s) is/are busy or unavailable"
