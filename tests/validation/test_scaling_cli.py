"""validate --scaling's command line: bad combinations are one line and exit 2 before TensorFlow
starts; the one-device figure it keeps is what envcheck train compares with."""

from __future__ import annotations

import pytest

from envcheck.scaling_baseline import compared_with_one_device, read_baselines, record_one_device


@pytest.mark.parametrize(
    "argv, said",
    [
        (("--scaling", "--train"), "--scaling is a measurement of its own"),
        (("--scaling", "--level", "3"), "--scaling is a measurement of its own"),
        (("--scaling", "--gpus", "1", "--cpu-replicas", "2"), "--gpus and --cpu-replicas exclude each other"),
        (("--plot", "x.png"), "--plot is for --scaling"),
        (("--steps", "3"), "--steps is for --scaling"),
        (("--scaling", "--plot", "no/such/folder/x.png"), "--plot no/such/folder/x.png: no such folder"),
        (("--scaling", "--steps", "0"), "--steps"),
    ],
)
def test_bad_combinations_exit_2_with_one_line(cli, argv, said):
    result = cli("validate", *argv)
    assert result.code == 2 and said in result.err
    assert "Traceback" not in result.err and result.out == ""


def test_train_compares_with_the_one_device_figure_validate_kept(tmp_path):
    path = tmp_path / "scaling-baseline.json"
    assert compared_with_one_device(500.0, 4, "gpu", 64, path=path) is None  # nothing measured yet
    assert record_one_device("gpu", 64, 141.26, device="GPU", measured="2026-12-01T10:00:00+00:00", path=path) == path
    assert compared_with_one_device(508.5, 4, "gpu", 64, path=path) == (
        "3.60x one device (141.3 images/s on one GPU device, validate --scaling on 2026-12-01; 90% of linear)"
    )
    assert compared_with_one_device(508.5, 4, "gpu", 128, path=path) is None  # another batch: not comparable
    assert compared_with_one_device(508.5, 4, "cpu", 64, path=path) is None
    record_one_device("cpu", 32, 70.0, device="CPU", measured="2026-12-02", path=path)
    assert set(read_baselines(path)) == {"gpu:64", "cpu:32"}
    path.write_text("{not json")
    assert compared_with_one_device(508.5, 4, "gpu", 64, path=path) is None  # a damaged file is no figure


def test_the_trainers_summary_line_against_one_device(tmp_path, monkeypatch):
    from envcheck.commands.train import one_device_line

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    summary = {"replicas": 2, "global_batch": 64, "devices": {"kind": "cpu"}, "images_per_second_steady": 150.0}
    assert one_device_line(summary) is None
    record_one_device("cpu", 32, 100.0, device="CPU", measured="2026-12-01T21:00:00+00:00")
    assert one_device_line(summary) == (
        "against one device: 1.50x one device (100.0 images/s on one CPU device, validate --scaling on 2026-12-01; "
        "75% of linear)"
    )
    assert one_device_line({**summary, "devices": {"kind": "multi-worker"}}) is None


@pytest.mark.slow
def test_validate_scaling_measures_the_reference_model_and_keeps_one_devices_figure(tmp_path):
    import json

    from tests.conftest import run_envcheck

    pytest.importorskip("tensorflow")
    plot = tmp_path / "scaling.png"
    result = run_envcheck(
        "validate", "--scaling", "--cpu-replicas", "2", "--batch-per-replica", "4", "--steps", "1", "--plot", str(plot),
        "--json", env={"XDG_CACHE_HOME": str(tmp_path)}, timeout=1200,
    )  # fmt: skip
    data = json.loads(result.out)
    assert data["command"] == "validate" and data["exit_code"] == result.code
    m, analysis = data["measurement"], data["analysis"]
    assert [len(r["devices"]) for r in m["counts"]] == [1, 2] and m["logical_cpu"] is True
    assert m["workload"].startswith("MiniGoogLeNet") and m["gradient_megabytes"] > 6
    from envcheck.validation.bottleneck import EXPECTED_EFFICIENCY

    efficiency = [r["efficiency"] for r in analysis["efficiency"]]
    # Two logical CPU devices can scale on an idle 2-core machine (one replica of a batch of 4 does
    # not fill both cores): a loss below the expected efficiency is never left without a name.
    assert efficiency[0] == 1.0 and (analysis["bottlenecks"] or efficiency[-1] >= EXPECTED_EFFICIENCY)
    assert plot.stat().st_size > 1000 or "plot_error" in data
    kept = json.loads((tmp_path / "envcheck" / "scaling-baseline.json").read_text())
    assert kept["cpu:4"]["images_per_second"] == pytest.approx(m["counts"][0]["images_per_second"], rel=0.01)
