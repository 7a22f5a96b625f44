"""The machine view: the questions every command asks about one machine's facts, answered once.

Which platform it is and which TensorFlow is installed (and its matrix row); whether there is an
NVIDIA GPU and how each one stands (``gpus``: one chain per GPU); the driver and what it must be;
which copy of a library the loader takes; how to spell a command for the probed interpreter. It
reads facts and the matrix and judges nothing: the rules decide what is wrong, the verdict what
comes first. Every answer is computed once per machine (``cached_property``), because every rule
asks the same questions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Optional

from packaging.version import Version

from envcheck import cuda_devices, shell
from envcheck.errors import EnvcheckError
from envcheck.facts import ERROR, MISSING, OK, SKIPPED, Distribution, Facts, LibraryCopy
from envcheck.machine import gpus as gpu_chains
from envcheck.machine import libraries, speed, wheels
from envcheck.machine.values import ABSENT, PRESENT, UNKNOWN, capability, minor, parse_version
from envcheck.matrix import MatrixVersion, load_matrix
from envcheck.matrix.libraries import same_library
from envcheck.matrix.runs import GpuRun, runs_on_gpu
from envcheck.platform import LINUX, Platform, platform_named
from envcheck.shell import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import DriverRequirement, Matrix, TfBuild

# TF error kinds after which TensorFlow cannot run at all (a timeout may only be a slow first start).
_TF_UNUSABLE_KINDS = ("not_installed", "import_failed", "crashed", "bad_output", "worker_failed")

# Variables that change which GPUs TensorFlow uses and how (the environment link, and what a diff
# or a fleet compares first).
GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_CPP_MIN_LOG_LEVEL")
_DRIVER_VERSION = re.compile(r"^\d{2,4}(\.\d{1,3}){1,2}$", re.ASCII)


@dataclass(frozen=True)
class InstalledTf:
    distribution: str
    version: str


@dataclass(frozen=True)
class GpuReading:
    """What a plan needs of the GPUs: the same reading the doctor's chains start from."""

    has_gpu: Optional[bool]  # True: seen; False: the probes that could see one saw none; None: not known
    gpus: tuple[gpu_chains.GpuView, ...]  # the GPUs to plan for: those left visible (all when all are hidden)
    source: str  # "NVML", "PCI bus" or "TensorFlow"; "" when none was seen
    notes: tuple[str, ...]  # what is not known, and the flag that tells it


