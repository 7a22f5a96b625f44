"""``envcheck diff``: the two verdicts, the differences that explain them by link, then the rest."""

from __future__ import annotations

from rich.text import Text

from envcheck.compare.diff import Diff, Difference
from envcheck.compare.facets import FACETS, GROUP_TITLES, priority
from envcheck.machine import telling_line
from envcheck.printable import printable
from envcheck.render import json_text
from envcheck.render.lines import Lines
from envcheck.render.terminal import SHORT_TITLES
from envcheck.words import plural

_STATUS = {"ok": "ok", "warning": "warn", "error": "FAIL", "skipped": "skip", None: "-"}
_TITLES = {**GROUP_TITLES, **SHORT_TITLES}


def render_json(diff: Diff, exit_code: int) -> str:
    return json_text("diff", diff.to_dict(), exit_code)


def render(diff: Diff, width: int | None = None, color: bool | None = None, verbose: bool = False) -> str:
    """The verdicts, then the differences that explain them, then the rest; without ``verbose``
    what says least (packages only one side has, log lines, facts that are not among the ones that
    matter where the verdicts part) is counted, not listed."""
    out = Lines(width, color)
    out.line(out.style("envcheck diff", "bold"), f"  A: {printable(diff.a.name)}  B: {printable(diff.b.name)}", hang=2)
    for note in diff.notes:
        out.line(out.style(f"note: {printable(note)}", "dim"), hang=6)
    out.blank()
    for letter, side in (("A", diff.a), ("B", diff.b)):
        verdict = side.report.verdict
        out.line(f"  {letter}  ", out.style(printable(verdict.line), _verdict_style(verdict.status)), hang=5)
    if not diff.differences:
        out.blank()
        out.line(
            "No differences (left out as noise: when each was taken, probe times, host and user names, GPU UUIDs).",
            hang=0,
        )
        return out.value()
    if diff.verdicts_differ:
        if diff.explaining:
            out.blank()
            out.line(out.style("Why the verdicts differ", "bold"))
            _groups(out, diff, diff.explaining, None if verbose else _matters)
        else:
            out.blank()
            out.line("No recorded fact of the links where the verdicts part differs (see the notes).", hang=0)
        heading = "Other differences"
    else:
        out.blank()
        out.line("The verdicts are the same.", hang=0)
        heading = "Differences"
    if diff.others:
        out.blank()
        out.line(out.style(heading, "bold"))
        _groups(out, diff, diff.others, None if verbose else _worth_a_line)
    return out.value()


def _verdict_style(status: str) -> str:
    return {
        "gpu-ready": "bold green",
        "degraded": "bold yellow",
        "cpu-only": "bold yellow",
        "broken": "bold red",
        "not-installed": "bold cyan",
    }.get(status, "bold")


def _groups(out: Lines, diff: Diff, items: tuple[Difference, ...], listed=None) -> None:
    """Each link's differences under its title; those ``listed`` rejects counted on one line."""
    links = list(dict.fromkeys(d.link for d in items))
    for link in links:
        title = _TITLES.get(link, link)
        sa, sb = diff.a.link_status(link), diff.b.link_status(link)
        status = f"  A {_STATUS.get(sa, sa)}, B {_STATUS.get(sb, sb)}" if link in _STATUS_LINKS and (sa or sb) else ""
        out.line(Text("  "), out.style(title, "bold"), out.style(status, "dim"))
        mine = [d for d in items if d.link == link]
        counted = [d for d in mine if listed is not None and not listed(d)]
        for d in mine:
            if d not in counted:
                _difference(out, d)
        if counted:
            out.line(out.style(f"    {_counted(counted, len(counted) < len(mine))} (-v lists each)", "dim"), hang=6)


def _matters(d: Difference) -> bool:
    """Where the verdicts part: the facts that matter (compare.facets, listed first), and what
    changed; what only one side has there (TensorFlow's details where the other has none) is counted."""
    return priority(d.path) < (len(FACETS), 0) or (d.change == "changed" and _worth_a_line(d))


