"""The facts snapshot: everything the probes saw, as frozen, typed records.

Facts are the only input to the rules. A snapshot written with ``doctor --json`` and read back with
``--facts FILE`` gives the same findings on any machine, so the reader is strict: unknown keys,
wrong types and future schema versions are errors (``FactsError``), never silently dropped.

Every section carries ``status`` (``ok`` / ``missing`` / ``error`` / ``skipped``), the error text
when there is one, and the seconds the probe took.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from envcheck.errors import FactsError
from envcheck.fsutil import FACTS_FILE, read_user_text
from envcheck.platform import OSES

# 2: the JSON report around the facts moved to the common envelope (fix pages are ``url``); the
# facts themselves only gained fields with defaults, so version 1 snapshots read as they are.
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

OK = "ok"
MISSING = "missing"
ERROR = "error"
SKIPPED = "skipped"
STATUSES = (OK, MISSING, ERROR, SKIPPED)


@dataclass(frozen=True, kw_only=True)
class Section:
    """Common to every probe's part of the snapshot."""

    status: str = OK
    error: Optional[str] = None
    seconds: float = 0.0
    timed_out: bool = False  # the probe ran out of time (its own limit or the doctor's --timeout)


# --- interpreter and operating system ------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PythonFacts(Section):
    executable: str = ""
    version: str = ""  # "3.11.7"
    implementation: str = ""  # "CPython"
    bits: int = 0  # 64 or 32, from the pointer size
    machine: str = ""  # the interpreter's own machine, e.g. "x86_64", "AMD64", "arm64"
    prefix: str = ""
    base_prefix: str = ""
    in_virtualenv: bool = False
    in_conda: bool = False
    conda_prefix: Optional[str] = None
    pip_version: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class PlatformFacts(Section):
    system: str = ""  # platform.system(): "Linux", "Windows", "Darwin"
    os: str = ""  # "linux", "windows", "macos", "wsl"
    release: str = ""
    version: str = ""
    machine: str = ""
    distro: Optional[str] = None  # PRETTY_NAME from /etc/os-release, or "Windows 10"
    glibc: Optional[str] = None
    wsl: Optional[int] = None  # 1 or 2 under WSL, else None
    hostname: Optional[str] = None  # recorded so reports can redact it
    user: Optional[str] = None
    home: Optional[str] = None
    cpu: Optional[str] = None
    cpu_flags: tuple[str, ...] = ()  # only the flags that matter to TF wheels (avx, avx2, avx512f, fma)


@dataclass(frozen=True, kw_only=True)
class HostFacts(Section):
    """Where this process may run: what decides whether its input pipeline sits next to the GPUs."""

    cpu_count: Optional[int] = None  # CPUs the machine has online
    cpu_affinity: Optional[str] = None  # CPUs this process may run on, as a list: "0-7"
    numa_nodes: dict[str, str] = field(default_factory=dict)  # node number -> its CPUs, "0" -> "0-15"


@dataclass(frozen=True, kw_only=True)
class EnvFacts(Section):
    """Only allow-listed variables are recorded (see probes.environment)."""

    variables: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Distribution:
    name: str  # normalised, e.g. "tensorflow", "nvidia-cudnn-cu12"
    version: str
    location: Optional[str] = None
    requires: tuple[str, ...] = ()  # the distribution's own requirement strings


@dataclass(frozen=True, kw_only=True)
class PackagesFacts(Section):
    distributions: tuple[Distribution, ...] = ()
    # True when every installed distribution is listed (snapshots before schema 2 list only the
    # TensorFlow family and the nvidia-* wheels, so a missing name there means "not recorded").
    complete: bool = False


# --- hardware and driver -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PcieLink:
    """A PCIe link, now and at most. Idle GPUs train their link down to a lower generation to save
    power, so a current generation below the maximum means something only under load."""

    current_generation: Optional[int] = None  # 1..6
    current_width: Optional[int] = None  # lanes: 1, 2, 4, 8, 16
    max_generation: Optional[int] = None  # the most this device and its slot allow together
    max_width: Optional[int] = None
    gpu_max_generation: Optional[int] = None  # the GPU's own maximum (NVML), whatever the slot
    source: str = "nvml"  # "nvml" or "sysfs"