class Machine:
    """Questions about one machine's facts. The matrix is loaded on first use."""

    def __init__(self, facts: Facts, matrix_loader: Optional[Callable[[], "Matrix"]] = None) -> None:
        self.facts = facts
        self.matrix_loader = matrix_loader

    @cached_property
    def matrix(self) -> "Matrix":
        return self.matrix_loader() if self.matrix_loader is not None else load_matrix()

    # --- platform --------------------------------------------------------------------------
    @cached_property
    def platform(self) -> Platform:
        """The snapshot's OS ("" when the platform probe did not run: read as Linux)."""
        try:
            return platform_named(self.facts.platform.os) if self.facts.platform.os else LINUX
        except EnvcheckError:
            return LINUX  # load_facts refuses other words; a hand-built snapshot reads as Linux

    @property
    def os(self) -> str:
        """ "linux", "windows", "macos" or "wsl"."""
        return self.platform.name

    @property
    def build_os(self) -> str:
        """The OS whose TF builds apply: WSL runs the Linux wheels."""
        return self.platform.wheels_os

    @property
    def shell(self) -> str:
        return self.platform.shell

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

    @property
    def installed_release(self) -> Optional[str]:
        """The installed release's series ("2.15" for 2.15.1): what a fix computed for it names."""
        return minor(self.installed_tf.version) if self.installed_tf is not None else None

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
        return tuple(
            d
            for d in dists
            if d is not None and not any(o is not d and _pulls_in(o, d) for o in dists if o is not None)
        )

    def build_for(self, version: str) -> Optional["TfBuild"]:
        if parse_version(version) is None:
            return None
        try:
            return self.matrix.tf_build(version, self.build_os)
        except EnvcheckError:  # a version the matrix cannot parse is "unknown"
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

    @cached_property
    def build_archs(self) -> tuple[str, ...]:
        """The GPU code the installed build carries (``sm_XY``/``compute_XY``): TensorFlow's own build
        info when it was probed, else the matrix row; () for a CPU build or when unknown."""
        if self.is_cuda_tf is not True:
            return ()
        reported = self.facts.tensorflow.compute_capabilities
        if reported:
            return tuple(reported)
        build = self.tf_build
        return build.compute_capabilities if build is not None and build.gpu else ()

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
    def tf_not_installed(self) -> bool:
        """No TensorFlow in the probed interpreter yet (and the package probe could have seen one):
        the state before the first install."""
        facts = self.facts
        tf = facts.tensorflow
        if self.installed_tf is not None or facts.packages.status == ERROR:
            return False
        # Something the worker found but the package probe missed is installed after all.
        return tf.status == SKIPPED or tf.error_kind in (None, "not_installed")

    @property
    def tf_runs(self) -> bool:
        """TensorFlow imported and answered (its probe ran and finished)."""
        return self.facts.tensorflow.status == OK

    @cached_property
    def python_runs_installed_tf(self) -> Optional[bool]:
        """Whether the probed Python can run the installed release at all (its wheels exist for this
        Python version and bitness); None when either is not known."""
        python = self.facts.python
        if python.bits and python.bits != 64:
            return False
        version = parse_version(python.version)
        if version is None:
            return None
        if version.release[:2] < (3, 6):
            return False  # Python 2.7 and 3.5: no release of the matrix's era, and not probed further
        build = self.tf_build
        if build is None or not build.python:
            return None
        return build.supports_python(python.version)

    @cached_property
    def missing_at_import(self) -> tuple[str, ...]:
        """The CUDA libraries a GPU build from before TensorFlow loaded CUDA on demand links at import
        time, and that the library probe did not find. From the release whose plain ``tensorflow``
        package carries CUDA and runs with and without a GPU (2.1, the matrix's
        ``gpu_in_tensorflow_package_from``), CUDA is loaded when a GPU is used; before it, the GPU
        build does not import without them."""
        build = self.tf_build
        if self.is_cuda_tf is not True or build is None or self.facts.libraries.status not in (OK, MISSING):
            return ()
        if build.tf >= self.matrix.platform.gpu_in_tensorflow_package_from or self.tf_runs:
            return ()
        return tuple(n.name for n in self.needed_libraries if not n.usable and not self.mapped_into_tf(n.name))

    @property
    def tf_unusable(self) -> bool:
        """No TensorFlow runs in this interpreter, on any device: a 32-bit or unsupported Python, an
        import that fails, a worker that crashes, a GPU build without the CUDA libraries it needs to
        import. A timeout may only be a slow first start."""
        tf = self.facts.tensorflow
        if self.installed_tf is not None and self.python_runs_installed_tf is False:
            return True
        if self.missing_at_import:
            return True
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
        and found none, UNKNOWN otherwise (Windows without a driver, WSL2 without NVML, a --quick
        run with no PCI probe)."""
        facts = self.facts
        if facts.nvml.gpus or facts.pci.devices or self.tf_gpu_count:
            return PRESENT
        # Under WSL2 the GPU is not on the (virtual) PCI bus: an empty bus says nothing there.
        pci_looked = facts.pci.status in (OK, MISSING) and self.os != "wsl"
        nvml_empty_ok = facts.nvml.status == OK and not facts.nvml.gpus
        if pci_looked or nvml_empty_ok:
            return ABSENT
        return UNKNOWN

    @cached_property
    def plans(self) -> dict[Optional[str], object]:
        """The planner's plans for this machine, by pinned release (None: the plan's own choice),
        kept by ``rules.installs.plan_for``: every fix that moves to another release, and the
        recommendation, ask for the same plan of the same facts."""
        return {}

    @cached_property
    def gpus(self) -> tuple[gpu_chains.GpuView, ...]:
        """Every NVIDIA GPU that NVML, the PCI bus or TensorFlow shows, each with its chain."""
        return gpu_chains.read_gpus(self)

    @property
    def usable_gpus(self) -> list[gpu_chains.GpuView]:
        return [g for g in self.gpus if g.usable]

    @property
    def visible_gpus(self) -> list[gpu_chains.GpuView]:
        """The GPUs CUDA_VISIBLE_DEVICES leaves to TensorFlow (all of them when it is not set)."""
        return [g for g in self.gpus if not g.hidden]

    @property
    def gpu_names(self) -> list[str]:
        return [g.name for g in self.gpus]

    @cached_property
    def gpu_reading(self) -> GpuReading:
        gpus = tuple(self.visible_gpus) or self.gpus
        if gpus:
            sources = {g.source for g in gpus}
            source = "NVML" if "nvml" in sources else "PCI bus" if "pci" in sources else "TensorFlow"
            notes = ()
            if any(g.compute_capability is None for g in gpus):
                notes = (
                    "the compute capability of a GPU is not known without its driver; "
                    "give it with --gpu NAME or --compute-capability X.Y",
                )
            return GpuReading(True, gpus, source, notes)
        facts = self.facts
        if self.gpu_presence == ABSENT:
            bus_read = facts.pci.status in (OK, MISSING) and self.os != "wsl"
            return GpuReading(False, (), "PCI bus" if bus_read else "NVML", ())
        why = "no NVIDIA driver answered" if facts.nvml.status != SKIPPED else "the GPU probes did not run"
        if facts.nvml.status != SKIPPED and (facts.pci.status == SKIPPED or self.os == "wsl"):
            why += " and " + ("WSL2 shows no PCI bus" if self.os == "wsl" else "the PCI bus cannot be read here")
        return GpuReading(None, (), "", (f"the GPU is not known ({why}); give it with --gpu NAME, or --cpu",))

    def pci_name(self, device) -> str:
        """A PCI device's product name: pci.ids' bracketed name, else the matrix's entry for its
        device id, else the id itself."""
        return gpu_chains.pci_name(self, device)

    def capability_of(self, reported: Optional[str], name: Optional[str]) -> Optional[str]:
        """A GPU's compute capability: as NVML (or TensorFlow) reported it, else the matrix's entry
        for its product name."""
        if capability(reported):
            return capability(reported)
        product = self.matrix.gpu(name) if name else None
        return str(product.compute_capability) if product is not None else None

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

    @cached_property
    def driver_reading(self) -> tuple[Optional[Version], str]:
        """(the driver version, where it was read: "NVML" or "kernel module"), or (None, "")."""
        facts = self.facts
        for value, origin in ((facts.nvml.driver_version, "NVML"), (facts.driver.version, "kernel module")):
            if value and _DRIVER_VERSION.match(value):
                return MatrixVersion(value), origin
        return None, ""

    def driver_requirement(self, cuda: object, support: Optional[str] = None) -> Optional["DriverRequirement"]:
        """The driver code built with ``cuda`` needs here (WSL2: the Windows driver's numbers)."""
        if parse_version(cuda) is None:
            return None
        try:
            return self.matrix.driver_requirement(str(cuda), self.os, support)
        except EnvcheckError:  # a version the matrix cannot parse is unknown
            return None

    def gpu_run(self, compute_capability: Optional[str]) -> GpuRun:
        """The one question for the installed build on a GPU of this capability, with this driver."""
        return runs_on_gpu(
            self.matrix,
            archs=self.build_archs,
            cuda=self.tf_cuda,
            compute_capability=compute_capability,
            os=self.os,
            driver=self.driver_version,
            tf=self.installed_tf.version if self.installed_tf is not None else None,
        )

    def build_support(self, compute_capability: Optional[str]) -> Optional[str]:
        """ "native"/"ptx"/"none" for the installed build on this capability; None when unknown."""
        if not compute_capability or not self.build_archs:
            return None
        return self.gpu_run(compute_capability).code

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
            elif kind == "no_permission" and gpu_chains.all_queries_denied(gpu):
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
                compute_capability=self.capability_of(g.compute_capability, g.name),
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

    @property
    def hidden_on_purpose(self) -> bool:
        """CUDA_VISIBLE_DEVICES is "" or starts with a negative number: the idioms that hide every
        GPU to run on the CPU (TF1's ``CUDA_VISIBLE_DEVICES=""``), not a mistyped list."""
        seen = self.visible_devices
        return seen.set and not seen.entries and seen.reason in (cuda_devices.EMPTY, cuda_devices.NEGATIVE)

    def keep_only(self, indices: list[int]) -> tuple[Command, ...]:
        """The lines that leave TensorFlow only these GPUs (nvidia-smi indices): by UUID where NVML
        gave them, else in CUDA's numbering (``cuda_devices.keep_settings``); () when CUDA's list of
        GPUs is not known."""
        if not self.cuda_gpus:
            return ()
        settings = cuda_devices.keep_settings(indices, self.cuda_gpus, self.facts.env_var("CUDA_DEVICE_ORDER"))
        return tuple(self.set_variable(name, value) for name, value in settings)

    # --- speed -------------------------------------------------------------------------------
    @cached_property
    def speed_gpus(self) -> tuple[speed.GpuSpeed, ...]:
        """Every GPU NVML listed as the speed rules see it (``speed.read_speed_gpus``)."""
        return speed.read_speed_gpus(self)

    # --- libraries and wheels --------------------------------------------------------------
    @cached_property
    def needed_libraries(self) -> tuple[libraries.Needed, ...]:
        """Every library file the installed build loads, with the copy the loader takes."""
        return libraries.read_needed(self)

    @cached_property
    def broken_wheels(self) -> tuple[wheels.BrokenWheel, ...]:
        return wheels.read_broken_wheels(self)

    @cached_property
    def cuda_pins(self) -> dict[str, str]:
        """Wheel name -> version specifier TF's CUDA extra asks for (``wheels.read_cuda_pins``)."""
        return wheels.read_cuda_pins(self)

    @cached_property
    def tf_requirements(self):
        """The installed TensorFlow distribution's own Requires-Dist lines that parse."""
        return wheels.read_requirements(self)

    @cached_property
    def stack_mismatches(self) -> tuple[wheels.Mismatch, ...]:
        """TensorFlow's own requirements that the installed packages do not meet."""
        return wheels.read_stack_mismatches(self)

    def copies_named(self, wanted: str) -> list[LibraryCopy]:
        """Every copy the library probe found that answers to ``wanted``, in search order."""
        windows = self.platform.windows_libraries
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
        windows = self.platform.windows_libraries
        for lib in self.facts.libraries.libraries:
            for name, path in lib.winners.items():
                if same_library(name, wanted, windows) or same_library(wanted, name, windows):
                    hit = next((c for c in copies if c.path == path), None)
                    if hit is not None:
                        return hit
        reachable = [c for c in copies if c.on_loader_path]
        return reachable[0] if reachable else None

    def mapped_into_tf(self, wanted: str) -> Optional[str]:
        windows = self.platform.windows_libraries
        return next((p for p in self.facts.tensorflow.mapped_libraries if same_library(p, wanted, windows)), None)

    # --- commands for this machine ---------------------------------------------------------
    @property
    def python_exe(self) -> str:
        return self.facts.python.executable or self.platform.python

    def pip_command(self, *args: str, step: bool = True) -> Command:
        return shell.pip_command(self.python_exe, self.shell, *args, step=step)

    def python_line(self, code: str) -> str:
        return shell.python_code(self.python_exe, self.shell, code)

    def shell_command(self, bash: str, powershell: Optional[str] = None) -> Command:
        return shell.for_shell(self.shell, bash, powershell)

    def set_variable(self, name: str, value: str) -> Command:
        """``export NAME=value`` (``$env:NAME = 'value'`` in PowerShell), the value quoted."""
        return Command(shell.set_variable(name, value, self.shell), shell=self.shell)

    def unset_variable(self, name: str) -> Command:
        return Command(shell.unset_variable(name, self.shell), shell=self.shell)

    def prepend_loader_path(self, directory: str) -> Command:
        """Put a folder first on the loader's search path for this shell (LD_LIBRARY_PATH, or PATH
        on Windows); the folder stays one literal word whatever it is called."""
        return Command(shell.prepend_path(self.platform.loader_variable, directory, self.shell), shell=self.shell)


# The Windows tensorflow wheels of 2.11 on are a stub that requires tensorflow-intel of the same
# version (the matrix's distribution note, PyPI's metadata): a snapshot whose package list lost the
# requirements still holds one install.
_PULLED_IN_BY = {"tensorflow-intel": "tensorflow"}


def _pulls_in(dist: Distribution, other: Distribution) -> bool:
    if _requires(dist, other.name):
        return True
    return _PULLED_IN_BY.get(other.name) == dist.name and not dist.requires and dist.version == other.version


def _requires(dist: Distribution, other: str) -> bool:
    return any(
        re.match(rf"{re.escape(other)}(?![a-z0-9-])", req.strip().lower().replace("_", "-")) for req in dist.requires
    )


__all__ = ["ABSENT", "GPU_VARIABLES", "PRESENT", "UNKNOWN", "GpuReading", "InstalledTf", "Machine"]
