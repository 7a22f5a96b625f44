"""docs/reliability.md names the test that holds each promise: every one it names must exist."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_every_test_the_reliability_page_names_exists():
    page = (REPO / "docs" / "reliability.md").read_text()
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", page)
    assert len(named) >= 30
    missing = [
        f"{path}::{name}" for path, name in named if not re.search(rf"^def {name}\(", (REPO / path).read_text(), re.M)
    ]
    assert not missing, missing
