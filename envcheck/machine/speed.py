"""The speed facts of one machine read once, for the rules, the doctor's Multi-GPU line and
details, and fleet's facets: each visible GPU with its link (NVML's, or sysfs's where NVML has
none), whether it was under load when probed, its clock event reasons by name, and the pairs.

The clock event reasons are nvml.h's ``nvmlClocksEventReasons`` bits (the older header calls them
``nvmlClocksThrottleReasons``); 0x200 and 0x400 are only in nvidia-ml-py's pynvml.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from envcheck.facts import GpuPair, GpuPerformance, NvmlGpu, PcieLink

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.machine.view import Machine

IDLE, UNDER_LOAD, LOAD_UNKNOWN = "idle", "under load", "load unknown"
# Below this share of busy time NVIDIA's tools count a GPU as idle (nvidia-smi's "Volatile GPU-Util").
IDLE_UTILIZATION_PCT = 10

# bit, name, what it means (nvml.h's comment, shortened), kind: "idle", "setting" (chosen by
# someone: no fault), "power" (the power limit in force), "thermal", "hardware" (clocks halved or more)
CLOCK_EVENTS: tuple[tuple[int, str, str, str], ...] = (
    (0x001, "gpu_idle", "idle: nothing runs on the GPU", "idle"),
    (0x002, "applications_clocks", "clocks held at the applications clocks setting", "setting"),
    (0x004, "sw_power_cap", "software power cap: clocks lowered to stay within the power limit", "power"),
    (0x008, "hw_slowdown", "hardware slowdown (too hot, a power brake or a power spike): clocks halved or more", "hardware"),
    (0x010, "sync_boost", "sync boost: held to the clocks of the slowest GPU of its group", "setting"),
    (0x020, "sw_thermal_slowdown", "software thermal slowdown: the GPU or its memory at its maximum operating temperature", "thermal"),
    (0x040, "hw_thermal_slowdown", "hardware thermal slowdown: too hot, clocks halved or more", "thermal"),
    (0x080, "hw_power_brake", "hardware power brake: the system's power supply asserted it, clocks halved or more", "hardware"),
    (0x100, "display_clocks", "held by the display clock setting", "setting"),
    (0x200, "board_limit", "the board's own limit", "hardware"),
    (0x400, "reliability", "the reliability voltage limit", "hardware"),
)  # fmt: skip
_KNOWN_BITS = sum(bit for bit, *_ in CLOCK_EVENTS)


@dataclass(frozen=True)
class ClockEvent:
    bit: int
    name: str
    meaning: str
    kind: str


@dataclass(frozen=True)
class GpuSpeed:
    """One GPU as the speed rules see it."""

    index: int
    name: str
    pci_bus_id: Optional[str]
    visible: bool  # CUDA sees it (CUDA_VISIBLE_DEVICES does not hide it)
    link: Optional[PcieLink]
    performance: GpuPerformance
    numa_node: Optional[int]
    local_cpus: Optional[str]
    memory_total_mb: Optional[int]
    memory_used_mb: Optional[int]
    processes: tuple

    @property
    def label(self) -> str:
        return f"GPU {self.index}" + (f" ({self.name})" if self.name else "")

    @property
    def load(self) -> str:
        """Whether the GPU was working when probed: links and clocks mean something only then."""
        reasons = self.performance.clock_event_reasons
        if reasons is not None and reasons & 0x1:
            return IDLE
        busy = self.performance.utilization_gpu_pct
        if busy is not None:
            return UNDER_LOAD if busy >= IDLE_UTILIZATION_PCT else IDLE
        return UNDER_LOAD if reasons is not None else LOAD_UNKNOWN

    @property
    def clock_events(self) -> tuple[ClockEvent, ...]:
        return clock_events(self.performance.clock_event_reasons)


def clock_events(mask: Optional[int]) -> tuple[ClockEvent, ...]:
    """The reasons in a clock event mask, with any bit this table does not know named by its value."""
    if not mask:
        return ()
    out = [ClockEvent(bit, name, meaning, kind) for bit, name, meaning, kind in CLOCK_EVENTS if mask & bit]
    unknown = mask & ~_KNOWN_BITS
    if unknown:
        out.append(ClockEvent(unknown, f"0x{unknown:x}", f"reason 0x{unknown:x}, newer than this envcheck", "setting"))
    return tuple(out)


def link_text(link: Optional[PcieLink], current: bool = True) -> str:
    """ "x16 Gen4" (now) or the maximum; "?" for what is unknown."""
    if link is None:
        return "unknown"
    width = link.current_width if current else link.max_width
    generation = link.current_generation if current else link.max_generation
    return f"x{width if width is not None else '?'} Gen{generation if generation is not None else '?'}"


def below_maximum(link: Optional[PcieLink]) -> tuple[bool, bool]:
    """(width below its maximum, generation below its maximum); False where unknown."""
    if link is None:
        return False, False
    narrow = None not in (link.current_width, link.max_width) and link.current_width < link.max_width
    slow = None not in (link.current_generation, link.max_generation) and link.current_generation < link.max_generation
    return bool(narrow), bool(slow)


def speed_gpus(machine: Machine) -> tuple[GpuSpeed, ...]:
    """Every GPU NVML listed, with sysfs's link and NUMA node where NVML gave none (read once per
    machine: ``Machine.speed_gpus``)."""
    return machine.speed_gpus


def read_speed_gpus(machine: Machine) -> tuple[GpuSpeed, ...]:
    return tuple(_read(machine))


def visible_speed_gpus(machine: Machine) -> tuple[GpuSpeed, ...]:
    return tuple(g for g in speed_gpus(machine) if g.visible)


def _read(machine: Machine) -> list[GpuSpeed]:
    facts = machine.facts
    pci = {d.address: d for d in facts.pci.devices}
    hidden = _hidden_indices(machine)
    out = []
    for gpu in sorted(facts.nvml.gpus, key=lambda g: g.index):
        perf = gpu.performance or GpuPerformance()
        device = pci.get(gpu.pci_bus_id or "")
        link = perf.pcie or (device.link if device is not None else None)
        numa = perf.numa_node if perf.numa_node is not None else (device.numa_node if device is not None else None)
        cpus = perf.cpu_affinity or (device.local_cpus if device is not None else None)
        out.append(_speed(gpu, gpu.index not in hidden, link, perf, numa, cpus))
    if not facts.nvml.gpus:  # no driver to ask: the bus still tells the links
        for index, device in enumerate(facts.pci.devices):
            gpu = NvmlGpu(index=index, name=device.name, pci_bus_id=device.address)
            out.append(_speed(gpu, True, device.link, GpuPerformance(), device.numa_node, device.local_cpus))
    return out


def _speed(gpu: NvmlGpu, visible: bool, link, perf, numa, cpus) -> GpuSpeed:
    return GpuSpeed(
        index=gpu.index,
        name=gpu.name or "",
        pci_bus_id=gpu.pci_bus_id,
        visible=visible,
        link=link,
        performance=perf,
        numa_node=numa,
        local_cpus=cpus,
        memory_total_mb=gpu.memory_total_mb,
        memory_used_mb=gpu.memory_used_mb,
        processes=gpu.processes,
    )


def _hidden_indices(machine: Machine) -> set[int]:
    """GPUs CUDA_VISIBLE_DEVICES hides from CUDA (nvidia-smi numbers)."""
    if machine.visibility is None:
        return set()
    return {g.index for g in machine.gpus if g.index is not None and g.cuda_index is None and g.source == "nvml"}


def visible_pairs(machine: Machine) -> tuple[GpuPair, ...]:
    visible = {g.index for g in visible_speed_gpus(machine)}
    return tuple(p for p in machine.facts.nvml.pairs if p.a in visible and p.b in visible)


def p2p_works(pair: GpuPair) -> Optional[bool]:
    """Whether the two GPUs can copy to each other directly (NVLink, or P2P read and write)."""
    if pair.p2p_nvlink == "ok":
        return True
    statuses = (pair.p2p_read, pair.p2p_write)
    if None in statuses:
        return None
    return all(s == "ok" for s in statuses)


def others_share(gpu: GpuSpeed) -> tuple[Optional[float], tuple]:
    """(share of the GPU's memory other processes hold, those processes) when NVML listed them."""
    procs = tuple(p for p in gpu.processes if p.used_memory_mb)
    if not procs or not gpu.memory_total_mb:
        return None, procs
    held = sum(p.used_memory_mb for p in procs)
    return held / gpu.memory_total_mb, procs


def multigpu_summary(machine: Machine) -> str:
    """The doctor's Multi-GPU line: the GPUs' links, how the pairs reach each other, who else is on them."""
    gpus = visible_speed_gpus(machine)
    parts = [f"{len(gpus)} GPUs"]
    parts += _links_summary(gpus)
    if not any(g.link is not None or g.performance.clock_event_reasons is not None for g in gpus):
        parts.append("links, clocks and topology not recorded (a snapshot from an older envcheck, or no NVML)")
    pairs = visible_pairs(machine)
    if pairs:
        nvlink = sum(1 for p in pairs if p.p2p_nvlink == "ok")
        direct = sum(1 for p in pairs if p2p_works(p))
        sockets = sum(1 for p in pairs if p.topology == "system")
        if nvlink == len(pairs):
            parts.append("NVLink between every pair")
        elif direct == len(pairs):
            parts.append("P2P between every pair")
        else:
            parts.append(f"no P2P on {len(pairs) - direct} of {len(pairs)} pairs")
        if sockets and nvlink < len(pairs):
            parts.append(f"{sockets} across CPU sockets")
    slowed = [g for g in gpus if any(e.kind in ("thermal", "hardware") for e in g.clock_events)]
    if slowed:
        parts.append("clocks slowed on " + ", ".join(f"GPU {g.index}" for g in slowed))
    busy = [g for g in gpus if (others_share(g)[0] or 0) >= 0.10]
    if busy:
        parts.append("other processes on " + ", ".join(f"GPU {g.index}" for g in busy))
    return ", ".join(parts)


def shows_multigpu_line(machine: Machine) -> bool:
    """The line appears when more than one GPU is visible."""
    return len(visible_speed_gpus(machine)) > 1


def _links_summary(gpus: tuple[GpuSpeed, ...]) -> list[str]:
    """ "all x16 Gen4 (idle)", or the odd links named and the rest as "the others"."""
    known = [g for g in gpus if g.link is not None]
    if not known:
        return []
    counts = Counter(link_text(g.link) for g in known)
    common, _ = counts.most_common(1)[0]
    loads = {g.load for g in known}
    idle = " (idle)" if loads == {IDLE} else ""
    if len(counts) == 1 and len(known) == len(gpus):
        return [f"all {common}{idle}"]
    odd = [g for g in known if link_text(g.link) != common]
    return [", ".join(f"GPU {g.index} at {link_text(g.link)}" for g in odd) + f" (the others {common}){idle}"]
