"""How well ``envcheck explain`` answers the messages people really post.

Two corpora, reported separately and side by side (the default):

- the training corpus (tests/fixtures/real_messages/): the messages the catalogue grew from, so
  its figures are an upper bound;
- the first held-out set (tests/fixtures/held_out/), now RETIRED: measured five times, it is read
  by whoever writes patterns (its README.md), so its figures are reported as "held-out v1
  (retired)" and are no longer held-out figures;
- the second held-out set (tests/fixtures/held_out_v2/), RETIRED after round 10 (measured ten
  times): read by whoever writes patterns like the first, reported as "held-out v2 (retired)" in
  the default run and with ``--live``;
- the third held-out set (tests/fixtures/held_out_v3/), RETIRED after round 12 (measured eleven
  times): read by whoever writes patterns like the first two, reported as "held-out v3 (retired)"
  with ``--live`` (and with ``--held-out-v3 DIR``);
- the fourth (tests/fixtures/held_out_v4/), the fifth (tests/fixtures/held_out_v5/), the sixth
  (tests/fixtures/held_out_v6/), the seventh (tests/fixtures/held_out_v7/), the eighth
  (tests/fixtures/held_out_v8/), the ninth (tests/fixtures/held_out_v9/) and the tenth
  (tests/fixtures/held_out_v10/, frozen last, measured on the catalogue of its freezing before the
  round it is the "before" of):
  real messages from threads no file of the project cites, never tuned on (their README.md files),
  so their figures are what a user pasting a message nobody wrote a pattern for can expect. They
  are measured only with ``--live`` (whoever writes patterns runs the default, which leaves them
  out, so nobody tunes on their figures); then each gets its own report and its own column (the
  sets are never added together).

For every message it runs the scanner and ``explain`` (no machine: the message alone).

The training corpus's own report (per family) counts, as it always has:

  recognised     the message is explained at all
  cause right    the thread's cause (``cause_id``) is among the causes given (of the recognised)
  cause first    ... and ranked first in its explanation (of the recognised)
  harmless right the explanations say "nothing to act on" exactly when the thread did (of the
                 recognised)
  false positive an ordinary line that gets an explanation marked as something to act on

The held-out report, and the side-by-side table (which measures the training corpus the same way,
its entries' kind read from ``harmless``), count by kind; every share is of all messages of the
kind, not of the recognised ones:

  errors recognised        an error gets an explanation
  cause first              the thread's cause is the first cause of the first explanation shown
                           (explanations come harmful first, in causal-chain order, then by line)
  cause given              the thread's cause is among the causes of any explanation
  errors called harmless   an error whose every explanation says "nothing to act on" (must be 0)
  harmless right           a harmless notice gets explanations, all of them harmless
  near misses explained    a near miss gets any explanation at all (must be 0); "acted on" counts
                           those with an explanation marked as something to act on
  platform right           a Windows or macOS error whose explanations give commands, every one of
                           them for its own platform: on Windows a PowerShell or cmd line, or a
                           line for any shell that uses no Linux-only tool (/proc, /etc, ldconfig,
                           apt, dpkg, modprobe, LD_LIBRARY_PATH ...); on macOS a bash or any-shell
                           line without those tools and without nvidia-smi; never PowerShell on a
                           Mac nor bash on Windows. The commands are those explain prints: each
                           harmful explanation's fix and each of its causes' check and fix. Errors
                           whose explanations give no command are counted apart.

A held-out ``cause_id`` of ``new:<slug>`` (a cause the catalogue did not have when the set was
frozen) counts as given only through the set's aliases.yaml, which maps it to the catalogue's
cause ids.

``--json`` prints the same as JSON; ``--corpus DIR`` measures another corpus in the training
format alone, ``--held-out [DIR]`` a folder in the held-out format alone (the retired first set
when no folder is named; tests/fixtures/held_out_v2 or held_out_v3 for the live sets);
``--held-out-v2 DIR`` to ``--held-out-v10 DIR`` the folders of the live sets' columns;
``--misses`` also lists the held-out messages missed, by id (left out otherwise: whoever tunes
the catalogue reads the figures, not which messages failed); ``--patterns FILE`` another
catalogue (for example the one of an older release, to compare). A catalogue without ranked causes counts a cause as right when the explanation's id is the
``cause_id`` (so "before" figures of older catalogues are a lower bound for cause right).

    python benchmarks/explain_accuracy.py            # training corpus and the retired set
    python benchmarks/explain_accuracy.py --live     # ... and the live held-out sets (a measurement)
    python benchmarks/explain_accuracy.py --held-out
    python benchmarks/explain_accuracy.py --held-out --misses
    python benchmarks/explain_accuracy.py --held-out tests/fixtures/held_out_v2
    python benchmarks/explain_accuracy.py --held-out tests/fixtures/held_out_v3
    python benchmarks/explain_accuracy.py --json --corpus path/to/unseen
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_CORPUS = ROOT / "tests" / "fixtures" / "real_messages"
DEFAULT_HELD_OUT = ROOT / "tests" / "fixtures" / "held_out"
DEFAULT_HELD_OUT_V2 = ROOT / "tests" / "fixtures" / "held_out_v2"
DEFAULT_HELD_OUT_V3 = ROOT / "tests" / "fixtures" / "held_out_v3"
DEFAULT_HELD_OUT_V4 = ROOT / "tests" / "fixtures" / "held_out_v4"
DEFAULT_HELD_OUT_V5 = ROOT / "tests" / "fixtures" / "held_out_v5"
DEFAULT_HELD_OUT_V6 = ROOT / "tests" / "fixtures" / "held_out_v6"
DEFAULT_HELD_OUT_V7 = ROOT / "tests" / "fixtures" / "held_out_v7"
DEFAULT_HELD_OUT_V8 = ROOT / "tests" / "fixtures" / "held_out_v8"
DEFAULT_HELD_OUT_V9 = ROOT / "tests" / "fixtures" / "held_out_v9"
DEFAULT_HELD_OUT_V10 = ROOT / "tests" / "fixtures" / "held_out_v10"
# The first set is retired (its README.md): its figures are reported under this label, never as
# held-out figures; so is the second, retired after round 10 (measured ten times).
RETIRED_LABEL = "held-out v1 (retired)"
RETIRED_V2_LABEL = "held-out v2 (retired)"
RETIRED_V3_LABEL = "held-out v3 (retired)"  # after round 12, measured eleven times
ORDINARY_FILE = "ordinary.yaml"
ALIASES_FILE = "aliases.yaml"
KINDS = ("error", "harmless", "near_miss")


@dataclass
class Tally:
    messages: int = 0
    recognised: int = 0
    cause_right: int = 0
    cause_first: int = 0
    harmless_right: int = 0
    ordinary: int = 0
    false_positives: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        for name in (
            "messages",
            "recognised",
            "cause_right",
            "cause_first",
            "harmless_right",
            "ordinary",
            "false_positives",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.misses.extend(other.misses)

    def figures(self) -> dict[str, Any]:
        def pct(part: int, whole: int) -> Optional[float]:
            return round(100.0 * part / whole, 1) if whole else None

        return {
            "messages": self.messages,
            "recognised": self.recognised,
            "recognised_pct": pct(self.recognised, self.messages),
            "cause_right": self.cause_right,
            "cause_right_pct": pct(self.cause_right, self.recognised),
            "cause_first": self.cause_first,
            "cause_first_pct": pct(self.cause_first, self.recognised),
            "harmless_right": self.harmless_right,
            "harmless_right_pct": pct(self.harmless_right, self.recognised),
            "ordinary_lines": self.ordinary,
            "false_positives": self.false_positives,
        }


def load_corpus(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """(family -> messages, ordinary lines) from the corpus folder's YAML files."""
    import yaml

    families: dict[str, list[dict[str, Any]]] = {}
    ordinary: list[dict[str, Any]] = []
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise SystemExit(f"no corpus files (*.yaml) in {folder}")
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if path.name == ORDINARY_FILE:
            ordinary.extend(data.get("lines") or [])
        else:
            families[path.stem] = list(data.get("messages") or [])
    return families, ordinary


