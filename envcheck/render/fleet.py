"""``envcheck fleet``: the nodes grouped by verdict and by the facts that matter, the odd ones out
named; as a terminal table, JSON, or Markdown for a ticket (redacted like the doctor's)."""

from __future__ import annotations

from envcheck.compare.facets import FACET_BY_NAME, FACETS
from envcheck.compare.fleet import VERDICT, Fleet, Group, hostlist
from envcheck.printable import printable
from envcheck.render import json_text
from envcheck.render.lines import Lines, clip, wrap_words
from envcheck.words import plural

_VERDICT_STYLE = {
    "gpu-ready": "green",
    "degraded": "yellow",
    "cpu-only": "yellow",
    "broken": "red",
    "not-installed": "cyan",
}


def render_json(fleet: Fleet, exit_code: int) -> str:
    return json_text("fleet", fleet.to_dict(), exit_code)


def _title(facet: str) -> str:
    return "verdict" if facet == VERDICT else FACET_BY_NAME[facet].title


def _headline(fleet: Fleet) -> str:
    files = len(fleet.nodes) + len(fleet.refused)
    refused = f", {len(fleet.refused)} refused" if fleet.refused else ""
    return f"{plural(len(fleet.nodes), 'node')} from {plural(files, 'file')}{refused}; {plural(fleet.judged, 'distinct machine')} judged"


def render(fleet: Fleet, width: int | None = None, color: bool | None = None) -> str:
    out = Lines(width, color)
    out.line(out.style("envcheck fleet", "bold"), f"  {_headline(fleet)}", hang=2)
    out.blank()
    out.line(out.style("Verdicts", "bold"))
    total = len(fleet.nodes)
    count_width = len(str(total))
    _section(out, "", 0, fleet.groups[VERDICT], count_width, total, styled=True)
    out.blank()
    out.line(out.style("Facts that matter", "bold"))
    title_width = max(len(f.title) for f in FACETS)
    for facet in FACETS:
        _section(out, facet.title, title_width, fleet.groups[facet.name], count_width, total)
    out.blank()
    if fleet.odd:
        out.line(out.style(f"Odd ones out ({len(fleet.odd)})", "bold"))
        for names, differences in odd_groups(fleet):
            who = printable(hostlist(names))
            out.line(f"  {who}  ", printable("; ".join(_odd_text(o) for o in differences)), hang=4)
    elif fleet.uniform:
        out.line("Every node agrees in every fact that matters.")
    else:
        out.line("No odd ones out: where the nodes differ, no value is held by most of them.")
    return out.value()


def odd_groups(fleet: Fleet) -> list[tuple[list[str], tuple]]:
    """Odd nodes that differ the same way, together: the cause (a fact) before its consequence (the
    verdict)."""
    together: dict[tuple, list[str]] = {}
    for name, differences in fleet.odd.items():
        ordered = tuple(sorted(differences, key=lambda o: o.facet == VERDICT))
        together.setdefault(tuple((o.facet, o.value, o.majority) for o in ordered), [])
        together[tuple((o.facet, o.value, o.majority) for o in ordered)].append(name)
    firsts = {name: tuple(sorted(d, key=lambda o: o.facet == VERDICT)) for name, d in fleet.odd.items()}
    return [(names, firsts[names[0]]) for names in together.values()]


def _odd_text(o) -> str:
    if o.facet == VERDICT:  # the verdicts' table above says what the others' is
        return f"verdict {o.value}"
    return f"{_title(o.facet)} {o.value} ({o.majority_count} others: {o.majority})"


