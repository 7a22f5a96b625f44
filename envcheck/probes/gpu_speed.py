"""What decides how fast the GPUs train: their PCIe links, clocks and why they are lowered,
temperature and power against the limits, load, memory errors, the path between each pair of
GPUs, and which CPUs sit next to each GPU (and which this process may use).

NVML answers most of it; sysfs answers the link and the NUMA node where NVML cannot. Every query
is guarded: "Not Supported" (a GeForce card has no ECC) and "Function Not Found" (a driver older
than the call) leave the field unknown; any other failure is kept, by field, in ``query_errors``.
The numbers behind each enum are nvml.h's (nvmlGpuTopologyLevel_t, nvmlGpuP2PStatus_t,
nvmlComputeMode_t, nvmlTemperatureThresholds_t, nvmlClocksEventReasons).
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from envcheck.facts import (
    OK,
    P2P_STATUSES,
    SKIPPED,
    TOPOLOGY_LEVELS,
    GpuPair,
    GpuPerformance,
    HostFacts,
    PcieLink,
)
from envcheck.probes.nvml_errors import FUNCTION_NOT_FOUND, NOT_SUPPORTED, error_kind
from envcheck.probes.nvml_errors import code_of as _code
from envcheck.probes.nvml_errors import describe as _describe

# Answers that mean "this GPU or driver does not have it": the field stays unknown.
_UNKNOWN_CODES = (NOT_SUPPORTED, FUNCTION_NOT_FOUND)
INVALID_ARGUMENT = 2
# nvmlComputeMode_t
_COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
# nvmlClockType_t, nvmlTemperatureSensors_t, nvmlTemperatureThresholds_t, nvmlMemoryErrorType_t,
# nvmlEccCounterType_t, nvmlPageRetirementCause_t, nvmlGpuP2PCapsIndex_t
CLOCK_SM, CLOCK_MEMORY = 1, 2
TEMPERATURE_GPU, THRESHOLD_SLOWDOWN = 0, 1
CORRECTED, UNCORRECTED = 0, 1
VOLATILE, AGGREGATE = 0, 1
RETIRED_MULTIPLE_SINGLE_BIT, RETIRED_DOUBLE_BIT = 0, 1
P2P_READ, P2P_WRITE, P2P_NVLINK = 0, 1, 2
NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS in nvml.h (18 before Blackwell)
# More GPUs than this are not paired (n * (n - 1) / 2 pairs, four queries each).
MAX_PAIRED_GPUS = 16
# PCIe transfer rate per lane (GT/s) -> generation, as sysfs's current_link_speed writes it.
_GENERATION_BY_RATE = {"2.5": 1, "5": 2, "5.0": 2, "8": 3, "8.0": 3, "16": 4, "16.0": 4, "32": 5, "32.0": 5, "64": 6}


class _Queries:
    """Runs NVML queries for one GPU or pair; unknown answers give None, other failures are kept."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.errors: dict[str, str] = {}

    def ask(self, field: str, names: tuple[str, ...], *args: Any) -> Any:
        """The first of ``names`` that this pynvml and driver have, called with ``args``."""
        for name in names:
            fn = getattr(self.nvml, name, None)
            if fn is None:
                continue
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001 - NVMLError, or a ctypes failure
                code = _code(exc)
                if code == FUNCTION_NOT_FOUND:
                    continue  # an older driver: try the older entry point
                if code not in _UNKNOWN_CODES and field not in self.errors:
                    self.errors[field] = f"{error_kind(code)}: {_describe(exc)}"
                return None
        return None


