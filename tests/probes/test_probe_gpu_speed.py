"""The speed facts: the real pynvml and the real probe against the fake libnvidia-ml.so.1 (links,
clocks and their event reasons, temperature and power, memory errors, NUMA placement, the pairs),
and sysfs's link and NUMA node where NVML is absent."""

from __future__ import annotations

import fakenvml
from hypothesis import given
from hypothesis import strategies as st

from envcheck.facts import Facts, facts_from_dict, to_dict
from envcheck.probes.gpu_speed import cpu_list, link_generation, parse_cpu_list, probe_host, topology_name
from envcheck.probes.pci import probe_pci


def test_a_healthy_server_is_read_in_full(nvml_probe):
    facts = nvml_probe(
        gpus=(fakenvml.healthy(0), fakenvml.healthy(1, numa=1, cpus="32-63")),
        pairs={(0, 1): (20, 0, 0, 0)},
    )
    first, second = (g.performance for g in facts.gpus)
    assert first.pcie.current_generation == 4 and first.pcie.current_width == 16
    assert (first.pcie.max_generation, first.pcie.max_width, first.pcie.gpu_max_generation) == (4, 16, 4)
    assert (first.sm_clock_mhz, first.sm_clock_max_mhz, first.memory_clock_mhz) == (1410, 1410, 1593)
    assert first.clock_event_reasons == 0
    assert (first.temperature_c, first.slowdown_temperature_c) == (55, 88)
    assert (first.power_w, first.power_limit_w, first.power_default_limit_w) == (250.0, 400.0, 400.0)
    assert (first.utilization_gpu_pct, first.utilization_memory_pct) == (97, 60)
    assert first.persistence_mode is True and first.compute_mode == "default"
    assert first.ecc_enabled is True and first.ecc_uncorrected_volatile == 0
    assert first.retired_pages_double_bit == 0 and first.remapping_failed is False
    assert (first.nvlinks, first.nvlinks_active) == (12, 12)
    assert (first.numa_node, first.cpu_affinity) == (0, "0-31")
    assert (second.numa_node, second.cpu_affinity) == (1, "32-63")
    assert first.query_errors == {}
    (pair,) = facts.pairs
    assert (pair.a, pair.b, pair.topology, pair.p2p_read, pair.p2p_nvlink) == (0, 1, "multiple", "ok", "ok")


def test_a_degraded_link_a_throttle_and_memory_errors_are_read_as_they_are(nvml_probe):
    sick = fakenvml.healthy(
        1,
        pcie=(1, 4, 4, 16, 4),
        events=0x20 | 0x40,
        temp=(92, 88),
        ecc=(1, 12, 3, 7),
        retired=(2, 1, 1),
        remap=(0, 4, 1, 0),
        compute_mode=3,
        nvlink=(10, 12),
    )
    facts = nvml_probe(gpus=(fakenvml.healthy(0), sick), pairs={(0, 1): (50, 3, 3, 5)})
    gpu = facts.gpus[1].performance
    assert (gpu.pcie.current_generation, gpu.pcie.current_width) == (1, 4)
    assert gpu.clock_event_reasons == 0x60
    assert gpu.ecc_corrected_volatile == 12 and gpu.ecc_uncorrected_volatile == 3
    assert gpu.ecc_uncorrected_aggregate == 7
    assert (gpu.retired_pages_single_bit, gpu.retired_pages_double_bit, gpu.retired_pages_pending) == (2, 1, True)
    assert (gpu.remapped_rows_uncorrectable, gpu.remapping_pending) == (4, True)
    assert gpu.compute_mode == "exclusive_process"
    assert (gpu.nvlinks, gpu.nvlinks_active) == (12, 10)
    (pair,) = facts.pairs
    assert pair.topology == "system" and pair.p2p_read == "ioh_topology_not_supported"
    assert pair.p2p_nvlink == "not_supported"


def test_an_older_driver_answers_with_the_older_calls_and_leaves_the_rest_unknown(nvml_probe):
    # No nvmlDeviceGetCurrentClocksEventReasons (driver 535), NumaNodeId or RemappedRows.
    facts = nvml_probe("old", gpus=(fakenvml.healthy(0, events=0x4),))
    gpu = facts.gpus[0]
    assert gpu.performance.clock_event_reasons == 0x4  # through ...ClocksThrottleReasons
    assert gpu.performance.numa_node is None and gpu.performance.remapped_rows_uncorrectable is None
    assert gpu.performance.pcie.gpu_max_generation is None
    assert gpu.performance.query_errors == {} and gpu.query_errors == {}  # unknown, not an error


def test_a_card_that_answers_none_of_it_has_no_speed_facts(nvml_probe):
    facts = nvml_probe(gpus=(fakenvml.a100(0), fakenvml.a100(1)))
    assert all(g.performance is None for g in facts.gpus)
    assert facts.pairs == ()


def test_a_refused_query_is_kept_by_name_and_costs_nothing_else(nvml_probe):
    facts = nvml_probe(gpus=(fakenvml.healthy(0, fail={"pcie": 4, "ecc": 999}),))
    gpu = facts.gpus[0]
    assert gpu.status == "ok" and gpu.query_errors == {}
    assert gpu.performance.pcie is None
    assert gpu.performance.query_errors["pcie"].startswith("no_permission: Insufficient Permissions")
    assert gpu.performance.query_errors["ecc"].startswith("unknown:")
    assert gpu.performance.temperature_c == 55


