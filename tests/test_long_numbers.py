"""A run of 5,000 digits in any string of a snapshot (a host name, CUDA_VISIBLE_DEVICES, a version,
a device name) is a value like any other: past int()'s 4,300-digit limit nothing converts it, no
rule crashes, and every report the snapshot feeds comes out (no exit 3)."""

from __future__ import annotations

import dataclasses

import pytest
from hostile import FIXTURES, poison, renders, string_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.facts import facts_from_dict, load_facts, to_dict
from envcheck.probes.system import ENV_ALLOW_EXACT
from envcheck.verdict import judge

RUN = "9" * 5000
SHAPES = (RUN, f"3.{RUN}.1", f"{RUN}.0", f"GPU:{RUN}", f"/device:GPU:{RUN}", f"sm_{RUN}", f"libcudart.so.{RUN}")
SNAPSHOTS = sorted(p.stem for p in FIXTURES.glob("*.json"))
FIELDS = [p for p in string_paths() if p != "platform.os"]  # the reader refuses an unknown OS


def base(name: str):
    """A real snapshot with every variable the probes record set (so each is poisoned too)."""
    facts = load_facts(FIXTURES / f"{name}.json")
    variables = dict.fromkeys(sorted(ENV_ALLOW_EXACT), "1") | dict(facts.env.variables)
    return dataclasses.replace(facts, env=dataclasses.replace(facts.env, variables=variables))


def _check(facts, tmp_path) -> None:
    facts = facts_from_dict(to_dict(facts))
    crashed = [f.title for f in judge(facts).findings if f.id == "EC-INT-001"]
    assert not crashed, crashed
    for where, text, _ in renders(facts, tmp_path):
        assert text, where


def test_a_gpu_only_tensorflow_lists_with_a_5000_digit_ordinal(tmp_path):
    """No NVML and no bus, but TensorFlow lists a GPU (a container): the ordinal is read by its digits."""
    from envcheck.facts import PlacementResult

    facts = load_facts(FIXTURES / "multi_gpu_server.json")
    nvml = dataclasses.replace(facts.nvml, gpus=())
    pci = dataclasses.replace(facts.pci, devices=())
    placement = (PlacementResult(op="matmul", requested=f"/GPU:{RUN}", device=f"/device:GPU:{RUN}", ok=True),)
    tf = dataclasses.replace(facts.tensorflow, placement=placement)
    _check(dataclasses.replace(facts, nvml=nvml, pci=pci, tensorflow=tf), tmp_path)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.replace(RUN, "N")[:20])
def test_every_field_holding_a_5000_digit_number(shape, tmp_path):
    _check(poison(base("multi_gpu_server"), lambda p: shape, lambda p: p in FIELDS), tmp_path)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(SNAPSHOTS),
    chosen=st.sets(st.sampled_from(FIELDS), min_size=1, max_size=4),
    shape=st.sampled_from(SHAPES),
)
def test_a_few_fields_holding_one_keep_the_rest_real(name, chosen, shape, tmp_path):
    _check(poison(base(name), lambda p: shape, lambda p: p in chosen), tmp_path)


@pytest.mark.parametrize("ordinal", ["999999999", "99999", "1024"])
def test_a_tested_device_number_no_machine_has_makes_no_gpus(ordinal):
    """TensorFlow's tested devices can add GPUs NVML does not show (a container), but a device
    number past any machine's (here 1,024 and more) is no GPU: it must not make a billion."""
    facts = load_facts(FIXTURES / "linux_cuda_build_no_gpu.json")
    tf = facts.tensorflow
    placement = tuple(dataclasses.replace(p, requested=f"/device:GPU:{ordinal}") for p in tf.placement)
    report = judge(dataclasses.replace(facts, tensorflow=dataclasses.replace(tf, placement=placement)))
    assert len(report.gpus) == 0 and report.verdict.status == "cpu-only"


def test_a_tested_device_number_a_machine_can_have_counts():
    facts = load_facts(FIXTURES / "linux_cuda_build_no_gpu.json")
    tf = facts.tensorflow
    placement = tuple(dataclasses.replace(p, requested="/device:GPU:1") for p in tf.placement)
    report = judge(dataclasses.replace(facts, tensorflow=dataclasses.replace(tf, placement=placement)))
    assert len(report.gpus) == 2


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.replace(RUN, "N")[:20])
def test_the_python_version_alone_holding_one(shape, tmp_path):
    """Found by CI: the rest real, TensorFlow's requirements are read and their markers need the
    Python version; one that is no number leaves those markers unjudged, not the rule crashed."""
    _check(poison(base("fake_nvml_2gpu"), lambda p: shape, lambda p: p == "python.version"), tmp_path)
