"""What several rule modules ask of the facts: which TensorFlow is installed, which matrix row
applies, whether a GPU is there, and how to spell a pip step for the probed interpreter.

Everything here reads facts and the matrix; nothing judges. Answers are memoised on the Context
because every rule asks the same questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from packaging.version import InvalidVersion, Version

from envcheck.facts import MISSING, OK, Distribution, Facts, LibraryCopy
from envcheck.findings import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import TfBuild
    from envcheck.rules.engine import Context

# Distributions that ship the ``tensorflow`` module, in the order used to pick "the" installed one
# when the TF probe did not say (the GPU-only package first: it is the one people install by hand).
TF_DISTRIBUTIONS = (
    "tensorflow-gpu",
    "tensorflow",
    "tensorflow-cpu",
    "tf-nightly-gpu",
    "tf-nightly",
    "tf-nightly-cpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-rocm",
)
GPU_ONLY_DISTRIBUTIONS = ("tensorflow-gpu", "tf-nightly-gpu")
CPU_ONLY_DISTRIBUTIONS = ("tensorflow-cpu", "tf-nightly-cpu", "tensorflow-macos", "tensorflow-rocm")

PRESENT = "present"
ABSENT = "absent"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class InstalledTf:
    distribution: str
    version: str


def parse_version(text: object) -> Optional[Version]:
    try:
        return Version(str(text).strip())
    except (InvalidVersion, TypeError):
        return None


def minor(version: object) -> str:
    """ "2.15.1" -> "2.15"; "12" -> "12" (what a person types after ==...*)."""
    v = parse_version(version)
    if v is None:
        return str(version)
    return ".".join(str(p) for p in v.release[:2])


def memo(ctx: "Context", key: str, compute):
    cache = ctx.cache
    if key not in cache:
        cache[key] = compute()
    return cache[key]


# --- TensorFlow ----------------------------------------------------------------------------------


def installed_tf(ctx: "Context") -> Optional[InstalledTf]:
    return memo(ctx, "installed_tf", lambda: _installed_tf(ctx.facts))


def _installed_tf(facts: Facts) -> Optional[InstalledTf]:
    tf = facts.tensorflow
    if tf.version:
        dist = tf.distribution or (tf.distributions[0] if tf.distributions else None)
        return InstalledTf(distribution=dist or "tensorflow", version=tf.version)
    for name in (tf.distribution, *tf.distributions):
        if name and facts.distribution(name) is not None:
            return InstalledTf(name, facts.distribution(name).version)
    for name in TF_DISTRIBUTIONS:
        dist = facts.distribution(name)
        if dist is not None:
            return InstalledTf(name, dist.version)
    return None


def installed_tf_distributions(facts: Facts) -> list[str]:
    names = [name for name in TF_DISTRIBUTIONS if facts.distribution(name) is not None]
    for name in facts.tensorflow.distributions:
        if name not in names and facts.distribution(name) is not None:
            names.append(name)
    return names


def independent_distributions(facts: Facts) -> list[Distribution]:
    """The installed TF distributions, less those another one depends on (tensorflow pulls in
    tensorflow-intel on Windows: one install, not a mix)."""
    dists = [facts.distribution(name) for name in installed_tf_distributions(facts)]
    return [d for d in dists if not any(o is not d and _requires(o, d.name) for o in dists)]


def _requires(dist: Distribution, other: str) -> bool:
    return any(re.match(rf"{re.escape(other)}(?![a-z0-9-])", req.strip().lower().replace("_", "-")) for req in dist.requires)


def tf_build(ctx: "Context") -> Optional["TfBuild"]:
    """The matrix row of the installed TF release on this OS; None when not installed or unknown."""

    def compute():
        tf = installed_tf(ctx)
        if tf is None:
            return None
        return build_for(ctx, tf.version)

    return memo(ctx, "tf_build", compute)


def build_for(ctx: "Context", version: str) -> Optional["TfBuild"]:
    if parse_version(version) is None:
        return None
    try:
        return ctx.matrix.tf_build(version, ctx.build_os)
    except Exception:  # noqa: BLE001 - a version the matrix cannot parse is "unknown"
        return None


def is_cuda_tf(ctx: "Context") -> Optional[bool]:
    """Whether the installed TF is a CUDA build: from TF itself when it was probed, else inferred
    from the distribution and the matrix row. None when it cannot be told."""
    return memo(ctx, "is_cuda_tf", lambda: _is_cuda_tf(ctx))


def _is_cuda_tf(ctx: "Context") -> Optional[bool]:
    facts = ctx.facts
    if facts.tensorflow.is_cuda_build is not None:
        return facts.tensorflow.is_cuda_build
    tf = installed_tf(ctx)
    if tf is None:
        return None
    if tf.distribution in CPU_ONLY_DISTRIBUTIONS:
        return False
    build = tf_build(ctx)
    if build is None:
        return True if tf.distribution in GPU_ONLY_DISTRIBUTIONS else None
    if not build.gpu:
        return False
    if tf.distribution in GPU_ONLY_DISTRIBUTIONS:
        return True
    # Up to 2.0 the GPU build lived in tensorflow-gpu and plain "tensorflow" was CPU-only.
    return build.distribution not in GPU_ONLY_DISTRIBUTIONS


def newest_release(ctx: "Context", *, gpu: bool, python: Optional[str] = None, accept=None) -> Optional["TfBuild"]:
    """The newest matrix row for this OS that has a GPU build (when ``gpu``), supports ``python``
    and passes ``accept``."""
    for build in reversed(ctx.matrix.tf_releases(ctx.build_os)):
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


def tf_name(ctx: "Context") -> str:
    """ "TensorFlow 1.13.1": the installed release as a person would name it."""
    tf = installed_tf(ctx)
    if tf is not None:
        return f"TensorFlow {tf.version}"
    build = tf_build(ctx)
    return f"TensorFlow {minor(build.tf)}" if build is not None else "TensorFlow"


def tf_label(build: "TfBuild") -> str:
    return minor(build.tf)


def gpu_requirement(ctx: "Context", build: "TfBuild", exact: Optional[str] = None) -> str:
    """The pip requirement for the GPU build of a release on this OS ("tensorflow[and-cuda]==2.15.*")."""
    extra = ""
    if build.pip_cuda is not None and build.pip_cuda.extra and ctx.build_os == "linux":
        extra = f"[{build.pip_cuda.extra}]"
    return f"{build.distribution or 'tensorflow'}{extra}=={exact or tf_label(build) + '.*'}"


def cpu_requirement(build: "TfBuild", exact: Optional[str] = None) -> str:
    """The standard ``tensorflow`` wheel of a release: CPU-only in 1.x, CPU-capable in 2.x."""
    return f"tensorflow=={exact or tf_label(build) + '.*'}"


# --- GPUs and driver ------------------------------------------------------------------------------


def gpu_presence(facts: Facts) -> str:
    """PRESENT when any probe saw an NVIDIA GPU, ABSENT when the probes that could see one looked
    and found none, UNKNOWN otherwise (Windows without a driver, a --quick run with no PCI probe)."""
    if facts.nvml.gpus or facts.pci.devices or gpu_count_tf(facts):
        return PRESENT
    pci_looked = facts.pci.status in (OK, MISSING)
    nvml_empty_ok = facts.nvml.status == OK and not facts.nvml.gpus
    if pci_looked or nvml_empty_ok:
        return ABSENT
    return UNKNOWN


def gpu_count_tf(facts: Facts) -> int:
    return sum(1 for d in facts.tensorflow.physical_devices if d.device_type.upper() == "GPU")


def gpu_names(facts: Facts) -> list[str]:
    names = [g.name for g in facts.nvml.gpus if g.name]
    if names:
        return names
    return [pci_product_name(d.name) or f"NVIDIA device {d.device_id}" for d in facts.pci.devices]


def counted(names) -> list[str]:
    """["V100", "V100", "T4"] -> ["2x V100", "T4"], first-seen order."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [f"{c}x {n}" if c > 1 else n for n, c in counts.items()]


