"""Machines generated from the matrix: every GPU architecture, every TensorFlow release, drivers at
and around each floor, Linux / Windows / WSL2, one, two and mixed GPUs, ops failing on some or all.

``snapshot(spec)`` writes the facts such a machine's probes would record. What happens on the
machine (which GPUs the driver drives, which TensorFlow lists, which ops fail) is decided here from
NVIDIA's and TensorFlow's rules, written out plainly and independently of envcheck's own code: a
driver drives an architecture up to its last branch; CUDA starts when the driver is at least the
CUDA release's floor; TensorFlow lists a GPU its build has a cubin for (same major, equal or lower
minor) or PTX at or below it; PTX from a CUDA release compiles only on a driver of that release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Optional

from envcheck.facts import (
    MISSING,
    SKIPPED,
    Distribution,
    DriverFacts,
    EnvFacts,
    Facts,
    LibrariesFacts,
    LibraryCopy,
    LibraryFacts,
    NvmlFacts,
    NvmlGpu,
    PackagesFacts,
    PciDevice,
    PciFacts,
    PlacementResult,
    PlatformFacts,
    PythonFacts,
    TensorflowFacts,
    TfDevice,
)
from envcheck.matrix import load_matrix
from envcheck.matrix.libraries import library_family

MATRIX = load_matrix()
OSES = ("linux", "windows", "wsl")
OPS = ("ok", "fail_first", "fail_all", "busy_first", "conv_first")
BUSY = "InternalError: CUDA runtime implicit initialization on GPU:0 failed. Status: CUDA-capable device(s) is/are busy or unavailable"
GEMM = "InternalError: Blas GEMM launch failed : a.shape=(512, 512), b.shape=(512, 512), m=512, n=512, k=512"
PTX_TOO_NEW = (
    "InternalError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain."
)
CUDNN = "UnknownError: CUDNN_STATUS_EXECUTION_FAILED"


@dataclass(frozen=True)
class Card:
    name: str
    cc: str
    pci_id: str  # "0x2204"


@dataclass(frozen=True)
class Spec:
    os: str
    tf: str  # a release row ("2.15")
    cards: tuple[Card, ...]
    driver: str
    ops: str = "ok"
    visible: Optional[str] = None  # CUDA_VISIBLE_DEVICES
    installed: bool = True  # False: TensorFlow not installed yet
    quick: bool = False


# --- the sample space ----------------------------------------------------------------------------


@cache
def cards() -> tuple[Card, ...]:
    """One product for each compute capability the matrix names (the first with a PCI id)."""
    out: dict[str, Card] = {}
    for gpu in MATRIX.gpus():
        cc = str(gpu.compute_capability)
        if cc not in out and gpu.pci_ids:
            out[cc] = Card(gpu.name, cc, "0x" + gpu.pci_ids[0])
    return tuple(sorted(out.values(), key=lambda c: tuple(int(p) for p in c.cc.split("."))))


def releases(os: str) -> tuple[str, ...]:
    wheels = "linux" if os == "wsl" else os
    return tuple(str(b.tf) for b in MATRIX.tf_releases(wheels) if not b.is_patch_row)


def drivers(os: str, tf: str) -> tuple[str, ...]:
    """Drivers at and around the release's floors on ``os`` (WSL2: Windows numbers), and at the last
    branch of the architectures that end (390, 470, 580), so every side of every line is tried."""
    build = MATRIX.tf_build(tf, "linux" if os == "wsl" else os)
    windows = os in ("windows", "wsl")
    branches = ("391.35", "474.89", "581.57") if windows else ("390.157", "470.256.02", "580.95.05")
    out = list(branches)
    if build is not None and build.cuda is not None:
        need = MATRIX.driver_requirement(build.cuda, os)
        for version in (need.minimum, need.full) if need is not None else ():
            if version is not None:
                out += [_below(str(version)), str(version)]
    return tuple(dict.fromkeys(out))


def _below(version: str) -> str:
    major, *rest = version.split(".")
    return f"{int(major) - 1}.99" if not rest or int(rest[0]) == 0 else f"{major}.{int(rest[0]) - 1}"


def gpu_sets(card: Card) -> list[tuple[Card, ...]]:
    """One card, two of it, and it beside the newest and beside the oldest architecture."""
    every = cards()
    newest, oldest = every[-1], every[0]
    return [(card,), (card, card), (card, newest) if card != newest else (card, every[-2]), (oldest, card)]


def single_gpu_machines() -> list[Spec]:
    """Every architecture x release x driver at and around its floors x OS, one GPU each."""
    return [
        Spec(os, tf, (card,), driver)
        for os in OSES
        for tf in releases(os)
        for card in cards()
        for driver in drivers(os, tf)
    ]


def mixed_machines() -> list[Spec]:
    """Every architecture x release x OS in two GPUs of one kind with each way of failing ops, and
    beside the newest and the oldest architecture, at the release's own driver."""
    out = []
    for os in OSES:
        for tf in releases(os):
            driver = drivers(os, tf)[-1]
            for card in cards():
                twin, *mixes = gpu_sets(card)[1:]
                out += [Spec(os, tf, twin, driver, ops) for ops in OPS]
                out += [Spec(os, tf, gpus, driver) for gpus in mixes]
    return out