def probe_performance(nvml: Any, handle: Any, cpu_count: Optional[int] = None) -> GpuPerformance:
    """Everything about one GPU that decides its speed, each query on its own."""
    q = _Queries(nvml)
    power = _watts(q.ask("power", ("nvmlDeviceGetPowerUsage",), handle))
    limit = _watts(q.ask("power", ("nvmlDeviceGetEnforcedPowerLimit",), handle))
    default = _watts(q.ask("power", ("nvmlDeviceGetPowerManagementDefaultLimit",), handle))
    utilization = q.ask("utilization", ("nvmlDeviceGetUtilizationRates",), handle)
    compute_mode = q.ask("compute_mode", ("nvmlDeviceGetComputeMode",), handle)
    persistence = q.ask("persistence_mode", ("nvmlDeviceGetPersistenceMode",), handle)
    events = q.ask(
        "clock_event_reasons",
        ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
        handle,
    )
    return GpuPerformance(
        pcie=_pcie(q, handle),
        sm_clock_mhz=_int(q.ask("clocks", ("nvmlDeviceGetClockInfo",), handle, CLOCK_SM)),
        sm_clock_max_mhz=_int(q.ask("clocks", ("nvmlDeviceGetMaxClockInfo",), handle, CLOCK_SM)),
        memory_clock_mhz=_int(q.ask("clocks", ("nvmlDeviceGetClockInfo",), handle, CLOCK_MEMORY)),
        memory_clock_max_mhz=_int(q.ask("clocks", ("nvmlDeviceGetMaxClockInfo",), handle, CLOCK_MEMORY)),
        clock_event_reasons=_int(events),
        temperature_c=_int(q.ask("temperature", ("nvmlDeviceGetTemperature",), handle, TEMPERATURE_GPU)),
        slowdown_temperature_c=_int(
            q.ask("temperature", ("nvmlDeviceGetTemperatureThreshold",), handle, THRESHOLD_SLOWDOWN)
        ),
        power_w=power,
        power_limit_w=limit,
        power_default_limit_w=default,
        utilization_gpu_pct=_int(getattr(utilization, "gpu", None)),
        utilization_memory_pct=_int(getattr(utilization, "memory", None)),
        persistence_mode=bool(persistence) if _int(persistence) is not None else None,
        compute_mode=_COMPUTE_MODES.get(compute_mode, f"mode {compute_mode}")
        if _int(compute_mode) is not None
        else None,
        **_memory_errors(q, handle),
        **_placement(q, handle, cpu_count),
        **_nvlinks(q, handle),
        query_errors=q.errors,
    )


def _pcie(q: _Queries, handle: Any) -> Optional[PcieLink]:
    link = PcieLink(
        current_generation=_int(q.ask("pcie", ("nvmlDeviceGetCurrPcieLinkGeneration",), handle)),
        current_width=_int(q.ask("pcie", ("nvmlDeviceGetCurrPcieLinkWidth",), handle)),
        max_generation=_int(q.ask("pcie", ("nvmlDeviceGetMaxPcieLinkGeneration",), handle)),
        max_width=_int(q.ask("pcie", ("nvmlDeviceGetMaxPcieLinkWidth",), handle)),
        gpu_max_generation=_int(q.ask("pcie", ("nvmlDeviceGetGpuMaxPcieLinkGeneration",), handle)),
    )
    known = (link.current_generation, link.current_width, link.max_generation, link.max_width)
    return link if any(v is not None for v in known) else None


def _memory_errors(q: _Queries, handle: Any) -> dict[str, Any]:
    mode = q.ask("ecc", ("nvmlDeviceGetEccMode",), handle)
    single = q.ask("retired_pages", ("nvmlDeviceGetRetiredPages",), handle, RETIRED_MULTIPLE_SINGLE_BIT)
    double = q.ask("retired_pages", ("nvmlDeviceGetRetiredPages",), handle, RETIRED_DOUBLE_BIT)
    pending = q.ask("retired_pages", ("nvmlDeviceGetRetiredPagesPendingStatus",), handle)
    rows = q.ask("remapped_rows", ("nvmlDeviceGetRemappedRows",), handle)
    rows = rows if isinstance(rows, (tuple, list)) and len(rows) == 4 else (None,) * 4
    ecc = q.ask("ecc", ("nvmlDeviceGetTotalEccErrors",), handle, CORRECTED, VOLATILE) if mode else None
    return {
        "ecc_enabled": bool(mode[0]) if isinstance(mode, (tuple, list)) and mode else None,
        "ecc_corrected_volatile": _int(ecc),
        "ecc_uncorrected_volatile": _int(
            q.ask("ecc", ("nvmlDeviceGetTotalEccErrors",), handle, UNCORRECTED, VOLATILE) if mode else None
        ),
        "ecc_uncorrected_aggregate": _int(
            q.ask("ecc", ("nvmlDeviceGetTotalEccErrors",), handle, UNCORRECTED, AGGREGATE) if mode else None
        ),
        "retired_pages_single_bit": len(single) if isinstance(single, list) else None,
        "retired_pages_double_bit": len(double) if isinstance(double, list) else None,
        "retired_pages_pending": bool(pending) if _int(pending) is not None else None,
        "remapped_rows_correctable": _int(rows[0]),
        "remapped_rows_uncorrectable": _int(rows[1]),
        "remapping_pending": bool(rows[2]) if _int(rows[2]) is not None else None,
        "remapping_failed": bool(rows[3]) if _int(rows[3]) is not None else None,
    }


