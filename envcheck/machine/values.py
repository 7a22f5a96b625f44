"""How envcheck reads the small values a snapshot holds: versions, device names, error texts and
product names. Pure functions, shared by every reader of a machine."""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import InvalidVersion, Version

from envcheck.words import bracketed

# Whether a machine has an NVIDIA GPU, as its probes can tell (``Machine.gpu_presence``).
PRESENT = "present"
ABSENT = "absent"
UNKNOWN = "unknown"


def parse_version(text: object) -> Optional[Version]:
    """A version as the machine reported it, or None when it is none: the same rule as a version a
    person types (``matrix.as_version``): no part of a release number is longer than 9 digits."""
    try:
        version = Version(str(text).strip())
    except (InvalidVersion, TypeError, ValueError):  # ValueError: a number past int()'s digit limit
        return None
    return version if all(part < 10**9 for part in version.release) else None


def minor(version: object) -> str:
    """ "2.15.1" -> "2.15"; "12" -> "12" (what a person types after ==...*)."""
    v = parse_version(version)
    if v is None:
        return str(version)
    return ".".join(str(p) for p in v.release[:2])


def short_device(device: Optional[str]) -> str:
    """ "/job:localhost/replica:0/task:0/device:GPU:1", "/device:GPU:1", "/gpu:1" -> "GPU:1"."""
    if not device:
        return "?"
    # Read from the end, not by re.search("([A-Za-z_]+):(\\d+)$"), which is quadratic on a long
    # string (87 s for 100,000 characters). An ordinal past 9 digits is no device: left as it is.
    kind, colon, index = device.rstrip("/").rpartition(":")
    if not colon or not 0 < len(index) <= 9 or not (index.isascii() and index.isdigit()):
        return device
    start = len(kind)
    while start > 0 and (kind[start - 1] == "_" or (kind[start - 1].isascii() and kind[start - 1].isalpha())):
        start -= 1
    return f"{kind[start:].upper()}:{index}" if start < len(kind) else device


_ERROR_LINE = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Failure)|Fatal Python error|Segmentation fault)\b[: ]"
)


def telling_line(text: Optional[str]) -> str:
    """The line of an error text that says what went wrong: the last "SomethingError: ..." that is
    not a traceback header (TensorFlow 1.x follows the real error with a generic paragraph)."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    named = [ln for ln in lines if _ERROR_LINE.match(ln) and not ln.endswith("Traceback (most recent call last):")]
    if named:
        return named[-1]
    return lines[-1] if lines else ""


def pci_product_name(name: Optional[str]) -> Optional[str]:
    """pci.ids spells "GP106 [GeForce GTX 1060 6GB]": the marketing name is in the brackets."""
    if not name:
        return None
    return bracketed(name) or name


_CAPABILITY = re.compile(r"^\d{1,2}\.\d{1,2}$", re.ASCII)


def capability(text: Optional[str]) -> Optional[str]:
    """A compute capability as NVML, TensorFlow or the matrix write it ("8.6"), or None for
    anything that is not MAJOR.MINOR (a hand-edited or damaged snapshot)."""
    cleaned = (text or "").strip()
    return cleaned if _CAPABILITY.match(cleaned) else None