def test_a_snapshot_with_speed_facts_reads_back_the_same():
    import json

    raw = {
        "schema_version": 2,
        "nvml": {
            "gpus": [{"index": 0, "performance": {"pcie": {"current_width": 4, "max_width": 16}, "numa_node": 1}}],
            "pairs": [{"a": 0, "b": 1, "topology": "system", "p2p_read": "not_supported"}],
        },
        "pci": {"devices": [{"address": "0000:07:00.0", "vendor_id": "0x10de", "device_id": "0x20b2",
                             "class_code": "0x030200", "link": {"current_width": 16, "source": "sysfs"}}]},
        "host": {"cpu_affinity": "0-7", "numa_nodes": {"0": "0-7"}},
    }  # fmt: skip
    facts = facts_from_dict(raw)
    again = facts_from_dict(json.loads(json.dumps(to_dict(facts))))
    assert again == facts and again.nvml.gpus[0].performance.pcie.max_width == 16
    # an old schema reads with every default (a snapshot without its TensorFlow section says so:
    # tests/verdict/test_snapshot_without_tensorflow.py)
    old = {"schema_version": 1, "tensorflow": {"status": "skipped"}}
    assert facts_from_dict(old) == Facts(schema_version=facts.schema_version)


def test_sysfs_gives_the_link_and_the_numa_node_without_nvml(make_tree):
    make_tree.pci("0000:07:00.0", "0x10de", "0x20b2", "0x030200", driver="nvidia")
    make_tree.pci("0000:0f:00.0", "0x10de", "0x20b2", "0x030200", driver="nvidia")
    for name, value in (
        ("current_link_speed", "2.5 GT/s PCIe"),
        ("current_link_width", "4"),
        ("max_link_speed", "16.0 GT/s PCIe"),
        ("max_link_width", "16"),
        ("numa_node", "1"),
        ("local_cpulist", "16-31"),
    ):
        make_tree.file(f"sys/bus/pci/devices/0000:07:00.0/{name}", value + "\n")
    make_tree.file("sys/bus/pci/devices/0000:0f:00.0/current_link_speed", "Unknown\n")
    make_tree.file("sys/bus/pci/devices/0000:0f:00.0/numa_node", "-1\n")
    first, second = probe_pci(make_tree.root, "Linux").devices
    assert (first.link.current_generation, first.link.current_width) == (1, 4)
    assert (first.link.max_generation, first.link.max_width, first.link.source) == (4, 16, "sysfs")
    assert (first.numa_node, first.local_cpus) == (1, "16-31")
    assert second.link is None and second.numa_node is None  # "Unknown" and -1 say nothing


def test_the_process_affinity_and_numa_nodes_come_from_the_tree(make_tree):
    make_tree.file("proc/self/status", "Name:\tpython\nCpus_allowed_list:\t0-7\n")
    make_tree.file("sys/devices/system/node/node0/cpulist", "0-15\n")
    make_tree.file("sys/devices/system/node/node1/cpulist", "16-31\n")
    make_tree.file("sys/devices/system/node/possible", "0-1\n")
    make_tree.file("sys/devices/system/cpu/online", "0-31\n")
    host = probe_host(make_tree.root, "Linux")
    assert (host.cpu_affinity, host.cpu_count, host.numa_nodes) == ("0-7", 32, {"0": "0-15", "1": "16-31"})
    assert probe_host(make_tree.root, "Windows").status == "skipped"


def test_this_process_affinity_is_read():
    host = probe_host()
    assert host.status == "ok" and host.cpu_affinity and parse_cpu_list(host.cpu_affinity)


@given(st.sets(st.integers(min_value=0, max_value=300), min_size=1))
def test_cpu_lists_round_trip(cpus):
    text = cpu_list(cpus)
    assert parse_cpu_list(text) == frozenset(cpus)
    assert " " not in text and ",," not in text


def test_link_speeds_and_topology_levels_are_named_as_nvml_and_the_kernel_write_them():
    assert [link_generation(f"{r} GT/s PCIe") for r in ("2.5", "5.0", "8.0", "16.0", "32.0", "64")] == [
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    assert link_generation("8 GT/s") == 3 and link_generation("Unknown") is None and link_generation("") is None
    assert [topology_name(v) for v in (0, 10, 20, 30, 40, 50)] == [
        "internal", "single", "multiple", "hostbridge", "node", "system",
    ]  # fmt: skip
    assert topology_name(60) is None and topology_name(15) is None and topology_name(None) is None


def test_envcheck_s_own_processes_are_not_other_processes():
    import os
    from types import SimpleNamespace

    from envcheck.facts import GpuProcess, NvmlFacts, NvmlGpu
    from envcheck.probes import _without_own_processes

    worker = SimpleNamespace(child=SimpleNamespace(proc=SimpleNamespace(pid=4242)))
    procs = (GpuProcess(pid=4242, name="python"), GpuProcess(pid=os.getpid()), GpuProcess(pid=77, name="trainer"))
    facts = NvmlFacts(gpus=(NvmlGpu(index=0, processes=procs),))
    assert [p.pid for p in _without_own_processes(facts, worker).gpus[0].processes] == [77]
    assert _without_own_processes(facts, None).gpus[0].processes[0].pid == 4242  # no worker: only this process