def _worth_a_line(d: Difference) -> bool:
    """Elsewhere: all but packages only one side has (or that moved) and TensorFlow's log lines,
    unless they are among the facts that matter (the pip CUDA wheels)."""
    if priority(d.path) < (len(FACETS), 0):
        return True
    if d.path.startswith("tensorflow.log_lines["):
        return False
    return not d.path.startswith("packages.distributions[") or (d.change == "changed" and d.path.endswith(".version"))


def _counted(items: list[Difference], more: bool) -> str:
    """ "and 30 more: 21 packages only in B, 5 log lines, 4 other facts"."""
    kinds: dict[str, int] = {}
    for d in items:
        kinds[_kind(d)] = kinds.get(_kind(d), 0) + 1
    parts = [plural(n, kind) if not kind.startswith("package") else _packages(n, kind) for kind, n in kinds.items()]
    return (
        f"{'and ' if more else ''}{plural(len(items), 'more difference' if more else 'difference')}: {', '.join(parts)}"
    )


def _kind(d: Difference) -> str:
    if d.path.startswith("packages.distributions["):
        return {"added": "package only in B", "removed": "package only in A"}.get(d.change, "package changed")
    if d.path.startswith("tensorflow.log_lines["):
        return "TensorFlow log line"
    return "other fact"


def _packages(n: int, kind: str) -> str:
    """ "21 packages only in B", "1 package changed"."""
    return f"{n} package{'' if n == 1 else 's'}{kind[len('package') :]}"


_STATUS_LINKS = set(SHORT_TITLES)


def _difference(out: Lines, d: Difference) -> None:
    label = printable(d.label)
    if isinstance(d.a, tuple) or isinstance(d.b, tuple):
        _entries(out, label, d.a or (), d.b or ())
        return
    a, b = _one_line(d.a), _one_line(d.b)
    if d.change != "changed":
        only, value, style = ("B only", b, "green") if d.change == "added" else ("A only", a, "red")
        out.line(f"    {label} ", out.style(f"({only})", "dim"), ": ", out.style(value, style), hang=6)
        return
    inline = f"    {label}: {a} -> {b}"
    if len(inline) <= out.width:
        out.line("    ", label, ": ", out.style(a, "red"), " -> ", out.style(b, "green"))
        return
    out.line(f"    {label}", hang=6)
    out.line("      A: ", out.style(a, "red"), hang=9)
    out.line("      B: ", out.style(b, "green"), hang=9)


def _one_line(value) -> str:
    """A value on one line; of a text of several lines (an error), the line that says what went
    wrong, marked as an excerpt ("…" joined to it when lines come before it), so it never reads as a
    line of envcheck's own."""
    if value is None:
        return "(none)"
    text = str(value)
    if "\n" not in text:
        return printable(text)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    telling = telling_line(text)
    before = bool(lines) and lines[0] != telling
    after = bool(lines) and lines[-1] != telling
    return ("…" if before else "") + printable(telling) + (" …" if after else "")


def _entries(out: Lines, label: str, a: tuple[str, ...], b: tuple[str, ...]) -> None:
    """A search path entry by entry: what B adds (+), what it lacks (-), or only the order."""
    removed = [printable(x) for x in a if x not in b]
    added = [printable(x) for x in b if x not in a]
    out.line(f"    {label}", hang=6)
    for entry in added:
        out.line("      ", out.style("+ " + entry, "green"), hang=8)
    for entry in removed:
        out.line("      ", out.style("- " + entry, "red"), hang=8)
    if not added and not removed:
        common = [x for x in a if x in b]
        first = next((i for i, (x, y) in enumerate(zip(common, [y for y in b if y in a])) if x != y), 0)
        out.line(f"      the same entries in another order; from entry {first + 1}:", hang=8)
        out.line("      A: ", out.style(printable(", ".join(a[first : first + 3])), "red"), hang=9)
        out.line("      B: ", out.style(printable(", ".join(b[first : first + 3])), "green"), hang=9)
