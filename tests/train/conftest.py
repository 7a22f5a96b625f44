"""Fixtures for the trainer's tests (helpers live in train_helpers.py)."""

from __future__ import annotations

import pytest
from train_helpers import subprocess_env


@pytest.fixture
def train_env(tmp_path) -> dict:
    return subprocess_env(tmp_path)
