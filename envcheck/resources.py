"""Where the data files shipped with envcheck are found (installed wheel or source checkout)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_file(name: str) -> Path:
    """Path of a top-level data file: inside the package when installed, else the checkout root."""
    inside = _PACKAGE_DIR / name
    if inside.exists():
        return inside
    return _PACKAGE_DIR.parent / name