# --- what the machine's probes record -------------------------------------------------------------


def snapshot(spec: Spec) -> Facts:
    windows = spec.os == "windows"
    build = MATRIX.tf_build(spec.tf, "linux" if spec.os == "wsl" else spec.os)
    python = max(build.python, key=lambda v: tuple(int(p) for p in v.split(".")))
    driven = [c for c in spec.cards if _driven(c, spec.driver)]
    tf_gpu_build = build.gpu and not (windows and build.tf > MATRIX.platform.windows_native_gpu_last)
    exe = r"C:\Users\u\venv\Scripts\python.exe" if windows else "/home/u/venv/bin/python"
    facts = Facts(
        created="2026-12-01T00:00:00+00:00",
        quick=spec.quick,
        python=PythonFacts(executable=exe, version=f"{python}.0", implementation="CPython", bits=64, machine="x86_64"),
        platform=PlatformFacts(
            system="Windows" if windows else "Linux",
            os=spec.os,
            machine="x86_64",
            distro="Windows 11" if windows else "Ubuntu 22.04.4 LTS",
            cpu_flags=("avx", "avx2", "fma"),
        ),
        env=EnvFacts(variables={} if spec.visible is None else {"CUDA_VISIBLE_DEVICES": spec.visible}),
        packages=_packages(build, spec, tf_gpu_build),
        pci=_pci(spec, driven),
        driver=_driver(spec),
        nvml=_nvml(spec, driven),
        libraries=_libraries(build, spec, tf_gpu_build),
        tensorflow=_tensorflow(build, spec, driven, tf_gpu_build),
    )
    return facts


def _driven(card: Card, driver: str) -> bool:
    """A driver drives an architecture up to the architecture's last branch (Windows numbers a
    branch's drivers just above it: 474 is R470)."""
    arch = MATRIX.architecture(card.cc)
    if arch is None or arch.last_driver_branch is None:
        return True
    major = int(driver.split(".")[0])
    return major - major % 5 <= int(arch.last_driver_branch)


def _bus(position: int) -> str:
    return f"0000:{position + 1:02x}:00.0"


def _packages(build, spec: Spec, gpu_build: bool) -> PackagesFacts:
    if not spec.installed:
        return PackagesFacts(distributions=(Distribution(name="numpy", version="1.26.4"),))
    name = build.distribution if gpu_build else "tensorflow"
    return PackagesFacts(distributions=(Distribution(name=name, version=_version(build)),))


def _version(build) -> str:
    return f"{build.tf}.0" if len(build.tf.release) == 2 else str(build.tf)