@dataclass(frozen=True, kw_only=True)
class PciDevice:
    address: str  # "0000:01:00.0"
    vendor_id: str  # "0x10de"
    device_id: str  # "0x1c03"
    class_code: str  # "0x030000"
    driver: Optional[str] = None  # the kernel driver bound to it: "nvidia", "nouveau", "vfio-pci", None
    name: Optional[str] = None  # from pci.ids
    subsystem: Optional[str] = None
    # sysfs's view of the link and the NUMA placement (read where NVML cannot answer them)
    link: Optional[PcieLink] = None
    numa_node: Optional[int] = None  # None when the machine has one node (sysfs says -1)
    local_cpus: Optional[str] = None  # the CPUs nearest the device, as a list: "0-15,32-47"


@dataclass(frozen=True, kw_only=True)
class PciFacts(Section):
    devices: tuple[PciDevice, ...] = ()  # NVIDIA display/3D devices only


@dataclass(frozen=True, kw_only=True)
class DriverFacts(Section):
    """The kernel module (Linux) as the kernel reports it."""

    loaded: bool = False
    version: Optional[str] = None  # "550.54.14" from /proc/driver/nvidia/version
    module_version: Optional[str] = None  # /sys/module/nvidia/version
    text: Optional[str] = None  # the first line of /proc/driver/nvidia/version
    open_module: Optional[bool] = None  # True for the open GPU kernel modules (Turing and newer only)
    nouveau_loaded: Optional[bool] = None  # the open-source nouveau module holds the GPU instead
    # What is installed, loaded or not: the module files of the running kernel
    # (/lib/modules/$(uname -r)/...nvidia.ko*), the version written in the first one, and the
    # versions DKMS has built ("550.54.14/6.5.0-21-generic").
    kernel_release: Optional[str] = None
    module_files: tuple[str, ...] = ()
    module_file_version: Optional[str] = None
    dkms: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class GpuProcess:
    pid: int
    name: Optional[str] = None
    used_memory_mb: Optional[int] = None


@dataclass(frozen=True, kw_only=True)
class NvmlGpu:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    serial: Optional[str] = None
    pci_bus_id: Optional[str] = None
    compute_capability: Optional[str] = None  # "8.6"
    memory_total_mb: Optional[int] = None
    memory_used_mb: Optional[int] = None
    mig_mode: Optional[bool] = None
    processes: tuple[GpuProcess, ...] = ()
    status: str = OK
    error_kind: Optional[str] = None  # see NVML_ERROR_KINDS
    error: Optional[str] = None
    error_code: Optional[int] = None  # the raw NVML return code
    # Queries that failed without making the GPU unusable: field name -> "kind: message".
    # "Not Supported" answers (serial or MIG on GeForce cards) are absent, the field is just None.
    query_errors: dict[str, str] = field(default_factory=dict)
    performance: Optional[GpuPerformance] = None  # what decides its speed (probes/gpu_speed.py)


