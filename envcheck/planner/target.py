"""The machine a plan is for: this one (from the quick probes) or another one (from flags).

Every value remembers where it came from, so the plan can say "driver 417.35 (--driver)" or
"GeForce GTX 1060 (NVML)" and a reader knows what was measured and what was typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Optional

from packaging.version import Version

from envcheck.errors import NotFoundError, UsageError
from envcheck.facts import MISSING, OK, SKIPPED, Facts

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix

OSES = ("linux", "windows", "wsl", "macos")
OS_TITLES = {"linux": "Linux", "windows": "Windows (native)", "wsl": "Windows, under WSL2", "macos": "macOS"}

# ASCII digits only: "８.６" is not a version, and packaging cannot parse it.
# Version parts of at most 9 digits: a longer run (past int()'s limit, or merely absurd) is no version.
_PYTHON = re.compile(r"^3\.(\d{1,9})(\.\d{1,9})?$", re.ASCII)
_PYTHON_PREFIX = re.compile(r"^\s*(\d{1,9})\.(\d{1,9})(?!\d)", re.ASCII)
_CAPABILITY = re.compile(r"^(\d{1,2})\.(\d)$", re.ASCII)
_DRIVER = re.compile(r"^\d{2,4}(\.\d{1,3}){1,2}$", re.ASCII)


@dataclass(frozen=True)
class Target:
    os: str  # one of OSES
    python: Optional[str] = None  # "3.11"; None when unknown (planning another machine)
    python_bits: Optional[int] = None
    # True: an NVIDIA GPU is there; False: none (or --cpu); None: nobody looked.
    has_gpu: Optional[bool] = None
    gpu_names: tuple[str, ...] = ()
    # The lowest capability among the GPUs: a plan must run on every one of them.
    compute_capability: Optional[Version] = None
    driver: Optional[Version] = None
    tf_pin: Optional[str] = None
    cpu_flags: Optional[tuple[str, ...]] = None  # None when not known (another machine)
    machine: Optional[str] = None  # the interpreter's architecture ("x86_64", "aarch64"); None when not known
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    notes: tuple[str, ...] = ()

    @property
    def gpu_label(self) -> str:
        if self.has_gpu is False:
            return "no NVIDIA GPU"
        names = ", ".join(_counted(self.gpu_names)) if self.gpu_names else ("GPU" if self.has_gpu else "GPU not known")
        if self.compute_capability is not None:
            return f"{names} (compute capability {self.compute_capability})"
        return names

    def origin(self, name: str) -> str:
        return self.origins.get(name, "")


def _counted(names: tuple[str, ...]) -> list[str]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [f"{n}x {name}" if n > 1 else name for name, n in counts.items()]


def parse_python(text: str) -> str:
    """ "3.7" or "3.7.3" -> "3.7"; anything else is a usage error."""
    match = _PYTHON.match(text.strip())
    if not match:
        raise UsageError(f"--python {text}: expected a Python 3 version like 3.11")
    return f"3.{int(match.group(1))}"


def parse_capability(text: str) -> Version:
    match = _CAPABILITY.match(text.strip())
    if not match:
        raise UsageError(f"--compute-capability {text}: expected MAJOR.MINOR like 8.6")
    return Version(f"{int(match.group(1))}.{match.group(2)}")


def parse_driver(text: str) -> Version:
    """NVIDIA driver versions: 417.35 (Windows), 550.54.14 (Linux)."""
    cleaned = text.strip()
    if not _DRIVER.match(cleaned):
        raise UsageError(f"--driver {text}: expected an NVIDIA driver version like 550.54.14 or 417.35")
    from envcheck.matrix import MatrixVersion

    return MatrixVersion(cleaned)


def gpu_from_name(matrix: "Matrix", name: str) -> tuple[str, Version]:
    """(product name, compute capability) for a name as a person types it."""
    if not name.strip():
        raise UsageError('--gpu needs a GPU name, e.g. "GeForce GTX 1060"')
    product = matrix.gpu(name)
    if product is not None:
        return product.name, product.compute_capability
    from envcheck.matrix import unknown_gpu_message

    raise NotFoundError(
        unknown_gpu_message(
            matrix,
            name,
            "give --compute-capability X.Y instead (`nvidia-smi --query-gpu=compute_cap --format=csv` "
            "shows it; NVIDIA lists them at https://developer.nvidia.com/cuda-gpus)",
        )
    )


def target_from_facts(facts: Facts, matrix: "Matrix", snapshot: bool = False) -> Target:
    """A machine as the quick probes saw it (this one, or a saved snapshot's). Sections that did not
    run leave values unknown."""
    origins: dict[str, str] = {}
    notes: list[str] = []
    os_name = facts.platform.os or "linux"
    origins["os"] = "snapshot" if snapshot else "this machine"

    python = None
    found = _PYTHON_PREFIX.match(facts.python.version or "")  # "3.12.0rc1" and "3.11.7+" are 3.12, 3.11
    if found:
        python = f"{int(found.group(1))}.{int(found.group(2))}"
        origins["python"] = "snapshot" if snapshot else "this interpreter"

    has_gpu, names, capability, gpu_origin = _local_gpus(facts, matrix, notes)
    if has_gpu is not None:
        origins["gpu"] = gpu_origin
    driver, driver_origin = _local_driver(facts)
    if driver is not None:
        origins["driver"] = driver_origin

    cpu_flags = facts.platform.cpu_flags if facts.platform.cpu_flags else None
    return Target(
        os=os_name,
        python=python,
        python_bits=facts.python.bits or None,
        has_gpu=has_gpu,
        gpu_names=names,
        compute_capability=capability,
        driver=driver,
        cpu_flags=cpu_flags,
        machine=facts.python.machine or facts.platform.machine or None,
        origins=origins,
        notes=tuple(notes),
    )


def _local_gpus(facts: Facts, matrix: "Matrix", notes: list[str]):
    """(has_gpu, names, lowest capability, origin) from NVML first, then the PCI bus."""
    nvml_gpus = [g for g in facts.nvml.gpus if g.status == OK]
    if nvml_gpus:
        names = tuple(g.name or f"GPU {g.index}" for g in nvml_gpus)
        capabilities = [c for c in (_capability_or_none(g.compute_capability) for g in nvml_gpus) if c is not None]
        if not capabilities:
            capabilities = [p.compute_capability for p in (matrix.gpu(n) for n in names) if p]
        return True, names, min(capabilities) if capabilities else None, "NVML"
    devices = facts.pci.devices
    if devices:
        # pci.ids' name when the machine has pci.ids, else the matrix's product for the device id.
        products = [(matrix.gpu(d.name) if d.name else None) or matrix.gpu_by_pci_id(d.device_id) for d in devices]
        names = tuple(d.name or (p.name if p else f"NVIDIA device {d.device_id}") for d, p in zip(devices, products))
        known = [p for p in products if p]
        capability = min((p.compute_capability for p in known), default=None)
        if len(known) < len(devices):
            notes.append(
                "the compute capability of a GPU on the PCI bus is not known without its driver; "
                "give it with --gpu NAME or --compute-capability X.Y"
            )
        return True, names, capability, "PCI bus"
    if facts.pci.status in (OK, MISSING):
        # The bus was read and holds no NVIDIA display device.
        return False, (), None, "PCI bus"
    if facts.nvml.status == OK:
        return False, (), None, "NVML"
    why = "no NVIDIA driver answered" if facts.nvml.status != SKIPPED else "the GPU probes did not run"
    if facts.nvml.status != SKIPPED and facts.pci.status == SKIPPED:
        why += " and the PCI bus cannot be read here"
    notes.append(f"the GPU is not known ({why}); give it with --gpu NAME, or --cpu")
    return None, (), None, ""


def _capability_or_none(text: Optional[str]) -> Optional[Version]:
    """A compute capability as NVML (or a hand-edited snapshot) gives it; None when it is not one."""
    if not text or not _CAPABILITY.match(text.strip()):
        return None
    return parse_capability(text)


def _local_driver(facts: Facts) -> tuple[Optional[Version], str]:
    from envcheck.matrix import MatrixVersion

    for value, origin in ((facts.nvml.driver_version, "NVML"), (facts.driver.version, "kernel module")):
        if value and _DRIVER.match(value):
            return MatrixVersion(value), origin
    return None, ""


def retarget(base: Target, os: str) -> Optional[Target]:
    """``base`` seen from another OS: native Windows and WSL2 share the GPU and the (Windows) driver
    but not the Python; any other change of OS is another machine (None)."""
    if os == base.os:
        return base
    if {os, base.os} != {"windows", "wsl"}:
        return None
    origins = {k: v for k, v in base.origins.items() if k not in ("python", "os")}
    origins["os"] = "--os"
    return replace(base, os=os, python=None, python_bits=None, origins=origins)


def apply_overrides(
    base: Optional[Target],
    matrix: "Matrix",
    *,
    os: Optional[str] = None,
    python: Optional[str] = None,
    gpu: Optional[str] = None,
    compute_capability: Optional[str] = None,
    driver: Optional[str] = None,
    tf: Optional[str] = None,
    cpu: bool = False,
) -> Target:
    """The target with the command line's values on top. ``base`` None: nothing is known but flags."""
    if os is not None and os not in OSES:
        raise UsageError(f"--os {os}: expected one of {', '.join(OSES)}")
    if cpu and (gpu or compute_capability or driver):
        raise UsageError("--cpu plans for a machine without a GPU; drop --gpu/--compute-capability/--driver")
    target = base or Target(os=os or "linux", origins={"os": "--os" if os else "default"})
    origins = dict(target.origins)
    changes: dict = {}
    if os is not None:
        changes["os"] = os
        origins["os"] = "--os"
    if python is not None:
        changes["python"] = parse_python(python)
        changes["python_bits"] = None
        origins["python"] = "--python"
    if gpu is not None or compute_capability is not None:
        name, capability = None, None
        if gpu is not None:
            try:
                name, capability = gpu_from_name(matrix, gpu)
            except NotFoundError:
                if compute_capability is None:
                    raise
                name = gpu.strip()  # a GPU the matrix does not know, with its capability given
        if compute_capability is not None:
            given = parse_capability(compute_capability)
            if capability is not None and given != capability:
                raise UsageError(f"--gpu {gpu!r} has compute capability {capability}, not {given}; give one of the two")
            capability = given
        changes.update(has_gpu=True, gpu_names=(name,) if name else (), compute_capability=capability)
        origins["gpu"] = "--gpu" if gpu is not None else "--compute-capability"
        changes["notes"] = tuple(n for n in target.notes if "GPU" not in n and "compute capability" not in n)
    if cpu:
        changes.update(has_gpu=False, gpu_names=(), compute_capability=None, driver=None)
        origins["gpu"] = "--cpu"
        origins.pop("driver", None)
        changes["notes"] = tuple(n for n in target.notes if "GPU" not in n)
    if driver is not None:
        changes["driver"] = parse_driver(driver)
        origins["driver"] = "--driver"
        if target.has_gpu is False and gpu is None and compute_capability is None:
            # A driver version means a GPU, even if this machine has none: plan for an unknown one.
            changes["has_gpu"] = None
            origins.pop("gpu", None)
    if tf is not None:
        from envcheck.matrix import as_version

        as_version(tf)  # a clear usage error for "2.x" or "latest"
        changes["tf_pin"] = tf.strip()
        origins["tf"] = "--tf"
    changes["origins"] = origins
    return replace(target, **changes)
