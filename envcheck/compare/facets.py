"""The facts that matter when machines are compared, per link of the chain, and what is noise.

Written once, asked by ``envcheck diff`` (which link a difference belongs to, which differences
come first, which never show) and by ``envcheck fleet`` (what nodes are grouped by, what makes a
node the odd one out):

  GROUPS      the operating system, then the links of the causal chain, in order
  group_of    the link a fact belongs to: ``env.variables[LD_LIBRARY_PATH]`` is a libraries fact,
              ``nvml.gpus[0].compute_capability`` a compute one
  is_noise    what differs between any two snapshots and says nothing: when it was taken, probe
              times, host and user names, GPU UUIDs and serial numbers, the memory in use, PIDs
  FACETS      the facts that matter, each with the link it belongs to, its paths in a snapshot
              (listed first in a diff) and its value for a machine (what fleet groups by)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from envcheck.facts import OK, SKIPPED
from envcheck.findings import LINK_NAMES, LINK_TITLES
from envcheck.machine import ABSENT, GPU_VARIABLES, UNKNOWN, Machine, counted, speed
from envcheck.machine.libraries import all_needed
from envcheck.platform import LINUX, PLATFORMS

PLATFORM = "platform"
GROUPS: tuple[str, ...] = (PLATFORM, *LINK_NAMES)
GROUP_TITLES = {PLATFORM: "Operating system", **LINK_TITLES}

# Environment variables by the link whose outcome they change (probes/system.py decides which
# variables are recorded at all).
_VARIABLE_LINKS = {
    "CUDA_VISIBLE_DEVICES": "environment",
    "CUDA_DEVICE_ORDER": "environment",
    "NVIDIA_VISIBLE_DEVICES": "environment",
    "XLA_FLAGS": "environment",
    "LD_LIBRARY_PATH": "libraries",
    "CUDA_HOME": "libraries",
    "CUDA_ROOT": "libraries",
    "CUDNN_PATH": "libraries",
    "CONDA_PREFIX": "libraries",
    "VIRTUAL_ENV": "python",
    "CONDA_DEFAULT_ENV": "python",
}


def variable_link(name: str, os_name: str) -> str:
    """The link an environment variable changes. PATH is where Windows looks for DLLs, and where
    a shell finds ``python`` everywhere else."""
    if name.startswith("NCCL_"):
        return "multigpu"
    if name == "PATH":
        return "libraries" if PLATFORMS.get(os_name, LINUX).loader_title == "PATH" else "python"
    if name.startswith("CUDA_PATH"):
        return "libraries"
    return _VARIABLE_LINKS.get(name, "environment")


# Paths of a flattened snapshot (compare.flat) and their links; the first pattern that matches wins.
_PATH_LINKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), link)
    for pattern, link in (
        (r"^python\.", "python"),
        (r"^platform\.(cpu_flags|glibc)\b", "tensorflow"),  # what TensorFlow's wheels need of the CPU and libc
        (r"^platform\.", PLATFORM),
        (r"^pci\.devices\[[^\]]*\]\.(link|numa_node|local_cpus)\b", "multigpu"),
        (r"^nvml\.gpus\[[^\]]*\]\.performance\.", "multigpu"),
        (r"^nvml\.pairs\b", "multigpu"),
        (r"^host\.", "multigpu"),
        (r"^pci\.", "gpu"),
        (r"^nvml\.gpus\[[^\]]*\]\.compute_capability$", "compute"),
        (r"^nvml\.gpus\[", "gpu"),
        (r"^nvml\.", "driver"),
        (r"^driver\.", "driver"),
        (r"^libraries\.", "libraries"),
        (r"^tensorflow\.compute_capabilities$", "compute"),
        (r"^tensorflow\.(physical_devices|logical_devices|placement)\b", "placement"),
        (r"^tensorflow\.", "tensorflow"),
    )
)
_VARIABLE = re.compile(r"^env\.variables\[([^\]]+)\]$")
_PACKAGE = re.compile(r"^packages\.distributions\[([^\]]+)\]")


@dataclass(frozen=True)
class Grouping:
    """What ``group_of`` needs to know beyond the path: the OS (for PATH) and which packages are
    TensorFlow's (its distributions and what they require), which belong to its link."""

    os: str = "linux"
    tensorflow_packages: frozenset[str] = frozenset()


