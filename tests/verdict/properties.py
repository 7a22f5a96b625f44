"""What must hold of the doctor's judgement on any machine, whatever it is. ``check`` raises an
AssertionError that names the property and shows the machine."""

from __future__ import annotations

import json
import re

from generated import MATRIX, Spec, runs_here

from envcheck.facts import Facts, facts_from_dict, to_json
from envcheck.findings import BROKEN, CPU_ONLY, DEGRADED, GPU_READY, NOT_INSTALLED, Report, Severity
from envcheck.machine import minor
from envcheck.machine.gpus import GPU_LINK_NAMES
from envcheck.planner import make_plan
from envcheck.planner.steps import requirement
from envcheck.planner.target import target_from_facts
from envcheck.verdict import judge

# A pip install of a TensorFlow distribution: "tensorflow[and-cuda]==2.14.*", "tensorflow-gpu==1.15.5".
_TF_INSTALL = re.compile(r"^(tensorflow|tensorflow-gpu|tensorflow-cpu|tf-nightly[a-z-]*)(\[[^\]]*\])?==(\d+\.\d+)")


def judged(facts: Facts) -> Report:
    return judge(facts, matrix_loader=lambda: MATRIX)


def check(spec: Spec, facts: Facts, report: Report) -> None:
    for prop in PROPERTIES:
        try:
            prop(spec, facts, report)
        except AssertionError as exc:
            raise AssertionError(f"{prop.__name__} fails on {spec}: {exc}\n  verdict: {report.verdict.line}") from None


def no_finished_cpu_only_with_a_gpu_that_is_not_hidden(spec: Spec, facts: Facts, report: Report) -> None:
    """CPU only with exit 0 only where there is no NVIDIA GPU, or the user hid them all."""
    v = report.verdict
    if v.status == CPU_ONLY and report.exit_code == 0:
        assert not [g for g in report.gpus if not g.hidden], "CPU only, exit 0, beside a GPU that is not hidden"


def every_unusable_gpu_has_a_reason_and_a_finding(spec: Spec, facts: Facts, report: Report) -> None:
    ids = {f.id for f in report.findings}
    for g in report.gpus:
        if g.usable or g.hidden:
            continue
        assert g.reason, f"{g.label} is not usable and has no reason"
        assert g.finding in ids, f"{g.label} is not usable ({g.reason}) and no finding explains it"


def the_gpu_path_installs_one_release(spec: Spec, facts: Facts, report: Report) -> None:
    """No path installs two releases (what --apply runs, and the venv a step creates); no step is
    computed for one release beside a move to another."""
    for path in (report.verdict.gpu_path, report.verdict.cpu_path):
        installed = {
            m.group(3)
            for step in path
            for c in step.commands
            for arg in (c.pip_args or ())
            for m in [_TF_INSTALL.match(arg)]
            if m and c.pip_args[0] == "install"
        }
        in_venvs = {m.group(1) for step in path for c in step.commands for m in [_VENV_INSTALL.search(c.line)] if m}
        assert len(installed | in_venvs) <= 1, f"a path installs {sorted(installed | in_venvs)}"
    releases = {s.release for s in report.verdict.gpu_path if s.release is not None}
    assert len(releases) <= 1, f"the GPU path's steps serve {sorted(releases)}"


# The plan's own install into tf-env: "tf-env/bin/python -m pip install "tensorflow[and-cuda]==2.14.*"".
_VENV_INSTALL = re.compile(r"tf-env\S* -m pip install ['\"]?[a-z-]+(?:\[[^\]]*\])?==(\d+\.\d+)")


def no_step_left_without_a_cause_in_the_path(spec: Spec, facts: Facts, report: Report) -> None:
    """Every error is a step of the GPU path, or the consequence of one (its fix is that step's)."""
    v = report.verdict
    if v.status in (NOT_INSTALLED, GPU_READY, CPU_ONLY) and v.finished:
        return
    steps = {s.text.split(": ", 1)[0] for s in v.gpu_path}
    by_id = {f.id: f for f in report.findings}
    for f in report.findings:
        if f.severity is not Severity.ERROR or f.fix is None:
            continue
        root, seen = f, set()
        while root.id not in steps and root.caused_by in by_id and root.id not in seen:
            seen.add(root.id)
            root = by_id[root.caused_by]
        if root.id in steps:
            continue
        # A step computed for another release than the path's target was dropped on purpose.
        dropped = root.fix is not None and root.fix.release is not None
        assert dropped and root.fix.release not in {s.release for s in v.gpu_path}, (
            f"{f.id} ({f.title}) is neither a step nor the consequence of one"
        )


def ready_only_where_the_one_question_says_yes(spec: Spec, facts: Facts, report: Report) -> None:
    by_bus = {f"0000:{i + 1:02x}:00.0": card for i, card in enumerate(spec.cards)}
    for g in report.gpus:
        if g.usable and g.tested:
            card = by_bus.get(g.pci_bus_id)
            assert card is not None and runs_here(spec, card), f"{g.label} is usable, but the build does not run on it"


def the_status_matches_the_gpus(spec: Spec, facts: Facts, report: Report) -> None:
    v = report.verdict
    visible = [g for g in report.gpus if not g.hidden]
    usable = [g for g in visible if g.usable]
    assert v.gpus == len(usable), f"verdict counts {v.gpus} usable GPUs, the GPUs say {len(usable)}"
    if v.status == GPU_READY:
        assert usable and len(usable) == len(visible)
    if v.status == DEGRADED:
        assert 0 < len(usable) < len(visible) and report.exit_code == 1
    if v.status == BROKEN:
        assert report.exit_code == 1 and not v.finished
    if report.exit_code == 0:
        assert v.status in (GPU_READY, CPU_ONLY, NOT_INSTALLED)


