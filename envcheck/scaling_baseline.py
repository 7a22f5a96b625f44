"""One device's images/s as ``validate --scaling`` last measured it, kept in envcheck's cache
folder (beside the archives ``envcheck train`` unpacks), so that ``envcheck train`` can say at
the end how its own rate compares with one device.

A record is keyed by the kind of device ("gpu" or "cpu") and the per-replica batch: the rate of
one device at another batch says nothing about this run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

FILE_NAME = "scaling-baseline.json"


def baseline_file(environ: Optional[dict] = None) -> Path:
    """$XDG_CACHE_HOME/envcheck (or ~/.cache/envcheck)/scaling-baseline.json."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "envcheck" / FILE_NAME


def _key(kind: str, batch_per_replica: int) -> str:
    return f"{kind.lower()}:{int(batch_per_replica)}"


def read_baselines(path: Optional[Path] = None) -> dict[str, Any]:
    try:
        data = json.loads((path or baseline_file()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_one_device(
    kind: str,
    batch_per_replica: int,
    images_per_second: float,
    *,
    device: str,
    measured: str,
    path: Optional[Path] = None,
) -> Optional[Path]:
    """Keep this measurement for ``envcheck train``; the file it went to, or None when it cannot be written."""
    target = path or baseline_file()
    records = read_baselines(target)
    records[_key(kind, batch_per_replica)] = {
        "images_per_second": round(float(images_per_second), 2),
        "device": device,
        "measured": measured,
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(target.name + ".tmp")
        temp.write_text(json.dumps(records, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temp, target)
    except OSError:
        return None
    return target


def compared_with_one_device(
    images_per_second: Optional[float], replicas: int, kind: str, batch_per_replica: int, path: Optional[Path] = None
) -> Optional[str]:
    """ "3.6x one device (141.2 images/s on one CPU device, validate --scaling on 2026-12-01; 90%
    of linear)", or None when no one-device figure for this kind and batch is known."""
    record = read_baselines(path).get(_key(kind, batch_per_replica))
    if not images_per_second or not isinstance(record, dict):
        return None
    one = record.get("images_per_second")
    if not isinstance(one, (int, float)) or one <= 0:
        return None
    ratio = images_per_second / one
    when = str(record.get("measured", ""))[:10]
    source = f"{one:,.1f} images/s on one {record.get('device') or kind.upper()} device, validate --scaling" + (
        f" on {when}" if when else ""
    )
    efficiency = f"; {ratio / replicas:.0%} of linear" if replicas > 1 else ""
    return f"{ratio:.2f}x one device ({source}{efficiency})"