def short_device(device: Optional[str]) -> str:
    """ "/job:localhost/replica:0/task:0/device:GPU:0" -> "GPU:0"."""
    if not device:
        return "?"
    match = re.search(r"([A-Z]+:\d+)$", device)
    return match.group(1) if match else device


def pci_product_name(name: Optional[str]) -> Optional[str]:
    """pci.ids spells "GP106 [GeForce GTX 1060 6GB]": the marketing name is in the brackets."""
    if not name:
        return None
    match = re.search(r"\[([^\]]+)\]", name)
    return match.group(1) if match else name


def driver_version(facts: Facts) -> Optional[str]:
    return facts.nvml.driver_version or (facts.driver.version if facts.driver.loaded else None)


def driver_os(ctx: "Context") -> str:
    """WSL runs on the Windows driver, so Windows driver minimums apply there."""
    return "windows" if ctx.os in ("windows", "wsl") else "linux"


# --- libraries ------------------------------------------------------------------------------------


def library_family(filename: str) -> str:
    """ "cudart64_100.dll" -> "cudart", "libcudnn.so.9" -> "cudnn", "cublasLt64_12.dll" -> "cublasLt"."""
    base = basename(filename)
    if base.startswith("lib"):
        base = base[3:]
    match = re.match(r"[A-Za-z]+", base)
    return (match.group(0) if match else base).lower()


