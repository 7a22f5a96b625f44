"""The ``--json`` report: one object; its schema is documented in the README."""

from __future__ import annotations

import json

from envcheck.findings import Report


def render(report: Report, verbose: bool = False, ensure_ascii: bool = False) -> str:
    del verbose  # the JSON report always carries everything
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=ensure_ascii) + "\n"
