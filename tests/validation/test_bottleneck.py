"""The analysis of a scaling measurement, on measurements written by hand: each bottleneck where
its evidence is, none where it is not, and the thresholds of public guidance (90%)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from envcheck.render.scaling import render_scaling
from envcheck.validation.bottleneck import analyse, efficiencies
from envcheck.validation.scaling import Rate, ScalingMeasurement

DEVICES = tuple(f"/job:localhost/replica:0/task:0/device:GPU:{i}" for i in range(4))


def measured(
    rates, *, pipeline=1e6, allreduce=0.001, alone=(100, 100, 100, 100), larger=105.0, batch=64, logical=False
):
    counts = [Rate(DEVICES[: i + 1], batch, r, batch * (i + 1) / r) for i, r in enumerate(rates)]
    return ScalingMeasurement(
        "test model", DEVICES[: len(rates)], logical, counts=counts, pipeline_images_per_second=pipeline,
        allreduce_seconds=allreduce, gradient_megabytes=6.5,
        alone=[Rate((d,), batch, r, batch / r, False) for d, r in zip(DEVICES, alone)],
        larger_batch=Rate(DEVICES[:1], 4 * batch, larger, 4 * batch / larger, False),
    )  # fmt: skip


def names(m):
    return [b.name for b in analyse(m).bottlenecks]


def test_the_setup_guides_figures_scale_as_expected():
    # 63 s -> 16 s an epoch on four GPUs: 3.94x, 98%.
    one = 50_000 / 63
    analysis = analyse(measured([one, 1.97 * one, 2.95 * one, 50_000 / 16], alone=(one,) * 4, larger=one))
    assert analysis.scales and analysis.bottlenecks == []
    assert analysis.verdict == "4 devices at 98% efficiency: scales as expected"


def test_input_bound_when_training_runs_at_the_pipelines_rate():
    m = measured([100, 160, 165, 166], pipeline=170)
    assert names(m) == ["input-bound"]
    assert "170 images/s" in analyse(m).bottlenecks[0].title
    assert names(measured([100, 160, 165, 166], pipeline=2000)) != ["input-bound"]


def test_the_straggler_is_the_device_slow_alone():
    m = measured([100, 80, 120, 160], alone=(100, 100, 40, 100))
    (first, *_rest) = analyse(m).bottlenecks
    assert (
        first.name == "straggler" and first.device.endswith("GPU:2") and "GPU:2 alone: 40 images/s" in first.evidence[0]
    )
    assert "straggler" not in names(measured([100, 80, 120, 160], alone=(100, 95, 90, 100)))


def test_communication_bound_when_the_all_reduce_explains_the_lost_time():
    # a step takes 0.64 s on one device and 1.6 s on four; the all-reduce alone 0.7 s
    m = measured([100, 120, 140, 160], allreduce=0.7)
    assert names(m) == ["communication-bound"]
    assert "communication-bound" not in names(measured([100, 120, 140, 160], allreduce=0.05))


def test_a_batch_too_small_is_named_even_when_scaling_is_fine():
    m = measured([100, 198, 296, 395], larger=240)
    assert names(m) == ["batch too small"] and analyse(m).scales
    assert "--batch-per-replica 256" in analyse(m).bottlenecks[0].fix[0]


def test_logical_cpu_devices_share_one_processor_when_nothing_else_explains():
    assert names(measured([100, 105], logical=True)) == ["shared device"]
    assert names(measured([100, 105])) == ["unexplained"]


def test_the_report_renders_from_its_json(tmp_path):
    m = measured([100, 160, 165, 166], pipeline=170)
    result = {"measurement": m.to_dict(), "analysis": analyse(m).to_dict()}
    text = render_scaling(result)
    assert "      4      166.0        41.5         42%" in text
    assert "Verdict: 4 devices at 42% efficiency, below the 90% expected; bottleneck: input-bound" in text
    assert "evidence: the input pipeline alone: 170 images/s" in text


@given(st.lists(st.floats(1, 1e5), min_size=1, max_size=8))
def test_efficiency_is_images_per_second_over_count_times_one_device(rates):
    m = measured(rates, alone=(rates[0],) * 4, larger=rates[0])
    for (count, efficiency), rate in zip(efficiencies(m), rates):
        assert abs(efficiency - rate / (count * rates[0])) < 1e-9
    analysis = analyse(m)
    assert analysis.scales == all(e >= 0.9 for _, e in efficiencies(m))
    assert bool(analysis.bottlenecks) == (not analysis.scales)  # names a cause exactly when it is slow
