"""EC-TF-008's fix: no pip command that installs a package called envcheck into the probed interpreter."""

from __future__ import annotations

from envcheck.verdict import judge
from tests.rules import builders


def test_release_outside_the_matrix_points_at_the_matrix_not_at_pip():
    facts = builders.with_tf(builders.server(), "tensorflow", "9.1.0")
    finding = next(f for f in judge(facts).findings if f.id == "EC-TF-008")
    assert finding.fix is not None and "--matrix FILE" in finding.fix.text
    assert not any("envcheck" in c.line for c in finding.fix.commands)