def _placement(q: _Queries, handle: Any, cpu_count: Optional[int]) -> dict[str, Any]:
    node = _int(q.ask("numa", ("nvmlDeviceGetNumaNodeId",), handle))
    words = max(1, ((cpu_count or os.cpu_count() or 64) + 63) // 64)
    mask = q.ask("affinity", ("nvmlDeviceGetCpuAffinity",), handle, words)
    cpus = None
    if mask is not None:
        try:
            cpus = cpu_list(64 * w + bit for w, word in enumerate(mask) for bit in range(64) if int(word) >> bit & 1)
        except (TypeError, ValueError):
            cpus = None
    # NVML answers a very large number (or -1) for "no NUMA node" on one-node machines.
    return {"numa_node": node if node is not None and 0 <= node < 4096 else None, "cpu_affinity": cpus or None}


def _nvlinks(q: _Queries, handle: Any) -> dict[str, Any]:
    links = active = 0
    for link in range(NVLINK_MAX_LINKS):
        fn = getattr(q.nvml, "nvmlDeviceGetNvLinkState", None)
        if fn is None:
            break
        try:
            state = fn(handle, link)
        except Exception as exc:  # noqa: BLE001
            code = _code(exc)
            if code not in _UNKNOWN_CODES + (INVALID_ARGUMENT,):
                q.errors.setdefault("nvlink", f"{error_kind(code)}: {_describe(exc)}")
            break  # not supported: no NVLink; invalid argument: past the GPU's last link
        links += 1
        active += 1 if state else 0
    return {"nvlinks": links or None, "nvlinks_active": active if links else None}


def probe_pairs(nvml: Any, handles: dict[int, Any]) -> tuple[GpuPair, ...]:
    """The path between every two GPUs (nvidia-smi topo -m's matrix) and whether P2P works on it."""
    indices = sorted(handles)[:MAX_PAIRED_GPUS]
    pairs = []
    for i, a in enumerate(indices):
        for b in indices[i + 1 :]:
            q = _Queries(nvml)
            level = q.ask("topology", ("nvmlDeviceGetTopologyCommonAncestor",), handles[a], handles[b])
            status = [
                q.ask("p2p", ("nvmlDeviceGetP2PStatus",), handles[a], handles[b], caps)
                for caps in (P2P_READ, P2P_WRITE, P2P_NVLINK)
            ]
            pair = GpuPair(
                a=a,
                b=b,
                topology=topology_name(level),
                p2p_read=p2p_name(status[0]),
                p2p_write=p2p_name(status[1]),
                p2p_nvlink=p2p_name(status[2]),
            )
            if any(v is not None for v in (pair.topology, pair.p2p_read, pair.p2p_write, pair.p2p_nvlink)):
                pairs.append(pair)
    return tuple(pairs)


def topology_name(level: Any) -> Optional[str]:
    """nvmlGpuTopologyLevel_t (0, 10, ... 50) as its name; None when unknown."""
    value = _int(level)
    if value is None or value % 10 or not 0 <= value // 10 < len(TOPOLOGY_LEVELS):
        return None
    return TOPOLOGY_LEVELS[value // 10]


def p2p_name(status: Any) -> Optional[str]:
    value = _int(status)
    return P2P_STATUSES[value] if value is not None and 0 <= value < len(P2P_STATUSES) else None


# --- sysfs and the process ----------------------------------------------------------------------


def read_sysfs_link(device: Path) -> tuple[Optional[PcieLink], Optional[int], Optional[str]]:
    """(link, NUMA node, local CPUs) of a PCI device from its sysfs folder; None where not written."""
    link = PcieLink(
        current_generation=link_generation(_read(device / "current_link_speed")),
        current_width=_int_text(_read(device / "current_link_width")),
        max_generation=link_generation(_read(device / "max_link_speed")),
        max_width=_int_text(_read(device / "max_link_width")),
        source="sysfs",
    )
    known = (link.current_generation, link.current_width, link.max_generation, link.max_width)
    node = _int_text(_read(device / "numa_node"))
    cpus = _read(device / "local_cpulist")
    return (
        link if any(v is not None for v in known) else None,
        node if node is not None and node >= 0 else None,
        cpus or None,
    )


def link_generation(speed: Optional[str]) -> Optional[int]:
    """sysfs's "16.0 GT/s PCIe" (or "8 GT/s", "2.5 GT/s") as its PCIe generation; None for "Unknown"."""
    if not speed:
        return None
    match = re.match(r"\s*([\d.]+)\s*GT/s", speed)
    return _GENERATION_BY_RATE.get(match.group(1)) if match else None


def probe_host(root: Path = Path("/"), system: Optional[str] = None) -> HostFacts:
    """The CPUs this process may run on and the CPUs of each NUMA node (Linux; skipped elsewhere)."""

    if (system or platform.system()) != "Linux":
        return HostFacts(status=SKIPPED, error="CPU affinity and NUMA nodes are read on Linux only")
    affinity = None
    if hasattr(os, "sched_getaffinity") and root == Path("/"):
        try:
            affinity = cpu_list(os.sched_getaffinity(0))
        except OSError:
            affinity = None
    else:
        affinity = _status_affinity(root)
    nodes = {}
    base = root / "sys/devices/system/node"
    try:
        names = sorted(n for n in os.listdir(base) if re.fullmatch(r"node\d+", n))
    except OSError:
        names = []
    for name in names:
        cpus = _read(base / name / "cpulist")
        if cpus:
            nodes[name[4:]] = cpus
    online = _read(root / "sys/devices/system/cpu/online")
    count = len(parse_cpu_list(online)) if online else (os.cpu_count() if root == Path("/") else None)
    return HostFacts(status=OK, cpu_count=count or None, cpu_affinity=affinity, numa_nodes=nodes)


def _status_affinity(root: Path) -> Optional[str]:
    """Cpus_allowed_list from /proc/self/status under ``root`` (for trees built by tests)."""
    text = _read(root / "proc/self/status") or ""
    match = re.search(r"^Cpus_allowed_list:\s*(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None


def cpu_list(cpus) -> str:
    """{0, 1, 2, 3, 8} -> "0-3,8" (the kernel's list format)."""
    ordered = sorted({int(c) for c in cpus})
    parts: list[str] = []
    start = prev = None
    for cpu in ordered + [None]:
        if cpu is not None and prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(parts)


def parse_cpu_list(text: Optional[str]) -> frozenset[int]:
    """ "0-3,8" -> {0, 1, 2, 3, 8}; nothing for text that is not a CPU list."""
    cpus: set[int] = set()
    for part in (text or "").strip().split(","):
        # No CPU number is longer than 9 digits: a longer run is no CPU list (and past int()'s limit).
        match = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", part.strip())
        if not match:
            continue
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high - low <= 65536:
            cpus.update(range(low, high + 1))
    return frozenset(cpus)


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


def _int_text(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool) or value is None:
        return None if value is None else int(value)
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if -(2**63) <= number < 2**63 else None


def _watts(milliwatts: Any) -> Optional[float]:
    value = _int(milliwatts)
    return round(value / 1000.0, 1) if value is not None and value >= 0 else None


def guarded_performance(probe: Callable[[], GpuPerformance]) -> Optional[GpuPerformance]:
    """A crash in the speed queries costs the speed facts of that GPU, never the GPU itself."""
    try:
        return probe()
    except Exception as exc:  # noqa: BLE001 - probes never raise
        return GpuPerformance(query_errors={"performance": f"unknown: {type(exc).__name__}: {exc}"})
