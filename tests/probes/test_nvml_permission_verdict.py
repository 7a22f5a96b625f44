"""Every per-GPU NVML query answering NoPermission (device nodes closed to this user): the GPU is
not usable, and the verdict names the permission problem, not a library further down the chain."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import fakenvml

from envcheck.facts import load_facts
from envcheck.verdict import judge

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "facts" / "fake_nvml_2gpu.json"
QUERIES = ("name", "uuid", "serial", "pci_bus_id", "compute_capability", "memory", "mig_mode", "processes")


def test_every_query_denied_is_the_verdict_not_cudnn(nvml_probe):
    denied = dict.fromkeys(QUERIES, 4)  # NVML_ERROR_NO_PERMISSION
    nvml = nvml_probe(gpus=(fakenvml.a100(0, fail=denied), fakenvml.a100(1, fail=denied)))
    assert nvml.status == "ok" and all(g.query_errors for g in nvml.gpus)  # the probe itself answered

    facts = dataclasses.replace(load_facts(FIXTURE), nvml=nvml)
    before = judge(load_facts(FIXTURE))
    assert "cuDNN" in before.verdict.line  # the fixture's own first broken link, with the GPUs readable
    report = judge(facts)
    verdict = report.verdict
    assert verdict.status != "gpu-ready"
    assert "permission" in verdict.line.lower(), verdict.line
    assert "cudnn" not in verdict.line.lower()
    root = next(f for f in report.findings if f.id == verdict.finding_id)
    assert root.link in ("gpu", "driver") and not root.caused_by
    assert not [f for f in report.findings if f.id == "EC-INT-001"]
