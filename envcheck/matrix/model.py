"""The matrix's records and the questions rules ask of it (loading lives in ``loader``)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from envcheck.errors import UsageError
from envcheck.matrix.libraries import LibraryUse, basename, library_family, library_os
from envcheck.platform import WHEEL_OSES, platform_named
from envcheck.words import bracketed

BUILD_OSES = WHEEL_OSES  # the OSes of the matrix's TensorFlow rows ("linux", "windows", "macos")
_DOTTED = re.compile(r"^\d+(\.\d+)*$")
_LONG_NUMBER = re.compile(r"\d{10}")
_ARCH = re.compile(r"^(sm|compute)_(\d{1,8})(\d)$")  # int() of its parts: never past 9 digits


class MatrixVersion(Version):
    """A ``packaging`` Version that prints the way the matrix spells it ("535.54.03", not "535.54.3")."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._text = text

    def __str__(self) -> str:
        return self._text


def as_version(value: str | Version) -> Version:
    """Parse a user-supplied version; raise UsageError with one readable line if it is not one."""
    if isinstance(value, Version):
        return value
    text = str(value).strip()
    # No release number has a part longer than 9 digits; a longer one (past Python's 4,300-digit
    # limit for int(), or merely absurd) is bad input, not a crash.
    if len(text) > 64 or _LONG_NUMBER.search(text):
        shown = repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text)} characters)"
        raise UsageError(f"{shown} is not a version number (expected something like 2.15 or 12.2)")
    try:
        return MatrixVersion(text) if _DOTTED.match(text) else Version(text)
    except (InvalidVersion, ValueError):
        raise UsageError(f"{value!r} is not a version number (expected something like 2.15 or 12.2)") from None


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Source:
    key: str
    url: str
    title: str


@dataclass(frozen=True)
class PipCuda:
    extra: str
    packages: dict[str, str] = field(hash=False)


@dataclass(frozen=True)
class Correction:
    """A value an official table once gave and later changed (kept so old advice can be explained)."""

    field: str
    was: str
    note: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class TfBuild:
    tf: Version
    os: str
    gpu: bool
    python: tuple[str, ...]
    cuda: Version | None
    cudnn: Version | None
    compiler: str | None
    build_tool: str | None
    compute_capabilities: tuple[str, ...]
    min_compute_capability: Version | None
    libraries: tuple[str, ...]
    pip_cuda: PipCuda | None
    distribution: str
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()
    history: tuple[Correction, ...] = ()

    @property
    def label(self) -> str:
        """ "2.15": the release as a person names it (a patch row keeps its patch: "2.15.0")."""
        return str(self.tf)

    @property
    def is_patch_row(self) -> bool:
        """True for a row that describes one patch release ("2.15.0") rather than a whole minor."""
        return len(self.tf.release) >= 3

    def supports_python(self, version: str) -> bool:
        parts = str(version).split(".")
        return ".".join(parts[:2]) in self.python


@dataclass(frozen=True)
class CudaRelease:
    version: Version
    min_driver_linux: Version | None
    min_driver_windows: Version | None
    architectures: tuple[str, ...]
    download_url: str | None
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CudaMajor:
    major: int
    minor_compat_floor_linux: Version | None
    minor_compat_floor_windows: Version | None
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CudnnRelease:
    version: Version
    cuda: tuple[str, ...]
    download_url: str | None
    sources: tuple[str, ...]


@dataclass(frozen=True)
class GpuProduct:
    name: str
    compute_capability: Version
    architecture: str
    aliases: tuple[str, ...]
    sources: tuple[str, ...]
    pci_ids: tuple[str, ...] = ()  # PCI device ids ("1c03"), vendor 10de
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Architecture:
    """A GPU architecture: the compute capabilities it spans and the last driver branch that
    supports it (None while current drivers still do)."""

    name: str
    compute_capabilities: tuple[str, ...]
    last_driver_branch: str | None
    sources: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def supports_driver(self, driver: str | Version) -> bool | None:
        """False for a driver from a branch after the last one; True otherwise; None when
        ``driver`` is not a driver version. Windows drivers of a branch carry numbers just above
        it (R470: 471-474, R580: 580-581), so anything below the next multiple of five still
        belongs to the last branch."""
        if self.last_driver_branch is None:
            return True
        branch = _branch_floor(driver)
        if branch is None:
            return None
        return branch <= int(self.last_driver_branch)


