"""Argument types the commands share: one reading of "a positive number" for every flag."""

from __future__ import annotations

import argparse
import math


def positive_float(text: str) -> float:
    """A finite number above 0 ("inf" and "nan" are no seconds and no learning rate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value
