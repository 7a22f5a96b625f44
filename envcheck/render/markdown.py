"""A paste-ready bug report in Markdown, redacted by default.

Redaction replaces the home folder (as a path prefix), the user name and the host name (full and
short, as whole tokens), GPU UUIDs and serial numbers (as whole tokens) everywhere in the report,
including the facts attached in ``<details>``; see ``redact_text`` for what is left alone.
"""

from __future__ import annotations

import dataclasses
import json

from envcheck.facts import to_dict
from envcheck.findings import Report, shown_once
from envcheck.printable import printable
from envcheck.redact import redactor, with_fields_redacted

_STATUS_WORD = {"ok": "ok", "warning": "warning", "error": "**error**", "skipped": "skipped"}


def render(report: Report, redact: bool = True, verbose: bool = False) -> str:
    del verbose
    if not redact:
        return _markdown(report)
    return redact_text(_markdown(_with_fields_redacted(report)), report)


def _with_fields_redacted(report: Report) -> Report:
    """The snapshot's own identifying fields replaced outright, whatever their values."""
    return dataclasses.replace(report, facts=with_fields_redacted(report.facts))


def _markdown(report: Report) -> str:
    facts = report.facts
    v = report.verdict
    lines = [
        "## envcheck report",
        "",
        f"**Verdict:** {printable(v.line)}",
        "",
        f"envcheck {report.envcheck_version}, snapshot taken {printable(facts.created or 'unknown')}"
        + (" (TensorFlow not probed: --quick)" if facts.quick else ""),
        "",
        "| Link | Status | Seen |",
        "| --- | --- | --- |",
    ]
    for link in report.links:
        lines.append(f"| {link.title} | {_STATUS_WORD.get(link.status, link.status)} | {_cell(link.summary)} |")
    lines += ["", "### Findings", ""] + _findings(report) + [""]
    lines += _ways_forward(report)
    lines += _environment(report)
    if facts.tensorflow.log_lines:
        lines.extend(_details("TensorFlow log lines", "\n".join(map(printable, facts.tensorflow.log_lines)), "text"))
    lines.extend(_details("Facts snapshot (JSON)", json.dumps(to_dict(facts), indent=2), "json"))
    return "\n".join(lines) + "\n"


def _findings(report: Report) -> list[str]:
    """Each finding with its fix; a fix that is a step of the ways forward points there."""
    if not report.findings:
        return ["None."]
    lines: list[str] = []
    in_a_path = _fixes_in_the_paths(report.verdict)
    for f in shown_once(report.findings):
        cause = f" (because of {f.caused_by})" if f.caused_by else ""
        lines.append(f"- **{f.id}** ({f.severity.value}) {printable(f.title)}{cause}")
        if f.detail:
            lines.append(f"  - {printable(f.detail)}")
        shown_below = _step_of(f.fix, in_a_path) if f.fix is not None else None
        if shown_below is not None:
            lines.append(f"  - Fix: {printable(f.fix.text)} (step {shown_below} below)")
        elif f.fix is not None:
            lines.append(f"  - Fix: {printable(f.fix.text)}")
            if f.fix.commands:
                lines += ["", "    ```"]
                lines.extend(
                    f"    {printable(c.line)}" + (f"   # {c.shell}" if c.shell != "any" else "") for c in f.fix.commands
                )
                lines.append("    ```")
            if f.fix.url:
                lines.append(f"  - See <{printable(f.fix.url)}>")
    return lines


def _ways_forward(report: Report) -> list[str]:
    """The GPU path and the CPU path, "two ways" only when there are two."""
    v = report.verdict
    if v.status in ("gpu-ready", "degraded") or not (v.gpu_path or v.cpu_path):
        return []
    lines = ["### Two ways forward" if v.gpu_path and v.cpu_path else "### The way forward", ""]
    for heading, steps in (("To use the GPU, in this order:", v.gpu_path), ("To run on the CPU today:", v.cpu_path)):
        if not steps:
            continue
        lines += [f"**{heading}**", ""]
        for n, step in enumerate(steps, 1):
            lines.append(f"{n}. {printable(step.text)}" + (f" See <{printable(step.url)}>" if step.url else ""))
            if step.commands:
                lines += ["", "   ```"] + [f"   {printable(c.line)}" for c in step.commands] + ["   ```"]
        lines.append("")
    return lines


def _environment(report: Report) -> list[str]:
    facts = report.facts
    py, pf = facts.python, facts.platform
    rows = [
        ("OS", " ".join(x for x in (pf.distro or pf.system, f"({pf.os})" if pf.os else "", pf.machine) if x)),
        ("Python", f"{py.implementation} {py.version} {py.bits}-bit at `{py.executable}`"),
        ("NVIDIA driver", facts.nvml.driver_version or facts.driver.version or "none found"),
        ("GPUs", ", ".join(f"{g.name} (cc {g.compute_capability})" for g in facts.nvml.gpus) or "none seen by NVML"),
        ("TensorFlow", facts.tensorflow.version or facts.tensorflow.status),
    ]
    lines = ["### Environment", ""] + [f"- **{name}:** {printable(value)}" for name, value in rows]
    dists = facts.packages.distributions
    if dists:
        lines.append("- **Packages:** " + printable(", ".join(f"{d.name} {d.version}" for d in dists)))
    return lines + [""]


def _fixes_in_the_paths(v) -> dict[frozenset[str], str]:
    """The command lines of each step the ways forward print -> "1 of the CPU path": a finding
    whose fix is such a step shows its commands once, there."""
    out: dict[frozenset[str], str] = {}
    for name, steps in (("the GPU path", v.gpu_path), ("the CPU path", v.cpu_path)):
        for n, step in enumerate(steps, 1):
            if step.commands:
                out.setdefault(frozenset(c.line for c in step.commands), f"{n} of {name}")
    return out


def _step_of(fix, in_a_path: dict[frozenset[str], str]):
    lines = frozenset(c.line for c in fix.commands)
    return in_a_path.get(lines) if lines else None


def _details(summary: str, body: str, lang: str) -> list[str]:
    fence = "````" if "```" in body else "```"
    return ["<details>", f"<summary>{summary}</summary>", "", fence + lang, body, fence, "", "</details>", ""]


def _cell(text: str) -> str:
    return printable(text).replace("|", "\\|")


def redact_text(text: str, report: Report) -> str:
    """Replace what identifies the person or the machine (``envcheck.redact``)."""
    return redactor(report.facts)(text)