@dataclass(frozen=True)
class TfDistribution:
    """A PyPI distribution that installs the ``tensorflow`` module."""

    name: str
    cuda: str  # "always" (a CUDA build whatever the release), "never", or "release" (the row says)
    nightly: bool
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()


DISTRIBUTION_CUDA = ("always", "never", "release")


@dataclass(frozen=True)
class DriverRequirement:
    """The NVIDIA driver a CUDA release needs on one OS's driver table (WSL2 reads Windows')."""

    cuda: Version  # the CUDA release asked about
    os: str  # "linux" or "windows": the driver's own OS
    full: Version | None  # what the CUDA release asks for (NVIDIA's table)
    minimum: Version | None  # the oldest driver that runs it (the minor-version floor where it applies)

    @property
    def minor_compat(self) -> bool:
        """True when ``minimum`` is below ``full`` thanks to CUDA's minor-version compatibility."""
        return self.minimum is not None and self.full is not None and self.minimum < self.full

    @property
    def os_title(self) -> str:
        return platform_named(self.os).short_title


@dataclass(frozen=True)
class PlatformRules:
    windows_native_gpu_last: Version
    tensorflow_gpu_last_real: Version
    tensorflow_gpu_dummy: str | None
    and_cuda_first: Version
    gpu_in_tensorflow_package_from: Version
    macos_gpu: bool
    sources: tuple[str, ...]
    tensorflow_cpu_first: dict[str, Version] = field(default_factory=dict, hash=False)
    notes: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------
# Queries


def gpu_name_key(name: str) -> tuple[str, bool]:
    """(what identifies the product, whether the name says it is the laptop part).

    Case, spacing, vendor words ("NVIDIA", "GeForce", "Tesla", "Jetson", "Quadro" before a
    letter series such as P4000), memory size, board form factor and edition ("PCIe", "SXM5",
    "80GB", "Server Edition") do not change the compute capability, so they are dropped. "Ti",
    "Super", "D" and every model letter are kept: an RTX 3080 Ti is not an RTX 3080. "Laptop GPU",
    "Mobile", "Max-Q" and a bare "3080M" only mark the laptop part. pci.ids' "GP106 [GeForce GTX
    1060 6GB]" is read as the bracketed name."""
    name = bracketed(name) or name
    tokens = [t for t in re.split(r"[^0-9a-z]+", name.lower()) if t]
    while tokens and (
        tokens[0] in _GPU_PREFIXES
        or (tokens[0] == "quadro" and len(tokens) > 1 and tokens[1][0].isalpha() and tokens[1] != "rtx")
    ):
        tokens.pop(0)
    if len(tokens) >= 2 and tokens[0] == "rtx" and re.fullmatch(r"a\d+", tokens[1]):
        tokens.pop(0)  # "RTX A6000" is what NVIDIA prints; people type "A6000"
    laptop = False
    while tokens:
        last = tokens[-1]
        if last in _LAPTOP_WORDS:
            laptop = True
        elif last in ("q", "p") and len(tokens) >= 2 and tokens[-2] == "max":
            tokens.pop()
            laptop = True
        elif len(tokens) >= 2 and (
            (tokens[-2] == "rev" and len(last) <= 2)  # pci.ids: "Rev. 2", "Rev. A"
            or (last == "gb" and tokens[-2].isdigit())  # "3 GB"
        ):
            tokens.pop()
        elif re.fullmatch(r"\d{4}m", last):  # "RTX 3080M": the laptop part (NVIDIA's own names
            tokens[-1] = last[:-1]  # with an M suffix have three digits: GTX 980M)
            laptop = True
            break
        elif not (last in _GPU_SUFFIXES or _FORM_FACTOR.fullmatch(last)):
            break
        tokens.pop()
    return "".join(tokens), laptop