@dataclass(frozen=True, kw_only=True)
class GpuPerformance:
    """What decides how fast one GPU trains, as NVML reports it. Every field is None when the
    driver does not answer that query (an older driver lacks some: unknown, not an error)."""

    pcie: Optional[PcieLink] = None
    sm_clock_mhz: Optional[int] = None
    sm_clock_max_mhz: Optional[int] = None
    memory_clock_mhz: Optional[int] = None
    memory_clock_max_mhz: Optional[int] = None
    # nvmlDeviceGetCurrentClocksEventReasons (ThrottleReasons before driver 535): a bit mask whose
    # bits nvml.h defines (rules/gpu_speed.py names them).
    clock_event_reasons: Optional[int] = None
    temperature_c: Optional[int] = None
    slowdown_temperature_c: Optional[int] = None  # where the GPU starts to slow itself down
    power_w: Optional[float] = None
    power_limit_w: Optional[float] = None  # the limit in force
    power_default_limit_w: Optional[float] = None  # the board's default limit
    utilization_gpu_pct: Optional[int] = None  # share of the last sample period a kernel ran
    utilization_memory_pct: Optional[int] = None
    persistence_mode: Optional[bool] = None
    compute_mode: Optional[str] = None  # "default", "exclusive_thread", "prohibited", "exclusive_process"
    ecc_enabled: Optional[bool] = None
    ecc_corrected_volatile: Optional[int] = None  # since the driver loaded
    ecc_uncorrected_volatile: Optional[int] = None
    ecc_uncorrected_aggregate: Optional[int] = None  # over the GPU's life
    retired_pages_single_bit: Optional[int] = None  # pages retired after repeated correctable errors
    retired_pages_double_bit: Optional[int] = None
    retired_pages_pending: Optional[bool] = None  # a retirement waits for the next driver reload
    remapped_rows_correctable: Optional[int] = None  # row remapping (A100 and newer)
    remapped_rows_uncorrectable: Optional[int] = None
    remapping_pending: Optional[bool] = None
    remapping_failed: Optional[bool] = None
    numa_node: Optional[int] = None
    cpu_affinity: Optional[str] = None  # the CPUs nearest the GPU, as a list: "0-15,32-47"
    nvlinks_active: Optional[int] = None  # NVLink links up; 0 when the GPU has links and none is up
    nvlinks: Optional[int] = None  # NVLink links the GPU has; None when it has none
    # Queries that failed for another reason than "not supported" or "no such call": name -> text.
    query_errors: dict[str, str] = field(default_factory=dict)


# NVML's common ancestor of two GPUs (nvmlGpuTopologyLevel_t in nvml.h), nearest first.
TOPOLOGY_LEVELS = ("internal", "single", "multiple", "hostbridge", "node", "system")
# nvmlGpuP2PStatus_t in nvml.h.
P2P_STATUSES = (
    "ok",
    "chipset_not_supported",
    "gpu_not_supported",
    "ioh_topology_not_supported",
    "disabled_by_regkey",
    "not_supported",
    "unknown",
)


@dataclass(frozen=True, kw_only=True)
class GpuPair:
    """How two GPUs (nvidia-smi's numbers) reach each other: what an all-reduce between them uses."""

    a: int
    b: int
    topology: Optional[str] = None  # one of TOPOLOGY_LEVELS
    p2p_read: Optional[str] = None  # one of P2P_STATUSES
    p2p_write: Optional[str] = None
    p2p_nvlink: Optional[str] = None


# NVML failures the probe tells apart; each has a rule and a hint.
NVML_ERROR_KINDS = (
    "library_not_found",
    "driver_not_loaded",
    "version_mismatch",
    "gpu_lost",
    "no_permission",
    "function_not_found",
    "unknown",
)


@dataclass(frozen=True, kw_only=True)
class NvmlFacts(Section):
    error_kind: Optional[str] = None  # one of NVML_ERROR_KINDS when status is error/missing
    library: Optional[str] = None  # path of the libnvidia-ml / nvml.dll that loaded
    driver_version: Optional[str] = None  # "550.54.14" or "417.35"
    cuda_driver_version: Optional[str] = None  # highest CUDA the driver supports, "12.4"
    nvml_version: Optional[str] = None
    gpus: tuple[NvmlGpu, ...] = ()
    error_code: Optional[int] = None  # the raw NVML return code of the failure
    query_errors: dict[str, str] = field(default_factory=dict)  # system-wide queries, as on NvmlGpu
    pairs: tuple[GpuPair, ...] = ()  # every pair of GPUs, a < b


# --- CUDA libraries ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LibraryCopy:
    path: str
    directory: str
    origin: str  # where the search found it: "PATH", "LD_LIBRARY_PATH", "ldconfig", "CUDA_PATH",
    # "CUDA_HOME", "cuda-dir", "conda", "pip", "system"
    file_version: Optional[str] = None  # from the file name: "10.0" for cudart64_100.dll, "12" for .so.12
    reported_version: Optional[str] = None  # from the library itself (cudaRuntimeGetVersion ...)
    loads: Optional[bool] = None  # None when not tried (Windows-shaped inputs, --quick)
    load_error: Optional[str] = None
    realpath: Optional[str] = None  # the file behind the symlinks; two copies never share one
    names: tuple[str, ...] = ()  # every name of this file in its directory (libcudart.so, .so.12, ...)
    on_loader_path: bool = True  # False when found (CUDA_HOME, conda, CUDA_PATH) where no loader looks


