"""``envcheck scan``: one line per environment (where, Python, TensorFlow, GPU, how it was reached,
the first broken link), then the scan's own findings with their fixes."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from envcheck.facts import facts_from_dict
from envcheck.printable import printable
from envcheck.render import json_text
from envcheck.render.lines import Lines, clip, clip_middle, wrap_words
from envcheck.render.terminal import SHORT_TITLES
from envcheck.scan.discover import HOW_ORDER, KERNEL, VIRTUALENV
from envcheck.scan.result import Scan
from envcheck.scan.run import OK, Environment
from envcheck.words import plural

_SHORT_HOW = {VIRTUALENV: "venv"}
_STATUS_STYLE = {
    "gpu-ready": "green",
    "degraded": "yellow",
    "cpu-only": "yellow",
    "broken": "red",
    "not-installed": "cyan",
    None: "red",
}


@dataclass(frozen=True)
class Row:
    """One environment's line: the doctor's answer in a few cells."""

    where: str
    python: str
    tensorflow: str  # "2.21.0", "2.21.0 cpu", "none", "?"
    gpu: str  # "yes", "no", "?"
    reached: str  # "running, PATH, pyenv"
    first_broken: str  # "Driver: driver 470.57 is too old ...", "none", or why it was not checked
    status: str | None  # the verdict's status; None when the doctor did not answer


# Prefixes whose bin folder holds the system's own interpreters: there the interpreter names the row.
_SYSTEM_PREFIXES = {"/", "/usr", "/usr/local", "/opt/homebrew", "/opt/local"}


def environment_folder(interpreter: str) -> str:
    """Where an environment lives, as a person names it: ``~/projects/a/.venv`` for
    ``~/projects/a/.venv/bin/python3``, ``~/.pyenv/versions/3.11.7`` for its python; a system
    interpreter (``/usr/bin/python3``) and anything else stay as they are."""
    head, name = os.path.split(interpreter)
    lowered = name.lower()
    if not lowered.startswith("python"):
        return interpreter
    folder, bin_name = os.path.split(head)
    if bin_name in ("bin", "Scripts") and folder and folder not in _SYSTEM_PREFIXES:
        return folder
    if lowered == "python.exe" and head:  # a conda environment or a Windows install keeps it at its root
        return head
    return interpreter


def row(env: Environment, home: str = "") -> Row:
    """One environment's cells, each as it may be shown (every value here came from the machine)."""
    cells = _cells(env, home)
    return dataclasses.replace(
        cells, **{f.name: printable(getattr(cells, f.name)) for f in dataclasses.fields(cells) if f.name != "status"}
    )


def _cells(env: Environment, home: str) -> Row:
    where = tilde(environment_folder(env.interpreter), home)
    kinds = [_SHORT_HOW.get(c.how, c.how) for c in sorted(env.reached, key=lambda c: HOW_ORDER.index(c.how))]
    kernels = [c.detail for c in env.reached if c.how == KERNEL]
    reached = ", ".join(
        k if k != "kernel" else "kernel " + ",".join(dict.fromkeys(kernels)) for k in dict.fromkeys(kinds)
    )
    if env.status != OK or not env.report:
        return Row(where, env.version, "?", "?", reached, f"not checked: {env.error}", None)
    verdict = env.report.get("verdict") or {}
    tf = _tensorflow(env.report)
    link = verdict.get("first_broken_link")
    status = verdict.get("status")
    if status == "gpu-ready" and not verdict.get("finding_id"):
        broken = "none"
    elif status == "cpu-only" and _finished(env.report, link):
        broken = "none (CPU only)"  # no NVIDIA GPU, or hidden on purpose: nothing is broken
    elif status == "not-installed":
        broken = f"{SHORT_TITLES['tensorflow']}: not installed"
    elif link:
        # A link that is not in error (no GPU at all, TensorFlow not installed yet) is said as the
        # doctor's chain line says it; a broken one by the verdict's reason.
        seen = next((x for x in env.report.get("links") or () if x.get("name") == link), {})
        reason = (
            verdict.get("reason", "") if seen.get("status") == "error" or not seen.get("summary") else seen["summary"]
        )
        title = SHORT_TITLES.get(link, link)
        if reason.startswith(title + " ") and reason[len(title) + 1 :][:1].isdigit():
            reason = reason[len(title) + 1 :]  # "Python: Python 2.7 is too old" says it twice
        broken = f"{title}: {reason}"
    else:
        broken = str(verdict.get("reason", ""))
    return Row(where, env.version, tf, "yes" if (verdict.get("gpus") or 0) > 0 else "no", reached, broken, status)