def findings_name_gpus_that_exist(spec: Spec, facts: Facts, report: Report) -> None:
    keys = {g.key for g in report.gpus}
    for f in report.findings:
        assert set(f.gpus) <= keys, f"{f.id} names GPUs {f.gpus} the report does not have"


def hidden_gpus_are_neither_counted_nor_blamed(spec: Spec, facts: Facts, report: Report) -> None:
    for g in report.gpus:
        if g.hidden:
            assert not g.usable and g.finding is None and g.label not in report.verdict.reason


def doctor_and_plan_read_the_same_gpus(spec: Spec, facts: Facts, report: Report) -> None:
    target = target_from_facts(facts, MATRIX)
    expected = {"present": True, "absent": False, "unknown": None}[report.gpu_presence]
    assert target.has_gpu == expected, f"the doctor says {report.gpu_presence}, plan has_gpu={target.has_gpu}"
    seen = [g.name for g in report.gpus if not g.hidden] or [g.name for g in report.gpus]
    assert list(target.gpu_names) == seen, f"plan plans for {target.gpu_names}, the doctor sees {seen}"


def the_doctor_recommends_what_plan_recommends(spec: Spec, facts: Facts, report: Report) -> None:
    """Where the doctor recommends a release (before any is installed, or a GPU path that moves to
    another one), it is plan's for the same snapshot."""
    v = report.verdict
    installed = minor(spec.tf) if spec.installed else None
    moves = {s.release for s in v.gpu_path if s.release is not None and s.release != installed}
    if v.status != NOT_INSTALLED and not moves:
        return
    plan = make_plan(MATRIX, target_from_facts(facts, MATRIX))
    recommended = v.plan["tensorflow"] if v.status == NOT_INSTALLED else moves.pop()
    assert minor(recommended) == minor(plan.option.tf), f"doctor: {recommended}, plan: {plan.option.tf}"


def a_degraded_verdict_names_the_gpu_that_fails(spec: Spec, facts: Facts, report: Report) -> None:
    if report.verdict.status == DEGRADED:
        failing = [g for g in report.gpus if not g.usable and not g.hidden]
        assert any(g.label in report.verdict.reason for g in failing), "the verdict does not name the failing GPU"


def a_usable_gpu_has_no_broken_link(spec: Spec, facts: Facts, report: Report) -> None:
    for g in report.gpus:
        assert [link.name for link in g.links] == list(GPU_LINK_NAMES), f"{g.label}'s links are out of order"
        if g.usable:
            assert all(link.status in ("ok", "unknown") for link in g.links), f"{g.label} is usable with a broken link"


def exit_0_means_no_error(spec: Spec, facts: Facts, report: Report) -> None:
    if report.exit_code == 0:
        assert not [f for f in report.findings if f.severity is Severity.ERROR], "exit 0 beside an error finding"


def hidden_on_purpose_is_a_finished_cpu_only(spec: Spec, facts: Facts, report: Report) -> None:
    if spec.visible in ("", "-1") and spec.installed and report.gpus:
        assert report.verdict.status in (CPU_ONLY, BROKEN), report.verdict.status  # broken only if TF cannot run
        if report.verdict.status == CPU_ONLY and not [f for f in report.findings if f.severity is Severity.ERROR]:
            assert report.exit_code == 0 and report.verdict.finished


def the_cpu_path_installs_no_gpu_only_build(spec: Spec, facts: Facts, report: Report) -> None:
    for step in report.verdict.cpu_path:
        for c in step.commands:
            args = c.pip_args or ()
            if args and args[0] == "install":
                assert not any(a.startswith(("tensorflow-gpu", "tf-nightly-gpu")) for a in args), c.line


def a_ready_machine_has_nothing_to_do(spec: Spec, facts: Facts, report: Report) -> None:
    v = report.verdict
    if v.status == GPU_READY and not [f for f in report.findings if f.severity is Severity.ERROR]:
        assert v.gpu_path == () and report.exit_code == 0 and v.finished


def the_snapshot_is_the_only_input(spec: Spec, facts: Facts, report: Report) -> None:
    """Read back from its JSON, the snapshot gives the same verdict (what --facts relies on)."""
    again = judged(facts_from_dict(json.loads(to_json(facts))))
    assert again.verdict.to_dict() == report.verdict.to_dict()


def not_installed_gives_plans_install_line(spec: Spec, facts: Facts, report: Report) -> None:
    if report.verdict.status == NOT_INSTALLED and report.verdict.plan is not None:
        plan = make_plan(MATRIX, target_from_facts(facts, MATRIX))
        assert report.verdict.plan["requirement"] == requirement(plan.option)


PROPERTIES = (
    no_finished_cpu_only_with_a_gpu_that_is_not_hidden,
    every_unusable_gpu_has_a_reason_and_a_finding,
    the_gpu_path_installs_one_release,
    no_step_left_without_a_cause_in_the_path,
    ready_only_where_the_one_question_says_yes,
    the_status_matches_the_gpus,
    findings_name_gpus_that_exist,
    hidden_gpus_are_neither_counted_nor_blamed,
    doctor_and_plan_read_the_same_gpus,
    the_doctor_recommends_what_plan_recommends,
    a_degraded_verdict_names_the_gpu_that_fails,
    a_usable_gpu_has_no_broken_link,
    exit_0_means_no_error,
    hidden_on_purpose_is_a_finished_cpu_only,
    the_cpu_path_installs_no_gpu_only_build,
    a_ready_machine_has_nothing_to_do,
    not_installed_gives_plans_install_line,
)
# Slower (a JSON round trip and a second judgement): run on a sample.
ROUND_TRIP = the_snapshot_is_the_only_input