def _pci(spec: Spec, driven: list[Card]) -> PciFacts:
    if spec.os != "linux":
        return PciFacts(status=SKIPPED) if spec.os == "windows" else PciFacts(status=MISSING)
    devices = tuple(
        PciDevice(
            address=_bus(i),
            vendor_id="0x10de",
            device_id=c.pci_id,
            class_code="0x030000",
            driver="nvidia" if c in driven else None,
        )
        for i, c in enumerate(spec.cards)
    )
    return PciFacts(devices=devices)


def _driver(spec: Spec) -> DriverFacts:
    if spec.os != "linux":
        return DriverFacts(status=SKIPPED)
    return DriverFacts(loaded=True, version=spec.driver, module_version=spec.driver, module_file_version=spec.driver)


def _nvml(spec: Spec, driven: list[Card]) -> NvmlFacts:
    gpus = []
    for index, (position, card) in enumerate((p, c) for p, c in enumerate(spec.cards) if c in driven):
        gpus.append(
            NvmlGpu(
                index=index,
                name=card.name,
                uuid=f"GPU-{position:08d}-aaaa-bbbb-cccc-{index:012d}",
                pci_bus_id=_bus(position),
                compute_capability=card.cc,
                memory_total_mb=16384,
                memory_used_mb=200,
            )
        )
    return NvmlFacts(driver_version=spec.driver, cuda_driver_version=None, gpus=tuple(gpus))


def _libraries(build, spec: Spec, gpu_build: bool) -> LibrariesFacts:
    """Every library the build loads, found and loadable: the chain's other links are the subject."""
    if not gpu_build:
        return LibrariesFacts()
    windows = spec.os == "windows"
    directory = r"C:\cuda\bin" if windows else "/home/u/venv/lib/nvidia/lib"
    by_family: dict[str, list[LibraryCopy]] = {}
    for name in build.libraries:
        path = f"{directory}\\{name}" if windows else f"{directory}/{name}"
        version = re.sub(r"^\D+", "", name).replace(".dll", "") or None
        copy = LibraryCopy(
            path=path, directory=directory, origin="pip", file_version=version, loads=True, names=(name,)
        )
        by_family.setdefault(library_family(name), []).append(copy)
    libraries = tuple(
        LibraryFacts(family=f, copies=tuple(c), winner=c[0].path, winners={c_.names[0]: c_.path for c_ in c})
        for f, c in by_family.items()
    )
    return LibrariesFacts(libraries=libraries)


def _tensorflow(build, spec: Spec, driven: list[Card], gpu_build: bool) -> TensorflowFacts:
    if not spec.installed:
        return TensorflowFacts(status=MISSING, error_kind="not_installed", error="No module named 'tensorflow'")
    if spec.quick:
        return TensorflowFacts(status=SKIPPED)
    base = dict(version=_version(build), distribution=build.distribution if gpu_build else "tensorflow")
    if not gpu_build:
        return TensorflowFacts(is_cuda_build=False, physical_devices=(_cpu(),), placement=_on_cpu(), **base)
    listed = _listed(build, spec, driven)
    placement = _placement(build, spec, listed) if listed else _on_cpu()
    return TensorflowFacts(
        is_cuda_build=True,
        cuda_version=str(build.cuda),
        cudnn_version=str(build.cudnn),
        compute_capabilities=build.compute_capabilities,
        physical_devices=(_cpu(),)
        + tuple(TfDevice(name=f"/physical_device:GPU:{i}", device_type="GPU") for i in range(len(listed))),
        placement=placement,
        **base,
    )


def _cpu() -> TfDevice:
    return TfDevice(name="/physical_device:CPU:0", device_type="CPU")


def _on_cpu() -> tuple[PlacementResult, ...]:
    return tuple(
        PlacementResult(op=op, requested="/CPU:0", device="/job:localhost/replica:0/task:0/device:CPU:0", ok=True)
        for op in ("matmul", "conv2d")
    )


def _cuda_order(driven: list[Card]) -> list[Card]:
    """CUDA's default order: the most capable first; equal ones keep their bus order."""
    return sorted(driven, key=lambda c: tuple(int(p) for p in c.cc.split(".")), reverse=True)