@dataclass(frozen=True, kw_only=True)
class LibraryFacts:
    """All copies of one library family (cudart, cudnn, cublas, ...) in search order."""

    # "cudart", "cudnn", "cublas", "cublaslt", "cufft", "curand", "cusolver", "cusparse", "nvjitlink",
    # "nccl", "nvcuda" (the driver's nvcuda.dll / libcuda.so.1), and on Windows "msvcp140", "zlibwapi".
    # Every family searched is listed, with no copies when none was found.
    family: str
    copies: tuple[LibraryCopy, ...] = ()
    # Path of the copy the loader takes for the newest name found (cudart64_110.dll over
    # cudart64_100.dll, libcudart.so.12 over .so.11). Rules that know which name TF asks for
    # use ``winners`` instead.
    winner: Optional[str] = None
    winners: dict[str, str] = field(default_factory=dict)  # loader name ("libcudnn.so.9") -> path


@dataclass(frozen=True, kw_only=True)
class CudaToolkit:
    path: str
    version: Optional[str] = None  # "13.0" from version.json / version.txt / nvcc
    origin: str = ""  # "CUDA_PATH", "CUDA_HOME", "cuda-dir", "conda"
    version_source: Optional[str] = None  # "version.json", "version.txt", "cuda.h", "CUDA_PATH_V10_0", ...


@dataclass(frozen=True, kw_only=True)
class LibrariesFacts(Section):
    search_path: tuple[str, ...] = ()  # the directories searched, in order
    libraries: tuple[LibraryFacts, ...] = ()
    toolkits: tuple[CudaToolkit, ...] = ()
    search_errors: tuple[str, ...] = ()  # parts of the search that failed (ldconfig, a load test)


# --- TensorFlow ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TfDevice:
    name: str  # "/physical_device:GPU:0"
    device_type: str  # "GPU" / "CPU"
    details: dict[str, str] = field(default_factory=dict)  # device_name, compute_capability, ...


@dataclass(frozen=True, kw_only=True)
class PlacementResult:
    op: str  # "matmul" / "conv2d"
    requested: str  # "/GPU:0"
    device: Optional[str] = None  # where it actually ran
    ok: bool = False  # the numeric result was checked and right
    error: Optional[str] = None
    seconds: Optional[float] = None


# Why a TF probe did not give a normal result.
TF_ERROR_KINDS = ("not_installed", "import_failed", "timeout", "crashed", "bad_output", "worker_failed")


@dataclass(frozen=True, kw_only=True)
class TensorflowFacts(Section):
    error_kind: Optional[str] = None  # one of TF_ERROR_KINDS
    version: Optional[str] = None
    distribution: Optional[str] = None  # which installed distribution provides the module
    location: Optional[str] = None
    is_cuda_build: Optional[bool] = None
    is_rocm_build: Optional[bool] = None
    cuda_version: Optional[str] = None  # from build info, "12.5.1"
    cudnn_version: Optional[str] = None  # "9"
    compute_capabilities: tuple[str, ...] = ()  # ("sm_60", "sm_70", "compute_90")
    build_info: dict[str, str] = field(default_factory=dict)  # the rest of get_build_info()
    physical_devices: tuple[TfDevice, ...] = ()
    logical_devices: tuple[TfDevice, ...] = ()
    placement: tuple[PlacementResult, ...] = ()
    log_lines: tuple[str, ...] = ()  # the stderr lines that matter
    mapped_libraries: tuple[str, ...] = ()  # CUDA libraries mapped into the worker after TF init
    returncode: Optional[int] = None
    import_seconds: Optional[float] = None
    # Every installed distribution that ships the ``tensorflow`` module (more than one is a
    # mixed install: tensorflow + tensorflow-gpu, or tensorflow + tensorflow-cpu).
    distributions: tuple[str, ...] = ()
    failed_stage: Optional[str] = None  # "import", "build_info", "devices", "placement", ...
    signal: Optional[str] = None  # "SIGSEGV" when the worker was killed by a signal