def judge(catalogue: Any, explain: Any, entry: dict[str, Any]) -> Tally:
    """One corpus message against the catalogue."""
    tally = Tally(messages=1)
    explanations = explain(catalogue.scan_text(entry["message"]))
    miss: dict[str, Any] = {"id": entry.get("id"), "cause_id": entry.get("cause_id")}
    if not explanations:
        tally.misses.append({**miss, "what": "not recognised"})
        return tally
    tally.recognised = 1
    wanted = entry.get("cause_id")
    ranked = [[c.id for c in getattr(e, "causes", ())] or [e.id] for e in explanations]
    if any(wanted in ids for ids in ranked):
        tally.cause_right = 1
        if any(ids and ids[0] == wanted for ids in ranked if wanted in ids):
            tally.cause_first = 1
    else:
        tally.misses.append({**miss, "what": "cause not given", "given": ranked})
    said_harmless = all(e.harmless for e in explanations)
    if said_harmless == bool(entry.get("harmless")):
        tally.harmless_right = 1
    else:
        tally.misses.append(
            {
                **miss,
                "what": f"called {'harmless' if said_harmless else 'a problem'}",
                "ids": [e.id for e in explanations],
            }
        )
    return tally


def measure(corpus: Path, patterns: Optional[Path] = None) -> dict[str, Any]:
    from envcheck.explain import explain, load_patterns

    catalogue = load_patterns(patterns) if patterns else load_patterns()
    families, ordinary = load_corpus(corpus)
    total = Tally()
    per_family: dict[str, dict[str, Any]] = {}
    misses: list[dict[str, Any]] = []
    for family, entries in families.items():
        tally = Tally()
        for entry in entries:
            tally.add(judge(catalogue, explain, entry))
        per_family[family] = tally.figures()
        misses.extend({"family": family, **m} for m in tally.misses)
        total.add(tally)
    flagged = []
    for item in ordinary:
        text = item["line"] if isinstance(item, dict) else str(item)
        total.ordinary += 1
        acted = [e.id for e in explain(catalogue.scan_text(text)) if not e.harmless]
        if acted:
            total.false_positives += 1
            flagged.append({"line": text, "ids": acted})
    return {
        "corpus": str(corpus),
        "patterns": str(catalogue.path),
        "catalogue_size": len(catalogue.patterns),
        "overall": total.figures(),
        "families": per_family,
        "misses": misses,
        "false_positive_lines": flagged,
    }


