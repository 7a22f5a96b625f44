"""A card newer than the build's CUDA needs the driver of its own first CUDA: every driver fix the
doctor gives (install, update, the unbound card) names that driver, and a card the build's CUDA
already covers is told the CUDA's."""

from __future__ import annotations

from envcheck.verdict import judge

from . import builders as b

RTX_5090 = "0x2b85"  # compute capability 12.0, first in CUDA 12.8 (driver 570.26 on Linux)


def _fix_of(report, rule_id):
    found = [f for f in report.findings if f.id == rule_id]
    assert found, [f.id for f in report.findings]
    return found[0].fix.text


def test_installing_a_driver_for_an_rtx_5090_asks_for_its_first_driver():
    text = _fix_of(judge(b.unbound_card(b.no_driver_linux(b.server()), RTX_5090)), "EC-GPU-002")
    assert "570.26 or newer" in text and "CUDA 12.8" in text


def test_installing_a_driver_for_v100s_asks_for_what_cuda_12_2_needs():
    text = _fix_of(judge(b.no_driver_linux(b.server())), "EC-GPU-002")
    assert "570.26" not in text and "for CUDA 12.2" in text


def test_an_unbound_rtx_5090_beside_v100s_on_535_is_told_to_update_to_570():
    report = judge(b.unbound_card(b.server(), RTX_5090))
    finding = next(f for f in report.findings if f.id == "EC-GPU-004")
    assert "predates the card" in finding.title and "570.26" in finding.title
    assert finding.fix.text.startswith("Update the NVIDIA driver (version 570.26 or newer")


def test_a_kepler_card_left_unbound_is_still_told_about_its_last_branch():
    report = judge(b.unbound_card(b.server(), "0x1004"))
    finding = next(f for f in report.findings if f.id == "EC-GPU-004")
    assert "last driver branch 470" in finding.title and "predates" not in finding.title


def _blackwell_on(tf: str, cuda: str, archs: tuple[str, ...]):
    facts = b.change(
        b.server_gpus(b.server(), ("NVIDIA GeForce RTX 5090", "12.0")),
        {"nvml.driver_version": "570.124.04", "driver.version": "570.124.04"},
    )
    return b.change(
        facts,
        {"tensorflow.version": tf, "tensorflow.cuda_version": cuda, "tensorflow.compute_capabilities": archs},
    )


def test_tensorflow_2_18_cannot_serve_a_blackwell_card_and_says_how_it_differs_from_an_old_one():
    report = judge(_blackwell_on("2.18.0", "12.5", ("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")))
    finding = next(f for f in report.findings if f.id == "EC-CC-001")
    assert "newer than this TensorFlow build can serve" in finding.title
    assert "CUDA 12.5's PTX ISA" in finding.detail and "first in CUDA 12.8" in finding.detail
    assert "build TensorFlow from source for compute capability 12.0" in finding.fix.text
    assert "newer GPU" not in finding.fix.text
    assert report.verdict.status == "broken"


def test_tensorflow_2_15_serves_the_same_card_through_ptx():
    report = judge(_blackwell_on("2.15.1", "12.2", ("sm_50", "sm_60", "sm_70", "sm_75", "compute_80")))
    assert not [f for f in report.findings if f.id == "EC-CC-001"]
    assert [f for f in report.findings if f.id == "EC-CC-002"]  # runs only through PTX: a slow first start
