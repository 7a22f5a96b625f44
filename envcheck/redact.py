"""What identifies a person or a machine in a report, and its replacement: the home folder becomes
``~`` (as a path prefix), the user and host names ``<user>`` and ``<host>`` (full and short, as
whole tokens), GPU UUIDs ``<gpu-uuid>`` and serial numbers ``<serial>`` (as whole tokens). The
doctor's ``--markdown``, fleet's ``--markdown`` and diff (where two machines' names are no
difference) all replace the same things the same way.

Case-insensitive where the system is (Windows and macOS for paths and the user name; host names
everywhere). Names too short or too common to be told from the words around them are not replaced
as words (their home folder still is), so ``/usr/local/cuda/lib64`` never turns into noise."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable

from envcheck.facts import Facts
from envcheck.printable import printable

UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")

# Names too common in paths and reports to be redacted as words wherever they appear: a user
# called "lib" or a host called "cuda" must not turn /usr/local/cuda/lib64 into noise. Their
# home folder is still redacted (as a path prefix), and so is the full host name.
COMMON_WORDS = frozenset(
    {
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "bin",
        "sbin",
        "usr",
        "local",
        "opt",
        "etc",
        "var",
        "tmp",
        "srv",
        "mnt",
        "home",
        "root",
        "users",
        "user",
        "share",
        "include",
        "src",
        "data",
        "dev",
        "proc",
        "sys",
        "run",
        "boot",
        "cuda",
        "cudnn",
        "nvidia",
        "gpu",
        "cpu",
        "driver",
        "python",
        "python3",
        "site",
        "packages",
        "dist",
        "venv",
        "env",
        "conda",
        "anaconda",
        "miniconda",
        "miniforge",
        "envs",
        "pkgs",
        "tensorflow",
        "keras",
        "pip",
        "windows",
        "program",
        "files",
        "system32",
        "appdata",
        "roaming",
        "scripts",
        "admin",
        "administrator",
        "linux",
        "ubuntu",
        "debian",
        "fedora",
        "centos",
        "rocky",
        "alpine",
        "docker",
        "container",
        "localhost",
        "default",
        "test",
        "none",
        "null",
        "true",
        "false",
        "version",
        "release",
        "build",
        "cache",
        "config",
        "host",
        "serial",
        "uuid",  # inside the markers themselves
    }
)
MIN_NAME_LENGTH = 3  # "jo" or "x1" would match inside every other word
MIN_SERIAL_LENGTH = 4

# A name counts where it stands as a whole token: not preceded or followed by a letter or digit
# ("alice" in /srv/alice-tf, /data/alice_experiments and alice.example.org, never in "malice").
_BEFORE = r"(?<![^\W_])"
_AFTER = r"(?![^\W_])"
# Path separators as a report may write them: / or \ (the JSON form doubles the backslash).
_SEPARATOR = r"(?:/|\\{1,2})"


def redactor(facts: Facts, *, hostname: bool = True) -> Callable[[str], str]:
    """A function that redacts text written about the machine of ``facts``. ``hostname=False``
    keeps the host name (a fleet report is about which node is which)."""
    pf = facts.platform
    folded = (pf.os or "").lower() in ("windows", "macos") or (pf.system or "") in ("Windows", "Darwin")
    path_flags = re.IGNORECASE if folded else 0
    steps: list[tuple[re.Pattern[str], str]] = []

    home = (pf.home or "").rstrip("/\\")  # HOME=/home/me/ must not leave "~venv/..."
    if len(home) > 1 and not home.endswith(":"):  # never "/" nor a bare Windows drive
        pattern = _SEPARATOR.join(_escaped(p) for p in re.split(r"[/\\]+", home))
        steps.append((re.compile(pattern + r"(?![^\s/\\\"'`<>|,;:()\[\]*])", path_flags), "~"))
    for gpu in facts.nvml.gpus:
        if gpu.uuid and len(gpu.uuid) >= MIN_SERIAL_LENGTH:
            steps.append((_token(gpu.uuid, re.IGNORECASE), "<gpu-uuid>"))
        serial = (gpu.serial or "").strip()
        if len(serial) >= MIN_SERIAL_LENGTH and len(set(serial)) > 1 and serial.lower() not in ("n/a", "unknown"):
            steps.append((_token(serial, 0), "<serial>"))
    steps.append((UUID, "<gpu-uuid>"))
    if hostname:
        host = (pf.hostname or "").strip()
        for name in sorted({host, host.split(".")[0]}, key=len, reverse=True):
            if _redactable(name):
                steps.append((_token(name, re.IGNORECASE), "<host>"))
    user = (pf.user or "").strip()
    if _redactable(user):
        steps.append((_token(user, path_flags), "<user>"))

    def redact(text: str) -> str:
        for pattern, marker in steps:
            text = pattern.sub(marker, text)
        return text

    return redact


def with_fields_redacted(facts: Facts, *, hostname: bool = True) -> Facts:
    """The snapshot's own identifying fields replaced outright, whatever their values: a user
    called "ml" is not redacted as a word elsewhere, but its "user" field is still "<user>"."""
    pf = facts.platform
    platform = dataclasses.replace(
        pf,
        user="<user>" if pf.user else pf.user,
        hostname="<host>" if pf.hostname and hostname else pf.hostname,
        home="~" if pf.home else pf.home,
    )
    gpus = tuple(
        dataclasses.replace(g, uuid="<gpu-uuid>" if g.uuid else g.uuid, serial="<serial>" if g.serial else g.serial)
        for g in facts.nvml.gpus
    )
    return dataclasses.replace(facts, platform=platform, nvml=dataclasses.replace(facts.nvml, gpus=gpus))


def _redactable(name: str) -> bool:
    return len(name) >= MIN_NAME_LENGTH and name.lower() not in COMMON_WORDS


def _escaped(value: str) -> str:
    """``value`` as a pattern that also matches its JSON-escaped form (non-ASCII as \\uXXXX) and the
    form a report shows it in (control characters escaped by ``printable``)."""
    forms = {re.escape(value), re.escape(json.dumps(value)[1:-1]), re.escape(printable(value))}
    return forms.pop() if len(forms) == 1 else "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + ")"


def _token(value: str, flags: int) -> re.Pattern[str]:
    return re.compile(_BEFORE + _escaped(value) + _AFTER, flags)