def render(report: dict[str, Any]) -> str:
    def cell(value: Optional[float]) -> str:
        return "   n/a" if value is None else f"{value:>5.1f}%"

    head = f"{'family':<20} {'msgs':>5} {'recognised':>11} {'cause right':>12} {'cause first':>12} {'harmless ok':>12}"
    lines = [
        f"envcheck explain on {report['corpus']} ({report['catalogue_size']} patterns from {report['patterns']})",
        head,
        "-" * len(head),
    ]
    rows = list(report["families"].items()) + [("overall", report["overall"])]
    for name, f in rows:
        if name == "overall":
            lines.append("-" * len(head))
        lines.append(
            f"{name:<20} {f['messages']:>5} {cell(f['recognised_pct']):>11} {cell(f['cause_right_pct']):>12} "
            f"{cell(f['cause_first_pct']):>12} {cell(f['harmless_right_pct']):>12}"
        )
    overall = report["overall"]
    lines.append(f"\nordinary lines: {overall['ordinary_lines']}, false positives: {overall['false_positives']}")
    lines.append("(cause right, cause first and harmless ok are shares of the recognised messages)")
    if report["misses"]:
        lines.append("\nmisses:")
        for m in report["misses"]:
            detail = m.get("given") or m.get("ids") or ""
            lines.append(f"  {m['family']}/{m['id']}: {m['what']} (wanted {m['cause_id']}) {detail}")
    for f in report["false_positive_lines"]:
        lines.append(f"  false positive: {f['line'][:100]!r} -> {', '.join(f['ids'])}")
    return "\n".join(lines)


# --- by kind: the held-out set, and the training corpus measured the same way -------------------