# --- the whole snapshot --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Facts:
    schema_version: int = SCHEMA_VERSION
    envcheck_version: str = ""
    created: str = ""  # ISO 8601, UTC
    quick: bool = False  # True when TensorFlow was not probed
    python: PythonFacts = field(default_factory=PythonFacts)
    platform: PlatformFacts = field(default_factory=PlatformFacts)
    env: EnvFacts = field(default_factory=EnvFacts)
    packages: PackagesFacts = field(default_factory=PackagesFacts)
    pci: PciFacts = field(default_factory=lambda: PciFacts(status=SKIPPED))
    driver: DriverFacts = field(default_factory=lambda: DriverFacts(status=SKIPPED))
    nvml: NvmlFacts = field(default_factory=lambda: NvmlFacts(status=SKIPPED))
    libraries: LibrariesFacts = field(default_factory=lambda: LibrariesFacts(status=SKIPPED))
    tensorflow: TensorflowFacts = field(default_factory=lambda: TensorflowFacts(status=SKIPPED))
    host: HostFacts = field(default_factory=lambda: HostFacts(status=SKIPPED))

    # Convenience queries used by rules and renderers; they read, never judge.

    def distribution(self, name: str) -> Optional[Distribution]:
        wanted = normalize_name(name)
        for dist in self.packages.distributions:
            if dist.name == wanted:
                return dist
        return None

    def env_var(self, name: str) -> Optional[str]:
        return self.env.variables.get(name)


def normalize_name(name: str) -> str:
    """PEP 503 normalisation, so "TensorFlow_GPU" and "tensorflow-gpu" are one distribution."""
    out = []
    prev_sep = False
    for ch in name.lower():
        if ch in "-_.":
            if not prev_sep:
                out.append("-")
            prev_sep = True
        else:
            out.append(ch)
            prev_sep = False
    return "".join(out)


# --- JSON round trip -----------------------------------------------------------------------------


def to_dict(obj: Any) -> Any:
    """A plain JSON-ready structure; tuples become lists, dicts keep their keys."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(item) for item in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


def to_json(facts: Facts, indent: int | None = 2) -> str:
    return json.dumps(to_dict(facts), indent=indent, sort_keys=False)


_HINTS_CACHE: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS_CACHE.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS_CACHE[cls] = hints
    return hints


def snapshot_seconds(value: object) -> float | None:
    """A duration another process reported, as a snapshot can hold it: a finite number within the
    range every snapshot's numbers keep to, else unknown (so what a probe writes always reads back)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and not -NUMBER_LIMIT <= value < NUMBER_LIMIT:
        return None
    number = float(value)
    return number if math.isfinite(number) and abs(number) < NUMBER_LIMIT else None


