"""Facts about one Python interpreter: itself and its TensorFlow-family distributions.

This file is also run as a standalone script inside another interpreter (``--python PATH``): it
imports only the standard library and prints one JSON object. Keep it that way.
"""

from __future__ import annotations

import json
import os
import platform
import re
import struct
import sys
import time

# Distributions the doctor cares about; every "nvidia-*" wheel is recorded too.
TF_FAMILY = (
    "tensorflow",
    "tensorflow-gpu",
    "tensorflow-cpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-metal",
    "tensorflow-io-gcs-filesystem",
    "tf-nightly",
    "tf-nightly-gpu",
    "tf-nightly-cpu",
    "tensorflow-rocm",
    "keras",
    "tf-keras",
    "jax",
    "jaxlib",
    "torch",
)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_facts() -> dict:
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    conda_prefix = os.environ.get("CONDA_PREFIX")
    in_conda = os.path.isdir(os.path.join(sys.prefix, "conda-meta"))
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "bits": struct.calcsize("P") * 8,
        "machine": platform.machine(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "in_virtualenv": in_venv,
        "in_conda": in_conda,
        "conda_prefix": sys.prefix if in_conda else conda_prefix,
        "pip_version": _pip_version(),
    }


def _pip_version() -> str | None:
    try:
        from importlib import metadata

        return metadata.version("pip")
    except Exception:  # noqa: BLE001 - no pip is a fact, not an error
        return None


def distributions() -> list[dict]:
    """Installed distributions of the TF family and every nvidia-* wheel, sorted by name."""
    from importlib import metadata

    found: dict[str, dict] = {}
    for dist in metadata.distributions():
        try:
            raw = dist.metadata["Name"]
        except Exception:  # noqa: BLE001 - a broken METADATA file must not stop the probe
            continue
        if not raw:
            continue
        name = _normalize(raw)
        if name not in TF_FAMILY and not name.startswith("nvidia-"):
            continue
        if name in found:  # two copies of one distribution: keep the first, it is the one imported
            continue
        try:
            location = str(dist.locate_file(""))
        except Exception:  # noqa: BLE001
            location = None
        requires = tuple(dist.requires or ()) if name in TF_FAMILY else ()
        found[name] = {
            "name": name,
            "version": dist.version or "",
            "location": location,
            "requires": list(requires),
        }
    return [found[k] for k in sorted(found)]


def collect() -> dict:
    started = time.perf_counter()
    out: dict = {"python": python_facts()}
    out["python"]["seconds"] = round(time.perf_counter() - started, 4)
    started = time.perf_counter()
    try:
        dists = distributions()
        out["packages"] = {"status": "ok", "distributions": dists}
    except Exception as exc:  # noqa: BLE001 - probes never raise
        out["packages"] = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "distributions": []}
    out["packages"]["seconds"] = round(time.perf_counter() - started, 4)
    return out


if __name__ == "__main__":
    json.dump(collect(), sys.stdout)