def grouping_for(*machines: Machine) -> Grouping:
    names: set[str] = set()
    os_name = "linux"
    for m in machines:
        os_name = m.os if m.os == "windows" else os_name
        try:
            tf_names = m.tf_distribution_names()
        except Exception:  # noqa: BLE001 - without the matrix, the installed ones still count
            tf_names = ()
        names.update(tf_names)
        names.update(m.installed_tf_distributions)
        for name in m.installed_tf_distributions:
            dist = m.facts.distribution(name)
            if dist is not None:
                names.update(requirement_name(r) for r in dist.requires if "extra ==" not in r)
    names.discard("")
    return Grouping(os=os_name, tensorflow_packages=frozenset(names))


def requirement_name(requirement: str) -> str:
    """ "numpy<2.0.0,>=1.23.5; python_version < '3.12'" -> "numpy" (PEP 503-normalised)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def group_of(path: str, grouping: Grouping) -> str:
    """The link (or "platform") a flattened snapshot path belongs to."""
    variable = _VARIABLE.match(path)
    if variable:
        return variable_link(variable.group(1), grouping.os)
    package = _PACKAGE.match(path)
    if package:
        name = package.group(1)
        if name in grouping.tensorflow_packages or name.startswith(("tensorflow", "tf-", "keras")):
            return "tensorflow"
        if name.startswith("nvidia-"):
            return "libraries"
        return "python"
    for pattern, link in _PATH_LINKS:
        if pattern.search(path):
            return link
    return "python"


# What differs between any two snapshots and says nothing about why their verdicts differ. The
# snapshot's envcheck version and --quick are shown once, as notes, not as differences.
_NOISE = re.compile(
    r"""^(created|envcheck_version|quick|schema_version)$
      | \.seconds$ | ^tensorflow\.import_seconds$
      | ^platform\.(hostname|user|home)$
      | ^nvml\.gpus\[[^\]]*\]\.(uuid|serial|memory_used_mb|processes)\b
      | ^nvml\.gpus\[[^\]]*\]\.performance\.(sm_clock_mhz|memory_clock_mhz|temperature_c|power_w
                                                  |utilization_gpu_pct|utilization_memory_pct)$
      | ^packages\.distributions\[[^\]]*\]\.requires$
    """,
    re.VERBOSE,
)


def is_noise(path: str) -> bool:
    return bool(_NOISE.search(path))


# --- the facts that matter -------------------------------------------------------------------------

Value = dict[str, str]  # part -> its text ("cudnn" -> "cudnn 8.9.4 (pip)"); one part ("") for a single value


@dataclass(frozen=True)
class Facet:
    """One fact that matters: what fleet groups nodes by and a diff lists first in its link."""

    name: str
    link: str
    title: str
    paths: tuple[str, ...]  # regular expressions over flattened snapshot paths
    read: Callable[[Machine], Value]

    def value(self, machine: Machine) -> Value:
        try:
            return self.read(machine)
        except Exception as exc:  # noqa: BLE001 - one odd snapshot must not stop a comparison
            return {"": f"unknown ({type(exc).__name__})"}


def text_of(value: Value) -> str:
    """A facet's value on one line: "cudart 12.2 (pip), cudnn 8.9.4 (pip)"."""
    text = ""
    for part in value.values():
        text += (" " if part.startswith("(") else ", ") + part if text else part
    return text


def _python(m: Machine) -> Value:
    p = m.facts.python
    if not p.version:
        return {"": "unknown"}
    return {"": f"{p.implementation or 'Python'} {p.version}" + (f", {p.bits}-bit" if p.bits and p.bits != 64 else "")}


def _os(m: Machine) -> Value:
    pf = m.facts.platform
    if pf.status == SKIPPED or not (pf.distro or pf.system):
        return {"": "unknown"}
    name = pf.distro or pf.system
    if m.os == "wsl":
        name += " (WSL2)"
    return {"": name, "kernel": f"kernel {pf.release}"} if pf.release and m.os != "windows" else {"": name}


