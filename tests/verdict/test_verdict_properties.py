"""The doctor's judgement keeps its promises on every machine the matrix can describe (generated.py):
every GPU architecture x every TensorFlow release x drivers at and around each floor x Linux,
native Windows and WSL2 x one, two and mixed GPUs x ops failing on some or all GPUs, with
CUDA_VISIBLE_DEVICES, --quick and not-installed variants. The properties are in properties.py.

The fast tests sample the space (hypothesis, and one machine per architecture and OS at the oldest
and newest release); the slow ones walk all of it: ``python -m pytest tests/verdict -m slow``."""

from __future__ import annotations

import dataclasses

import generated as g
import properties as p
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.findings import CPU_ONLY
from envcheck.machine.gpus import GpuView

ALL_CARDS = g.cards()


@st.composite
def machines(draw) -> g.Spec:
    os = draw(st.sampled_from(g.OSES))
    tf = draw(st.sampled_from(g.releases(os)))
    first = draw(st.sampled_from(ALL_CARDS))
    cards = draw(st.sampled_from(g.gpu_sets(first)))
    return g.Spec(
        os=os,
        tf=tf,
        cards=cards,
        driver=draw(st.sampled_from(g.drivers(os, tf))),
        ops=draw(st.sampled_from(g.OPS)),
        visible=draw(st.sampled_from([None, None, None, "", "-1", "0", "1", "1,0"])),
        installed=draw(st.sampled_from([True, True, True, False])),
        quick=draw(st.sampled_from([False, False, False, True])),
    )


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_every_property_holds_on_generated_machines(spec):
    facts = g.snapshot(spec)
    report = p.judged(facts)
    p.check(spec, facts, report)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_a_snapshot_read_back_gives_the_same_verdict(spec):
    facts = g.snapshot(spec)
    p.ROUND_TRIP(spec, facts, p.judged(facts))


def _corners() -> list[g.Spec]:
    """Each architecture on each OS with the oldest and the newest release, at every driver line."""
    out = []
    for os in g.OSES:
        releases = g.releases(os)
        for tf in (releases[0], releases[-1]):
            for card in ALL_CARDS:
                out += [g.Spec(os, tf, (card,), driver) for driver in g.drivers(os, tf)[-2:]]
    return out


CORNERS = _corners()


def test_every_property_holds_at_the_corners_of_the_matrix():
    for spec in CORNERS:
        facts = g.snapshot(spec)
        p.check(spec, facts, p.judged(facts))
    assert len(CORNERS) >= 200


@pytest.mark.slow
def test_every_property_holds_on_every_single_gpu_machine():
    specs = g.single_gpu_machines()
    for spec in specs:
        facts = g.snapshot(spec)
        p.check(spec, facts, p.judged(facts))
    assert len(specs) > 10_000


@pytest.mark.slow
def test_every_property_holds_on_every_mixed_machine():
    specs = g.mixed_machines()
    for spec in specs:
        facts = g.snapshot(spec)
        p.check(spec, facts, p.judged(facts))
    assert len(specs) > 10_000


def test_the_properties_catch_what_they_are_for():
    """Each property fails on a report that breaks it, so a passing run means something."""
    spec = g.Spec("linux", "2.15", (ALL_CARDS[-3],), g.drivers("linux", "2.15")[-1], ops="fail_first")
    facts = g.snapshot(spec)
    report = p.judged(facts)
    assert report.gpus and not report.gpus[0].usable and report.exit_code == 1
    quiet = dataclasses.replace(
        report, exit_code=0, verdict=dataclasses.replace(report.verdict, status=CPU_ONLY, finished=True)
    )
    with pytest.raises(AssertionError, match="CPU only, exit 0"):
        p.no_finished_cpu_only_with_a_gpu_that_is_not_hidden(spec, facts, quiet)
    unexplained = dataclasses.replace(report, gpus=tuple(dataclasses.replace(x, finding=None) for x in report.gpus))
    with pytest.raises(AssertionError, match="no finding explains it"):
        p.every_unusable_gpu_has_a_reason_and_a_finding(spec, facts, unexplained)
    claimed: tuple[GpuView, ...] = tuple(dataclasses.replace(x, usable=True, tested=True) for x in report.gpus)
    with pytest.raises(AssertionError, match="does not run on it|usable"):
        p.ready_only_where_the_one_question_says_yes(
            dataclasses.replace(spec, driver="390.157"), facts, dataclasses.replace(report, gpus=claimed)
        )
    step = report.verdict.gpu_path[0]
    two = dataclasses.replace(
        report.verdict, gpu_path=(dataclasses.replace(step, release="1.15"), dataclasses.replace(step, release="2.15"))
    )
    with pytest.raises(AssertionError, match="serve"):
        p.the_gpu_path_installs_one_release(spec, facts, dataclasses.replace(report, verdict=two))