def _finished(report: dict, link: str | None) -> bool:
    """CPU only as a finished state: the link that decided it is not in error or warning (the
    doctor's own chain line says "–" there) and no error finding stands."""
    seen = next((x for x in report.get("links") or () if x.get("name") == link), {})
    errors = [f for f in report.get("findings") or () if f.get("severity") == "error"]
    return seen.get("status") not in ("error", "warning") and not errors


def _tensorflow(report: dict) -> str:
    # lazy for start-up: keeps machine out of every import of render.scan
    from envcheck.machine import Machine

    try:
        machine = Machine(facts_from_dict(report["facts"]))
        installed = machine.installed_tf
    except Exception:  # noqa: BLE001 - a report this release cannot read back: say so, show the rest
        return "?"
    if installed is None:
        return "none"
    return installed.version + (" cpu" if machine.is_cuda_tf is False else "")


def _tilde_words(text: str, home: str) -> str:
    """Paths under the home folder written from ~ in a sentence (commands keep them whole)."""
    home = home.rstrip("/\\")
    return text.replace(home + os.sep, "~" + os.sep) if len(home) > 1 else text


def tilde(path: str, home: str) -> str:
    home = home.rstrip("/\\")
    if len(home) > 1 and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def fit_labels(text: str, width: int) -> str:
    """ "running, PATH, venv, kernel vision" in ``width``: as many as fit, then "+N" for the rest."""
    if len(text) <= width:
        return text
    labels = text.split(", ")
    for keep in range(len(labels) - 1, 0, -1):
        shown = ",".join(labels[:keep]) + f" +{len(labels) - keep}"
        if len(shown) <= width:
            return shown
    return clip(labels[0], width)


def render_json(result: Scan, exit_code: int) -> str:
    return json_text("scan", result.to_dict(), exit_code)


def render(
    result: Scan, home: str = "", verbose: bool = False, width: int | None = None, color: bool | None = None
) -> str:
    out = Lines(width, color)
    mode = "full: TensorFlow imported in each" if result.full else "quick: TensorFlow not imported; --full imports it"
    out.line(
        out.style("envcheck scan", "bold"),
        f"  {plural(len(result.environments), 'environment')} in {result.seconds:.1f} s ({mode})",
        hang=2,
    )
    out.blank()
    rows = [row(e, home) for e in result.environments]
    if rows:
        _table(out, rows)
    else:
        out.line("  No Python environment found.")
    _kernel_variables(out, result.environments)
    if verbose:
        for env, r in zip(result.environments, rows):
            out.blank()
            out.line(f"  {r.where}", hang=4)
            out.line("    reached: ", printable(", ".join(env.labels)), hang=13)
            if env.report:
                out.line("    verdict: ", printable((env.report.get("verdict") or {}).get("line", "")), hang=13)
            if env.seconds is not None:
                out.line(f"    checked in {env.seconds:.1f} s")
    if result.skipped:
        out.blank()
        for s in result.skipped:
            out.line(out.style(printable(f"skipped: {tilde(s.where, home)}: {s.why}"), "dim"), hang=9)
    if result.findings:
        out.blank()
        out.line(out.style(f"Found by the scan ({len(result.findings)})", "bold"))
        for n, f in enumerate(result.findings, 1):
            label = f"  {n}. "
            out.line(label, printable(_tilde_words(f.title, home)), hang=len(label))
            if f.fix:
                out.line(" " * len(label), out.style(printable(f.fix), "dim"), hang=len(label))
            for command in f.commands:
                out.command(printable(command.line), len(label) + 2)
    return out.value()