def _gpus(m: Machine) -> Value:
    names = m.gpu_names
    if names:
        return {"": ", ".join(counted(names))}
    return {"": "unknown" if m.gpu_presence == UNKNOWN else "none"}


def _driver(m: Machine) -> Value:
    version = m.driver_version
    if version:
        return {"": version}
    nvml = m.facts.nvml
    if m.gpu_presence == ABSENT:
        return {"": "none (no GPU)"}
    if nvml.error_kind:
        return {"": f"none answers ({nvml.error_kind.replace('_', ' ')})"}
    return {"": "none found"}


def _libraries(m: Machine) -> Value:
    facts = m.facts
    if facts.libraries.status == SKIPPED:
        return {"": "not probed"}
    if m.is_cuda_tf is False:
        return {"": "not needed (CPU-only TensorFlow)"}
    build = m.tf_build
    if build is not None and build.libraries:
        out: Value = {}
        for n in all_needed(m):
            if n.winner is None:
                out.setdefault(n.family, f"{n.family} missing ({n.name})")
            else:
                copy = n.winner
                version = copy.reported_version or copy.file_version or "?"
                broken = "" if copy.loads is not False else ", does not load"
                out.setdefault(n.family, f"{n.family} {version} ({copy.origin}{broken})")
        if out:
            return out
    out = {}
    for lib in facts.libraries.libraries:
        if lib.family == "nvcuda" or not lib.winner:
            continue
        copy = next((c for c in lib.copies if c.path == lib.winner), None)
        version = (copy.reported_version or copy.file_version) if copy is not None else None
        out[lib.family] = f"{lib.family} {version or '?'} ({copy.origin if copy is not None else '?'})"
    return out or {"": "none found"}


def _tensorflow(m: Machine) -> Value:
    tf = m.facts.tensorflow
    installed = m.installed_tf
    if installed is None:
        return {"": "not installed"}
    out: Value = {"": f"{installed.distribution} {installed.version}"}
    if m.is_cuda_tf is True:
        cudnn = tf.cudnn_version or (str(m.tf_build.cudnn) if m.tf_build is not None and m.tf_build.cudnn else None)
        out["build"] = f"CUDA {m.tf_cuda or '?'}" + (f", cuDNN {cudnn}" if cudnn else "")
        out["build"] = f"({out['build']})"
    elif m.is_cuda_tf is False:
        out["build"] = "(CPU-only)"
    if tf.status == SKIPPED:
        out["state"] = "not imported (--quick)"
    elif tf.status != OK:
        out["state"] = (tf.error_kind or "error").replace("_", " ")
    return out


def _environment(m: Machine) -> Value:
    shown = {k: m.facts.env.variables[k] for k in GPU_VARIABLES if k in m.facts.env.variables}
    return {k: f"{k}={v!r}" for k, v in shown.items()} or {"": "nothing that changes GPU use"}


def _gpu_links(m: Machine) -> Value:
    """Only links below their maximum count, and a lower generation only under load: idle GPUs
    train their links down, so two healthy nodes probed at rest do not differ."""
    gpus = speed.visible_speed_gpus(m)
    if not any(g.link is not None for g in gpus):
        return {"": "unknown"}
    out: Value = {}
    for g in gpus:
        narrow, slow = speed.below_maximum(g.link)
        if narrow or (slow and g.load == speed.UNDER_LOAD):
            out[f"GPU {g.index}"] = (
                f"GPU {g.index} at {speed.link_text(g.link)} of {speed.link_text(g.link, current=False)}"
            )
    return out or {"": "all at their maximum"}


def _gpu_clocks(m: Machine) -> Value:
    out: Value = {}
    for g in speed.visible_speed_gpus(m):
        slowed = [e.name.replace("_", " ") for e in g.clock_events if e.kind in ("thermal", "hardware")]
        if slowed:
            out[f"GPU {g.index}"] = f"GPU {g.index} {', '.join(slowed)}"
    return out or {"": "no slowdown"}


