"""The machine view: the questions every command asks about one machine's facts, answered once.

Which TensorFlow is installed and which matrix row applies; whether there is an NVIDIA GPU; the
GPUs one by one (what CUDA numbers them under ``CUDA_VISIBLE_DEVICES``, which TensorFlow device
each is, whether it is usable and if not why); the driver and what it must be; which copy of a
library the loader takes; how to spell a command for the probed interpreter. It reads facts and
the matrix and judges nothing: the rules decide what is wrong, the verdict what comes first.
Answers are memoised, because every rule asks the same questions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Optional

from packaging.version import InvalidVersion, Version

from envcheck import cuda_devices, shell
from envcheck.facts import ERROR, MISSING, OK, SKIPPED, Distribution, Facts, LibraryCopy
from envcheck.matrix.libraries import same_library
from envcheck.shell import Command
from envcheck.words import bracketed

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import DriverRequirement, Matrix, TfBuild

# TF error kinds after which TensorFlow cannot run at all (a timeout may only be a slow first start).
_TF_UNUSABLE_KINDS = ("not_installed", "import_failed", "crashed", "bad_output", "worker_failed")

PRESENT = "present"
ABSENT = "absent"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class InstalledTf:
    distribution: str
    version: str


@dataclass(frozen=True)
class GpuView:
    """One NVIDIA GPU as every command should describe it (``doctor --json``'s ``gpus`` entries)."""

    index: Optional[int]  # nvidia-smi's number (PCI bus order); None for a GPU only TensorFlow saw
    name: str
    uuid: Optional[str]
    compute_capability: Optional[str]
    pci_bus_id: Optional[str]
    cuda_index: Optional[int]  # the number CUDA gives it; None when CUDA_VISIBLE_DEVICES hides it
    tf_device: Optional[str]  # "/GPU:0" in the placement test, or None
    usable: bool
    reason: Optional[str]  # why it is not usable (or what is unknown about it), one line
    tested: bool  # TensorFlow ran and checked ops on it
    source: str  # "nvml", "pci" or "tensorflow": where envcheck saw it

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "compute_capability": self.compute_capability,
            "pci_bus_id": self.pci_bus_id,
            "cuda_index": self.cuda_index,
            "tf_device": self.tf_device,
            "usable": self.usable,
            "reason": self.reason,
            "tested": self.tested,
            "source": self.source,
        }


def parse_version(text: object) -> Optional[Version]:
    try:
        return Version(str(text).strip())
    except (InvalidVersion, TypeError, ValueError):  # ValueError: a number past int()'s digit limit
        return None


def minor(version: object) -> str:
    """ "2.15.1" -> "2.15"; "12" -> "12" (what a person types after ==...*)."""
    v = parse_version(version)
    if v is None:
        return str(version)
    return ".".join(str(p) for p in v.release[:2])


def short_device(device: Optional[str]) -> str:
    """ "/job:localhost/replica:0/task:0/device:GPU:1", "/device:GPU:1", "/gpu:1" -> "GPU:1"."""
    if not device:
        return "?"
    # Read from the end, not by re.search("([A-Za-z_]+):(\\d+)$"), which is quadratic on a long
    # string (87 s for 100,000 characters). An ordinal past 9 digits is no device: left as it is.
    kind, colon, index = device.rstrip("/").rpartition(":")
    if not colon or not 0 < len(index) <= 9 or not (index.isascii() and index.isdigit()):
        return device
    start = len(kind)
    while start > 0 and (kind[start - 1] == "_" or (kind[start - 1].isascii() and kind[start - 1].isalpha())):
        start -= 1
    return f"{kind[start:].upper()}:{index}" if start < len(kind) else device


_ERROR_LINE = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Failure)|Fatal Python error|Segmentation fault)\b[: ]"
)


def telling_line(text: Optional[str]) -> str:
    """The line of an error text that says what went wrong: the last "SomethingError: ..." that is
    not a traceback header (TensorFlow 1.x follows the real error with a generic paragraph)."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    named = [ln for ln in lines if _ERROR_LINE.match(ln) and not ln.endswith("Traceback (most recent call last):")]
    if named:
        return named[-1]
    return lines[-1] if lines else ""


def pci_product_name(name: Optional[str]) -> Optional[str]:
    """pci.ids spells "GP106 [GeForce GTX 1060 6GB]": the marketing name is in the brackets."""
    if not name:
        return None
    return bracketed(name) or name


def counted(names) -> list[str]:
    """["V100", "V100", "T4"] -> ["2x V100", "T4"], first-seen order."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [f"{c}x {n}" if c > 1 else n for n, c in counts.items()]