def _kernel_variables(out: Lines, environments) -> None:
    """Which variables each kernel's kernel.json set, and that only its interpreter got them."""
    for env in environments:
        if not env.env:
            continue
        kernels = ", ".join(dict.fromkeys(repr(c.detail) for c in env.reached if c.how == KERNEL))
        names = ", ".join(sorted(name for name, _ in env.env))
        line = f"kernel {kernels} sets {names}: applied to its interpreter only, not to envcheck"
        out.line(out.style("  " + printable(line), "dim"), hang=4)


_HEADERS = ("environment", "Python", "TF", "GPU", "reached", "first broken link")


def _table(out: Lines, rows: list[Row]) -> None:
    """The columns share the width: Python, TensorFlow and GPU whole; the path (cut in the middle),
    how it was reached, and the first broken link (wrapped under its column) split what is left, each
    taking what it needs and giving the rest to the others. Under about 95 columns the column of
    how each environment was reached goes (-v and --json have it)."""
    # lazy for start-up: rich is heavy (or absent), imported only where it is used
    from rich.text import Text

    small = [
        max(len(h), *(len(getattr(r, f)) for r in rows)) for h, f in zip(_HEADERS[1:4], ("python", "tensorflow", "gpu"))
    ]
    free = out.width - 2 - sum(w + 2 for w in small) - 2 * 2
    needs = {
        "where": max(len(_HEADERS[0]), *(len(r.where) for r in rows)),
        "link": max(len(_HEADERS[5]), *(len(r.first_broken) for r in rows)),
        "reached": max(len(_HEADERS[4]), *(len(r.reached) for r in rows)),
    }
    got = {"reached": 0}
    if free >= 64:  # how each environment was reached (a wide terminal): its labels, or +N for the rest
        got["reached"] = min(needs["reached"], 16)
        free -= got["reached"] + 2
    # The path and the answer split the rest 40/60; what one does not need goes to the other.
    got["where"] = min(needs["where"], max(min(26, free // 2), free * 40 // 100))
    got["link"] = min(needs["link"], free - got["where"])
    got["where"] += max(0, min(free - got["where"] - got["link"], needs["where"] - got["where"]))
    columns = [
        ("where", _HEADERS[0], max(6, got["where"])),
        ("python", _HEADERS[1], small[0]),
        ("tensorflow", _HEADERS[2], small[1]),
        ("gpu", _HEADERS[3], small[2]),
    ]
    if got["reached"]:
        columns.append(("reached", _HEADERS[4], got["reached"]))
    link_width = max(6, got["link"])
    header = (
        "  "
        + "  ".join(clip(title, width).ljust(width) for _, title, width in columns)
        + "  "
        + clip(_HEADERS[5], link_width)
    )
    out.console.print(Text(header, style="dim" if out.color else ""), crop=False, overflow="ignore")
    for r in rows:
        cells = []
        for field, _, width in columns:
            value = getattr(r, field)
            fitted = (
                clip_middle(value, width)
                if field == "where"
                else fit_labels(value, width)
                if field == "reached"
                else clip(value, width)
            )
            cells.append(fitted.ljust(width))
        # The first broken link is the answer: wrapped under its column, never cut.
        pieces = wrap_words(r.first_broken, link_width)
        lead = "  " + "  ".join(cells) + "  "
        for i, piece in enumerate(pieces):
            start = Text(lead if i == 0 else " " * len(lead))
            out.console.print(start + out.style(piece, _STATUS_STYLE.get(r.status, "")), crop=False, overflow="ignore")
