"""What identifies a person or a machine in a report, and its replacement: the home folder becomes
``~``, the user and host names ``<user>`` and ``<host>``, GPU UUIDs ``<gpu-uuid>`` and serial numbers
``<serial>``. The doctor's ``--markdown``, fleet's ``--markdown`` and diff (where two machines'
names are no difference) all replace the same things the same way."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from envcheck.facts import Facts

UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")


def redactor(facts: Facts, *, hostname: bool = True) -> Callable[[str], str]:
    """A function that redacts text written about the machine of ``facts``. ``hostname=False``
    keeps the host name (a fleet report is about which node is which)."""
    pf = facts.platform
    replacements: list[tuple[str, str]] = []
    home = (pf.home or "").rstrip("/\\")  # HOME=/home/me/ must not leave "~venv/..."
    if len(home) > 1 and not home.endswith(":"):  # never "/" nor a bare Windows drive
        replacements.append((home, "~"))
    for gpu in facts.nvml.gpus:
        if gpu.serial:
            replacements.append((gpu.serial, "<serial>"))
        if gpu.uuid:
            replacements.append((gpu.uuid, "<gpu-uuid>"))
    # Longest first, so a home folder inside another path is replaced whole.
    replacements.sort(key=lambda r: -len(r[0]))
    words = [(re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-])"), marker)
             for value, marker in (((pf.hostname if hostname else None), "<host>"), (pf.user, "<user>"))
             if value and len(value) >= 2]

    def redact(text: str) -> str:
        for old, new in replacements:
            if old in text:
                text = text.replace(old, new)
            escaped = json.dumps(old)[1:-1]  # the JSON-escaped form (Windows backslashes)
            if escaped != old and escaped in text:
                text = text.replace(escaped, new)
        text = UUID.sub("<gpu-uuid>", text)
        for pattern, marker in words:
            text = pattern.sub(marker, text)
        return text

    return redact