def normalize_gpu_name(name: str) -> str:
    """The key two names share when they name the same product: ``gpu_name_key`` as one string
    ("rtx4050/laptop" for the laptop part)."""
    key, laptop = gpu_name_key(name)
    return f"{key}/laptop" if laptop and key else key


_GPU_PREFIXES = {"nvidia", "geforce", "tesla", "jetson", "hgx"}
_LAPTOP_WORDS = {"laptop", "mobile", "notebook", "maxq"}
_GPU_SUFFIXES = {
    "gb",
    "pcie",
    "sxm",
    "nvl",
    "dgxs",
    "with",
    "design",
    "gpu",
    "edition",
    "founders",
    "workstation",
    "server",
    "sff",
    "generation",
    "developer",
    "kit",
    "devkit",
    "module",
    "embedded",
    "lite",
    "hash",
    "rate",
    "lhr",
    "oem",
    "refresh",
}
_FORM_FACTOR = re.compile(r"\d+(gb|gib|g)|sxm\d*|hbm\d*e?|pcie\d*")


# The letters of NVIDIA's product lines before a model number: "GTX 1080 Ti", "RTX 3090", "GT 710".
_SERIES = re.compile(r"^(gtx|rtx|gts|gt|mx)(?=\d)")


def _model_numbers(index: dict[tuple[str, bool], GpuProduct]) -> dict[tuple[str, bool], GpuProduct]:
    """Each product under its model number without the line's letters ("1080ti"), where exactly
    one product has that number: "1080 Ti" is the GTX 1080 Ti, while "450" (GTS 450 and MX450)
    stays ambiguous and is not indexed."""
    found: dict[tuple[str, bool], set[str]] = {}
    products: dict[str, GpuProduct] = {}
    for (key, laptop), gpu in index.items():
        short = _SERIES.sub("", key)
        if short != key and short:
            found.setdefault((short, laptop), set()).add(gpu.name)
            products[gpu.name] = gpu
    taken = {key for key, _laptop in index}
    return {
        (short, laptop): products[next(iter(names))]
        for (short, laptop), names in found.items()
        if len(names) == 1 and short not in taken
    }


def parse_pci_device_id(device_id: str) -> str | None:
    """ "0x1C03", "1c03", "10de:1c03" -> "1c03"; None for anything else (another vendor, not an id)."""
    text = str(device_id).strip().lower()
    vendor, sep, device = text.rpartition(":")
    if sep:
        if vendor.removeprefix("0x") != "10de":
            return None
        text = device
    text = text.removeprefix("0x")
    return text if re.fullmatch(r"[0-9a-f]{4}", text) else None


def _branch_floor(driver: str | Version) -> int | None:
    """A driver version's major number rounded down to five: 470.256.02 -> 470, Windows 472.12 ->
    470, 581.57 -> 580. That is its branch for every branch a last_driver_branch names (R340, R390,
    R470, R580 and their Windows numbers), which is all ``supports_driver`` needs; older branches
    such as R418 are not multiples of five."""
    match = re.match(r"^\s*(\d{2,4})(\.\d+)*\s*$", str(driver))
    if not match:
        return None
    major = int(match.group(1))
    return major - major % 5


# The first TensorFlow release that compiles GPU kernels for the card's own architecture at run time
# by default (Keras 3's XLA; see Matrix.ptx_serves).
RUNTIME_CODEGEN_FROM = Version("2.16")


