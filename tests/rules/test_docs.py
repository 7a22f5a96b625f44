"""docs/rules.md is the generated catalogue; docs/runtime.md covers every TF1 knob of the setup guide."""

from __future__ import annotations

from pathlib import Path

from envcheck.rules.catalogue import render

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_rules_doc_is_the_current_catalogue():
    assert (DOCS / "rules.md").read_text() == render(), "regenerate: python -m envcheck.rules.catalogue > docs/rules.md"


def test_runtime_doc_maps_each_tf1_knob():
    text = (DOCS / "runtime.md").read_text()
    for knob in (
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID",
        "tf.device('/gpu:1')",
        "log_device_placement",
        "per_process_gpu_memory_fraction = 0.4",
        "allow_growth",
        "allow_soft_placement",
        "multi_gpu_model",
    ):
        assert knob in text, knob