def _requires(dist: Distribution, other: str) -> bool:
    return any(
        re.match(rf"{re.escape(other)}(?![a-z0-9-])", req.strip().lower().replace("_", "-")) for req in dist.requires
    )


class Machine:
    """Questions about one machine's facts. The matrix is loaded on first use."""

    def __init__(self, facts: Facts, matrix_loader: Optional[Callable[[], "Matrix"]] = None) -> None:
        self.facts = facts
        self.matrix_loader = matrix_loader
        self._matrix: Optional["Matrix"] = None
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """An answer computed once per machine (for questions the rules share among themselves)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def matrix(self) -> "Matrix":
        if self._matrix is None:
            if self.matrix_loader is None:
                from envcheck.matrix import load_matrix

                self._matrix = load_matrix()
            else:
                self._matrix = self.matrix_loader()
        return self._matrix

    # --- platform --------------------------------------------------------------------------
    @cached_property
    def os(self) -> str:
        """ "linux", "windows", "macos" or "wsl"."""
        return self.facts.platform.os or "linux"

    @cached_property
    def build_os(self) -> str:
        """The OS whose TF builds apply: WSL runs the Linux wheels."""
        return "linux" if self.os == "wsl" else self.os

    @property
    def shell(self) -> str:
        return shell.POWERSHELL if self.os == "windows" else shell.BASH

    @property
    def os_title(self) -> str:
        return {"linux": "Linux", "windows": "Windows", "macos": "macOS", "wsl": "WSL2"}.get(self.os, self.os)

    # --- TensorFlow ------------------------------------------------------------------------
    def tf_distribution_names(self) -> tuple[str, ...]:
        return self.matrix.tf_distribution_names()

    @cached_property
    def installed_tf(self) -> Optional[InstalledTf]:
        facts = self.facts
        tf = facts.tensorflow
        if tf.version:
            dist = tf.distribution or (tf.distributions[0] if tf.distributions else None)
            return InstalledTf(distribution=dist or "tensorflow", version=tf.version)
        for name in (tf.distribution, *tf.distributions, *self.tf_distribution_names()):
            found = facts.distribution(name) if name else None
            if found is not None:
                return InstalledTf(found.name, found.version)
        return None

    @cached_property
    def installed_tf_distributions(self) -> tuple[str, ...]:
        facts = self.facts
        names = [name for name in self.tf_distribution_names() if facts.distribution(name) is not None]
        for name in facts.tensorflow.distributions:
            if name not in names and facts.distribution(name) is not None:
                names.append(name)
        return tuple(names)

    @cached_property
    def independent_distributions(self) -> tuple[Distribution, ...]:
        """The installed TF distributions, less those another one depends on (tensorflow pulls in
        tensorflow-intel on Windows: one install, not a mix)."""
        dists = [self.facts.distribution(name) for name in self.installed_tf_distributions]
        return tuple(d for d in dists if d is not None and not any(o is not d and _requires(o, d.name) for o in dists))

    def build_for(self, version: str) -> Optional["TfBuild"]:
        if parse_version(version) is None:
            return None
        try:
            return self.matrix.tf_build(version, self.build_os)
        except Exception:  # noqa: BLE001 - a version the matrix cannot parse is "unknown"
            return None

    @cached_property
    def tf_build(self) -> Optional["TfBuild"]:
        """The matrix row of the installed TF release on this OS; None when not installed or unknown."""
        tf = self.installed_tf
        return self.build_for(tf.version) if tf is not None else None

    @cached_property
    def is_cuda_tf(self) -> Optional[bool]:
        """Whether the installed TF is a CUDA build: from TF itself when it was probed, else from the
        distribution and the matrix row. None when it cannot be told."""
        facts = self.facts
        if facts.tensorflow.is_cuda_build is not None:
            return facts.tensorflow.is_cuda_build
        tf = self.installed_tf
        if tf is None:
            return None
        dist = self.matrix.tf_distribution(tf.distribution)
        if dist is not None and dist.cuda == "never":
            return False
        build = self.tf_build
        always = dist is not None and dist.cuda == "always"
        if build is None:
            return True if always else None
        if not build.gpu:
            return False
        if always:
            return True
        # Up to 2.0 the GPU build lived in tensorflow-gpu and plain "tensorflow" was CPU-only.
        named = self.matrix.tf_distribution(build.distribution)
        return not (named is not None and named.cuda == "always")

    @cached_property
    def tf_cuda(self) -> Optional[str]:
        """The CUDA version the installed TF was built with: from TF itself, else from the matrix."""
        if self.is_cuda_tf is not True:
            return None
        said = self.facts.tensorflow.cuda_version
        if said and parse_version(said) is not None:  # "12..2" is no version: the matrix's answer instead
            return said
        build = self.tf_build
        return str(build.cuda) if build is not None and build.cuda is not None else None

    @property
    def tf_name(self) -> str:
        """ "TensorFlow 1.13.1": the installed release as a person would name it."""
        tf = self.installed_tf
        if tf is not None:
            return f"TensorFlow {tf.version}"
        build = self.tf_build
        return f"TensorFlow {minor(build.tf)}" if build is not None else "TensorFlow"

    def pip_requirement(self, build: "TfBuild", exact: Optional[str] = None, *, gpu: bool = True) -> str:
        machine = self.facts.python.machine or self.facts.platform.machine or None
        return self.matrix.pip_requirement(build, self.os, gpu=gpu, exact=exact, machine=machine)

    def newest_release(self, *, gpu: bool, python: Optional[str] = None, accept=None) -> Optional["TfBuild"]:
        return self.matrix.newest_release(self.build_os, gpu=gpu, python=python, accept=accept)

    @property
    def tf_runs(self) -> bool:
        """TensorFlow imported and answered (its probe ran and finished)."""
        return self.facts.tensorflow.status == OK

    @property
    def tf_unusable(self) -> bool:
        """No TensorFlow runs in this interpreter, on any device (a 32-bit Python, an import that
        fails, a worker that crashes); a timeout may only be a slow first start."""
        tf = self.facts.tensorflow
        if self.facts.python.bits and self.facts.python.bits != 64:
            return True
        return tf.status in (ERROR, MISSING) and tf.error_kind in _TF_UNUSABLE_KINDS

    @property
    def tf_used_gpu(self) -> bool:
        """The placement test ran an op on a GPU and checked its result."""
        return any(p.ok and p.device and "GPU" in p.device.upper() for p in self.facts.tensorflow.placement)

    @property
    def tf_gpu_ops_all_passed(self) -> bool:
        """Every op of the placement test ran on a GPU and passed: then the libraries TensorFlow
        needed were found, whatever the library probe saw. A convolution that failed beside a
        matmul that passed says cuDNN was not, so the library checks still count."""
        placement = self.facts.tensorflow.placement
        return self.tf_used_gpu and all(p.ok for p in placement)

    @property
    def tf_gpu_count(self) -> int:
        return sum(1 for d in self.facts.tensorflow.physical_devices if d.device_type.upper() == "GPU")

    # --- GPUs and driver -------------------------------------------------------------------
    @cached_property
    def gpu_presence(self) -> str:
        """PRESENT when any probe saw an NVIDIA GPU, ABSENT when the probes that could see one looked
        and found none, UNKNOWN otherwise (Windows without a driver, a --quick run with no PCI probe)."""
        facts = self.facts
        if facts.nvml.gpus or facts.pci.devices or self.tf_gpu_count:
            return PRESENT
        # Under WSL2 the GPU is not on the (virtual) PCI bus: an empty bus says nothing there.
        pci_looked = facts.pci.status in (OK, MISSING) and self.os != "wsl"
        nvml_empty_ok = facts.nvml.status == OK and not facts.nvml.gpus
        if pci_looked or nvml_empty_ok:
            return ABSENT
        return UNKNOWN

    @property
    def gpu_names(self) -> list[str]:
        names = [g.name for g in self.facts.nvml.gpus if g.name]
        if names:
            return names
        return [self.pci_name(d) for d in self.facts.pci.devices]

    def pci_name(self, device) -> str:
        """A PCI device's product name: pci.ids' bracketed name, else the matrix's entry for its
        device id, else the id itself."""
        name = pci_product_name(device.name)
        if name:
            return name
        try:
            product = self.matrix.gpu_by_pci_id(device.device_id)
        except Exception:  # noqa: BLE001 - naming must never fail a report
            product = None
        return product.name if product is not None else f"NVIDIA device {device.device_id}"

    @property
    def driver_installed(self) -> Optional[bool]:
        """Whether an NVIDIA driver is installed, loaded or not: its user-space library answers (NVML
        found, whatever it then said), or its kernel module is on disk or built by DKMS. None when
        nothing that could tell was looked at."""
        facts = self.facts
        nvml, driver = facts.nvml, facts.driver
        if driver.loaded or (
            nvml.status != SKIPPED and nvml.error_kind != "library_not_found" and nvml.status in (OK, ERROR)
        ):
            return True
        if driver.module_files or driver.dkms:
            return True
        if nvml.error_kind == "library_not_found" and driver.status != SKIPPED:
            return False
        return None

    @property
    def driver_version(self) -> Optional[str]:
        facts = self.facts
        return facts.nvml.driver_version or (facts.driver.version if facts.driver.loaded else None)

    def driver_requirement(self, cuda: object, support: Optional[str] = None) -> Optional["DriverRequirement"]:
        """The driver code built with ``cuda`` needs here (WSL2: the Windows driver's numbers)."""
        if parse_version(cuda) is None:
            return None
        try:
            return self.matrix.driver_requirement(str(cuda), self.os, support)
        except Exception:  # noqa: BLE001 - a version the matrix cannot parse is unknown
            return None

    def nvml_errors(self, kind: str) -> list[tuple[str, str]]:
        """(where, message) for the NVML failures of one kind: the global one and each GPU's, with
        per-GPU queries that answered this kind counted too."""
        facts = self.facts
        out = []
        if facts.nvml.error_kind == kind:
            out.append(("nvml", facts.nvml.error or kind))
        for gpu in facts.nvml.gpus:
            where = f"nvml gpu {gpu.index}" + (f" ({gpu.name})" if gpu.name else "")
            if gpu.error_kind == kind:
                out.append((where, gpu.error or kind))
            elif kind == "no_permission" and _all_queries_denied(gpu):
                out.append((where, "every per-GPU query answered: " + next(iter(gpu.query_errors.values()))))
        return out

    # --- CUDA's view of the GPUs -----------------------------------------------------------
    @cached_property
    def visible_devices(self) -> cuda_devices.VisibleDevices:
        return cuda_devices.read_visible_devices(self.facts.env_var("CUDA_VISIBLE_DEVICES"))

    @cached_property
    def cuda_gpus(self) -> tuple[cuda_devices.Gpu, ...]:
        """The GPUs NVML listed, in nvidia-smi order, as CUDA's reading needs them."""
        if self.facts.nvml.status != OK:
            return ()
        return tuple(
            cuda_devices.Gpu(
                index=g.index,
                uuid=g.uuid,
                compute_capability=self._capability(g.compute_capability, g.name),
                name=g.name,
            )
            for g in sorted(self.facts.nvml.gpus, key=lambda g: g.index)
        )

    @cached_property
    def visibility(self) -> Optional[cuda_devices.Resolution]:
        """CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER read against the GPUs; None without a GPU list."""
        if not self.cuda_gpus:
            return None
        return cuda_devices.resolve(self.visible_devices, self.cuda_gpus, self.facts.env_var("CUDA_DEVICE_ORDER"))

    def _capability(self, reported: Optional[str], name: Optional[str]) -> Optional[str]:
        if reported:
            return reported
        if name:
            try:
                product = self.matrix.gpu(name)
            except Exception:  # noqa: BLE001
                product = None
            if product is not None:
                return str(product.compute_capability)
        return None

    def build_support(self, compute_capability: Optional[str]) -> Optional[str]:
        """ "native"/"ptx"/"none" for the installed build on this capability; None when unknown."""
        if not compute_capability or self.is_cuda_tf is not True:
            return None
        reported = self.facts.tensorflow.compute_capabilities
        build: Any = _Architectures(tuple(reported)) if reported else self.tf_build
        if build is None or not getattr(build, "compute_capabilities", None):
            return None
        try:
            return self.matrix.support(build, compute_capability)
        except Exception:  # noqa: BLE001 - an unparseable capability is unknown
            return None

    @cached_property
    def gpus(self) -> tuple[GpuView, ...]:
        """Every NVIDIA GPU that NVML or the PCI bus shows, in nvidia-smi order, one line each."""
        return tuple(_gpu_views(self))

    @property
    def usable_gpus(self) -> list[GpuView]:
        return [g for g in self.gpus if g.usable]

    # --- libraries -------------------------------------------------------------------------
    def copies_named(self, wanted: str) -> list[LibraryCopy]:
        """Every copy the library probe found that answers to ``wanted``, in search order."""
        windows = self.build_os == "windows"
        out = []
        for lib in self.facts.libraries.libraries:
            for copy in lib.copies:
                if any(same_library(n, wanted, windows) for n in (copy.path, *copy.names)):
                    out.append(copy)
        return out

    def winner_for(self, wanted: str) -> Optional[LibraryCopy]:
        """The copy the loader takes for ``wanted``: the probe's per-name winner, else the first copy
        on the loader's path."""
        copies = self.copies_named(wanted)
        windows = self.build_os == "windows"
        for lib in self.facts.libraries.libraries:
            for name, path in lib.winners.items():
                if same_library(name, wanted, windows) or same_library(wanted, name, windows):
                    hit = next((c for c in copies if c.path == path), None)
                    if hit is not None:
                        return hit
        reachable = [c for c in copies if c.on_loader_path]
        return reachable[0] if reachable else None

    def mapped_into_tf(self, wanted: str) -> Optional[str]:
        windows = self.build_os == "windows"
        return next((p for p in self.facts.tensorflow.mapped_libraries if same_library(p, wanted, windows)), None)

    # --- commands for this machine ---------------------------------------------------------
    @property
    def python_exe(self) -> str:
        return self.facts.python.executable or ("python" if self.os == "windows" else "python3")

    def pip_command(self, *args: str, step: bool = True) -> Command:
        return shell.pip_command(self.python_exe, self.shell, *args, step=step)

    def python_line(self, code: str) -> str:
        return shell.python_code(self.python_exe, self.shell, code)

    def shell_command(self, bash: str, powershell: Optional[str] = None) -> Command:
        return shell.for_shell(self.shell, bash, powershell)


@dataclass(frozen=True)
class _Architectures:
    """The two fields ``Matrix.support`` reads, for the list TF itself reported."""

    compute_capabilities: tuple[str, ...]
    gpu: bool = True


def _all_queries_denied(gpu) -> bool:
    """Every per-GPU query answered NoPermission: the device nodes are closed to this user."""
    errors = list(gpu.query_errors.values())
    return len(errors) >= 3 and all(e.startswith("no_permission") for e in errors)


def _gpu_views(m: Machine) -> list[GpuView]:
    facts = m.facts
    tf = facts.tensorflow
    resolution = m.visibility
    views: list[GpuView] = []
    tf_devices = _tf_devices_by_cuda_index(m)
    if facts.nvml.status == OK and facts.nvml.gpus:
        for gpu in sorted(facts.nvml.gpus, key=lambda g: g.index):
            cc = m._capability(gpu.compute_capability, gpu.name)
            cuda_index = resolution.cuda_index.get(gpu.index) if resolution is not None and not resolution.mig else None
            tf_device = tf_devices.get(cuda_index) if cuda_index is not None else None
            usable, reason, tested = _usability(m, gpu, cc, cuda_index, tf_device, resolution)
            views.append(
                GpuView(
                    index=gpu.index,
                    name=gpu.name or f"GPU {gpu.index}",
                    uuid=gpu.uuid,
                    compute_capability=cc,
                    pci_bus_id=gpu.pci_bus_id,
                    cuda_index=cuda_index,
                    tf_device=tf_device,
                    usable=usable,
                    reason=reason,
                    tested=tested,
                    source="nvml",
                )
            )
        return views
    if facts.pci.devices:
        why = _no_driver_reason(m)
        for position, dev in enumerate(facts.pci.devices):
            name = m.pci_name(dev)
            views.append(
                GpuView(
                    index=position,
                    name=name,
                    uuid=None,
                    compute_capability=m._capability(None, name),
                    pci_bus_id=dev.address,
                    cuda_index=None,
                    tf_device=None,
                    usable=False,
                    reason=why(dev),
                    tested=False,
                    source="pci",
                )
            )
        return views
    # Neither NVML nor the bus shows a GPU, but TensorFlow does (a container without NVML).
    listed = [d for d in tf.physical_devices if d.device_type.upper() == "GPU"]
    tested = sorted(
        {short_device(p.requested) for p in tf.placement if short_device(p.requested).startswith("GPU:")},
        key=lambda d: int(d[4:]),
    )
    for position in range(max(len(listed), int(tested[-1][4:]) + 1 if tested else 0)):
        device = listed[position] if position < len(listed) else None
        details = device.details if device is not None else {}
        tf_device = f"/GPU:{position}"
        results = [p for p in tf.placement if short_device(p.requested) == short_device(tf_device)]
        ok = bool(results) and all(_ran_on(p, tf_device) for p in results)
        views.append(
            GpuView(
                index=None,
                name=details.get("device_name") or f"GPU {position}",
                uuid=None,
                compute_capability=details.get("compute_capability"),
                pci_bus_id=None,
                cuda_index=position,
                tf_device=tf_device,
                usable=ok,
                reason=None if ok else _placement_reason(results, tf_device),
                tested=bool(results),
                source="tensorflow",
            )
        )
    return views


def _tf_devices_by_cuda_index(m: Machine) -> dict[int, str]:
    """CUDA number -> TensorFlow's "/GPU:N". TensorFlow numbers the CUDA devices it accepts in CUDA's
    order and skips the ones its build has no code for, so the two differ after a skipped GPU."""
    resolution = m.visibility
    if resolution is None or not m.tf_runs:
        return {}
    by_cuda = sorted(((cuda_index, index) for index, cuda_index in resolution.cuda_index.items()))
    gpus = {g.index: g for g in m.cuda_gpus}
    out: dict[int, str] = {}
    position = 0
    listed = m.tf_gpu_count
    for cuda_index, index in by_cuda:
        if m.build_support(gpus[index].compute_capability) == "none":
            continue
        if position >= listed:
            break
        out[cuda_index] = f"/GPU:{position}"
        position += 1
    return out


def _usability(
    m: Machine, gpu, cc: Optional[str], cuda_index: Optional[int], tf_device: Optional[str], resolution
) -> tuple[bool, Optional[str], bool]:
    """(usable, why not, tested) for one GPU NVML lists."""
    facts = m.facts
    if gpu.status != OK:
        return False, f"NVML: {gpu.error or gpu.error_kind or 'error'}", False
    if _all_queries_denied(gpu):
        return False, "no permission to use it (every NVML query was refused)", False
    if resolution is not None and not resolution.mig and cuda_index is None:
        value = facts.env_var("CUDA_VISIBLE_DEVICES")
        return False, f"hidden by CUDA_VISIBLE_DEVICES={value!r}", False
    support = m.build_support(cc)
    if support == "none":
        return False, f"compute capability {cc}: this TensorFlow build has no code for it", False
    tf = facts.tensorflow
    if tf.status == SKIPPED:
        return True, "not tested: TensorFlow was not run (--quick)", False
    if tf.status != OK:
        return False, "TensorFlow does not run (see the verdict)", False
    if m.is_cuda_tf is False:
        return False, "the installed TensorFlow is a CPU-only build", False
    if tf_device is None:
        return False, "TensorFlow does not list it", False
    results = [p for p in tf.placement if short_device(p.requested) == short_device(tf_device)]
    if not results:
        return False, f"not tested on {tf_device}: the placement test did not run there", False
    ok = all(_ran_on(p, tf_device) for p in results)
    if ok:
        return True, None, True
    return False, _placement_reason(results, tf_device), True


def _ran_on(result, tf_device: str) -> bool:
    """The op ran, on that very GPU, and its result was right."""
    return bool(result.ok and result.device and short_device(result.device) == short_device(tf_device))


def _placement_reason(results, tf_device: str) -> str:
    if not results:
        return f"not tested on {tf_device}"
    failed = [p for p in results if not _ran_on(p, tf_device)]
    first = failed[0]
    if first.device and short_device(first.device) != short_device(tf_device):
        return f"{first.op} asked for {tf_device} ran on {short_device(first.device)}"
    error = (first.error or "wrong result").strip().splitlines()[-1] if (first.error or "").strip() else "wrong result"
    return f"{first.op} failed on {tf_device}: {error[:160]}"


def _no_driver_reason(m: Machine) -> Callable[[Any], str]:
    facts = m.facts

    def why(dev) -> str:
        if dev.driver and dev.driver != "nvidia":
            return f"driven by {dev.driver}, not the NVIDIA driver"
        if facts.nvml.status in (ERROR, MISSING) and facts.nvml.error:
            return f"no NVIDIA driver answers for it ({facts.nvml.error_kind or 'error'}: {facts.nvml.error[:120]})"
        return "no NVIDIA driver answers for it"

    return why