def _listed(build, spec: Spec, driven: list[Card]) -> list[tuple[int, Card]]:
    """(nvidia-smi index, card) of the GPUs TensorFlow lists, in its own order: CUDA starts only on a
    driver at least the CUDA release's floor; the visible GPUs it has code for."""
    need = MATRIX.driver_requirement(build.cuda, spec.os)
    if need is not None and need.minimum is not None and _lt(spec.driver, str(need.minimum)):
        return []
    indexed = list(enumerate(driven))
    ordered = sorted(indexed, key=lambda ic: tuple(int(p) for p in ic[1].cc.split(".")), reverse=True)
    if spec.visible is not None:
        kept = []
        for entry in spec.visible.split(",") if spec.visible.strip() else ():
            number = int(entry)  # the generator writes plain numbers; CUDA stops at a negative or absent one
            if number < 0 or number >= len(ordered):
                break
            kept.append(ordered[number])
        ordered = kept
    return [(i, c) for i, c in ordered if _code(build.compute_capabilities, c.cc) != "none"]


def _placement(build, spec: Spec, listed: list[tuple[int, Card]]) -> tuple[PlacementResult, ...]:
    out = []
    full = MATRIX.min_driver(build.cuda, spec.os)
    for position, (_index, card) in enumerate(listed):
        device = f"/job:localhost/replica:0/task:0/device:GPU:{position}"
        errors = {}
        if _code(build.compute_capabilities, card.cc) == "ptx" and full is not None and _lt(spec.driver, str(full)):
            errors = {"matmul": PTX_TOO_NEW, "conv2d": PTX_TOO_NEW}
        elif spec.ops == "fail_all" or (spec.ops == "fail_first" and position == 0):
            errors = {"matmul": GEMM, "conv2d": GEMM}
        elif spec.ops == "busy_first" and position == 0:
            errors = {"matmul": BUSY, "conv2d": BUSY}
        elif spec.ops == "conv_first" and position == 0:
            errors = {"conv2d": CUDNN}
        for op in ("matmul", "conv2d"):
            error = errors.get(op)
            out.append(
                PlacementResult(
                    op=op,
                    requested=f"/GPU:{position}",
                    device=None if error else device,
                    ok=error is None,
                    error=error,
                )
            )
    return tuple(out)


def _code(archs: tuple[str, ...], cc: str) -> str:
    """NVIDIA's binary and PTX compatibility, written out: "native", "ptx" or "none"."""
    major, minor = (int(p) for p in cc.split("."))
    best = "none"
    for entry in archs:
        kind, digits = entry.split("_")
        m, n = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and m == major and n <= minor:
            return "native"
        if kind == "compute" and (m, n) <= (major, minor):
            best = "ptx"
    return best


def _lt(a: str, b: str) -> bool:
    return tuple(int(p) for p in a.split(".")) < tuple(int(p) for p in b.split("."))


def runs_here(spec: Spec, card: Card) -> bool:
    """The oracle's answer to the one question for this card on this machine."""
    windows = spec.os == "windows"
    build = MATRIX.tf_build(spec.tf, "linux" if spec.os == "wsl" else spec.os)
    if (
        not build.gpu
        or (windows and build.tf > MATRIX.platform.windows_native_gpu_last)
        or not _driven(card, spec.driver)
    ):
        return False
    need = MATRIX.driver_requirement(build.cuda, spec.os)
    code = _code(build.compute_capabilities, card.cc)
    if code == "none" or (need and need.minimum and _lt(spec.driver, str(need.minimum))):
        return False
    full = MATRIX.min_driver(build.cuda, spec.os)
    return not (code == "ptx" and full is not None and _lt(spec.driver, str(full)))


__all__ = [
    "OPS",
    "OSES",
    "Card",
    "Spec",
    "cards",
    "drivers",
    "gpu_sets",
    "mixed_machines",
    "releases",
    "runs_here",
    "single_gpu_machines",
    "snapshot",
]
