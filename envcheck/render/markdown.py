"""A paste-ready bug report in Markdown, redacted by default.

Redaction replaces the home folder (as a path prefix), the user name and the host name (full and
short, as whole tokens), GPU UUIDs and serial numbers (as whole tokens) everywhere in the report,
including the facts attached in ``<details>``; see ``redact_text`` for what is left alone.
"""

from __future__ import annotations

import dataclasses
import json
import re

from envcheck.facts import to_dict
from envcheck.findings import Report

_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
_STATUS_WORD = {"ok": "ok", "warning": "warning", "error": "**error**", "skipped": "skipped"}


def render(report: Report, redact: bool = True, verbose: bool = False) -> str:
    del verbose
    if not redact:
        return _markdown(report)
    return redact_text(_markdown(_with_fields_redacted(report)), report)


def _with_fields_redacted(report: Report) -> Report:
    """The snapshot's own identifying fields replaced outright, whatever their values: a user
    called "ml" is not redacted as a word elsewhere, but its "user" field is still "<user>"."""
    facts = report.facts
    pf = facts.platform
    platform = dataclasses.replace(
        pf,
        user="<user>" if pf.user else pf.user,
        hostname="<host>" if pf.hostname else pf.hostname,
        home="~" if pf.home else pf.home,
    )
    gpus = tuple(
        dataclasses.replace(g, uuid="<gpu-uuid>" if g.uuid else g.uuid, serial="<serial>" if g.serial else g.serial)
        for g in facts.nvml.gpus
    )
    facts = dataclasses.replace(facts, platform=platform, nvml=dataclasses.replace(facts.nvml, gpus=gpus))
    return dataclasses.replace(report, facts=facts)


def _markdown(report: Report) -> str:
    facts = report.facts
    v = report.verdict
    lines = [
        "## envcheck report",
        "",
        f"**Verdict:** {v.line}",
        "",
        f"envcheck {report.envcheck_version}, snapshot taken {facts.created or 'unknown'}"
        + (" (TensorFlow not probed: --quick)" if facts.quick else ""),
        "",
        "| Link | Status | Seen |",
        "| --- | --- | --- |",
    ]
    for link in report.links:
        lines.append(f"| {link.title} | {_STATUS_WORD.get(link.status, link.status)} | {_cell(link.summary)} |")
    lines.append("")

    lines.append("### Findings")
    lines.append("")
    if not report.findings:
        lines.append("None.")
    for f in report.findings:
        cause = f" (because of {f.caused_by})" if f.caused_by else ""
        lines.append(f"- **{f.id}** ({f.severity.value}) {f.title}{cause}")
        if f.detail:
            lines.append(f"  - {f.detail}")
        if f.fix is not None:
            lines.append(f"  - Fix: {f.fix.text}")
            if f.fix.commands:
                lines.append("")
                lines.append("    ```")
                lines.extend(f"    {c.line}" + (f"   # {c.shell}" if c.shell != "any" else "") for c in f.fix.commands)
                lines.append("    ```")
            if f.fix.url:
                lines.append(f"  - See <{f.fix.url}>")
    lines.append("")

    if v.status != "gpu-ready" and (v.gpu_path or v.cpu_path):
        lines.append("### Two ways forward")
        lines.append("")
        for heading, steps in (("To use the GPU, in this order:", v.gpu_path), ("To run on the CPU today:", v.cpu_path)):
            if not steps:
                continue
            lines.append(f"**{heading}**")
            lines.append("")
            for n, step in enumerate(steps, 1):
                lines.append(f"{n}. {step.text}" + (f" See <{step.url}>" if step.url else ""))
                if step.commands:
                    lines.append("")
                    lines.append("   ```")
                    lines.extend(f"   {c.line}" for c in step.commands)
                    lines.append("   ```")
            lines.append("")

    lines.append("### Environment")
    lines.append("")
    py, pf = facts.python, facts.platform
    rows = [
        ("OS", " ".join(x for x in (pf.distro or pf.system, f"({pf.os})" if pf.os else "", pf.machine) if x)),
        ("Python", f"{py.implementation} {py.version} {py.bits}-bit at `{py.executable}`"),
        ("NVIDIA driver", facts.nvml.driver_version or facts.driver.version or "none found"),
        ("GPUs", ", ".join(f"{g.name} (cc {g.compute_capability})" for g in facts.nvml.gpus) or "none seen by NVML"),
        ("TensorFlow", facts.tensorflow.version or facts.tensorflow.status),
    ]
    for name, value in rows:
        lines.append(f"- **{name}:** {value}")
    dists = facts.packages.distributions
    if dists:
        lines.append("- **Packages:** " + ", ".join(f"{d.name} {d.version}" for d in dists))
    lines.append("")

    if facts.tensorflow.log_lines:
        lines.extend(_details("TensorFlow log lines", "\n".join(facts.tensorflow.log_lines), "text"))
    lines.extend(_details("Facts snapshot (JSON)", json.dumps(to_dict(facts), indent=2), "json"))
    return "\n".join(lines) + "\n"


