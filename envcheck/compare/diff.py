"""What differs between two snapshots, grouped by link of the chain, the differences that explain
why the verdicts differ first.

Both snapshots are judged (the same rules the doctor runs, so the same verdicts). A link explains
the difference in verdicts when it is the first broken link of either side, when its status
differs, or when an error found on one side only belongs to it; every difference of such a link
is listed first. Noise (compare.facets) never shows, and names that only say who and where a
machine is (its home folder, user, host, GPU UUIDs) are compared in their redacted form.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from envcheck.compare.facets import GROUPS, group_of, grouping_for, priority
from envcheck.compare.flat import FlatValue, flatten
from envcheck.facts import SKIPPED, Facts, TensorflowFacts
from envcheck.findings import Report, Severity
from envcheck.machine import Machine

ADDED = "added"  # only in B
REMOVED = "removed"  # only in A
CHANGED = "changed"


@dataclass(frozen=True)
class Side:
    """One of the two snapshots: where it came from, its facts, and its judgement."""

    name: str  # the file name, or "this machine"
    report: Report

    @property
    def facts(self) -> Facts:
        return self.report.facts

    def link_status(self, link: str) -> str | None:
        return next((s.status for s in self.report.links if s.name == link), None)

    def to_dict(self) -> dict[str, Any]:
        v = self.report.verdict
        return {
            "source": self.name,
            "verdict": {
                "status": v.status,
                "line": v.line,
                "first_broken_link": v.first_broken_link,
                "finding_id": v.finding_id,
                "gpus": v.gpus,
            },
            "links": {s.name: s.status for s in self.report.links},
            "findings": [f.id for f in self.report.findings if f.severity is not Severity.INFO],
            "created": self.facts.created or None,
            "quick": self.facts.quick,
            "envcheck_version": self.facts.envcheck_version or None,
        }


@dataclass(frozen=True)
class Difference:
    link: str  # a link of the chain, or "platform"
    path: str  # the fact, as compare.flat names it
    label: str  # the fact, as a person names it
    a: FlatValue | None
    b: FlatValue | None
    change: str  # ADDED, REMOVED or CHANGED
    explains: bool

    def to_dict(self) -> dict[str, Any]:
        def plain(value):
            return list(value) if isinstance(value, tuple) else value

        return {
            "link": self.link,
            "path": self.path,
            "label": self.label,
            "change": self.change,
            "a": plain(self.a),
            "b": plain(self.b),
            "explains": self.explains,
        }


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    differences: tuple[Difference, ...]  # the explaining ones first, then the rest; chain order in each
    explaining_links: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def verdicts_differ(self) -> bool:
        va, vb = self.a.report.verdict, self.b.report.verdict
        return (va.status, va.line) != (vb.status, vb.line)

    @property
    def explaining(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.explains)

    @property
    def others(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if not d.explains)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "verdicts_differ": self.verdicts_differ,
            "explaining_links": list(self.explaining_links),
            "explaining": [d.to_dict() for d in self.explaining],
            "other": [d.to_dict() for d in self.others],
            "notes": list(self.notes),
        }


def compare(a: Side, b: Side) -> Diff:
    grouping = grouping_for(Machine(a.facts), Machine(b.facts))
    one_quick = a.facts.quick != b.facts.quick
    # What one side did not probe is absent there, not different (said in a note): compared is
    # what both probed.
    probed = _what_quick_probes if one_quick else (lambda facts: facts)
    flat_a, flat_b = flatten(probed(a.facts)), flatten(probed(b.facts))
    explaining = explaining_links(a, b)
    found: list[Difference] = []
    for path, change, va, vb in _differences(flat_a, flat_b):
        if _shown_as_winner(path, flat_a if change == REMOVED else flat_b):
            continue
        link = group_of(path, grouping)
        found.append(Difference(link, path, label_of(path), va, vb, change, link in explaining))
    found.sort(key=lambda d: (not d.explains, GROUPS.index(d.link), priority(d.path), d.path))
    return Diff(a, b, tuple(found), tuple(g for g in GROUPS if g in explaining), _notes(a, b))


def _what_quick_probes(facts: Facts) -> Facts:
    """The snapshot as ``--quick`` would have taken it: TensorFlow not imported, no library loaded
    (so none reports its own version)."""
    libraries = [
        dataclasses.replace(lib, copies=[dataclasses.replace(c, loads=None, reported_version=None) for c in lib.copies])
        for lib in facts.libraries.libraries
    ]
    return dataclasses.replace(
        facts,
        libraries=dataclasses.replace(facts.libraries, libraries=libraries),
        tensorflow=TensorflowFacts(status=SKIPPED),
    )


def _shown_as_winner(path: str, flat: dict[str, FlatValue]) -> bool:
    """A library copy that is the one the loader takes is already on its "loads from" line."""
    match = re.match(r"^(libraries\.libraries\[[^\]]+\])\.copies\[(.+)\]$", path)
    if not match:
        return False
    family, copy = match.groups()
    return any(
        k.startswith(family + ".winners[") and isinstance(v, str) and (v == copy or v.startswith(copy + " ("))
        for k, v in flat.items()
    )


def explaining_links(a: Side, b: Side) -> set[str]:
    """The links where the two verdicts part: empty when they agree."""
    va, vb = a.report.verdict, b.report.verdict
    if (va.status, va.line) == (vb.status, vb.line):
        return set()
    links = {v.first_broken_link for v in (va, vb) if v.first_broken_link}
    links |= {s.name for s in a.report.links if s.status != b.link_status(s.name)}
    errors_a = {(f.id, f.link) for f in a.report.findings if f.severity is Severity.ERROR}
    errors_b = {(f.id, f.link) for f in b.report.findings if f.severity is Severity.ERROR}
    links |= {link for _, link in errors_a ^ errors_b}
    if not links:  # the same links break, yet the verdicts differ (3 GPUs against 4): where it is seen
        summaries = {s.name: s.summary for s in b.report.links}
        links = {s.name for s in a.report.links if s.summary != summaries.get(s.name)}
    return links


def _differences(flat_a: dict[str, FlatValue], flat_b: dict[str, FlatValue]):
    """(path, change, a, b): an item (a package, a GPU, a library copy) only one side has is one
    difference, summarised; everything else field by field."""
    items_a, items_b = _items(flat_a), _items(flat_b)
    only_a = _outermost(set(items_a) - set(items_b))
    only_b = _outermost(set(items_b) - set(items_a))
    gone = only_a | only_b

    def inside(path: str) -> bool:
        return any(path.startswith((item + ".", item + "[")) for item in gone)

    for item in sorted(only_a):
        yield item, REMOVED, summary(item, items_a[item]), None
    for item in sorted(only_b):
        yield item, ADDED, None, summary(item, items_b[item])
    for path in sorted(set(flat_a) | set(flat_b)):
        if inside(path):
            continue
        va, vb = flat_a.get(path), flat_b.get(path)
        if va == vb:
            continue
        yield path, (ADDED if va is None else REMOVED if vb is None else CHANGED), va, vb


def _items(flat: dict[str, FlatValue]) -> dict[str, dict[str, FlatValue]]:
    """Keyed items (``libraries.libraries[cudnn]``, ``...copies[/x/libcudnn.so.8]``) with their
    fields: every prefix that ends with a key and is followed by more of the path."""
    items: dict[str, dict[str, FlatValue]] = {}
    for path, value in flat.items():
        for end in (i + 1 for i, ch in enumerate(path) if ch == "]"):
            if end < len(path) and path[end] in ".[":
                items.setdefault(path[:end], {})[path[end:].lstrip(".")] = value
    return items


def _outermost(items: set[str]) -> set[str]:
    return {i for i in items if not any(o != i and i.startswith(o) for o in items)}


def summary(item: str, fields: dict[str, FlatValue]) -> str:
    """An item in one line: a library copy's version and origin, a package's version, a GPU's name."""

    def get(name: str) -> str | None:
        value = fields.get(name)
        return ", ".join(value) if isinstance(value, tuple) else value

    if ".copies[" in item:
        parts = [get("reported_version") or get("file_version"), get("origin")]
        if get("loads") == "no":
            parts.append("does not load")
        return ", ".join(p for p in parts if p)
    if item.startswith("packages.distributions["):
        return get("version") or "installed"
    if item.startswith("nvml.gpus["):
        return (
            ", ".join(
                p
                for p in (
                    get("name"),
                    f"compute capability {get('compute_capability')}" if get("compute_capability") else None,
                )
                if p
            )
            or "a GPU"
        )
    if item.startswith("pci.devices["):
        return get("name") or get("device_id") or "a PCI device"
    if item.startswith("libraries.libraries["):
        copies = sorted({p.split("]", 1)[0][len("copies[") :] for p in fields if p.startswith("copies[")})
        return ", ".join(copies) if copies else "searched, no copy"
    if item.startswith("libraries.toolkits["):
        return (
            ", ".join(p for p in (f"CUDA {get('version')}" if get("version") else None, get("origin")) if p)
            or "a toolkit"
        )
    if item.startswith("tensorflow.placement["):
        return ", ".join(p for p in (get("device"), "ok" if get("ok") == "yes" else "failed") if p)
    direct = [f"{k} {get(k)}" for k in sorted(fields) if "[" not in k and "." not in k]
    return ", ".join(direct[:4]) or "present"


