"""A snapshot as a flat mapping of named facts, for comparison: ``nvml.driver_version``,
``env.variables[LD_LIBRARY_PATH]``, ``libraries.libraries[cudnn].copies[/usr/lib/libcudnn.so.8].origin``.

Lists whose items have an identity are keyed by it (a package by its name, a GPU by its index, a
library copy by its path), so an item added in the middle is one difference, not a shifted list.
Search paths keep their order (the first copy wins), as tuples. Everything is written in the
machine's own redacted form (``~`` for its home, ``<host>``, ``<user>``, ``<gpu-uuid>``), so two
machines whose only difference is who and where they are compare equal; noise (facets.is_noise)
is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from envcheck.compare.facets import is_noise
from envcheck.facts import Facts, to_dict
from envcheck.platform import LINUX, PLATFORMS
from envcheck.redact import redactor

FlatValue = str | tuple[str, ...]

# list path -> how its items are named
_KEYS: dict[str, Callable[[dict], str]] = {
    "packages.distributions": lambda d: str(d.get("name")),
    "pci.devices": lambda d: str(d.get("address")),
    "nvml.gpus": lambda d: str(d.get("index")),
    "libraries.libraries": lambda d: str(d.get("family")),
    "copies": lambda d: str(d.get("path")),
    "libraries.toolkits": lambda d: str(d.get("path")),
    "tensorflow.physical_devices": lambda d: str(d.get("name")),
    "tensorflow.logical_devices": lambda d: str(d.get("name")),
    "tensorflow.placement": lambda d: f"{d.get('op')} {d.get('requested')}",
    "processes": lambda d: str(d.get("pid")),
}
# Lists whose order is their meaning (the loader takes the first hit).
_ORDERED = ("libraries.search_path",)
# Variables holding search paths: compared entry by entry, in order.
_PATH_VARIABLES = ("PATH", "LD_LIBRARY_PATH")
# Fields that only repeat another one.
_DERIVED = ("directory",)

# A log line's own time stamp and process id: "2019-03-01 10:00:00.123456: W tensorflow/..." and
# absl's "W0000 00:00:1700000000.123456   12345 cuda_dnn.cc:535]".
_LOG_STAMP = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?:?\s*|([IWEF])\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s+\d+\s+)"
)


def normalise_log_line(line: str) -> str:
    match = _LOG_STAMP.match(line)
    if not match:
        return line
    return (match.group(1) + " " if match.group(1) else "") + line[match.end() :]


def flatten(facts: Facts) -> dict[str, FlatValue]:
    """``facts`` as {path: value}, noise left out, in this machine's redacted form."""
    redact = redactor(facts)
    out: dict[str, FlatValue] = {}
    data = to_dict(facts)
    separator = PLATFORMS.get(facts.platform.os or "", LINUX).path_separator
    for name, value in data.items():
        _walk(name, value, out, redact, separator)
    return {path: value for path, value in out.items() if not is_noise(path)}


def _walk(path: str, value: Any, out: dict[str, FlatValue], redact: Callable[[str], str], separator: str) -> None:
    if isinstance(value, dict):
        if path == "env.variables":
            for key, item in value.items():
                here = f"{path}[{key}]"
                if key in _PATH_VARIABLES and isinstance(item, str):
                    out[here] = tuple(redact(p) for p in item.split(separator) if p)
                else:
                    out[here] = redact(str(item))
            return
        if path.startswith("libraries.libraries[") and value.get("winners"):
            value = {
                **value,
                "winners": {
                    name: _copy_line(winner, value.get("copies") or ()) for name, winner in value["winners"].items()
                },
            }
        for key, item in value.items():
            if key in _DERIVED or (key == "winner" and value.get("winners")):
                continue  # a copy's folder is in its path; the winner is among the per-name winners
            inner = f"{path}[{redact(str(key))}]" if _is_mapping(path) else f"{path}.{key}"
            _walk(inner, item, out, redact, separator)
        return
    if isinstance(value, list):
        tail = path.rsplit(".", 1)[-1]
        key_of = _KEYS.get(_unkeyed(path)) or _KEYS.get(tail)
        if key_of is not None and all(isinstance(item, dict) for item in value):
            for item in value:
                key = key_of(item)
                # The field that names the item is in its key already; a copy's real path only
                # counts where it is another file.
                rest = {k: v for k, v in item.items() if str(v) != key}
                _walk(f"{path}[{redact(key)}]", rest, out, redact, separator)
            return
        if _unkeyed(path) in _ORDERED:
            out[path] = tuple(redact(str(v)) for v in value)
            return
        if path == "tensorflow.log_lines":
            for line in value:
                out[f"{path}[{redact(normalise_log_line(str(line)))}]"] = "present"
            return
        # Any other list is a set of words (cpu flags, module files, distributions).
        if value:
            out[path] = ", ".join(sorted(redact(str(v)) for v in value))
        return
    if value is None:
        return  # absent and null read the same: "not known"
    if isinstance(value, bool):
        out[path] = "yes" if value else "no"
    elif isinstance(value, float) and value.is_integer():
        out[path] = str(int(value))
    else:
        out[path] = redact(str(value))


def _copy_line(path: str, copies) -> str:
    """The copy the loader takes for a name, with its version and where it was found."""
    copy = next((c for c in copies if isinstance(c, dict) and c.get("path") == path), None)
    if copy is None:
        return path
    what = [copy.get("reported_version") or copy.get("file_version"), copy.get("origin")]
    if copy.get("loads") is False:
        what.append("does not load")
    return f"{path} ({', '.join(str(w) for w in what if w)})"


# Records (the snapshot's dataclasses) have fields; these fields are mappings of names, keyed.
_MAPPINGS = ("winners", "build_info", "query_errors", "details", "variables")


def _is_mapping(path: str) -> bool:
    return path.rsplit(".", 1)[-1] in _MAPPINGS


def _unkeyed(path: str) -> str:
    """ "libraries.libraries[cudnn].copies" -> "libraries.libraries.copies". By str.find, not
    re.sub(r"\\[[^\\]]*\\]"), which is quadratic on a key of many "[" (keys are snapshot text)."""
    kept, start = [], 0
    while True:
        opening = path.find("[", start)
        closing = path.find("]", opening + 1) if opening >= 0 else -1
        if closing < 0:
            kept.append(path[start:])
            return "".join(kept)
        kept.append(path[start:opening])
        start = closing + 1