def basename(path: str) -> str:
    return re.split(r"[\\/]", path)[-1]


def same_library(candidate: str, wanted: str, windows: bool) -> bool:
    """Whether a file name answers the loader's request for ``wanted`` (a DLL name or a soname)."""
    a, b = basename(candidate), basename(wanted)
    if windows:
        return a.lower() == b.lower()
    return a == b or a.startswith(b + ".")


def copies_named(ctx: "Context", wanted: str) -> list[LibraryCopy]:
    """Every copy the library probe found that answers to ``wanted``, in search order."""
    windows = ctx.build_os == "windows"
    out = []
    for lib in ctx.facts.libraries.libraries:
        for copy in lib.copies:
            names = (copy.path, *copy.names)
            if any(same_library(n, wanted, windows) for n in names):
                out.append(copy)
    return out


def winner_for(ctx: "Context", wanted: str) -> Optional[LibraryCopy]:
    """The copy the loader takes for ``wanted``: the probe's per-name winner, else the first copy
    on the loader's path that is not known to fail."""
    copies = copies_named(ctx, wanted)
    windows = ctx.build_os == "windows"
    for lib in ctx.facts.libraries.libraries:
        for name, path in lib.winners.items():
            if same_library(name, wanted, windows) or same_library(wanted, name, windows):
                hit = next((c for c in copies if c.path == path), None)
                if hit is not None:
                    return hit
    reachable = [c for c in copies if c.on_loader_path]
    return reachable[0] if reachable else None


def mapped_into_tf(ctx: "Context", wanted: str) -> Optional[str]:
    windows = ctx.build_os == "windows"
    return next((p for p in ctx.facts.tensorflow.mapped_libraries if same_library(p, wanted, windows)), None)


def tf_used_gpu(facts: Facts) -> bool:
    """The placement test ran an op on a GPU and checked its result."""
    return any(p.ok and p.device and "GPU" in p.device.upper() for p in facts.tensorflow.placement)


# --- commands -------------------------------------------------------------------------------------


def python_exe(ctx: "Context") -> str:
    return ctx.facts.python.executable or ("python" if ctx.os == "windows" else "python3")


