"""A rule that says the same thing about several GPUs is read once: four identical cards served
only by PTX give one step to take and one finding under -v, "the same on 4 GPUs", while the JSON
keeps one finding per GPU. Cards that differ keep their own lines."""

from __future__ import annotations

import json
from pathlib import Path

from envcheck.findings import Finding, Fix, Severity, shown_once

FIXTURE = Path(__file__).parent / "fixtures" / "facts" / "multi_gpu_server.json"


def _snapshot(tmp_path: Path, names_and_capabilities: list[tuple[str, str]]) -> str:
    """The four-GPU server's snapshot, --quick, with its GPUs renamed (TensorFlow not imported)."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data["quick"] = True
    data["tensorflow"].update(status="skipped", physical_devices=[], logical_devices=[], placement=[])
    for gpu, (name, capability) in zip(data["nvml"]["gpus"], names_and_capabilities):
        gpu["name"], gpu["compute_capability"] = name, capability
    path = tmp_path / "node.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_four_identical_gpus_served_by_ptx_get_one_step(cli, tmp_path):
    facts = _snapshot(tmp_path, [("NVIDIA H100 80GB HBM3", "9.0")] * 4)
    text = cli("doctor", "--facts", facts, "-v").out
    assert text.count("[EC-CC-002]") == 1 and text.count("export CUDA_CACHE_MAXSIZE=") == 2  # step, -v fix
    assert "runs only through PTX" in text and "the same on 4 GPUs" in text
    assert text.count("WARN EC-CC-002") == 1
    for bus in ("0000:15:00.0", "0000:2f:00.0", "0000:49:00.0", "0000:63:00.0"):
        assert f"gpu {bus}: compute capability 9.0" in text
    quiet = cli("doctor", "--facts", facts).out
    assert quiet.count("[EC-CC-002]") == 1
    data = json.loads(cli("doctor", "--facts", facts, "--json").out)
    assert [f["gpus"] for f in data["findings"] if f["id"] == "EC-CC-002"] == [
        ["0000:15:00.0"],
        ["0000:2f:00.0"],
        ["0000:49:00.0"],
        ["0000:63:00.0"],
    ]


def test_different_gpus_keep_their_own_findings(cli, tmp_path):
    facts = _snapshot(tmp_path, [("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA A100-SXM4-40GB", "8.0")] * 2)
    text = cli("doctor", "--facts", facts, "-v").out
    # Both models run only through PTX (the build's newest code is compute_80 PTX): one line each.
    lines = [line for line in text.splitlines() if line.startswith("  WARN EC-CC-002")]
    assert len(lines) == 2 and "NVIDIA H100" in lines[0] and "NVIDIA A100" in lines[1]
    assert text.count("the same on 2 GPUs") == 4 and "the same on 4 GPUs" not in text  # 2 steps, 2 findings


def test_machine_wide_findings_are_never_merged():
    one = Finding(id="EC-ENV-001", severity=Severity.WARNING, title="t", link="environment", fix=Fix(text="x"))
    gpu = Finding(id="EC-CC-002", severity=Severity.WARNING, title="t", link="compute", gpus=("0000:01:00.0",))
    assert shown_once([one, one, gpu]) == [one, one, gpu]
    merged = shown_once([gpu, Finding(**{**gpu.__dict__, "gpus": ("0000:02:00.0",)})])
    assert len(merged) == 1 and merged[0].gpus == ("0000:01:00.0", "0000:02:00.0")
    assert merged[0].title == "t; the same on 2 GPUs"