class Matrix:
    """The validated matrix and the questions rules ask of it."""

    def __init__(
        self,
        path: Path,
        tf_builds: Iterable[TfBuild],
        cuda_releases: Iterable[CudaRelease],
        cuda_majors: Iterable[CudaMajor],
        cudnn_releases: Iterable[CudnnRelease],
        gpus: Iterable[GpuProduct],
        platform: PlatformRules,
        sources: dict[str, Source],
        distributions: Iterable[TfDistribution] = (),
        architectures: Iterable[Architecture] = (),
    ) -> None:
        self.path = path
        self.platform = platform
        self.distributions = tuple(distributions)
        self._distribution_index = {d.name: d for d in self.distributions}
        self.sources = sources
        self._tf = sorted(tf_builds, key=lambda b: (b.tf.release, BUILD_OSES.index(b.os)))
        self._tf_index = {(b.tf.release, b.os): b for b in self._tf}
        self._cuda = sorted(cuda_releases, key=lambda c: c.version)
        self._cuda_index = {c.version.release: c for c in self._cuda}
        self._cuda_majors = {m.major: m for m in cuda_majors}
        # driver_requirement's answers: the planner asks the same few thousand times per plan
        self._driver_requirements: dict[tuple[object, str, object], DriverRequirement | None] = {}
        self._cudnn = sorted(cudnn_releases, key=lambda c: c.version)
        self._cudnn_index = {c.version.release: c for c in self._cudnn}
        self._gpus = list(gpus)
        self._gpu_index: dict[tuple[str, bool], GpuProduct] = {}
        self._pci_index: dict[str, GpuProduct] = {}
        for gpu in self._gpus:
            for name in (gpu.name, *gpu.aliases):
                self._gpu_index.setdefault(gpu_name_key(name), gpu)
            for device_id in gpu.pci_ids:
                self._pci_index[device_id] = gpu
        self._model_index = _model_numbers(self._gpu_index)
        self._architectures = list(architectures)
        self._architecture_index: dict[str, Architecture] = {}
        self._capability_index: dict[tuple[int, ...], Architecture] = {}
        for arch in self._architectures:
            for name in (arch.name, *arch.aliases):
                self._architecture_index[name.lower()] = arch
            for capability in arch.compute_capabilities:
                self._capability_index[as_version(capability).release[:2]] = arch

    # TensorFlow ---------------------------------------------------------------------------
    def tf_releases(self, os: str | None = None) -> list[TfBuild]:
        if os is None:
            return list(self._tf)
        os = _build_os(os)
        return [b for b in self._tf if b.os == os]

    def has_gpu_build(self, build: TfBuild, os: str) -> bool:
        """The release's row is a GPU build that installs on ``os``: native Windows stops at
        windows_native_gpu_last (later releases reach the GPU through WSL2), macOS has none."""
        if not build.gpu or build.cuda is None:
            return False
        if os == "windows" and build.tf > self.platform.windows_native_gpu_last:
            return False
        return not (os == "macos" and not self.platform.macos_gpu)

    def gpu_builds(self, os: str) -> list[TfBuild]:
        """The GPU builds that install on ``os``, oldest first."""
        return [b for b in self.tf_releases(os) if self.has_gpu_build(b, os)]

    def tf_range(self) -> tuple[Version, Version]:
        return self._tf[0].tf, self._tf[-1].tf

    def tf_build(self, version: str | Version, os: str) -> TfBuild | None:
        """The row for a release on an OS: the patch row if the matrix has one, else the minor's."""
        wanted = as_version(version)
        release = wanted.release
        os = _build_os(os)
        # A patch row describes exactly that release: 2.15.0.post1 is not 2.15.0.
        exact = wanted.post is None and wanted.pre is None and wanted.dev is None
        if exact and len(release) >= 3 and (release[:3], os) in self._tf_index:
            return self._tf_index[(release[:3], os)]
        minor = (release + (0,))[:2]
        return self._tf_index.get((minor, os))

    def newest_release(self, os: str, *, gpu: bool = False, python: str | None = None, accept=None) -> TfBuild | None:
        """The newest release row (a minor, not a patch row) for ``os`` that has a GPU build (when
        ``gpu``), wheels for ``python`` and passes ``accept``. Windows GPU builds end where the
        platform rules say; WSL2 takes the Linux rows."""
        for build in reversed(self.tf_releases(os)):
            if build.is_patch_row:  # describes one exact patch release; its minor's row is the advice
                continue
            if gpu and not build.gpu:
                continue
            if python and not build.supports_python(python):
                continue
            if accept is not None and not accept(build):
                continue
            return build
        return None

    def tf_distribution(self, name: str) -> TfDistribution | None:
        return self._distribution_index.get(name)

    def tf_distribution_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.distributions)

    def gpu_distribution(self, installed: str, build: TfBuild) -> str:
        """The distribution that installs the GPU build of the release ``installed`` is of: the
        nightly with a CUDA build for a nightly (tf-nightly-cpu -> tf-nightly), else the release's
        own (tensorflow-gpu up to 2.0, tensorflow after)."""
        dist = self.tf_distribution(installed)
        if dist is not None and dist.nightly:
            return next((d.name for d in self.distributions if d.nightly and d.cuda == "release"), installed)
        return build.distribution or "tensorflow"

    def cuda_extra(self, build: TfBuild, os: str) -> str | None:
        """The pip extra that installs this build's CUDA libraries as wheels, on the OSes that have it."""
        if not platform_named(os).linux_wheels or not build.gpu or build.tf < self.platform.and_cuda_first:
            return None
        return build.pip_cuda.extra if build.pip_cuda is not None else "and-cuda"

    def cpu_distribution(self, build: TfBuild, os: str, machine: str | None = None) -> str:
        """The package for the CPU: ``tensorflow-cpu`` on x86-64 Linux (and WSL2) where it is
        published, which carries no CUDA and so prints no CUDA start-up errors on a machine
        without a GPU; ``tensorflow`` everywhere else (CPU-only there anyway, or the only build)."""
        first = self.platform.tensorflow_cpu_first.get("linux")
        x86 = machine is None or machine.lower() in ("x86_64", "amd64")
        if platform_named(os).linux_wheels and x86 and first is not None and build.tf.release[:2] >= first.release[:2]:
            return "tensorflow-cpu"
        return "tensorflow"

    def pip_requirement(
        self, build: TfBuild, os: str, *, gpu: bool = True, exact: str | None = None, machine: str | None = None
    ) -> str:
        """What to give pip for a release on ``os``: ``tensorflow[and-cuda]==2.21.*`` for the GPU
        build where CUDA comes as wheels, ``tensorflow-gpu==1.13.*`` where the GPU build had its own
        name, ``tensorflow==2.21.*`` for the CPU. ``exact`` pins one patch release."""
        if not gpu:
            return requirement_text(self.cpu_distribution(build, os, machine), None, build, exact)
        return requirement_text(build.distribution or "tensorflow", self.cuda_extra(build, os), build, exact)

    def support(self, build: TfBuild, compute_capability: str | Version) -> str:
        """How a build runs on a GPU: "native" (a cubin it can load), "ptx" (JIT from PTX), "none".
        Whether the driver can JIT that PTX is the one question's part (``matrix.runs``)."""
        if not build.gpu:
            return "none"
        code = code_for(build.compute_capabilities, compute_capability)[0]
        if code == "ptx" and not self.ptx_serves(build.tf, build.cuda, compute_capability):
            return "none"
        return code

    # CUDA / cuDNN -------------------------------------------------------------------------
    def cuda_releases(self) -> list[CudaRelease]:
        return list(self._cuda)

    def cuda(self, version: str | Version) -> CudaRelease | None:
        release = as_version(version).release
        if len(release) < 2:
            return None
        return self._cuda_index.get(release[:2])

    def min_driver(self, cuda_version: str | Version, os: str) -> Version | None:
        """What the CUDA release itself asks of the driver on ``os``'s driver (WSL2: the Windows one)."""
        release = self.cuda(cuda_version)
        table = platform_named(os).driver_os
        if release is None or table is None:
            return None
        return release.min_driver_windows if table == "windows" else release.min_driver_linux

    def driver_requirement(self, cuda: str | Version, os: str, support: str | None = None) -> DriverRequirement | None:
        """The driver code built with ``cuda`` needs on ``os``. Under WSL2 the driver is the
        Windows one, so Windows' numbers apply; macOS has no NVIDIA driver table (None). From CUDA
        11 on, a driver at the major's minor-version-compatibility floor runs every minor release
        of that major, except for PTX that must be JIT-compiled (``support="ptx"``): that needs the
        release's own minimum. None when the matrix does not know the release."""
        key = (cuda, os, support)
        if key not in self._driver_requirements:
            self._driver_requirements[key] = self._driver_requirement(cuda, os, support)
        return self._driver_requirements[key]

    def _driver_requirement(self, cuda: str | Version, os: str, support: str | None) -> DriverRequirement | None:
        table = platform_named(os).driver_os
        wanted = as_version(cuda)
        if table is None or len(wanted.release) < 1:
            return None
        full = self.min_driver(wanted, table) if len(wanted.release) >= 2 else None
        floor = self.minor_compat_floor(wanted.release[0], table)
        minimum = full
        if floor is not None and support != "ptx" and (full is None or floor < full):
            minimum = floor
        if full is None and minimum is None:
            return None
        return DriverRequirement(cuda=wanted, os=table, full=full, minimum=minimum)

    def cuda_major(self, major: int | str) -> CudaMajor | None:
        """What holds for a whole CUDA major (11, 12, 13): its minor-version-compatibility floor."""
        return self._cuda_majors.get(as_version(str(major)).release[0])

    def minor_compat_floor(self, cuda_major: int | str, os: str) -> Version | None:
        """The oldest driver that runs every minor release of ``cuda_major`` on ``os``'s driver
        (WSL2: the Windows one); None before CUDA 11 and on macOS."""
        entry = self.cuda_major(cuda_major)
        table = platform_named(os).driver_os
        if entry is None or table is None:
            return None
        return entry.minor_compat_floor_windows if table == "windows" else entry.minor_compat_floor_linux

    def cudnn_releases(self) -> list[CudnnRelease]:
        return list(self._cudnn)

    def cudnn(self, version: str | Version) -> CudnnRelease | None:
        release = as_version(version).release
        if len(release) < 2:
            return None
        return self._cudnn_index.get(release[:2])

    def library_use(self, name: str, os: str | None = None) -> LibraryUse:
        """Which releases load the library file ``name`` on ``os`` (by default the OS the name
        belongs to: a DLL is Windows), and the CUDA and cuDNN they were built with."""
        file = basename(name)
        os = _build_os(os) if os else library_os(file)
        windows = os == "windows"
        wanted = file.lower() if windows else file
        builds = tuple(
            b for b in self.tf_releases(os) if any((lib.lower() if windows else lib) == wanted for lib in b.libraries)
        )
        return LibraryUse(
            name=file,
            family=library_family(file),
            os=os,
            builds=builds,
            cuda=tuple(sorted({b.cuda for b in builds if b.cuda is not None})),
            cudnn=tuple(sorted({b.cudnn for b in builds if b.cudnn is not None})),
        )

    # GPUs ---------------------------------------------------------------------------------
    def gpus(self) -> list[GpuProduct]:
        return list(self._gpus)

    def gpu(self, name: str) -> GpuProduct | None:
        """The product a person or a tool names: "RTX 4050", "NVIDIA A100-SXM4-80GB",
        "GeForce GTX 1080 with Max-Q Design". A laptop name falls back to the desktop product of
        the same name and the other way round (NVIDIA gives both the same compute capability;
        some names, such as the RTX 4050, exist only as laptop parts)."""
        key, laptop = gpu_name_key(name)
        if not key:
            return None
        found = self._gpu_index.get((key, laptop)) or self._gpu_index.get((key, not laptop))
        if found is None:  # "1080 Ti" for the GeForce GTX 1080 Ti: a model number only one series has
            found = self._model_index.get((key, laptop)) or self._model_index.get((key, not laptop))
        return found

    def gpus_beginning(self, start: str) -> list[GpuProduct]:
        """The products whose name (or one of its aliases) begins with ``start``, compared the way
        ``gpu`` compares names, in the matrix's order: what a name a tool cut short (nvidia-smi's
        table keeps 18 characters) may have been. Empty for a start too short to tell (under
        three characters of name)."""
        key, _laptop = gpu_name_key(start)
        if len(key) < 3:
            return []
        return [
            gpu for gpu in self._gpus if any(gpu_name_key(name)[0].startswith(key) for name in (gpu.name, *gpu.aliases))
        ]

    def gpu_by_pci_id(self, device_id: str) -> GpuProduct | None:
        """The product with this PCI device id ("0x1C03", "1c03", "10de:1c03"); None when the
        matrix does not know the id or it is not an NVIDIA device id."""
        parsed = parse_pci_device_id(device_id)
        return self._pci_index.get(parsed) if parsed else None

    def gpu_candidates(self, name: str, limit: int = 6) -> list[GpuProduct]:
        """The products nearest to a name that did not match, best first: those whose name
        contains what was typed (or is contained in it), then close spellings."""
        wanted, _ = gpu_name_key(name)
        if not wanted:
            return []
        scored: dict[GpuProduct, float] = {}
        for (key, _laptop), gpu in self._gpu_index.items():
            ratio = difflib.SequenceMatcher(None, wanted, key).ratio()
            if wanted in key or (len(key) >= 4 and key in wanted):
                ratio += 1.0
            elif ratio < 0.8:
                continue
            if ratio > scored.get(gpu, -1.0):
                scored[gpu] = ratio
        ranked = sorted(scored, key=lambda g: -scored[g])  # stable: ties keep the matrix's order
        return ranked[:limit]

    # Architectures ------------------------------------------------------------------------
    def architectures(self) -> list[Architecture]:
        return list(self._architectures)

    def architecture(self, name: str) -> Architecture | None:
        """An architecture by name ("Kepler", "ada lovelace", "Ada") or by a compute capability
        it spans ("3.5", "8.9")."""
        text = str(name).strip()
        found = self._architecture_index.get(text.lower())
        if found is not None:
            return found
        arch = _ARCH.match(text.lower())
        if arch:
            return self._capability_index.get((int(arch.group(2)), int(arch.group(3))))
        if re.fullmatch(r"\d{1,9}\.\d{1,9}", text):
            return self._capability_index.get(tuple(int(p) for p in text.split(".")))
        return None

    def first_cuda(self, compute_capability: str | Version) -> CudaRelease | None:
        """The oldest CUDA release in the table that lists this compute capability."""
        key = str(compute_capability).strip()
        return next((c for c in self._cuda if key in c.architectures), None)

    def ptx_serves(
        self, tf: str | Version | None, cuda: str | Version | None, compute_capability: str | Version
    ) -> bool:
        """Whether a TensorFlow build's PTX serves a GPU it has no cubin for. From TensorFlow 2.16 on
        it does not where the GPU's architecture is newer than the CUDA release the build was made
        with: TensorFlow then compiles its kernels for the GPU's own architecture at run time (XLA,
        which Keras 3 turns on by default, and the kernel generator) with that release's PTX ISA,
        which cannot target the card, and its kernels fail to load (CUDA_ERROR_INVALID_PTX; XLA's
        "PTX version 8.5 does not support target 'sm_120'"): every TensorFlow 2.16-2.21 wheel on a
        Blackwell card. Older releases are taken at their word: PTX is JIT-compiled by the driver."""
        if tf is None or cuda is None:
            return True
        try:
            release, built_with = as_version(str(tf)), as_version(str(cuda))
        except (ValueError, UsageError):  # a version no one can read: judged as PTX always was
            return True
        first = self.first_cuda(compute_capability)
        if release < RUNTIME_CODEGEN_FROM or first is None:
            return True
        return built_with.release[:2] >= first.version.release[:2]

    def first_driver(self, compute_capability: str | Version, os: str) -> tuple[CudaRelease, Version] | None:
        """The CUDA release that first lists this compute capability and the driver it asks for on
        ``os``: a driver from an older branch predates the architecture and cannot drive the card
        (NVIDIA adds a new architecture in the driver branch released with the CUDA that adds it;
        CUDA's release notes give both). None when the table's oldest release already lists it
        (its first release is older than the table) or nothing lists it."""
        release = self.first_cuda(compute_capability)
        if release is None or release is next(c for c in self._cuda if c.architectures):
            return None
        driver = self.min_driver(release.version, os)
        return None if driver is None else (release, driver)

    def last_driver_branch(self, compute_capability_or_architecture: str | Version) -> str | None:
        """The last driver branch that supports the architecture ("470" for Kepler, "3.5"), or
        None: when the architecture is still supported, or when the matrix does not know it
        (``architecture`` tells the two apart)."""
        arch = self.architecture(str(compute_capability_or_architecture))
        return arch.last_driver_branch if arch is not None else None

    def supports_driver(self, compute_capability_or_architecture: str | Version, driver: str | Version) -> bool | None:
        """False when ``driver`` comes from a branch after the architecture's last one (a
        Kepler GPU under 535.54 has no driver); True when it does not; None when the matrix does
        not know the architecture or ``driver`` is not a driver version."""
        arch = self.architecture(str(compute_capability_or_architecture))
        return arch.supports_driver(driver) if arch is not None else None


