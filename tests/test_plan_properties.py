"""Whatever machine is described, the plan obeys its own policy against the bundled matrix: it
never plans a GPU build that cannot run, never says a driver is fine when it is not, never skips a
newer release that fits, and always renders."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.errors import NotFoundError
from envcheck.matrix import load_matrix
from envcheck.planner import apply_overrides, make_plan
from envcheck.planner.options import CPU, DRIVER_OK, DRIVER_UPGRADE, GPU
from envcheck.planner.steps import shell_for
from envcheck.render.plan import render_json, render_script, render_text

MATRIX = load_matrix()
RELEASES = sorted({str(b.tf) for b in MATRIX.tf_releases()})

machines = st.fixed_dictionaries(
    {
        "os": st.sampled_from(["linux", "windows", "wsl", "macos"]),
        "python": st.one_of(
            st.none(), st.sampled_from(["3.5", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"])
        ),
        "compute_capability": st.one_of(
            st.none(),
            st.sampled_from(
                ["2.1", "3.0", "3.5", "3.7", "5.0", "6.1", "7.0", "7.5", "8.6", "8.9", "9.0", "10.0", "12.0"]
            ),
        ),
        "driver": st.one_of(
            st.none(),
            st.sampled_from(["390.48", "411.31", "417.35", "452.39", "470.82.01", "527.41", "535.104.05", "560.35.03"]),
        ),
        "tf": st.one_of(st.none(), st.sampled_from(RELEASES)),
        "cpu": st.booleans(),
    }
)


def _newer_fitting_gpu_build(option, target):
    for build in MATRIX.tf_releases(target.os):
        if build.tf <= option.build.tf or not build.gpu:
            continue
        if target.os == "windows" and build.tf > MATRIX.platform.windows_native_gpu_last:
            continue
        if not build.supports_python(option.python):
            continue
        if target.compute_capability is not None and MATRIX.support(build, target.compute_capability) == "none":
            continue
        return build
    return None


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines)
def test_plans_keep_their_promises(flags):
    if flags["cpu"]:
        flags = dict(flags, compute_capability=None, driver=None)
    target = apply_overrides(None, MATRIX, **flags)
    try:
        plan = make_plan(MATRIX, target)
    except NotFoundError:
        assert flags["tf"] is not None  # only a pinned release can be missing (for this OS)
        return
    o = plan.option
    assert o.build.supports_python(o.python)
    assert o.python_change == (target.python is not None and o.python != target.python)
    if o.kind == GPU:
        assert o.build.gpu and o.os != "macos" and target.has_gpu is not False
        if o.os == "windows":
            assert o.build.tf <= MATRIX.platform.windows_native_gpu_last
        if target.compute_capability is not None:
            assert MATRIX.support(o.build, target.compute_capability) == o.support != "none"
        if o.driver_status == DRIVER_OK:
            assert target.driver is not None and target.driver >= o.driver_floor
        if o.driver_status == DRIVER_UPGRADE:
            assert target.driver < o.driver_floor
        if target.tf_pin is None and not o.python_change:
            assert _newer_fitting_gpu_build(o, target) is None
    else:
        assert o.kind == CPU and o.cuda is None and o.driver_floor is None
        if target.tf_pin is None and target.has_gpu is not False and target.os != "macos":
            # The CPU was chosen only because no GPU build runs on this card.
            assert target.compute_capability is not None
            builds = [b for b in MATRIX.tf_releases(target.os) if b.gpu]
            if target.os == "windows":
                builds = [b for b in builds if b.tf <= MATRIX.platform.windows_native_gpu_last]
            assert all(MATRIX.support(b, target.compute_capability) == "none" for b in builds)
    if target.tf_pin is not None:
        assert o.tf == str(MATRIX.tf_build(target.tf_pin, o.os).tf)
    assert plan.choice.reasons and plan.steps
    assert render_text(plan).startswith("envcheck plan for:")
    assert json.loads(render_json(plan))["tensorflow"] == o.tf
    assert render_script(plan, shell_for(o.os))
