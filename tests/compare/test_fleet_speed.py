"""fleet names the node whose GPU is slowed (a degraded link, a thermal slowdown, a GPU another
process holds) as an odd one out, and does not tell healthy nodes apart by what varies at rest."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from envcheck.compare.fleet import read_fleet
from envcheck.facts import PcieLink, to_json
from envcheck.render.fleet import render as render_fleet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rules import speed_cases as sc


def _node(name: str, build) -> object:
    facts = build()
    return dataclasses.replace(facts, platform=dataclasses.replace(facts.platform, hostname=name))


def _write(tmp_path: Path, nodes: dict[str, object]) -> list[str]:
    paths = []
    for name, facts in nodes.items():
        path = tmp_path / f"{name}.json"
        path.write_text(to_json(facts))
        paths.append(str(path))
    return paths


def test_the_slowed_nodes_are_the_odd_ones_out(tmp_path):
    nodes = {f"gpu-node-{i:02d}": _node(f"gpu-node-{i:02d}", sc.speed()) for i in range(1, 9)}
    nodes["gpu-node-03"] = _node("gpu-node-03", sc.speed(2, pcie=sc.X4))
    nodes["gpu-node-05"] = _node("gpu-node-05", sc.speed(1, clock_event_reasons=0x40, temperature_c=94))
    nodes["gpu-node-07"] = _node("gpu-node-07", sc.with_processes(3, 30000))
    fleet = read_fleet(_write(tmp_path, nodes))
    odd = {name: [o.facet for o in facts] for name, facts in fleet.odd.items()}
    assert odd == {"gpu-node-03": ["gpu_links"], "gpu-node-05": ["gpu_clocks"], "gpu-node-07": ["gpu_sharing"]}
    text = render_fleet(fleet, width=100, color=False)
    assert "gpu-node-03  GPU links GPU 2 at x4 Gen3 of x16 Gen3 (7 others: all at their maximum)" in text
    assert "gpu-node-05  GPU clocks GPU 1 hw thermal slowdown (7 others: no slowdown)" in text
    assert "gpu-node-07  Other processes GPU 3 92% held by other processes (7 others: no other process)" in text


def test_healthy_nodes_probed_at_rest_or_at_work_are_alike(tmp_path):
    idle_link = PcieLink(current_generation=1, current_width=16, max_generation=3, max_width=16)
    nodes = {f"n{i}": _node(f"n{i}", sc.speed()) for i in range(4)}
    nodes["n9"] = _node(
        "n9", sc.speed(0, pcie=idle_link, clock_event_reasons=0x1, utilization_gpu_pct=0, temperature_c=31)
    )
    fleet = read_fleet(_write(tmp_path, nodes))
    assert fleet.odd == {}


def test_diff_puts_a_degraded_link_under_multi_gpu_and_leaves_readings_that_always_change_out():
    from envcheck.compare.diff import Side, compare
    from envcheck.verdict import judge

    before = sc.speed()()
    after = sc.speed(2, pcie=sc.X4, temperature_c=71, utilization_gpu_pct=40, power_w=180.0)()
    diff = compare(Side("before.json", judge(before)), Side("after.json", judge(after)))
    paths = {d.path: d.link for d in diff.differences}
    assert paths == {"nvml.gpus[2].performance.pcie.current_width": "multigpu"}