def _section(
    out: Lines,
    title: str,
    title_width: int,
    groups: tuple[Group, ...],
    count_width: int,
    total: int,
    styled: bool = False,
) -> None:
    """One fact's groups, largest first, their values in one column and the nodes beside them."""
    head_width = (title_width + 4) if title_width else 2
    room = out.width - head_width - count_width - 2
    names = [
        "all"
        if len(g.nodes) == total
        else "the rest"
        if i == 0 and 2 * len(g.nodes) > total
        else printable(hostlist(g.names))
        for i, g in enumerate(groups)
    ]
    values = [printable(g.shown or g.value) for g in groups]
    longest = max(len(v) for v in values)
    widest_names = max(len(n) for n in names)
    value_width = min(longest, max(24, room - min(widest_names, room // 2) - 2))
    for i, (g, who, value) in enumerate(zip(groups, names, values)):
        head = f"  {(title if i == 0 else '').ljust(title_width)}  " if title_width else "  "
        count = f"{len(g.nodes):>{count_width}}  "
        # A value too long for its column goes on under it (never cut: it is what differs).
        pieces = wrap_words(value, value_width)
        rest = room - value_width - 2
        who = clip(who, rest) if rest >= min(8, len(who)) else ""
        style = _VERDICT_STYLE.get(g.nodes[0].status, "") if styled else ""
        gap = " " * (value_width - len(pieces[0]) + 2) if who else ""
        out.line(head, count, out.style(pieces[0], style), gap + who, hang=head_width + count_width + 2)
        for piece in pieces[1:]:
            out.line(" " * (head_width + count_width + 2), out.style(piece, style), hang=head_width + count_width + 2)
    if groups[0].alike:
        pad = " " * (head_width + count_width + 2)
        out.line(pad, out.style(f"alike on all: {printable(groups[0].alike)}", "dim"), hang=len(pad))


def render_markdown(fleet: Fleet) -> str:
    """A ticket: the tables in Markdown, each node's home folder, user name, GPU UUIDs and serial
    numbers replaced (envcheck.redact); node names stay, they are what the ticket is about."""

    def cell(text: str) -> str:
        return printable(text).replace("|", "\\|")

    lines = [f"## envcheck fleet: {_headline(fleet)}", "", "| nodes | verdict | which |", "| ---: | --- | --- |"]
    total = len(fleet.nodes)
    for g in fleet.groups[VERDICT]:
        lines.append(
            f"| {len(g.nodes)} | {cell(g.nodes[0].redacted[VERDICT])} | {cell('all' if len(g.nodes) == total else hostlist(g.names))} |"
        )
    lines += ["", "### Facts that matter", "", "| fact | nodes | value | which |", "| --- | ---: | --- | --- |"]
    for facet in FACETS:
        for i, g in enumerate(fleet.groups[facet.name]):
            which = "all" if len(g.nodes) == total else hostlist(g.names)
            value = g.nodes[0].redacted[facet.name] if not g.shown else g.shown
            lines.append(f"| {facet.title if i == 0 else ''} | {len(g.nodes)} | {cell(value)} | {cell(which)} |")
        if fleet.groups[facet.name][0].alike:
            lines.append(f"| | | alike on all: {cell(fleet.groups[facet.name][0].alike)} | |")
    lines += ["", "### Odd ones out", ""]
    if not fleet.odd:
        lines.append("None." if fleet.uniform else "None: where the nodes differ, no value is held by most of them.")
    by_name = {n.name: n for n in fleet.nodes}
    for names, differences in odd_groups(fleet):
        node = by_name[names[0]]
        parts = []
        for o in differences:
            other = by_name[o.majority_node]
            value = node.redacted[o.facet] if o.value == node.value_text(o.facet) else o.value
            majority = other.redacted[o.facet] if o.majority == other.value_text(o.facet) else o.majority
            parts.append(
                f"verdict {value}"
                if o.facet == VERDICT
                else f"{_title(o.facet)} {value} ({o.majority_count} others: {majority})"
            )
        lines.append(f"- **{cell(hostlist(names))}**: {cell('; '.join(parts))}")
    if fleet.refused:
        lines += ["", "### Files refused", ""]
        lines += [f"- `{cell(r.source)}`: {cell(r.reason)}" for r in fleet.refused]
    return "\n".join(lines) + "\n"
