"""The doctor's ``--json`` report: one document in the common envelope; its keys are in the README."""

from __future__ import annotations

from envcheck.findings import Report
from envcheck.render import json_text


def render(report: Report, verbose: bool = False, ensure_ascii: bool = False) -> str:
    del verbose  # the JSON report always carries everything
    return json_text("doctor", report.to_dict(), report.exit_code, ensure_ascii=ensure_ascii)