def _quote(ctx: "Context", arg: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_./:=@%+-]+", arg):
        return arg
    if ctx.shell == "powershell":
        return "'" + arg.replace("'", "''") + "'"
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def pip_command(ctx: "Context", *args: str, step: bool = True) -> Command:
    """A pip command for the probed interpreter. ``--apply`` runs exactly ``pip_args``, so an
    alternative (``step=False``: "or install TF 2.10 instead") carries none and is only shown."""
    exe = python_exe(ctx)
    quoted = _quote(ctx, exe)
    prefix = "& " if ctx.shell == "powershell" and quoted != exe else ""
    line = f"{prefix}{quoted} -m pip " + " ".join(_quote(ctx, a) for a in args)
    return Command(line, shell=ctx.shell, pip_args=tuple(args) if step else None)


def python_line(ctx: "Context", code: str) -> str:
    """``<probed python> -c "<code>"`` quoted for the platform's shell (``code`` has no double quotes)."""
    exe = python_exe(ctx)
    quoted = _quote(ctx, exe)
    prefix = "& " if ctx.shell == "powershell" and quoted != exe else ""
    return f'{prefix}{quoted} -c "{code}"'


def shell_command(ctx: "Context", bash: str, powershell: Optional[str] = None) -> Command:
    """A non-pip command in the shell of the probed platform (PowerShell on native Windows)."""
    if ctx.shell == "powershell":
        return Command(powershell if powershell is not None else bash, shell="powershell")
    return Command(bash, shell="bash")


def source_url(ctx: "Context", key: str) -> str:
    source = getattr(ctx.matrix, "sources", {}).get(key)
    return getattr(source, "url", None) or key


def matrix_evidence(ctx: "Context", build: "TfBuild") -> tuple[str, str]:
    parts = [f"GPU build: {'yes' if build.gpu else 'no'}"]
    if build.cuda:
        parts.append(f"CUDA {build.cuda}")
    if build.cudnn:
        parts.append(f"cuDNN {build.cudnn}")
    if build.python:
        parts.append("Python " + ", ".join(build.python))
    if build.sources:
        parts.append("source: " + source_url(ctx, build.sources[0]))
    return (f"matrix: TensorFlow {tf_label(build)} on {build.os}", "; ".join(parts))


def driver_minimums(ctx: "Context", cuda: object) -> tuple[Optional[Version], Optional[Version]]:
    """(the oldest driver that runs code built with ``cuda``, the one the CUDA release asks for).

    From CUDA 11 on, a driver at the major's minor-version-compatibility floor runs any minor
    release of that major (without PTX JIT for newer PTX); the matrix holds both numbers."""
    v = parse_version(cuda)
    if v is None:
        return None, None
    cuda_minor = minor(v)
    os = driver_os(ctx)
    try:
        full = ctx.matrix.min_driver(cuda_minor, os)
        floor = ctx.matrix.minor_compat_floor(v.release[0], os)
    except Exception:  # noqa: BLE001 - a version the matrix cannot parse is unknown
        return None, None
    if floor is not None and full is not None and floor > full:
        floor = full
    return (floor or full), full


def tf_cuda(ctx: "Context") -> Optional[str]:
    """The CUDA version the installed TF was built with: from TF itself, else from the matrix."""
    if is_cuda_tf(ctx) is not True:
        return None
    if ctx.facts.tensorflow.cuda_version:
        return ctx.facts.tensorflow.cuda_version
    build = tf_build(ctx)
    return str(build.cuda) if build is not None and build.cuda is not None else None


def nvml_errors(facts: Facts, kind: str) -> list[tuple[str, str]]:
    """(where, message) for the NVML failures of one kind: the global one and each GPU's."""
    out = []
    if facts.nvml.error_kind == kind:
        out.append(("nvml", facts.nvml.error or kind))
    for gpu in facts.nvml.gpus:
        if gpu.error_kind == kind:
            out.append((f"nvml gpu {gpu.index}" + (f" ({gpu.name})" if gpu.name else ""), gpu.error or kind))
    return out