def _gpu_sharing(m: Machine) -> Value:
    out: Value = {}
    for g in speed.visible_speed_gpus(m):
        share, _procs = speed.others_share(g)
        if share is not None and share >= 0.10:
            out[f"GPU {g.index}"] = f"GPU {g.index} {share:.0%} held by other processes"
    return out or {"": "no other process"}


def _gpu_topology(m: Machine) -> Value:
    pairs = speed.visible_pairs(m)
    if not pairs:
        return {"": "unknown"}
    direct = sum(1 for p in pairs if speed.p2p_works(p))
    sockets = sum(1 for p in pairs if p.topology == "system" and p.p2p_nvlink != "ok")
    if all(p.p2p_nvlink == "ok" for p in pairs):
        return {"": "NVLink between every pair"}
    out: Value = {
        "": "P2P between every pair"
        if direct == len(pairs)
        else f"no P2P on {len(pairs) - direct} of {len(pairs)} pairs"
    }
    if sockets:
        out["sockets"] = f"{sockets} across CPU sockets"
    return out


FACETS: tuple[Facet, ...] = (
    Facet(
        "driver",
        "driver",
        "Driver",
        (
            r"^nvml\.driver_version$",
            r"^driver\.version$",
            r"^nvml\.cuda_driver_version$",
            r"^nvml\.(status|error_kind)$",
            r"^driver\.loaded$",
        ),
        _driver,
    ),
    Facet(
        "libraries",
        "libraries",
        "CUDA libraries",
        (
            r"^env\.variables\[(LD_LIBRARY_PATH|PATH|CUDA_PATH[^\]]*|CUDA_HOME|CUDNN_PATH)\]$",
            r"^libraries\.libraries\[[^\]]+\]\.winners?\b",
            r"^libraries\.libraries\[[^\]]+\]\.copies\[",
            r"^packages\.distributions\[nvidia-",
        ),
        _libraries,
    ),
    Facet(
        "tensorflow",
        "tensorflow",
        "TensorFlow",
        (
            r"^packages\.distributions\[tensorflow[^\]]*\](\.version)?$",
            r"^tensorflow\.status$",
            r"^tensorflow\.error_kind$",
            r"^tensorflow\.version$",
            r"^tensorflow\.distribution$",
            r"^tensorflow\.is_cuda_build$",
            r"^tensorflow\.cuda_version$",
            r"^tensorflow\.cudnn_version$",
            r"^tensorflow\.error$",
        ),
        _tensorflow,
    ),
    Facet("gpus", "gpu", "GPUs", (r"^nvml\.gpus\[[^\]]+\]\.name$", r"^pci\.devices\["), _gpus),
    Facet("python", "python", "Python", (r"^python\.(version|bits|implementation)$",), _python),
    Facet("os", PLATFORM, "OS", (r"^platform\.(os|distro|release)$",), _os),
    Facet("environment", "environment", "GPU variables", (r"^env\.variables\[",), _environment),
    Facet(
        "gpu_links",
        "multigpu",
        "GPU links",
        (r"^nvml\.gpus\[[^\]]*\]\.performance\.pcie\.", r"^pci\.devices\[[^\]]*\]\.link\."),
        _gpu_links,
    ),
    Facet(
        "gpu_clocks",
        "multigpu",
        "GPU clocks",
        (r"^nvml\.gpus\[[^\]]*\]\.performance\.clock_event_reasons$",),
        _gpu_clocks,
    ),
    Facet("gpu_sharing", "multigpu", "Other processes", (r"^nvml\.gpus\[[^\]]*\]\.processes\b",), _gpu_sharing),
    Facet("gpu_topology", "multigpu", "GPU pairs", (r"^nvml\.pairs\b",), _gpu_topology),
)
FACET_BY_NAME = {f.name: f for f in FACETS}


def priority(path: str) -> tuple[int, int]:
    """Where a difference goes within its link: the facts that matter first, in FACETS order."""
    for i, facet in enumerate(FACETS):
        for j, pattern in enumerate(facet.paths):
            if re.search(pattern, path):
                return (i, j)
    return (len(FACETS), 0)


def facet_values(machine: Machine) -> dict[str, Value]:
    return {f.name: f.value(machine) for f in FACETS}