def _convert(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _convert(value, non_none[0], where)
        raise FactsError(f"{where}: unsupported type {tp}")  # pragma: no cover - schema bug
    if origin is tuple:
        (item_type, _ellipsis) = typing.get_args(tp)
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected a list, got {_json_kind(value)}")
        return tuple(_convert(item, item_type, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is dict:
        key_type, value_type = typing.get_args(tp)
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected an object, got {_json_kind(value)}")
        return {str(k): _convert(v, value_type, f"{where}[{str(k)!r}]") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise FactsError(f"{where}: expected true or false, got {_json_kind(value)}")
        return value
    if isinstance(value, _OutOfRange):
        raise FactsError(f"{where}: {value} is out of range (a snapshot's numbers lie between -2**63 and 2**63)")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FactsError(f"{where}: expected an integer, got {_json_kind(value)}")
        if not -NUMBER_LIMIT <= value < NUMBER_LIMIT:
            raise FactsError(f"{where}: {value} is out of range (a snapshot's integers lie between -2**63 and 2**63)")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FactsError(f"{where}: expected a number, got {_json_kind(value)}")
        if isinstance(value, int) and not -NUMBER_LIMIT <= value < NUMBER_LIMIT:
            raise FactsError(f"{where}: {value} is out of range (a snapshot's numbers lie between -2**63 and 2**63)")
        number = float(value)
        if not math.isfinite(number) or abs(number) >= NUMBER_LIMIT:
            raise FactsError(
                f"{where}: {value!r} is out of range (a snapshot's numbers are finite, between -2**63 and 2**63)"
            )
        return number
    if tp is str:
        if not isinstance(value, str):
            raise FactsError(f"{where}: expected a string, got {_json_kind(value)}")
        return value
    raise FactsError(f"{where}: unsupported type {tp}")  # pragma: no cover - schema bug


# Every number in a snapshot is a count, a size, an id or seconds: within a signed 64-bit range.
NUMBER_LIMIT = 2**63
# JSON numbers longer than this are never converted (int() of one past 4,300 digits raises, and
# converting a long one is slow): they stay text and fail the range check with their field path.
_MAX_NUMBER_CHARS = 40


class _OutOfRange:
    """A JSON number too long to be a snapshot's number, kept as (clipped) text for the message."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text if len(self.text) <= 24 else f"{self.text[:12]}... ({len(self.text)} characters)"


def _parse_int(text: str) -> Any:
    return int(text) if len(text) <= _MAX_NUMBER_CHARS else _OutOfRange(text)


def _parse_float(text: str) -> Any:
    return float(text) if len(text) <= _MAX_NUMBER_CHARS else _OutOfRange(text)


def _parse_constant(text: str) -> Any:
    return _OutOfRange(text)  # NaN, Infinity, -Infinity: not JSON, never a measurement


def _json_kind(value: Any) -> str:
    if isinstance(value, _OutOfRange):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def from_dict(cls: type, data: Any, where: str = "facts") -> Any:
    """Build dataclass ``cls`` from ``data``, strictly: unknown keys and wrong types are errors."""
    if not isinstance(data, dict):
        raise FactsError(f"{where}: expected an object, got {_json_kind(data)}")
    hints = _hints(cls)
    names = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise FactsError(f"{where}: unknown key {unknown[0]!r}")
    kwargs = {}
    for name, f in names.items():
        if name in data:
            kwargs[name] = _convert(data[name], hints[name], f"{where}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FactsError(f"{where}: missing key {name!r}")
    return cls(**kwargs)


def facts_from_dict(data: Any) -> Facts:
    """Read a snapshot (the ``facts`` object, or a whole ``doctor --json`` report)."""
    if isinstance(data, dict) and "facts" in data and "schema_version" in data and "verdict" in data:
        data = data["facts"]
    if not isinstance(data, dict):
        raise FactsError(f"expected a JSON object with the facts, got {_json_kind(data)}")
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise FactsError("not an envcheck facts snapshot: no integer 'schema_version'")
    if version > SCHEMA_VERSION:
        raise FactsError(
            f"snapshot has schema_version {version}, newer than this envcheck understands "
            f"({SCHEMA_VERSION}); update envcheck to the release that wrote it"
        )
    if version not in READABLE_VERSIONS:
        raise FactsError(f"snapshot has an invalid schema_version {version}")
    if "tensorflow" not in data and not data.get("quick"):
        # A snapshot written by hand or trimmed: say so, rather than that --quick skipped it.
        data = {**data, "tensorflow": {"status": SKIPPED, "error": "the snapshot has no TensorFlow section"}}
    return from_dict(Facts, {**data, "schema_version": SCHEMA_VERSION})


def load_facts(path: str | Path) -> Facts:
    """Read a snapshot file; every failure is a FactsError with one readable line."""
    if str(path) == "-":
        path = "standard input"
        text = read_user_text("-", FACTS_FILE, FactsError)
    else:
        text = read_user_text(path, FACTS_FILE, FactsError)
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise FactsError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise FactsError(f"{path}: JSON nested too deeply") from None
    try:
        facts = facts_from_dict(data)
    except FactsError as exc:
        raise FactsError(f"{path}: {exc}") from None
    except RecursionError:
        raise FactsError(f"{path}: JSON nested too deeply") from None
    if facts.platform.os and facts.platform.os not in OSES:
        raise FactsError(
            f"{path}: facts.platform.os: unknown OS {facts.platform.os!r} (expected one of: {', '.join(OSES)})"
        )
    return facts
