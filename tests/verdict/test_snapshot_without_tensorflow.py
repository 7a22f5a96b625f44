"""A snapshot that has no TensorFlow section (written by hand, or trimmed before it was shared)
says that, not that ``--quick`` skipped TensorFlow; a ``--quick`` snapshot still says --quick."""

from __future__ import annotations

import json

from envcheck.facts import SCHEMA_VERSION, SKIPPED, facts_from_dict

BASE = {
    "schema_version": SCHEMA_VERSION,
    "platform": {"os": "linux", "machine": "x86_64"},
    "python": {"version": "3.11.7", "executable": "/usr/bin/python3", "bits": 64},
}


def test_a_snapshot_without_the_section_says_so(cli, tmp_path):
    facts = facts_from_dict(BASE)
    assert facts.tensorflow.status == SKIPPED and "no TensorFlow section" in facts.tensorflow.error
    path = tmp_path / "hand-written.json"
    path.write_text(json.dumps(BASE))
    result = cli("doctor", "--facts", str(path))
    assert "the snapshot has no TensorFlow section" in result.out
    assert "(--quick)" not in result.out


def test_a_quick_snapshot_still_says_quick(cli, tmp_path):
    facts = facts_from_dict({**BASE, "quick": True})
    assert facts.tensorflow.status == SKIPPED and facts.tensorflow.error is None
    path = tmp_path / "quick.json"
    path.write_text(json.dumps({**BASE, "quick": True}))
    assert "(--quick)" in cli("doctor", "--facts", str(path)).out