# How a person names a fact; the first match wins, the path itself otherwise.
_LABELS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), label)
    for p, label in (
        (r"^env\.variables\[([^\]]+)\]$", r"\1"),
        (r"^packages\.distributions\[([^\]]+)\](\.version)?$", r"package \1"),
        (r"^packages\.distributions\[([^\]]+)\]\.location$", r"package \1: location"),
        (r"^libraries\.libraries\[([^\]]+)\]\.winners\[([^\]]+)\]$", r"\2 loads from"),
        (r"^libraries\.libraries\[([^\]]+)\]\.winner$", r"\1: the copy that loads"),
        (r"^libraries\.libraries\[([^\]]+)\]\.copies\[([^\]]+)\]$", r"\1 copy \2"),
        (r"^libraries\.libraries\[([^\]]+)\]\.copies\[([^\]]+)\]\.(\w+)$", r"\1 copy \2: \3"),
        (r"^libraries\.libraries\[([^\]]+)\]$", r"\1 library"),
        (r"^libraries\.toolkits\[([^\]]+)\]$", r"CUDA toolkit \1"),
        (r"^libraries\.toolkits\[([^\]]+)\]\.(\w+)$", r"CUDA toolkit \1: \2"),
        (r"^libraries\.search_path$", "library search path"),
        (r"^nvml\.driver_version$", "driver version (NVML)"),
        (r"^nvml\.cuda_driver_version$", "highest CUDA the driver supports"),
        (r"^driver\.version$", "kernel module version"),
        (r"^nvml\.gpus\[(\d+)\]$", r"GPU \1"),
        (r"^nvml\.gpus\[(\d+)\]\.(\w+)$", r"GPU \1: \2"),
        (r"^pci\.devices\[([^\]]+)\]$", r"PCI device \1"),
        (r"^tensorflow\.placement\[(\S+) ([^\]]+)\]$", r"\1 on \2"),
        (r"^tensorflow\.placement\[(\S+) ([^\]]+)\]\.(\w+)$", r"\1 on \2: \3"),
        (r"^tensorflow\.(physical|logical)_devices\[([^\]]+)\]$", r"TensorFlow \1 device \2"),
        (r"^tensorflow\.log_lines\[(.+)\]$", r"log: \1"),
        (r"^tensorflow\.version$", "TensorFlow version"),
        (r"^tensorflow\.is_cuda_build$", "TensorFlow is a CUDA build"),
        (r"^python\.version$", "Python version"),
        (r"^tensorflow\.status$", "TensorFlow check"),
        (r"^tensorflow\.error_kind$", "TensorFlow failure"),
        (r"^tensorflow\.(\w+)$", r"TensorFlow: \1"),
        (r"^nvml\.(\w+)$", r"NVML: \1"),
        (r"^driver\.(\w+)$", r"kernel module: \1"),
        (r"^python\.(\w+)$", r"Python: \1"),
        (r"^platform\.(\w+)$", r"OS: \1"),
        (r"^pci\.(\w+)$", r"PCI: \1"),
        (r"^libraries\.(\w+)$", r"library search: \1"),
        (r"^packages\.(\w+)$", r"packages: \1"),
        (r"^env\.(\w+)$", r"environment: \1"),
    )
)


def label_of(path: str) -> str:
    for pattern, label in _LABELS:
        match = pattern.match(path)
        if match:
            return match.expand(label)
    return path


def _notes(a: Side, b: Side) -> tuple[str, ...]:
    notes = []
    for side, other, letter in ((a, b, "A"), (b, a, "B")):
        if side.facts.quick and not other.facts.quick:
            notes.append(
                f"{letter} was taken with --quick: TensorFlow was not imported there and no library loaded, so "
                "TensorFlow's own facts and which libraries load are left out of the comparison"
            )
    if a.facts.envcheck_version and b.facts.envcheck_version and a.facts.envcheck_version != b.facts.envcheck_version:
        notes.append(
            f"taken by different envcheck releases ({a.facts.envcheck_version} and {b.facts.envcheck_version}); a probe added since shows as a difference"
        )
    if a.facts.platform.os and b.facts.platform.os and a.facts.platform.os != b.facts.platform.os:
        notes.append(
            f"A is a {a.facts.platform.os} machine and B a {b.facts.platform.os} one: most facts differ by nature"
        )
    return tuple(notes)
