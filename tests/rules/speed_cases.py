"""A trigger and a close case for each Multi-GPU rule (EC-PERF-*), on the 4x V100 server snapshot
with speed facts written in (tests/rules/test_gpu_speed_rules.py reads the same machines through
the fake NVML library)."""

from __future__ import annotations

import dataclasses

from envcheck.facts import GpuPair, GpuPerformance, GpuProcess, HostFacts, PcieLink

from . import builders as b

HEALTHY = GpuPerformance(
    pcie=PcieLink(current_generation=3, current_width=16, max_generation=3, max_width=16),
    clock_event_reasons=0,
    utilization_gpu_pct=95,
    power_w=250.0,
    power_limit_w=300.0,
    power_default_limit_w=300.0,
    persistence_mode=True,
    compute_mode="default",
    ecc_uncorrected_volatile=0,
    cpu_affinity="0-15",
    numa_node=0,
)


def speed(gpu: int | None = None, pairs: tuple = (), host: HostFacts | None = None, **changes):
    """The server with every GPU healthy, GPU ``gpu`` changed by ``changes``."""

    def build():
        facts = b.server()
        gpus = tuple(
            dataclasses.replace(g, performance=dataclasses.replace(HEALTHY, **(changes if g.index == gpu else {})))
            for g in facts.nvml.gpus
        )
        facts = b.change(facts, {"nvml.gpus": gpus, "nvml.pairs": pairs})
        return dataclasses.replace(facts, host=host) if host is not None else facts

    return build


def with_processes(gpu: int, used_mb: int):
    def build():
        facts = speed()()
        gpus = tuple(
            dataclasses.replace(g, processes=(GpuProcess(pid=4242, name="python3", used_memory_mb=used_mb),))
            if g.index == gpu
            else g
            for g in facts.nvml.gpus
        )
        return b.change(facts, {"nvml.gpus": gpus})

    return build


def _pairs(level: str, read: str, nvlink: str = "not_supported") -> tuple:
    return tuple(
        GpuPair(a=a, b=c, topology=level, p2p_read=read, p2p_write=read, p2p_nvlink=nvlink)
        for a in range(4)
        for c in range(a + 1, 4)
    )


X4 = PcieLink(current_generation=3, current_width=4, max_generation=3, max_width=16)
PINNED = HostFacts(cpu_count=32, cpu_affinity="0-15")


def speed_cases(Case) -> tuple:
    return (
    Case("EC-PERF-001", speed(2, pcie=X4), speed(), "an x4 link under load", "warning"),
    Case("EC-PERF-001", speed(2, pcie=X4, clock_event_reasons=1, utilization_gpu_pct=0), speed(), "an x4 link, idle", "info"),
    Case("EC-PERF-002", speed(1, clock_event_reasons=0x40), speed(1, clock_event_reasons=0x1), "hardware thermal slowdown", "warning"),
    Case("EC-PERF-002", speed(1, clock_event_reasons=0x4), speed(), "power cap at the default limit", "info"),
    Case("EC-PERF-003", lambda: b.change(speed()(), {"nvml.gpus": b.server().nvml.gpus[:3] + (dataclasses.replace(b.server().nvml.gpus[3], name="Tesla T4"),)}), speed(), "a T4 among V100s"),
    Case("EC-PERF-004", speed(pairs=_pairs("system", "ioh_topology_not_supported")), speed(pairs=_pairs("system", "not_supported", "ok")), "across sockets without NVLink"),
    Case("EC-PERF-005", speed(pairs=_pairs("hostbridge", "chipset_not_supported")), speed(pairs=_pairs("hostbridge", "ok")), "no P2P"),
    Case("EC-PERF-006", with_processes(3, 30000), with_processes(3, 500), "another process holds 92% of a GPU"),
    Case("EC-PERF-007", speed(0, compute_mode="prohibited"), speed(0, compute_mode="exclusive_process"), "compute mode prohibited"),
    Case("EC-PERF-008", speed(0, persistence_mode=False), speed(0, persistence_mode=None), "persistence off", "info"),
    Case("EC-PERF-009", lambda: b.with_env(speed()(), NCCL_P2P_DISABLE="1"), lambda: b.with_env(speed()(), NCCL_P2P_DISABLE="0"), "NCCL_P2P_DISABLE=1"),
    Case("EC-PERF-010", speed(2, ecc_uncorrected_volatile=2), speed(2, ecc_corrected_volatile=40), "uncorrectable ECC errors"),
    Case("EC-PERF-011", speed(2, host=PINNED, cpu_affinity="16-31", numa_node=1), speed(host=PINNED), "pinned to the other socket's CPUs"),
    )  # fmt: skip
