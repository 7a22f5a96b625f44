"""doctor -v's Multi-GPU details: one row per GPU (link now and at most, SM clock, why it is
lowered, temperature, power against the limit, load, NUMA node) and the path between each pair,
as nvidia-smi topo -m abbreviates it (NV: NVLink, PIX/PXB: PCIe switches, PHB: host bridge,
NODE: one NUMA node, SYS: across sockets)."""

from __future__ import annotations

from envcheck.machine import Machine, speed

# nvidia-smi topo -m's abbreviations for NVML's topology levels.
TOPO_ABBREVIATIONS = {
    "internal": "BRD",
    "single": "PIX",
    "multiple": "PXB",
    "hostbridge": "PHB",
    "node": "NODE",
    "system": "SYS",
}


def multigpu_details(machine: Machine) -> list[str]:
    """The lines, or none when no GPU has speed facts."""
    gpus = speed.visible_speed_gpus(machine)
    if not any(g.link is not None or g.performance.temperature_c is not None for g in gpus):
        return []
    lines = [f"  {'GPU':<4}{'link':<10}{'max':<10}{'SM MHz':<12}{'temp':<7}{'power':<13}{'busy':<6}{'NUMA':<5}clocks"]
    for g in gpus:
        p = g.performance
        clock = f"{p.sm_clock_mhz}/{p.sm_clock_max_mhz}" if p.sm_clock_mhz is not None else "-"
        temp = f"{p.temperature_c} C" if p.temperature_c is not None else "-"
        power = f"{p.power_w:g}/{p.power_limit_w:g} W" if p.power_w is not None and p.power_limit_w else "-"
        busy = f"{p.utilization_gpu_pct}%" if p.utilization_gpu_pct is not None else "-"
        numa = str(g.numa_node) if g.numa_node is not None else "-"
        events = ", ".join(e.name for e in g.clock_events) or ("none" if p.clock_event_reasons is not None else "-")
        lines.append(
            f"  {g.index:<4}{speed.link_text(g.link) if g.link else '-':<10}"
            f"{speed.link_text(g.link, current=False) if g.link else '-':<10}{clock:<12}{temp:<7}{power:<13}"
            f"{busy:<6}{numa:<5}{events}"
        )
    return lines + _pair_matrix(machine, gpus)


def _pair_matrix(machine: Machine, gpus) -> list[str]:
    pairs = {(p.a, p.b): p for p in speed.visible_pairs(machine)}
    if not pairs:
        return []
    indices = [g.index for g in gpus]
    lines = ["", "  " + " " * 6 + "".join(f"GPU{i:<4}" for i in indices)]
    for a in indices:
        cells = []
        for b in indices:
            pair = pairs.get((min(a, b), max(a, b)))
            if a == b:
                cells.append("X")
            elif pair is None:
                cells.append("?")
            elif pair.p2p_nvlink == "ok":
                cells.append("NV")
            else:
                cell = TOPO_ABBREVIATIONS.get(pair.topology or "", "?")
                cells.append(cell + ("" if speed.p2p_works(pair) else "*"))
        lines.append(f"  GPU{a:<3}" + "".join(f"{c:<7}" for c in cells))
    if any("*" in line for line in lines):
        lines.append("  * no P2P between the two GPUs")
    return lines