# A command that names one of these cannot run on Windows or macOS as it stands.
LINUX_ONLY = re.compile(
    r"/proc/|/sys/|/etc/|/usr/local/cuda|/usr/lib|LD_LIBRARY_PATH|\b(?:ldconfig|apt|apt-get|dpkg|yum|dnf|"
    r"lsmod|modprobe|rmmod|dmesg|lspci|systemctl|journalctl|update-initramfs)\b"
)
NOT_ON_MACOS = re.compile(LINUX_ONLY.pattern + r"|\bnvidia-smi\b")
PLATFORM_SHELLS = {"windows": {"powershell", "cmd", "any"}, "macos": {"bash", "any"}}
PLATFORMS = tuple(PLATFORM_SHELLS)


@dataclass
class KindTally:
    """Counts by kind for one family (or all of them); shares are of all messages of a kind."""

    counts: dict[str, int] = field(default_factory=dict)
    misses: list[dict[str, Any]] = field(default_factory=list)

    def bump(self, name: str, by: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + by

    def add(self, other: "KindTally") -> None:
        for name, value in other.counts.items():
            self.bump(name, value)
        self.misses.extend(other.misses)

    def figures(self) -> dict[str, Any]:
        c = self.counts.get

        def pct(part: str, whole: str) -> Optional[float]:
            return round(100.0 * c(part, 0) / c(whole, 0), 1) if c(whole, 0) else None

        out: dict[str, Any] = {name: c(name, 0) for name in sorted(self.counts)}
        out.update(
            errors_recognised_pct=pct("errors_recognised", "errors"),
            cause_first_pct=pct("cause_first", "errors"),
            cause_given_pct=pct("cause_given", "errors"),
            harmless_right_pct=pct("harmless_right", "harmless"),
        )
        for system in PLATFORMS:
            out[f"platform_right_{system}_pct"] = pct(f"platform_right_{system}", f"platform_{system}")
        return out


def load_held_out(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, set[str]]]:
    """(family -> entries, held-out cause id -> catalogue cause ids) from a held-out folder."""
    import yaml

    families: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.yaml")):
        if path.name != ALIASES_FILE:
            families[path.stem] = list((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("messages") or [])
    if not families:
        raise SystemExit(f"no held-out files (*.yaml) in {folder}")
    aliases_path = folder / ALIASES_FILE
    raw = {}
    if aliases_path.is_file():
        raw = (yaml.safe_load(aliases_path.read_text(encoding="utf-8")) or {}).get("aliases") or {}
    return families, {slug: set(alias.get("cause_ids") or ()) for slug, alias in raw.items()}


def kind_of(entry: dict[str, Any]) -> str:
    """The held-out set says it; a training entry is an error unless its thread called it harmless."""
    kind = entry.get("kind")
    if kind in KINDS:
        return kind
    return "harmless" if entry.get("harmless") else "error"


def commands_shown(explanation: Any) -> list[Any]:
    """Every command explain prints for one explanation: its fix, and each cause's check and fix."""
    commands = list(explanation.fix.commands) if explanation.fix else []
    for cause in getattr(explanation, "causes", ()):
        for fix in (cause.tell, cause.fix):
            if fix is not None:
                commands.extend(fix.commands)
    return commands


def platform_verdict(system: Optional[str], explanations: Any) -> Optional[bool]:
    """True when every command shown runs on this Windows or macOS machine, False when one does not,
    None when no command is shown (or the message is not from Windows or macOS)."""
    if system not in PLATFORM_SHELLS:
        return None
    commands = [c for e in explanations if not e.harmless for c in commands_shown(e)]
    if not commands:
        return None
    foreign = NOT_ON_MACOS if system == "macos" else LINUX_ONLY
    return all(c.shell in PLATFORM_SHELLS[system] and not foreign.search(c.line) for c in commands)


def causes_of(explanations: Any) -> tuple[Optional[str], set[str]]:
    """(the first cause of the first explanation, every cause id and explanation id given)."""
    given: set[str] = set()
    for e in explanations:
        given.add(e.id)
        given.update(c.id for c in getattr(e, "causes", ()))
    if not explanations:
        return None, given
    first = explanations[0]
    causes = getattr(first, "causes", ())
    return (causes[0].id if causes else first.id), given


def judge_kind(catalogue: Any, explain: Any, entry: dict[str, Any], aliases: dict[str, set[str]]) -> KindTally:
    """One message against the catalogue, counted by its kind."""
    tally = KindTally()
    kind = kind_of(entry)
    explanations = explain(catalogue.scan_text(entry["message"]))
    ids = [e.id for e in explanations]
    miss = {"id": entry.get("id"), "kind": kind, "cause_id": entry.get("cause_id"), "ids": ids}
    if kind == "near_miss":
        tally.bump("near_misses")
        tally.bump("near_misses_explained", bool(explanations))
        tally.bump("near_misses_acted_on", any(not e.harmless for e in explanations))
        if explanations:
            tally.misses.append({**miss, "what": "near miss explained"})
        return tally
    wanted = set(aliases.get(entry.get("cause_id") or "", ()))
    if not str(entry.get("cause_id")).startswith("new:"):
        wanted.add(entry.get("cause_id"))
    first, given = causes_of(explanations)
    all_harmless = bool(explanations) and all(e.harmless for e in explanations)
    if kind == "harmless":
        tally.bump("harmless")
        tally.bump("harmless_recognised", bool(explanations))
        tally.bump("harmless_right", all_harmless)
        if not all_harmless:
            tally.misses.append({**miss, "what": "not recognised" if not explanations else "called a problem"})
        return tally
    return judge_error(tally, entry, explanations, (first, given, wanted), miss)


def judge_error(tally: KindTally, entry: dict[str, Any], explanations: Any, causes: tuple, miss: dict) -> KindTally:
    first, given, wanted = causes
    tally.bump("errors")
    tally.bump("errors_recognised", bool(explanations))
    tally.bump("cause_first", first in wanted)
    tally.bump("cause_given", bool(wanted & given))
    called_harmless = bool(explanations) and all(e.harmless for e in explanations)
    tally.bump("errors_called_harmless", called_harmless)
    system = entry.get("os")
    verdict = platform_verdict(system, explanations)
    if system in PLATFORM_SHELLS:
        tally.bump(f"errors_{system}")
        if verdict is None:
            tally.bump(f"platform_{system}_without_commands")
        else:
            tally.bump(f"platform_{system}")
            tally.bump(f"platform_right_{system}", verdict)
    if not explanations:
        tally.misses.append({**miss, "what": "not recognised"})
    elif called_harmless:
        tally.misses.append({**miss, "what": "error called harmless"})
    elif first not in wanted:
        tally.misses.append({**miss, "what": "cause given, not first" if wanted & given else "cause not given"})
    if verdict is False:
        tally.misses.append({**miss, "what": f"commands not for {system}"})
    return tally


def measure_kinds(
    families: dict[str, list[dict[str, Any]]],
    aliases: dict[str, set[str]],
    catalogue: Any,
    explain: Any,
    ordinary: Optional[list[Any]] = None,
) -> dict[str, Any]:
    """Figures by kind, per family and overall; ordinary lines (training corpus) as acted on or not."""
    total = KindTally()
    per_family: dict[str, dict[str, Any]] = {}
    for family, entries in families.items():
        tally = KindTally()
        for entry in entries:
            tally.add(judge_kind(catalogue, explain, entry, aliases))
        per_family[family] = tally.figures()
        tally.misses = [{"family": family, **m} for m in tally.misses]
        total.add(tally)
    for item in ordinary or ():
        text = item["line"] if isinstance(item, dict) else str(item)
        total.bump("ordinary_lines")
        total.bump("ordinary_acted_on", any(not e.harmless for e in explain(catalogue.scan_text(text))))
    return {"overall": total.figures(), "families": per_family, "misses": total.misses}


def measure_held_out(folder: Path, patterns: Optional[Path] = None) -> dict[str, Any]:
    from envcheck.explain import explain, load_patterns

    catalogue = load_patterns(patterns) if patterns else load_patterns()
    families, aliases = load_held_out(folder)
    report = measure_kinds(families, aliases, catalogue, explain)
    return {
        "held_out": str(folder),
        "patterns": str(catalogue.path),
        "catalogue_size": len(catalogue.patterns),
        "aliases": len(aliases),
        "retired": is_retired(folder),
        "retired_label": retired_label(folder),
        **report,
    }


def measure_training_by_kind(corpus: Path, patterns: Optional[Path] = None) -> dict[str, Any]:
    from envcheck.explain import explain, load_patterns

    catalogue = load_patterns(patterns) if patterns else load_patterns()
    families, ordinary = load_corpus(corpus)
    return measure_kinds(families, {}, catalogue, explain, ordinary)


def _cell(value: Optional[float]) -> str:
    return "   n/a" if value is None else f"{value:>5.1f}%"


def _ratio(f: dict[str, Any], part: str, whole: str) -> str:
    return f"{f.get(part, 0)}/{f.get(whole, 0)}"


def is_retired(folder: Path) -> bool:
    """Whether this folder is a retired set (the first, the second or the third)."""
    return bool(retired_label(folder))


def retired_label(folder: Path) -> str:
    """The label of a retired set's figures ("" for a live one)."""
    where = Path(folder).resolve()
    if where == DEFAULT_HELD_OUT.resolve():
        return RETIRED_LABEL
    if where == DEFAULT_HELD_OUT_V2.resolve():
        return RETIRED_V2_LABEL
    if where == DEFAULT_HELD_OUT_V3.resolve():
        return RETIRED_V3_LABEL
    return ""


def render_held_out(report: dict[str, Any]) -> str:
    if report.get("retired"):
        title = (
            f"envcheck explain on {report.get('retired_label') or RETIRED_LABEL}, {report['held_out']}: read by whoever writes patterns, "
            "so these are not held-out figures"
        )
    else:
        title = f"envcheck explain on the held-out set {report['held_out']}"
    head = f"{'family':<20} {'msgs':>5} {'errors':>7} {'recognised':>11} {'cause first':>12} {'cause given':>12} {'harmless ok':>12} {'near misses':>12}"
    lines = [
        f"{title} ({report['catalogue_size']} patterns, {report['aliases']} aliases)",
        head,
        "-" * len(head),
    ]
    rows = list(report["families"].items()) + [("overall", report["overall"])]
    for name, f in rows:
        if name == "overall":
            lines.append("-" * len(head))
        count = f.get("errors", 0) + f.get("harmless", 0) + f.get("near_misses", 0)
        lines.append(
            f"{name:<20} {count:>5} {f.get('errors', 0):>7} {_cell(f['errors_recognised_pct']):>11} "
            f"{_cell(f['cause_first_pct']):>12} {_cell(f['cause_given_pct']):>12} "
            f"{_ratio(f, 'harmless_right', 'harmless'):>12} {_ratio(f, 'near_misses_explained', 'near_misses'):>12}"
        )
    lines.extend(_summary_lines(report["overall"]))
    if report.get("misses"):
        lines.append("\nmisses (ids only):")
        for m in report["misses"]:
            lines.append(f"  {m['family']}/{m['id']}: {m['what']} (wanted {m['cause_id']}) {m['ids']}")
    elif report.get("misses_count"):
        lines.append(f"\n{report['misses_count']} misses, not listed (--misses lists them)")
    return "\n".join(lines)


def without_misses(report: dict[str, Any]) -> dict[str, Any]:
    """The held-out report with its per-message misses replaced by their count: whoever changes
    explain reads the figures, not which messages failed (tests/fixtures/held_out/README.md)."""
    rest = {k: v for k, v in report.items() if k != "misses"}
    return {**rest, "misses_count": len(report.get("misses", []))}


def _summary_lines(o: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"errors recognised: {_ratio(o, 'errors_recognised', 'errors')} ({_cell(o['errors_recognised_pct']).strip()})",
        f"confirmed cause ranked first: {_ratio(o, 'cause_first', 'errors')} ({_cell(o['cause_first_pct']).strip()})",
        f"confirmed cause among those given: {_ratio(o, 'cause_given', 'errors')} ({_cell(o['cause_given_pct']).strip()})",
        f"harmless notices called harmless: {_ratio(o, 'harmless_right', 'harmless')}",
        f"errors called harmless (must be 0): {o.get('errors_called_harmless', 0)}",
        f"near misses explained (must be 0): {_ratio(o, 'near_misses_explained', 'near_misses')}, "
        f"acted on: {o.get('near_misses_acted_on', 0)}",
    ]
    for system in PLATFORMS:
        lines.append(
            f"platform right, {system}: {_ratio(o, f'platform_right_{system}', f'platform_{system}')} errors with "
            f"commands ({_cell(o[f'platform_right_{system}_pct']).strip()}); "
            f"{o.get(f'platform_{system}_without_commands', 0)} of {o.get(f'errors_{system}', 0)} without commands"
        )
    lines.append("(shares are of all errors of the set; harmless and near misses as counts)")
    return lines


NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def held_out_label(report: dict[str, Any], default: str) -> str:
    """The column label of a held-out report: a retired set is never called held out."""
    return (report.get("retired_label") or RETIRED_LABEL) if report.get("retired") else default


def render_side_by_side(training: dict[str, Any], columns: list[tuple[str, dict[str, Any]]]) -> str:
    """The training corpus and each held-out set in a column of its own (labelled; the held-out
    sets are never added together)."""
    t = training["overall"]
    held_sets = [report["overall"] for _, report in columns]

    def held(cell) -> list[str]:
        return [cell(h) for h in held_sets]

    rows = [
        (
            "messages: errors / harmless / near misses",
            f"{t.get('errors', 0)} / {t.get('harmless', 0)} / {t.get('ordinary_lines', 0)} ordinary lines",
            *held(lambda h: f"{h.get('errors', 0)} / {h.get('harmless', 0)} / {h.get('near_misses', 0)}"),
        ),
        ("errors recognised", _cell(t["errors_recognised_pct"]), *held(lambda h: _cell(h["errors_recognised_pct"]))),
        ("confirmed cause ranked first", _cell(t["cause_first_pct"]), *held(lambda h: _cell(h["cause_first_pct"]))),
        (
            "confirmed cause among those given",
            _cell(t["cause_given_pct"]),
            *held(lambda h: _cell(h["cause_given_pct"])),
        ),
        (
            "harmless called harmless",
            _ratio(t, "harmless_right", "harmless"),
            *held(lambda h: _ratio(h, "harmless_right", "harmless")),
        ),
        (
            "errors called harmless (must be 0)",
            str(t.get("errors_called_harmless", 0)),
            *held(lambda h: str(h.get("errors_called_harmless", 0))),
        ),
        (
            "near misses explained (must be 0)",
            f"{_ratio(t, 'ordinary_acted_on', 'ordinary_lines')} ordinary acted on",
            *held(lambda h: _ratio(h, "near_misses_explained", "near_misses")),
        ),
    ]
    for system in PLATFORMS:
        rows.append(
            (
                f"platform right, {system} (with commands)",
                _ratio(t, f"platform_right_{system}", f"platform_{system}"),
                *held(lambda h, s=system: _ratio(h, f"platform_right_{s}", f"platform_{s}")),
            )
        )
    width = max(len(r[0]) for r in rows)
    labels = [label for label, _ in columns]
    widths = [max(14, len(label)) for label in labels]
    count = NUMBER_WORDS.get(1 + len(columns), str(1 + len(columns)))
    apart = "; the held-out sets apart" if len(columns) > 1 else ""
    lines = [
        f"\nthe {count} sets side by side (same definitions; shares of all errors{apart})",
        f"{'':<{width}}  {'training':>26}" + "".join(f"  {label:>{w}}" for label, w in zip(labels, widths)),
    ]
    for name, first, *rest in rows:
        lines.append(f"{name:<{width}}  {first:>26}" + "".join(f"  {v:>{w}}" for v, w in zip(rest, widths)))
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help=f"measure this training-format corpus alone (default: {DEFAULT_CORPUS})",
    )
    parser.add_argument(
        "--held-out",
        type=Path,
        nargs="?",
        const=DEFAULT_HELD_OUT,
        default=None,
        help=(
            f"measure a held-out folder alone (default folder: {DEFAULT_HELD_OUT}, the retired first set, "
            f"reported as {RETIRED_LABEL})"
        ),
    )
    parser.add_argument(
        "--held-out-v2",
        type=Path,
        default=None,
        help=(
            "the second held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V2}, when neither --corpus nor --held-out "
            "is given); "
            "measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v3",
        type=Path,
        default=None,
        help=(
            "the third held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V3}, when neither --corpus nor --held-out "
            "is given); "
            "measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v4",
        type=Path,
        default=None,
        help=(
            "the fourth held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V4}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v5",
        type=Path,
        default=None,
        help=(
            "the fifth held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V5}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v6",
        type=Path,
        default=None,
        help=(
            "the sixth held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V6}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v7",
        type=Path,
        default=None,
        help=(
            "the seventh held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V7}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v8",
        type=Path,
        default=None,
        help=(
            "the eighth held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V8}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v9",
        type=Path,
        default=None,
        help=(
            "the ninth held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V9}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--held-out-v10",
        type=Path,
        default=None,
        help=(
            "the tenth held-out set, reported in its own column in the side-by-side "
            f"report (default there with --live: {DEFAULT_HELD_OUT_V10}, when neither --corpus nor --held-out "
            "is given); measure it alone with --held-out DIR"
        ),
    )
    parser.add_argument(
        "--patterns", type=Path, default=None, help="catalogue to measure (default: the bundled explain_patterns.yaml)"
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help=(
            "also measure the live held-out sets (v4 to v10, and the retired v3) in their own columns; a measurement, "
            "taken once before and once after a change, never while writing patterns"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--misses",
        action="store_true",
        help="also list the held-out messages missed (ids only; for whoever measures, not whoever tunes)",
    )
    args = parser.parse_args(argv)
    if args.corpus is not None and args.held_out is None:
        report = measure(args.corpus, args.patterns)
        print(json.dumps(report, indent=2) if args.json else render(report))
        return 0
    if args.held_out is not None and args.corpus is None:
        held = measure_held_out(args.held_out, args.patterns)
        held = held if args.misses else without_misses(held)
        print(json.dumps(held, indent=2) if args.json else render_held_out(held))
        return 0
    defaults = args.corpus is None and args.held_out is None and args.live
    live = []
    for key, given, default in (
        ("held_out_v2", args.held_out_v2, DEFAULT_HELD_OUT_V2),
        ("held_out_v3", args.held_out_v3, DEFAULT_HELD_OUT_V3),
        ("held_out_v4", args.held_out_v4, DEFAULT_HELD_OUT_V4),
        ("held_out_v5", args.held_out_v5, DEFAULT_HELD_OUT_V5),
        ("held_out_v6", args.held_out_v6, DEFAULT_HELD_OUT_V6),
        ("held_out_v7", args.held_out_v7, DEFAULT_HELD_OUT_V7),
        ("held_out_v8", args.held_out_v8, DEFAULT_HELD_OUT_V8),
        ("held_out_v9", args.held_out_v9, DEFAULT_HELD_OUT_V9),
        ("held_out_v10", args.held_out_v10, DEFAULT_HELD_OUT_V10),
    ):
        # the retired second set is read by whoever writes patterns: in the default run too
        retired_default = key == "held_out_v2" and args.corpus is None and args.held_out is None
        folder = (
            given if given is not None else (default if (defaults or retired_default) and default.is_dir() else None)
        )
        if folder is not None:
            live.append((key, folder))
    corpus = args.corpus or DEFAULT_CORPUS
    training = measure(corpus, args.patterns)
    training_by_kind = measure_training_by_kind(corpus, args.patterns)
    held = measure_held_out(args.held_out or DEFAULT_HELD_OUT, args.patterns)
    held = held if args.misses else without_misses(held)
    reports = []
    for key, folder in live:
        report = measure_held_out(folder, args.patterns)
        reports.append((key, report if args.misses else without_misses(report)))
    if args.json:
        out = {"training": {**training, "by_kind": training_by_kind}, "held_out": held}
        out.update(reports)
        print(json.dumps(out, indent=2))
    else:
        parts = [render(training), "\n" + render_held_out(held)]
        parts.extend("\n" + render_held_out(report) for _, report in reports)
        columns = [(held_out_label(held, "held-out"), held)]
        columns.extend(
            (held_out_label(report, key.replace("held_out_", "held-out ")), report) for key, report in reports
        )
        print("\n".join(parts) + "\n" + render_side_by_side(training_by_kind, columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