def _details(summary: str, body: str, lang: str) -> list[str]:
    fence = "````" if "```" in body else "```"
    return ["<details>", f"<summary>{summary}</summary>", "", fence + lang, body, fence, "", "</details>", ""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# Names too common in paths and reports to be redacted as words wherever they appear: a user
# called "lib" or a host called "cuda" must not turn /usr/local/cuda/lib64 into noise. Their
# home folder is still redacted (as a path prefix), and so is the full host name.
COMMON_WORDS = frozenset({
    "lib", "lib32", "lib64", "libx32", "bin", "sbin", "usr", "local", "opt", "etc", "var", "tmp", "srv", "mnt",
    "home", "root", "users", "user", "share", "include", "src", "data", "dev", "proc", "sys", "run", "boot",
    "cuda", "cudnn", "nvidia", "gpu", "cpu", "driver", "python", "python3", "site", "packages", "dist",
    "venv", "env", "conda", "anaconda", "miniconda", "miniforge", "envs", "pkgs", "tensorflow", "keras", "pip",
    "windows", "program", "files", "system32", "appdata", "roaming", "scripts", "admin", "administrator",
    "linux", "ubuntu", "debian", "fedora", "centos", "rocky", "alpine", "docker", "container", "localhost",
    "default", "test", "none", "null", "true", "false", "version", "release", "build", "cache", "config",
    "host", "serial", "uuid",  # inside the markers themselves
})
MIN_NAME_LENGTH = 3  # "jo" or "x1" would match inside every other word
MIN_SERIAL_LENGTH = 4

# A name counts where it stands as a whole token: not preceded or followed by a letter or digit
# ("alice" in /srv/alice-tf, /data/alice_experiments and alice.example.org, never in "malice").
_BEFORE = r"(?<![^\W_])"
_AFTER = r"(?![^\W_])"
# Path separators as a report may write them: / or \ (the JSON form doubles the backslash).
_SEPARATOR = r"(?:/|\\{1,2})"


def redact_text(text: str, report: Report) -> str:
    """Replace what identifies the person or the machine: the home folder (as a path prefix), the
    user name and the host name (full and short) as whole tokens, GPU UUIDs and serial numbers as
    whole tokens. Case-insensitive where the system is (Windows and macOS for paths and the user
    name; host names everywhere)."""
    facts = report.facts
    pf = facts.platform
    folded = (pf.os or "").lower() in ("windows", "macos") or (pf.system or "") in ("Windows", "Darwin")
    path_flags = re.IGNORECASE if folded else 0

    home = (pf.home or "").rstrip("/\\")  # HOME=/home/me/ must not leave "~venv/..."
    if len(home) > 1 and not home.endswith(":"):  # never "/" nor a bare Windows drive
        parts = [p for p in re.split(r"[/\\]+", home)]
        pattern = _SEPARATOR.join(_escaped(p) for p in parts)
        text = re.sub(pattern + r"(?![^\s/\\\"'`<>|,;:()\[\]*])", "~", text, flags=path_flags)

    for gpu in facts.nvml.gpus:
        if gpu.uuid and len(gpu.uuid) >= MIN_SERIAL_LENGTH:
            text = _sub_token(gpu.uuid, "<gpu-uuid>", text, re.IGNORECASE)
        serial = (gpu.serial or "").strip()
        if len(serial) >= MIN_SERIAL_LENGTH and len(set(serial)) > 1 and serial.lower() not in ("n/a", "unknown"):
            text = _sub_token(serial, "<serial>", text, 0)
    text = _UUID.sub("<gpu-uuid>", text)

    hostname = (pf.hostname or "").strip()
    for name in sorted({hostname, hostname.split(".")[0]}, key=len, reverse=True):
        if _redactable(name):
            text = _sub_token(name, "<host>", text, re.IGNORECASE)
    user = (pf.user or "").strip()
    if _redactable(user):
        text = _sub_token(user, "<user>", text, path_flags)
    return text


def _redactable(name: str) -> bool:
    return len(name) >= MIN_NAME_LENGTH and name.lower() not in COMMON_WORDS


def _escaped(value: str) -> str:
    """``value`` as a pattern that also matches its JSON-escaped form (non-ASCII as \\uXXXX)."""
    forms = {re.escape(value), re.escape(json.dumps(value)[1:-1])}
    return forms.pop() if len(forms) == 1 else "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + ")"


def _sub_token(value: str, marker: str, text: str, flags: int) -> str:
    return re.sub(_BEFORE + _escaped(value) + _AFTER, marker, text, flags=flags)
