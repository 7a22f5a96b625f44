"""What this machine adds to an explanation: the exact version, file and command for here.

A pattern's fix is general ("install the CUDA version TensorFlow was built for"). When ``explain``
runs on the machine that printed the message (or is given that machine's snapshot), a
*specializer* named by the pattern reads the facts and the compatibility matrix and says which
version, which file and which command. Specializers only read; where the facts or the matrix do
not say, they say nothing rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from packaging.version import InvalidVersion, Version

from envcheck.errors import EnvcheckError
from envcheck.facts import MISSING, OK, Distribution, Facts
from envcheck.shell import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.explain.scanner import Occurrence
    from envcheck.matrix import Matrix, TfBuild

# Distributions that provide the ``tensorflow`` module, most specific first.
TF_DISTRIBUTIONS = ("tensorflow-gpu", "tensorflow-cpu", "tensorflow", "tensorflow-intel", "tf-nightly", "tensorflow-macos")
WINDOWS_CUDA_DIR = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"


@dataclass(frozen=True)
class MachineNote:
    text: str
    commands: tuple[Command, ...] = ()
    link: Optional[str] = None
    harmless: Optional[bool] = None  # overrides the pattern's verdict for this machine

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "commands": [{"shell": c.shell, "line": c.line} for c in self.commands],
            "link": self.link,
        }


class MachineContext:
    """The facts of the machine being advised (None when not probed) and the matrix."""

    def __init__(
        self,
        facts: Optional[Facts],
        matrix_loader: Optional[Callable[[], "Matrix"]] = None,
        origin: str = "",
    ) -> None:
        self.facts = facts
        self.origin = origin  # "this machine" or "the snapshot FILE"
        self._matrix_loader = matrix_loader
        self.problems: list[str] = []

    @cached_property
    def matrix(self) -> Optional["Matrix"]:
        try:
            if self._matrix_loader is not None:
                return self._matrix_loader()
            from envcheck.matrix import load_matrix

            return load_matrix()
        except (EnvcheckError, ImportError) as exc:
            self.problems.append(f"the compatibility matrix could not be read ({exc}); advice is general")
            return None

    @property
    def os(self) -> Optional[str]:
        if self.facts is None or self.facts.platform.status != OK or not self.facts.platform.os:
            return None
        return self.facts.platform.os

    @property
    def shell(self) -> str:
        return "powershell" if self.os == "windows" else "bash"

    def tensorflow(self) -> Optional[Distribution]:
        if self.facts is None:
            return None
        for name in TF_DISTRIBUTIONS:
            found = self.facts.distribution(name)
            if found is not None:
                return found
        return None

    def tf_build(self, version: str) -> Optional["TfBuild"]:
        if self.matrix is None or self.os is None:
            return None
        try:
            return self.matrix.tf_build(version, self.os)
        except EnvcheckError:
            return None


def notes_for(occurrence: "Occurrence", ctx: MachineContext) -> tuple[MachineNote, ...]:
    """Machine-specific notes for one explanation (none when nothing specific is known)."""
    pattern = occurrence.pattern
    if not pattern.specialize:
        return ()
    if ctx.facts is not None and pattern.os and ctx.os and ctx.os not in _compatible_oses(pattern.os):
        return (
            MachineNote(
                f"This message is printed on {' or '.join(pattern.os)}, but {ctx.origin or 'the machine looked at'} "
                f"runs {ctx.os}: run `envcheck explain` on the machine that printed it (or pass its "
                "snapshot with --facts FILE) for advice specific to that machine."
            ),
        )
    return tuple(SPECIALIZERS[pattern.specialize](occurrence, ctx))


def _compatible_oses(oses: tuple[str, ...]) -> set[str]:
    # WSL runs the Linux wheels, so a Linux message can come from WSL and the other way round.
    found = set(oses)
    if "linux" in found or "wsl" in found:
        found |= {"linux", "wsl"}
    return found


# --- helpers -------------------------------------------------------------------------------------


def _version(text: Optional[str]) -> Optional[Version]:
    try:
        return Version(str(text)) if text else None
    except InvalidVersion:
        return None


def expected_library_names(cuda: Optional[Version], cudnn: Optional[Version]) -> dict[str, dict[str, str]]:
    """The file names a TF build built for this CUDA and cuDNN loads, per OS family.

    CUDA 10.x and older put major and minor in the name (cudart64_100.dll, libcudart.so.10.0);
    all of CUDA 11 uses the 11.0 name; CUDA 12 and newer only the major."""
    names: dict[str, dict[str, str]] = {"windows": {}, "linux": {}}
    if cuda is not None:
        major, minor = (cuda.release + (0,))[:2]
        if major <= 10:
            names["windows"]["cudart"] = f"cudart64_{major}{minor}.dll"
            names["linux"]["cudart"] = f"libcudart.so.{major}.{minor}"
        elif major == 11:
            names["windows"]["cudart"] = "cudart64_110.dll"
            names["linux"]["cudart"] = "libcudart.so.11.0"
        else:
            names["windows"]["cudart"] = f"cudart64_{major}.dll"
            names["linux"]["cudart"] = f"libcudart.so.{major}"
    if cudnn is not None:
        names["windows"]["cudnn"] = f"cudnn64_{cudnn.release[0]}.dll"
        names["linux"]["cudnn"] = f"libcudnn.so.{cudnn.release[0]}"
    return names


def _same_runtime(asked: str, built: Version) -> bool:
    """Whether the CUDA version in a file name is the one a build of CUDA ``built`` asks for."""
    asked_version = _version(asked)
    if asked_version is None:
        return True  # nothing to compare: do not claim a mismatch
    asked_release = asked_version.release
    if asked_release[0] != built.release[0]:
        return False
    if built.release[0] <= 10 and len(asked_release) > 1:
        return asked_release[1] == (built.release + (0,))[1]
    return True


def _library_copies(ctx: MachineContext, family: str, name: str) -> list[Any]:
    facts = ctx.facts
    if facts is None or facts.libraries.status != OK:
        return []
    copies = []
    for library in facts.libraries.libraries:
        if library.family != family:
            continue
        for copy in library.copies:
            file_names = {copy.path.replace("\\", "/").rsplit("/", 1)[-1], *copy.names}
            if name in file_names:
                copies.append(copy)
    return copies


def _pip(spec: str) -> Command:
    return Command(f'python -m pip install "{spec}"', shell="any", pip_args=("install", spec))


def _bus_read(facts: Facts) -> bool:
    """The PCI probe looked at the bus (``missing``: it found no NVIDIA device there)."""
    return facts.pci.status in (OK, MISSING)


def _no_gpu_here(facts: Facts, ctx: MachineContext) -> bool:
    """The PCI bus was read and holds no NVIDIA GPU (under WSL2 the bus does not show the GPU)."""
    return ctx.os not in ("wsl", "macos") and _bus_read(facts) and not _gpu_names(facts)


NO_GPU_HERE = "this machine has no NVIDIA GPU (none on the PCI bus), so the message comes from another machine"


def _gpu_names(facts: Facts) -> list[str]:
    if facts.nvml.status == OK and facts.nvml.gpus:
        return [g.name or f"GPU {g.index}" for g in facts.nvml.gpus]
    if facts.pci.status == OK:
        return [d.name or f"NVIDIA device {d.device_id}" for d in facts.pci.devices]
    return []


# --- specializers --------------------------------------------------------------------------------


def cuda_library(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """A CUDA or cuDNN library TF could not load: the version this TF wants and how to get it here."""
    variables = occurrence.variables
    library, family = variables.get("library", ""), variables.get("family", "")
    if ctx.facts is None:
        return
    for copy in _library_copies(ctx, family, library):
        if not copy.on_loader_path:
            variable = "PATH" if library.endswith(".dll") else "LD_LIBRARY_PATH"
            yield MachineNote(
                f"{library} is on this machine at {copy.path}, but no loader looks in {copy.directory}: "
                f"add that folder to {variable} (EC-LIB-001/EC-LIB-006).",
                commands=(_add_to_path_command(copy.directory, ctx.shell),),
            )
        elif copy.loads is False:
            yield MachineNote(f"{copy.path} is found but does not load: {copy.load_error or 'no reason given'}.")
    dist = ctx.tensorflow()
    if dist is None:
        python = ctx.facts.python
        yield MachineNote(
            f"TensorFlow is not installed in {python.executable or 'this Python'}: the message came from another "
            "environment. Rerun with --python pointing at that environment's interpreter."
        )
        return
    if ctx.matrix is None or ctx.os is None:
        return  # without the OS or the matrix nothing specific can be said
    build = ctx.tf_build(dist.version)
    if build is None:
        yield MachineNote(
            f"{dist.name} {dist.version} is not in envcheck's compatibility matrix, so the CUDA version it "
            "needs is unknown here (see `envcheck matrix`)."
        )
        return
    if not build.gpu:
        yield MachineNote(
            f"{dist.name} {dist.version} on {ctx.os} is a CPU-only build and never loads {library}: this "
            "message came from another TensorFlow (another environment or machine)."
        )
        return
    if _asks_for_other_versions(variables, build):
        expected = expected_library_names(build.cuda, build.cudnn)["windows" if library.endswith(".dll") else "linux"]
        wanted = expected.get(family) or f"the CUDA {build.cuda} one"
        yield MachineNote(
            f"The installed {dist.name} {dist.version} was built for CUDA {build.cuda} and cuDNN {build.cudnn}, so it "
            f"asks for {wanted}, not {library}: this log comes from a different TensorFlow (another environment "
            "or machine)."
        )
        return
    yield from _install_cuda_steps(ctx, dist, build)


def _asks_for_other_versions(variables: dict[str, str], build: "TfBuild") -> bool:
    """Whether the file in the message belongs to another CUDA/cuDNN than ``build`` loads."""
    family, asked = variables.get("family", ""), _version(variables.get("lib_version"))
    if asked is None:
        return False
    if family == "cudart" and build.cuda is not None:
        return not _same_runtime(variables["lib_version"], build.cuda)
    if family == "cudnn" and build.cudnn is not None:
        return asked.release[0] != build.cudnn.release[0]
    if family == "cublas" and build.cuda is not None and asked.release[0] >= 11:
        return asked.release[0] != build.cuda.release[0]  # cuBLAS took CUDA's major number from 11 on
    return False


def _install_cuda_steps(ctx: MachineContext, dist: Distribution, build: "TfBuild") -> Iterator[MachineNote]:
    yield from _install_notes(ctx, dist, build)
    yield from _driver_check(ctx, dist, build)


def _install_notes(ctx: MachineContext, dist: Distribution, build: "TfBuild") -> Iterator[MachineNote]:
    cuda_release = ctx.matrix.cuda(build.cuda) if ctx.matrix and build.cuda else None
    link = cuda_release.download_url if cuda_release else None
    if ctx.os == "windows":
        folder = f"{WINDOWS_CUDA_DIR}\\v{build.cuda}"
        yield MachineNote(
            f"{dist.name} {dist.version} needs exactly CUDA {build.cuda} and cuDNN {build.cudnn}. Install CUDA "
            f"{build.cuda} (not a newer one), then the cuDNN {build.cudnn} zip for CUDA {build.cuda}: copy its bin, "
            f"include and lib folders into {folder} (or add cuDNN's bin folder to PATH). Open a new terminal "
            "afterwards so the new PATH is seen.",
            commands=(
                Command(f'$env:Path = "{folder}\\bin;" + $env:Path', shell="powershell"),
                Command(f"where.exe {expected_library_names(build.cuda, build.cudnn)['windows'].get('cudart', '')}", shell="powershell"),
            ),
            link=link,
        )
        return
    if build.pip_cuda is not None:
        spec = f"{dist.name}[{build.pip_cuda.extra}]=={dist.version}"
        yield MachineNote(
            f"{dist.name} {dist.version} installs its CUDA {build.cuda} and cuDNN {build.cudnn} libraries from pip "
            f"through the [{build.pip_cuda.extra}] extra; nothing from NVIDIA's installers is needed besides the driver.",
            commands=(_pip(spec),),
        )
    else:
        yield _system_cuda_note(ctx, dist, build, link)
    if ctx.os == "wsl":
        yield MachineNote(
            "Under WSL2 the NVIDIA driver is the Windows one (it provides /usr/lib/wsl/lib/libcuda.so.1); do not "
            "install a Linux display driver inside WSL."
        )


def _system_cuda_note(ctx: MachineContext, dist: Distribution, build: "TfBuild", link: Optional[str]) -> MachineNote:
    """Releases before the pip extra find CUDA and cuDNN on the library path: conda in a conda
    environment (what TensorFlow's install guide used for those releases), else NVIDIA's apt repository."""
    major, minor = (build.cuda.release + (0,))[:2] if build.cuda else (0, 0)
    cudnn = ".".join(str(p) for p in build.cudnn.release[:2]) if build.cudnn else ""
    in_conda = ctx.facts is not None and ctx.facts.python.in_conda
    if in_conda:
        install = Command(f"conda install -c conda-forge cudatoolkit={major}.{minor} cudnn={cudnn}", shell="bash")
        lib_dir = "$CONDA_PREFIX/lib"
    else:
        install = Command(f"sudo apt-get install cuda-libraries-{major}-{minor}", shell="bash")
        lib_dir = f"/usr/local/cuda-{major}.{minor}/lib64"
    where = "into this conda environment" if in_conda else "from NVIDIA's CUDA apt repository (cuDNN from the cuDNN archive)"
    return MachineNote(
        f"{dist.name} {dist.version} was built for CUDA {build.cuda} and cuDNN {build.cudnn}, which it finds on "
        f"the system library path (this release has no pip extra for them): install CUDA {major}.{minor} and "
        f"cuDNN {cudnn} {where}, then make the library folder visible.",
        commands=(
            install,
            Command(f"export LD_LIBRARY_PATH={lib_dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}", shell="bash"),
            Command("ldconfig -p | grep -E 'libcudart|libcudnn'", shell="bash"),
        ),
        link=link,
    )


def _driver_check(ctx: MachineContext, dist: Distribution, build: "TfBuild") -> Iterator[MachineNote]:
    """One line on whether this machine's driver is new enough for the CUDA about to be installed."""
    facts = ctx.facts
    driver_text = (facts.nvml.driver_version or facts.driver.version) if facts else None
    driver = _version(driver_text)
    if driver is None or ctx.matrix is None or build.cuda is None:
        return
    driver_os = "windows" if ctx.os in ("windows", "wsl") else "linux"
    minimum = ctx.matrix.min_driver(build.cuda, driver_os)
    if minimum is None:
        return
    if driver >= minimum:
        yield MachineNote(f"The driver here ({driver_text}) is new enough for CUDA {build.cuda} (needs {minimum} on {driver_os}).")
    else:
        yield MachineNote(
            f"The driver here ({driver_text}) is older than CUDA {build.cuda} needs ({minimum} on {driver_os}): "
            f"upgrade it as well (EC-DRV-001)."
        )


def _add_to_path_command(directory: str, shell: str) -> Command:
    if shell == "powershell":
        return Command(f'$env:Path = "{directory};" + $env:Path', shell="powershell")
    return Command(f"export LD_LIBRARY_PATH={directory}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}", shell="bash")


def gpu_presence(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Whether 'no CUDA driver/device' is expected here (no NVIDIA GPU) or a real problem."""
    facts = ctx.facts
    if facts is None:
        return
    if ctx.os == "macos":
        yield MachineNote(
            "macOS has no CUDA support in any current TensorFlow: TensorFlow runs on the CPU (Apple GPUs through "
            "tensorflow-metal). Nothing to fix here.",
            harmless=True,
        )
        return
    names = _gpu_names(facts)
    if not names:
        if _bus_read(facts):
            yield MachineNote(
                "This machine has no NVIDIA GPU (none on the PCI bus), so TensorFlow runs on the CPU and this "
                "message is expected: nothing to fix.",
                harmless=True,
            )
        return
    gpu_list = ", ".join(sorted(set(names)))
    driver_works = facts.nvml.status == OK and bool(facts.nvml.gpus)
    if driver_works:
        yield MachineNote(
            f"This machine has {gpu_list} and its driver {facts.nvml.driver_version or ''} answers, so the process "
            "that printed this could not reach it: a container started without GPU access (docker --gpus all), "
            "another machine, or CUDA_VISIBLE_DEVICES hiding the GPUs. Run `envcheck doctor` in that same environment.",
            harmless=False,
        )
        return
    detail = ""
    if facts.driver.nouveau_loaded:
        detail = " The open-source nouveau driver holds the GPU instead (EC-GPU-003): install the NVIDIA driver and reboot."
    elif facts.nvml.status != OK and facts.nvml.error:
        detail = f" NVML says: {facts.nvml.error}."
    yield MachineNote(
        f"This machine has {gpu_list} but no working NVIDIA driver, so here this is not harmless: the GPU is "
        f"unused.{detail} `envcheck doctor` gives the driver steps for this machine.",
        harmless=False,
    )


def driver_version(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """The driver here against the minimum the installed TF's CUDA needs."""
    facts = ctx.facts
    if facts is None:
        return
    driver_text = facts.nvml.driver_version or facts.driver.version
    dist = ctx.tensorflow()
    build = ctx.tf_build(dist.version) if dist else None
    if build is None or build.cuda is None or ctx.matrix is None:
        if driver_text:
            yield MachineNote(f"The NVIDIA driver here is {driver_text}; `envcheck doctor` compares it with what TensorFlow needs.")
        return
    driver_os = "windows" if ctx.os in ("windows", "wsl") else "linux"  # WSL2 runs the Windows driver
    minimum = ctx.matrix.min_driver(build.cuda, driver_os)
    driver = _version(driver_text)
    if driver is None or minimum is None:
        no_gpu = driver is None and _no_gpu_here(facts, ctx)
        yield MachineNote(
            f"{dist.name} {dist.version} uses CUDA {build.cuda}"
            + (f", which needs driver {minimum} or newer on {driver_os}" if minimum else "")
            + (f"; {NO_GPU_HERE}." if no_gpu else "; envcheck could not read this machine's driver version.")
        )
        return
    if driver < minimum:
        floor = ctx.matrix.minor_compat_floor(build.cuda.release[0], driver_os)
        compat = ""
        if floor is not None and driver >= floor:
            compat = (
                f" Driver {driver_text} is above the CUDA {build.cuda.release[0]}.x minor-version compatibility "
                f"floor ({floor}), so most things run, but PTX JIT-compiled kernels can still fail."
            )
        yield MachineNote(
            f"The driver here is {driver_text}; CUDA {build.cuda} (used by {dist.name} {dist.version}) needs "
            f"{minimum} or newer on {driver_os}.{compat} Upgrade the driver, or see `envcheck plan --driver "
            f"{driver_text}` for the newest TensorFlow that works with this driver.",
        )
    else:
        yield MachineNote(
            f"The driver here ({driver_text}) is new enough for CUDA {build.cuda} (needs {minimum}), so the CUDA "
            "runtime that complained is another one: an older libcudart or a cuda-compat libcuda earlier on the "
            "library path (EC-LIB-004), or a different environment. `envcheck doctor` lists every copy."
        )


def visible_devices(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """CUDA_VISIBLE_DEVICES here against the GPUs NVML sees."""
    facts = ctx.facts
    if facts is None:
        return
    value = facts.env_var("CUDA_VISIBLE_DEVICES")
    count = len(facts.nvml.gpus) if facts.nvml.status == OK else None
    if value is not None and value.strip() in ("", "-1"):
        yield MachineNote(
            f"CUDA_VISIBLE_DEVICES is set to {value!r} in this environment, which hides every GPU from CUDA (EC-ENV-003).",
            commands=(
                Command("unset CUDA_VISIBLE_DEVICES", shell="bash"),
                Command("Remove-Item Env:CUDA_VISIBLE_DEVICES", shell="powershell"),
            ),
        )
        return
    device = occurrence.variables.get("device", "")
    wanted_index = _device_index(device)
    if value is not None and count is not None:
        ids = [part.strip() for part in value.split(",") if part.strip()]
        beyond = [i for i in ids if i.isdigit() and int(i) >= count]
        if beyond:
            yield MachineNote(
                f"CUDA_VISIBLE_DEVICES={value} names GPU {', '.join(beyond)}, but this machine has {count} "
                f"(indexes 0 to {count - 1}); CUDA stops at the first bad entry (EC-ENV-002)."
            )
            return
        visible = len(ids)
    else:
        visible = count
    if wanted_index is not None and visible is not None and wanted_index >= visible:
        yield MachineNote(
            f"TensorFlow numbers the GPUs it can see from 0; here {visible} "
            f"{'is' if visible == 1 else 'are'} visible, so {device} does not exist. Use "
            "tf.config.list_logical_devices('GPU') to pick devices, or tf.config.set_soft_device_placement(True)."
        )
    elif count == 0 or (count is None and _bus_read(facts) and not facts.pci.devices):
        yield MachineNote("This machine has no NVIDIA GPU that CUDA can use: TensorFlow runs on the CPU here.", harmless=True)


def _device_index(device: str) -> Optional[int]:
    tail = device.rsplit(":", 1)[-1] if "GPU:" in device.upper() else ""
    return int(tail) if tail.isdigit() else None


def cpu_flags(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Whether this CPU has the AVX instructions TF's wheels are built with."""
    facts = ctx.facts
    if facts is None or facts.platform.status != OK:
        return
    platform, python = facts.platform, facts.python
    if platform.os == "macos" and python.machine == "x86_64" and platform.machine == "arm64":
        yield MachineNote(
            "This Python is an x86_64 build running under Rosetta on Apple silicon; Rosetta has no AVX, so x86 "
            "TensorFlow wheels crash. Install an arm64 (native) Python and TensorFlow into it."
        )
        return
    if platform.os not in ("linux", "wsl"):
        return  # only /proc/cpuinfo tells the flags reliably
    cpu = platform.cpu or "this CPU"
    if "avx" not in platform.cpu_flags:
        yield MachineNote(
            f"{cpu} has no AVX instructions, and TensorFlow's official wheels have required AVX since 1.6: use "
            "TensorFlow built from source for this CPU, or run on a machine whose CPU has AVX."
        )
    else:
        flags = " ".join(platform.cpu_flags)
        yield MachineNote(
            f"{cpu} has AVX ({flags}), so a missing AVX is not the cause here. Find the module that crashed with "
            "`python -X faulthandler -c \"import tensorflow\"`."
        )


def python_version(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Which TF releases exist for this interpreter (pip's 'no matching distribution')."""
    facts = ctx.facts
    if facts is None or facts.python.status != OK:
        return
    python = facts.python
    if python.bits == 32:
        yield MachineNote(
            f"This Python ({python.executable}) is 32-bit; TensorFlow publishes 64-bit wheels only (EC-PY-001). "
            "Install the 64-bit Python and create the environment with it."
        )
        return
    if ctx.matrix is None or ctx.os is None:
        return
    short = ".".join(python.version.split(".")[:2])
    builds = [b for b in ctx.matrix.tf_releases(ctx.os) if b.supports_python(short)]
    if not builds:
        newest = ctx.matrix.tf_releases(ctx.os)
        pythons = newest[-1].python if newest else ()
        yield MachineNote(
            f"No TensorFlow release in the matrix has {ctx.os} wheels for Python {short} (EC-PY-002)"
            + (f"; the newest release supports Python {', '.join(pythons)}" if pythons else "")
            + ". Create an environment with a supported Python; `envcheck plan` picks one."
        )
        return
    newest = builds[-1]
    yield MachineNote(
        f"By the matrix, TensorFlow releases from {builds[0].tf} up to {newest.tf} have {ctx.os} wheels for Python "
        f"{short}: pin one of those, and run pip as `python -m pip` so it installs for this Python.",
        commands=(_pip(f"{newest.distribution}=={newest.tf}.*"),),
    )


def compute_capability(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """The newest TF release whose build still runs on this compute capability (matrix only)."""
    cc = occurrence.variables.get("cc", "")
    matrix = ctx.matrix
    if not cc or matrix is None:
        return
    os_name = ctx.os or "linux"
    try:
        fitting = [b for b in matrix.tf_releases(os_name) if b.gpu and matrix.support(b, cc) != "none"]
    except EnvcheckError:
        return
    if not fitting:
        yield MachineNote(
            f"No TensorFlow {os_name} GPU build in the matrix supports compute capability {cc}: use the CPU build, "
            "or build TensorFlow from source for this card with a CUDA that still supports it."
        )
        return
    newest = fitting[-1]
    yield MachineNote(
        f"The newest TensorFlow whose {os_name} GPU build still runs on compute capability {cc} is {newest.tf} "
        f"(CUDA {newest.cuda}, cuDNN {newest.cudnn}); `envcheck plan --compute-capability {cc}` gives the full steps.",
        commands=(_pip(_gpu_requirement(matrix, newest, os_name)),),
    )


def _gpu_requirement(matrix: "Matrix", build: "TfBuild", os_name: str) -> str:
    """The pip requirement for a GPU build, as ``envcheck plan`` spells it: with the extra that brings
    CUDA and cuDNN as wheels where the release has one (Linux and WSL2, 2.14 on)."""
    from envcheck.planner.options import cuda_extra

    extra = cuda_extra(matrix, build, os_name)
    return f"{build.distribution}[{extra}]=={build.tf}.*" if extra else f"{build.distribution}=={build.tf}.*"


def cudnn_version(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Every cuDNN copy here and the pip wheel pins of the installed TF."""
    facts = ctx.facts
    if facts is None:
        return
    if facts.libraries.status == OK:
        copies = [c for lib in facts.libraries.libraries if lib.family == "cudnn" for c in lib.copies]
        if copies:
            listed = "; ".join(f"{c.path} ({c.reported_version or c.file_version or 'version unknown'})" for c in copies[:6])
            more = " — more than one copy: the first one the loader meets wins (EC-LIB-004)" if len(copies) > 1 else ""
            yield MachineNote(f"cuDNN copies on this machine: {listed}{more}.")
    dist = ctx.tensorflow()
    build = ctx.tf_build(dist.version) if dist else None
    if build is None or build.pip_cuda is None:
        return
    for name, spec in build.pip_cuda.packages.items():
        if "cudnn" not in name:
            continue
        installed = facts.distribution(name)
        state = f"{installed.version} is installed" if installed else "is not installed"
        yield MachineNote(
            f"{dist.name} {dist.version} pins {name}{spec}; here {name} {state} (EC-LIB-007).",
            commands=(_pip(f"{name}{spec}"),),
        )


def gpu_memory(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Who else holds GPU memory here, and whether memory growth is on."""
    facts = ctx.facts
    if facts is None:
        return
    if facts.nvml.status == OK:
        for gpu in facts.nvml.gpus:
            holders = [p for p in gpu.processes if (p.used_memory_mb or 0) > 0]
            if gpu.memory_total_mb and holders:
                listed = ", ".join(f"pid {p.pid} {p.name or ''} ({p.used_memory_mb} MiB)".replace("  ", " ") for p in holders[:5])
                yield MachineNote(
                    f"GPU {gpu.index} ({gpu.name}) has {gpu.memory_used_mb} of {gpu.memory_total_mb} MiB in use by: "
                    f"{listed} (EC-ENV-005). Stop those processes or give this one another GPU."
                )
    if _no_gpu_here(facts, ctx):
        yield MachineNote(f"{NO_GPU_HERE[0].upper()}{NO_GPU_HERE[1:]}: the fix applies there.")
        return
    growth = facts.env_var("TF_FORCE_GPU_ALLOW_GROWTH")
    if growth is None:
        yield MachineNote(
            "TF_FORCE_GPU_ALLOW_GROWTH is not set here, so each TensorFlow process reserves nearly all GPU memory at "
            "start; with more than one process on a GPU, turn growth on.",
            commands=(
                Command("export TF_FORCE_GPU_ALLOW_GROWTH=true", shell="bash"),
                Command('$env:TF_FORCE_GPU_ALLOW_GROWTH = "true"', shell="powershell"),
            ),
        )


def xla_cuda_dir(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Where XLA can find ptxas and libdevice on this machine."""
    facts = ctx.facts
    if facts is None:
        return
    for name in ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc"):
        wheel = facts.distribution(name)
        if wheel is not None and wheel.location:
            directory = f"{wheel.location.rstrip('/')}/nvidia/cuda_nvcc"
            yield MachineNote(
                f"The pip wheel {name} {wheel.version} provides ptxas and libdevice in {directory}.",
                commands=(Command(f'export XLA_FLAGS="--xla_gpu_cuda_data_dir={directory}"', shell="bash"),),
            )
            return
    if facts.libraries.status == OK and facts.libraries.toolkits:
        dist = ctx.tensorflow()
        build = ctx.tf_build(dist.version) if dist else None
        for toolkit in facts.libraries.toolkits:
            version = _version(toolkit.version)
            older = build is not None and build.cuda is not None and version is not None and version < build.cuda
            if older:
                yield MachineNote(
                    f"The CUDA toolkit at {toolkit.path} is {toolkit.version}, older than the CUDA {build.cuda} this "
                    f"TensorFlow was built with: its ptxas cannot read TensorFlow's PTX (EC-LIB-005)."
                )
            else:
                yield MachineNote(
                    f"A CUDA toolkit {toolkit.version or ''} is at {toolkit.path}; point XLA at it.".replace("  ", " "),
                    commands=(Command(f'export XLA_FLAGS="--xla_gpu_cuda_data_dir={toolkit.path}"', shell="bash"),),
                )
            return


def tf_installed(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Is TensorFlow in this interpreter, and which one is it."""
    facts = ctx.facts
    if facts is None or facts.python.status != OK:
        return
    python = facts.python
    dist = ctx.tensorflow()
    if dist is not None:
        yield MachineNote(
            f"{python.executable} has {dist.name} {dist.version}, so the error came from a different interpreter "
            "or environment: print sys.executable in the failing program and compare."
        )
        return
    where = "a virtual environment" if python.in_virtualenv else "a conda environment" if python.in_conda else "no virtual environment"
    yield MachineNote(
        f"TensorFlow is not installed for {python.executable} (Python {python.version}, {where}). "
        "`envcheck plan` gives the install command for this machine."
    )


SPECIALIZERS: dict[str, Callable[["Occurrence", MachineContext], Iterator[MachineNote]]] = {
    "cuda_library": cuda_library,
    "gpu_presence": gpu_presence,
    "driver_version": driver_version,
    "visible_devices": visible_devices,
    "cpu_flags": cpu_flags,
    "python_version": python_version,
    "compute_capability": compute_capability,
    "cudnn_version": cudnn_version,
    "gpu_memory": gpu_memory,
    "xla_cuda_dir": xla_cuda_dir,
    "tf_installed": tf_installed,
}
