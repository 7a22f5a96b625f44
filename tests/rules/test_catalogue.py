"""The rule catalogue: every rule fires on its triggering snapshot and stays quiet on the close one."""

from __future__ import annotations

import re

import pytest

from envcheck.findings import LINK_NAMES, Severity
from envcheck.rules import RULES
from envcheck.rules.engine import load_rule_modules
from envcheck.verdict import judge

from .cases import CASES

load_rule_modules()

# id prefix -> the chain link its rules belong to (the agreed catalogue)
PREFIX_LINKS = {
    "EC-PY": "python",
    "EC-GPU": "gpu",
    "EC-DRV": "driver",
    "EC-CC": "compute",
    "EC-LIB": "libraries",
    "EC-TF": "tensorflow",
    "EC-PLC": "placement",
    "EC-ENV": "environment",
    "EC-PERF": "multigpu",
}


def ids(report, rule_id):
    return [f for f in report.findings if f.id == rule_id]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rule_fires_on_its_trigger(case):
    report = judge(case.trigger())
    found = ids(report, case.rule)
    assert found, f"{case.rule} did not fire; findings: {[f.id for f in report.findings]}"
    if case.severity:
        assert {f.severity.value for f in found} == {case.severity}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rule_stays_quiet_on_the_close_case(case):
    report = judge(case.clear())
    assert not ids(report, case.rule), [f.title for f in ids(report, case.rule)]


def test_every_registered_rule_has_a_case():
    covered = {c.rule for c in CASES}
    missing = sorted(set(RULES) - covered)
    assert not missing, f"rules without a trigger/clear case in tests/rules/cases.py: {missing}"


def test_ids_follow_the_catalogue():
    for rule_id, r in RULES.items():
        match = re.fullmatch(r"(EC-[A-Z]+)-(\d{3})", rule_id)
        assert match, rule_id
        assert PREFIX_LINKS[match.group(1)] == r.link, rule_id
        assert r.title and r.link in LINK_NAMES


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_finding_says_what_to_do(case):
    """A person reading an error or warning must get a fix; pip steps carry exactly what --apply runs."""
    for finding in judge(case.trigger()).findings:
        if finding.severity is Severity.INFO and finding.fix is None:
            continue
        assert finding.fix is not None and finding.fix.text, finding.id
        assert finding.evidence, f"{finding.id} shows no evidence"
        for command in finding.fix.commands:
            assert command.shell in ("any", "bash", "powershell")
            if command.pip_args:
                assert " -m pip " + command.pip_args[0] in command.line
                for arg in command.pip_args:
                    assert arg in command.line or f"'{arg}'" in command.line


def test_commands_are_for_the_platform_shell():
    from . import builders as b

    windows = judge(b.setup_post())
    linux = judge(b.no_gpu())
    for report, other in ((windows, "bash"), (linux, "powershell")):
        shells = {c.shell for f in report.findings if f.fix for c in f.fix.commands}
        shells |= {c.shell for step in report.verdict.cpu_path + report.verdict.gpu_path for c in step.commands}
        assert other not in shells


def test_rule_ids_are_issued_once_and_never_reused():
    """Every registered id is on the issued list; every issued id is registered or retired; a
    retired id is never registered again; the list has no repeats."""
    from envcheck.rules.engine import ISSUED, RETIRED

    load_rule_modules()
    assert len(ISSUED) == len(set(ISSUED))
    registered = set(RULES) | {"EC-INT-001"}
    assert registered <= set(ISSUED), f"new rule ids must be added to ISSUED: {sorted(registered - set(ISSUED))}"
    assert set(ISSUED) - set(RETIRED) == registered, (
        f"removed rules must be retired: {sorted(set(ISSUED) - set(RETIRED) - registered)}"
    )
    assert not set(RETIRED) & set(RULES)


def test_a_retired_id_cannot_be_registered_again(monkeypatch):
    import pytest

    from envcheck.rules import engine

    monkeypatch.setitem(engine.RETIRED, "EC-TST-001", "a test")
    with pytest.raises(ValueError, match="retired"):
        engine.rule("EC-TST-001", "t", "info", "python")(lambda ctx: ())
