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
from envcheck.facts import Facts
from envcheck.machine import Machine
from envcheck.matrix import MatrixVersion, as_version, unknown_gpu_message
from envcheck.platform import OSES, Platform, platform_named
from envcheck.words import counted

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix

OS_TITLES = {name: platform_named(name).title for name in OSES}

# ASCII digits only: "８.６" is not a version, and packaging cannot parse it.
# Version parts of at most 9 digits: a longer run (past int()'s limit, or merely absurd) is no version.
_PYTHON = re.compile(r"^3\.(\d{1,9})(\.\d{1,9})?$", re.ASCII)
_PYTHON_PREFIX = re.compile(r"^\s*(\d{1,9})\.(\d{1,9})(?!\d)", re.ASCII)
_CAPABILITY = re.compile(r"^(\d{1,2})\.(\d)$", re.ASCII)
_DRIVER = re.compile(r"^\d{2,4}(\.\d{1,3}){1,2}$", re.ASCII)


@dataclass(frozen=True)
class TargetGpu:
    """One GPU of the machine planned for: what a plan needs to serve it or leave it out."""

    name: str
    compute_capability: Optional[Version]
    index: Optional[int] = None  # nvidia-smi's number, for CUDA_VISIBLE_DEVICES
    uuid: Optional[str] = None


@dataclass(frozen=True)
class Target:
    os: str  # one of OSES
    python: Optional[str] = None  # "3.11"; None when unknown (planning another machine)
    python_bits: Optional[int] = None
    # True: an NVIDIA GPU is there; False: none (or --cpu); None: nobody looked.
    has_gpu: Optional[bool] = None
    gpu_names: tuple[str, ...] = ()
    # The lowest capability among the GPUs: a plan must run on every GPU it uses.
    compute_capability: Optional[Version] = None
    driver: Optional[Version] = None
    tf_pin: Optional[str] = None
    cpu_flags: Optional[tuple[str, ...]] = None  # None when not known (another machine)
    machine: Optional[str] = None  # the interpreter's architecture ("x86_64", "aarch64"); None when not known
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    notes: tuple[str, ...] = ()
    # The GPUs one by one, when a machine was read (a plan may leave some out); () from flags.
    gpus: tuple[TargetGpu, ...] = ()
    gpu_source: str = ""  # where the GPUs were seen: "NVML", "PCI bus", "TensorFlow"; "" from flags
    device_order: Optional[str] = None  # the machine's CUDA_DEVICE_ORDER, for CUDA's numbering

    @property
    def gpu_label(self) -> str:
        if self.has_gpu is False:
            return "no NVIDIA GPU"
        names = ", ".join(counted(self.gpu_names)) if self.gpu_names else ("GPU" if self.has_gpu else "GPU not known")
        if self.compute_capability is not None:
            return f"{names} (compute capability {self.compute_capability})"
        return names

    @property
    def capabilities(self) -> tuple[Version, ...]:
        """Every distinct capability the plan must serve: each GPU's when all are known, else the
        one given (the lowest)."""
        known = [g.compute_capability for g in self.gpus if g.compute_capability is not None]
        if self.gpus and len(known) == len(self.gpus):
            return tuple(sorted(set(known)))
        return (self.compute_capability,) if self.compute_capability is not None else ()

    @property
    def platform(self) -> Platform:
        return platform_named(self.os)

    def origin(self, name: str) -> str:
        return self.origins.get(name, "")


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
    return MatrixVersion(cleaned)


def gpu_from_name(matrix: "Matrix", name: str) -> tuple[str, Version]:
    """(product name, compute capability) for a name as a person types it."""
    if not name.strip():
        raise UsageError('--gpu needs a GPU name, e.g. "GeForce GTX 1060"')
    product = matrix.gpu(name)
    if product is not None:
        return product.name, product.compute_capability
    raise NotFoundError(
        unknown_gpu_message(
            matrix,
            name,
            "give --compute-capability X.Y instead (`nvidia-smi --query-gpu=compute_cap --format=csv` "
            "shows it; NVIDIA lists them at https://developer.nvidia.com/cuda-gpus)",
        )
    )


def target_from_facts(facts: Facts, matrix: "Matrix", snapshot: bool = False) -> Target:
    """A machine as the quick probes saw it (this one, or a saved snapshot's)."""
    return target_from_machine(Machine(facts, matrix_loader=lambda: matrix), snapshot=snapshot)


def target_from_machine(m: Machine, snapshot: bool = False) -> Target:
    """A machine as the machine view reads it: the same GPUs and driver the doctor judges. Each
    value says where it came from ("snapshot" for a saved one); sections that did not run leave
    values unknown."""
    here = "snapshot"
    origins: dict[str, str] = {"os": here if snapshot else "this machine"}
    python = None
    found = _PYTHON_PREFIX.match(m.facts.python.version or "")  # "3.12.0rc1" and "3.11.7+" are 3.12, 3.11
    if found:
        python = f"{int(found.group(1))}.{int(found.group(2))}"
        origins["python"] = here if snapshot else "this interpreter"
    reading = m.gpu_reading
    if reading.has_gpu is not None:
        origins["gpu"] = here if snapshot else reading.source
    driver, driver_origin = m.driver_reading
    if driver is not None:
        origins["driver"] = here if snapshot else driver_origin
    gpus = tuple(TargetGpu(g.name, _capability_or_none(g.compute_capability), g.index, g.uuid) for g in reading.gpus)
    capabilities = [g.compute_capability for g in gpus if g.compute_capability is not None]
    facts = m.facts
    return Target(
        os=m.os,
        python=python,
        python_bits=facts.python.bits or None,
        has_gpu=reading.has_gpu,
        gpu_names=tuple(g.name for g in gpus),
        compute_capability=min(capabilities) if capabilities else None,
        driver=driver,
        cpu_flags=facts.platform.cpu_flags or None,
        machine=facts.python.machine or facts.platform.machine or None,
        origins=origins,
        notes=reading.notes,
        gpus=gpus,
        gpu_source=reading.source,
        device_order=facts.env_var("CUDA_DEVICE_ORDER"),
    )


def _capability_or_none(text: Optional[str]) -> Optional[Version]:
    """A compute capability as NVML (or a hand-edited snapshot) gives it; None when it is not one."""
    if not text or not _CAPABILITY.match(text.strip()):
        return None
    return parse_capability(text)


def retarget(base: Target, os: str) -> Optional[Target]:
    """``base`` seen from another OS: native Windows and WSL2 share the GPU and the (Windows) driver
    but not the Python; any other change of OS is another machine (None)."""
    if os == base.os:
        return base
    if not (platform_named(os).windows_driver and base.platform.windows_driver):
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
        changes.update(has_gpu=True, gpu_names=(name,) if name else (), compute_capability=capability, gpus=())
        origins["gpu"] = "--gpu" if gpu is not None else "--compute-capability"
        changes["notes"] = tuple(n for n in target.notes if "GPU" not in n and "compute capability" not in n)
    if cpu:
        changes.update(has_gpu=False, gpu_names=(), compute_capability=None, driver=None, gpus=())
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
        as_version(tf)  # a clear usage error for "2.x" or "latest"
        changes["tf_pin"] = tf.strip()
        origins["tf"] = "--tf"
    changes["origins"] = origins
    return replace(target, **changes)