def unknown_gpu_message(matrix: Matrix, name: str, what_to_do: str) -> str:
    """One line for a GPU name the matrix does not know: the nearest products, if any, and what to do."""
    candidates = matrix.gpu_candidates(name)
    nearest = ", ".join(f"{g.name} [{g.architecture}, {g.compute_capability}]" for g in candidates)
    return f"unknown GPU: no GPU named {name.strip()!r} in the matrix{f' (nearest: {nearest})' if nearest else ''}; {what_to_do}"


def requirement_text(distribution: str, extra: str | None, build: TfBuild, exact: str | None = None) -> str:
    """ "tensorflow[and-cuda]==2.21.*": pinned to the release series (pip takes its newest patch),
    or to ``exact``."""
    version = exact or f"{'.'.join(str(p) for p in build.tf.release[:2])}.*"
    return f"{distribution}{f'[{extra}]' if extra else ''}=={version}"


def driver_os(os: str) -> str | None:
    """Whose driver numbering applies: WSL2 runs on the Windows driver; macOS has none."""
    return platform_named(os).driver_os


def _build_os(os: str) -> str:
    """The OS whose TensorFlow rows apply: WSL2 runs the Linux wheels."""
    return platform_named(os).wheels_os


# A build's entry as TensorFlow reports it: "sm_86", "compute_90", and the architecture-specific
# cubins of CUDA 12 ("sm_90a"), which run on that one capability only.
_BUILD_ENTRY = re.compile(r"^(sm|compute)_(\d+)(\d)(a?)$")


def code_for(archs: tuple[str, ...], compute_capability: str | Version) -> tuple[str, str | None]:
    """("native" / "ptx" / "none", the entry that serves it) for a build's ``sm_XY``/``compute_XY``
    list on a GPU: a cubin for sm_XY loads on the same major with minor >= Y (NVIDIA's binary
    compatibility); PTX for compute_XY JIT-compiles for any capability >= X.Y (PTX compatibility),
    and the highest such PTX is what the driver compiles. Entries of another form are ignored."""
    cc = as_version(compute_capability)
    major, minor = (cc.release + (0,))[:2]
    ptx: str | None = None
    for entry in archs:
        match = _BUILD_ENTRY.match(entry.strip().lower())
        if match is None:
            continue
        kind, arch_major, arch_minor, specific = (
            match.group(1),
            int(match.group(2)),
            int(match.group(3)),
            match.group(4),
        )
        if kind == "sm" and arch_major == major and (arch_minor == minor if specific else arch_minor <= minor):
            return "native", entry
        if kind == "compute" and not specific and (arch_major, arch_minor) <= (major, minor):
            ptx = entry
    return ("ptx", ptx) if ptx else ("none", None)
