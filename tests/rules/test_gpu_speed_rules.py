"""The Multi-GPU rules (EC-PERF-*), each with a machine where it fires and one where it does not.

The machines are described to the fake libnvidia-ml.so.1 and read by the real pynvml and the real
probe (all of them in one process: the fake reads its variables at every call); their NVML
section goes into the 4x V100 server snapshot, whose TensorFlow uses all four GPUs.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.facts import GpuPair, GpuPerformance, GpuProcess, HostFacts, NvmlFacts, PcieLink
from envcheck.machine import Machine
from envcheck.machine.speed import multigpu_summary
from envcheck.verdict import judge

from . import builders as b
from .speed_machines import NVLINK, fakenvml, probe_machines, server_with

H = fakenvml.healthy


def _machines() -> dict[str, dict]:
    four = [H(i) for i in range(4)]

    def with_gpu(index: int, **overrides) -> list:
        gpus = list(four)
        gpus[index] = H(index, **overrides)
        return gpus

    return {
        "healthy": {"gpus": four, "pairs": NVLINK},
        "x4_under_load": {"gpus": with_gpu(2, pcie=(4, 4, 4, 16, 4)), "pairs": NVLINK},
        "gen1_idle": {
            "gpus": [H(i, pcie=(1, 16, 4, 16, 4), events=0x1, util=(0, 0)) for i in range(4)],
            "pairs": NVLINK,
        },
        "thermal": {"gpus": with_gpu(1, events=0x60, temp=(93, 88), clocks=(705, 1410, 1593, 1593)), "pairs": NVLINK},
        "power_cap_default": {"gpus": with_gpu(0, events=0x4, power=(399_000, 400_000, 400_000)), "pairs": NVLINK},
        "power_cap_lowered": {"gpus": with_gpu(0, events=0x4, power=(249_000, 250_000, 400_000)), "pairs": NVLINK},
        "sync_boost": {"gpus": with_gpu(0, events=0x10), "pairs": NVLINK},
        "mixed": {"gpus": with_gpu(3, name="Tesla T4", mem_total_mb=15360), "pairs": NVLINK},
        "sockets": {
            "gpus": [H(i, nvlink=None, numa=i // 2, cpus="0-15" if i < 2 else "16-31") for i in range(4)],
            "pairs": {
                (a, c): (20, 0, 0, 5) if a // 2 == c // 2 else (50, 3, 3, 5) for a in range(4) for c in range(a + 1, 4)
            },
        },
        "no_p2p": {
            "gpus": [H(i, nvlink=None) for i in range(4)],
            "pairs": {(a, c): (30, 1, 1, 5) for a in range(4) for c in range(a + 1, 4)},
        },
        "p2p_over_pcie": {
            "gpus": [H(i, nvlink=None) for i in range(4)],
            "pairs": {(a, c): (20, 0, 0, 5) for a in range(4) for c in range(a + 1, 4)},
        },
        "busy": {"gpus": with_gpu(3, procs=[(4242, "python3", 77824)], mem_used_mb=77900), "pairs": NVLINK},
        "small_neighbour": {"gpus": with_gpu(3, procs=[(4242, "Xorg", 1024)], mem_used_mb=1100), "pairs": NVLINK},
        "prohibited": {"gpus": with_gpu(1, compute_mode=2), "pairs": NVLINK},
        "exclusive_free": {"gpus": with_gpu(1, compute_mode=3), "pairs": NVLINK},
        "exclusive_taken": {"gpus": with_gpu(1, compute_mode=3, procs=[(77, "trainer", 512)]), "pairs": NVLINK},
        "no_persistence": {"gpus": [H(i, persistence=False) for i in range(4)], "pairs": NVLINK},
        "uncorrectable": {"gpus": with_gpu(2, ecc=(1, 0, 3, 3)), "pairs": NVLINK},
        "corrected_only": {"gpus": with_gpu(2, ecc=(1, 12, 0, 0)), "pairs": NVLINK},
        "remap_failed": {"gpus": with_gpu(2, remap=(0, 1, 0, 1)), "pairs": NVLINK},
        "remap_pending": {"gpus": with_gpu(2, remap=(0, 1, 1, 0)), "pairs": NVLINK},
        "far_numa": {"gpus": [H(i, numa=i // 2, cpus="0-15" if i < 2 else "16-31") for i in range(4)], "pairs": NVLINK},
    }


@pytest.fixture(scope="module")
def nvml_sections(tmp_path_factory):
    if fakenvml.compiler() is None:
        pytest.skip("no C compiler on PATH to build the fake libnvidia-ml.so.1")
    return probe_machines(_machines(), tmp_path_factory.mktemp("fake-nvml"))


def machine(nvml_sections, name: str, **env: str):
    return server_with(nvml_sections[name], **env)


def perf(facts, host: HostFacts | None = None) -> list:
    if host is not None:
        facts = dataclasses.replace(facts, host=host)
    return [f for f in judge(facts).findings if f.id.startswith("EC-PERF") or f.id == "EC-INT-001"]


def ids(findings) -> list[tuple[str, str]]:
    return [(f.id, f.severity.value) for f in findings]


def test_a_healthy_server_has_no_speed_finding_and_its_line_says_so(nvml_sections):
    report = judge(machine(nvml_sections, "healthy"))
    assert [f.id for f in report.findings if f.link == "multigpu"] == []
    (line,) = [link for link in report.links if link.name == "multigpu"]
    assert line.status == "ok" and line.summary == "4 GPUs, all x16 Gen4, NVLink between every pair"
    assert report.verdict.line == "GPU ready (4 GPUs)"


def test_a_gpu_on_an_x4_link_under_load_is_named(nvml_sections):
    (finding,) = perf(machine(nvml_sections, "x4_under_load"))
    assert (finding.id, finding.severity.value) == ("EC-PERF-001", "warning")
    assert finding.title.startswith("GPU 2 (NVIDIA A100-SXM4-80GB): PCIe link at x4 Gen4 under load")
    assert "25% of the link's bandwidth" in finding.detail
    report = judge(machine(nvml_sections, "x4_under_load"))
    assert report.verdict.line == "GPU ready (4 GPUs)"  # a slow link is no broken link
    assert "GPU 2 at x4 Gen4 (the others x16 Gen4)" in [x for x in report.links if x.name == "multigpu"][0].summary


def test_an_idle_link_trained_down_is_only_said_as_idle(nvml_sections):
    findings = perf(machine(nvml_sections, "gen1_idle"))
    assert ids(findings) == [("EC-PERF-001", "info")] * 4
    assert "while idle" in findings[0].title and "look again under load" in findings[0].detail


def test_a_thermal_slowdown_names_the_gpu_and_its_temperature(nvml_sections):
    (finding,) = perf(machine(nvml_sections, "thermal"))
    assert (finding.id, finding.severity.value) == ("EC-PERF-002", "warning")
    assert finding.title == "GPU 1 (NVIDIA A100-SXM4-80GB): clocks lowered by sw thermal slowdown, hw thermal slowdown"
    evidence = dict(finding.evidence)
    assert evidence["temperature"] == "93 °C (slows down at 88 °C)" and evidence["SM clock"] == "705 MHz of 1410 MHz"


def test_the_power_cap_is_a_fault_only_when_the_limit_was_lowered(nvml_sections):
    assert ids(perf(machine(nvml_sections, "power_cap_default"))) == [("EC-PERF-002", "info")]
    (lowered,) = perf(machine(nvml_sections, "power_cap_lowered"))
    assert lowered.severity.value == "warning"
    assert [c.line for c in lowered.fix.commands] == ["sudo nvidia-smi -i 0 -pl 400"]
    assert ids(perf(machine(nvml_sections, "sync_boost"))) == [("EC-PERF-002", "info")]


def test_mixed_models_keep_the_common_model_by_uuid(nvml_sections):
    (finding,) = perf(machine(nvml_sections, "mixed"))
    assert finding.id == "EC-PERF-003" and "3x NVIDIA A100-SXM4-80GB, 1x Tesla T4" in finding.title
    (command,) = finding.fix.commands
    assert command.line.startswith("export CUDA_VISIBLE_DEVICES=GPU-") and command.line.count("GPU-") == 3


def test_pairs_across_sockets_and_pairs_without_p2p(nvml_sections):
    sockets = perf(machine(nvml_sections, "sockets"))
    assert ids(sockets) == [("EC-PERF-004", "warning")]
    assert sockets[0].title == "4 pairs of GPUs talk across CPU sockets (0-2, 0-3, 1-2, 1-3)"
    no_p2p = perf(machine(nvml_sections, "no_p2p"))
    assert ids(no_p2p) == [("EC-PERF-005", "warning")] and "6 pairs" in no_p2p[0].title
    assert perf(machine(nvml_sections, "p2p_over_pcie")) == []


def test_a_gpu_95_percent_taken_by_another_process_is_named(nvml_sections):
    (finding,) = perf(machine(nvml_sections, "busy"))
    assert finding.id == "EC-PERF-006"
    assert finding.title == "GPU 3 (NVIDIA A100-SXM4-80GB): 1 other process holds 95% of its memory"
    assert "pid 4242 python3 (77,824 MiB)" in dict(finding.evidence)["processes"]
    assert finding.fix.commands[0].line.count("GPU-") == 3  # the job without GPU 3
    assert perf(machine(nvml_sections, "small_neighbour")) == []


def test_compute_modes_that_keep_tensorflow_off(nvml_sections):
    (prohibited,) = perf(machine(nvml_sections, "prohibited"))
    assert prohibited.id == "EC-PERF-007" and "no process may create a CUDA context" in prohibited.title
    assert perf(machine(nvml_sections, "exclusive_free")) == []
    taken = perf(machine(nvml_sections, "exclusive_taken"))
    assert ids(taken) == [("EC-PERF-007", "warning")] and "pid 77 (trainer) does" in taken[0].title


def test_persistence_mode_off_is_said_on_linux_only(nvml_sections):
    assert ids(perf(machine(nvml_sections, "no_persistence"))) == [("EC-PERF-008", "info")]
    windows = b.change(machine(nvml_sections, "no_persistence"), {"platform.os": "windows"})
    assert "EC-PERF-008" not in [f.id for f in perf(windows)]
    assert perf(machine(nvml_sections, "healthy")) == []


def test_nccl_settings_that_close_the_fast_paths(nvml_sections):
    (finding,) = perf(machine(nvml_sections, "healthy", NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1"))
    assert (
        finding.id == "EC-PERF-009" and "NCCL_P2P_DISABLE=1" in finding.title and "NCCL_SHM_DISABLE=1" in finding.title
    )
    assert [c.line for c in finding.fix.commands] == ["unset NCCL_P2P_DISABLE", "unset NCCL_SHM_DISABLE"]
    assert ids(perf(machine(nvml_sections, "healthy", NCCL_P2P_LEVEL="LOC"))) == [("EC-PERF-009", "warning")]
    assert perf(machine(nvml_sections, "healthy", NCCL_P2P_DISABLE="0", NCCL_P2P_LEVEL="NVL")) == []
    one_gpu = machine(nvml_sections, "healthy", NCCL_P2P_DISABLE="1", CUDA_VISIBLE_DEVICES="0")
    assert perf(one_gpu) == []  # one visible GPU has no all-reduce to slow down


def test_memory_errors_but_not_corrected_ones(nvml_sections):
    (uncorrectable,) = perf(machine(nvml_sections, "uncorrectable"))
    assert uncorrectable.id == "EC-PERF-010" and "3 uncorrectable ECC errors" in uncorrectable.title
    assert [c.line for c in uncorrectable.fix.commands] == ["sudo nvidia-smi -i 2 -r"]
    assert perf(machine(nvml_sections, "corrected_only")) == []
    (failed,) = perf(machine(nvml_sections, "remap_failed"))
    assert "a row remapping failed" in failed.title and failed.fix.commands == ()
    (pending,) = perf(machine(nvml_sections, "remap_pending"))
    assert "waits for a GPU reset" in pending.title


def test_a_process_pinned_far_from_its_gpus(nvml_sections):
    far = machine(nvml_sections, "far_numa")
    pinned = HostFacts(cpu_count=32, cpu_affinity="0-15", numa_nodes={"0": "0-15", "1": "16-31"})
    (finding,) = perf(far, pinned)
    assert finding.id == "EC-PERF-011" and finding.title.endswith("none of them next to GPU 2, GPU 3")
    assert "numactl --cpunodebind=1 --membind=1" in finding.fix.text
    assert perf(far, HostFacts(cpu_count=32, cpu_affinity="0-31")) == []  # not pinned
    assert perf(far, HostFacts(cpu_count=32, cpu_affinity="0-7,16-23")) == []  # near every GPU


def test_only_the_gpus_cuda_sees_are_judged(nvml_sections):
    hidden = machine(nvml_sections, "x4_under_load", CUDA_VISIBLE_DEVICES="0,1", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    report = judge(hidden)
    assert [f.id for f in report.findings if f.link == "multigpu"] == []
    assert [x.summary for x in report.links if x.name == "multigpu"] == [
        "2 GPUs, all x16 Gen4, NVLink between every pair"
    ]


def test_one_gpu_has_no_multi_gpu_line():
    facts = b.change(b.server(), {"nvml.gpus": b.server().nvml.gpus[:1]})
    assert "multigpu" not in [x.name for x in judge(facts).links]


def test_a_snapshot_without_speed_facts_says_they_were_not_recorded():
    report = judge(b.server())
    (line,) = [x for x in report.links if x.name == "multigpu"]
    assert line.status == "ok" and "not recorded" in line.summary


def test_the_bus_gives_the_link_when_nvml_is_absent():
    server = b.server()
    devices = tuple(
        dataclasses.replace(d, link=PcieLink(current_generation=3, current_width=4 if i == 1 else 16, max_generation=3, max_width=16, source="sysfs"))
        for i, d in enumerate(server.pci.devices)
    )  # fmt: skip
    facts = b.change(
        server, {"pci.devices": devices, "nvml": NvmlFacts(status="missing", error_kind="library_not_found")}
    )
    findings = [f for f in judge(facts).findings if f.id == "EC-PERF-001"]
    assert [(f.severity.value, f.title.split(":")[0]) for f in findings] == [
        ("info", "GPU 1 (GV100GL [Tesla V100 SXM2 32GB])")
    ]
    assert "(load unknown)" in findings[0].title


_perf_values = st.builds(
    GpuPerformance,
    pcie=st.one_of(st.none(), st.builds(PcieLink, current_generation=st.one_of(st.none(), st.integers(0, 7)),
                                        current_width=st.one_of(st.none(), st.sampled_from([0, 1, 4, 8, 16, 32])),
                                        max_generation=st.one_of(st.none(), st.integers(0, 7)),
                                        max_width=st.one_of(st.none(), st.sampled_from([0, 1, 4, 8, 16, 32])))),
    clock_event_reasons=st.one_of(st.none(), st.integers(0, 2**16)),
    utilization_gpu_pct=st.one_of(st.none(), st.integers(0, 100)),
    power_w=st.one_of(st.none(), st.floats(0, 1000)),
    power_limit_w=st.one_of(st.none(), st.floats(0, 1000)),
    power_default_limit_w=st.one_of(st.none(), st.floats(0, 1000)),
    compute_mode=st.one_of(st.none(), st.sampled_from(["default", "prohibited", "exclusive_process", "mode 7"])),
    ecc_uncorrected_volatile=st.one_of(st.none(), st.integers(0, 10)),
    remapping_failed=st.one_of(st.none(), st.booleans()),
    cpu_affinity=st.one_of(st.none(), st.sampled_from(["0-15", "16-31", "x", ""])),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_perf_values, min_size=1, max_size=5),
    st.lists(st.sampled_from(["internal", "system", "node", None]), max_size=10),
)
def test_any_speed_facts_give_findings_about_visible_gpus_and_never_crash_a_rule(performances, levels):
    server = b.server()
    gpus = tuple(
        dataclasses.replace(server.nvml.gpus[i % 4], index=i, performance=p, processes=(GpuProcess(pid=9, used_memory_mb=i * 9000),))
        for i, p in enumerate(performances)
    )  # fmt: skip
    pairs = tuple(GpuPair(a=0, b=1 + i % 4, topology=level, p2p_read="not_supported") for i, level in enumerate(levels))
    facts = b.change(server, {"nvml.gpus": gpus, "nvml.pairs": pairs})
    facts = dataclasses.replace(facts, host=HostFacts(cpu_count=32, cpu_affinity="0-7"))
    findings = perf(facts)
    assert "EC-INT-001" not in [f.id for f in findings]
    assert all(f.severity.value in ("info", "warning") for f in findings)
    assert multigpu_summary(Machine(facts)).startswith(f"{len(gpus)} GPUs")
