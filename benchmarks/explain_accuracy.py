"""How well ``envcheck explain`` answers the messages people really post.

Reads a corpus of real messages (default: tests/fixtures/real_messages/), each with the cause and
the harmlessness that its public thread confirmed, and ordinary log lines that are not problems.
For every message it runs the scanner and ``explain`` (no machine: the message alone) and counts:

  recognised     the message is explained at all
  cause right    the thread's cause (``cause_id``) is among the causes given (of the recognised)
  cause first    ... and ranked first in its explanation (of the recognised)
  harmless right the explanations say "nothing to act on" exactly when the thread did (of the
                 recognised)
  false positive an ordinary line that gets an explanation marked as something to act on

Overall and per family (one corpus file per family). ``--json`` prints the same as JSON;
``--corpus DIR`` measures another corpus; ``--patterns FILE`` another catalogue (for example the
one of an older release, to compare). A catalogue without ranked causes counts a cause as right
when the explanation's id is the ``cause_id`` (so "before" figures of older catalogues are a
lower bound for cause right).

    python benchmarks/explain_accuracy.py
    python benchmarks/explain_accuracy.py --json --corpus path/to/unseen
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_CORPUS = ROOT / "tests" / "fixtures" / "real_messages"
ORDINARY_FILE = "ordinary.yaml"


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


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of corpus YAML files (default: %(default)s)"
    )
    parser.add_argument(
        "--patterns", type=Path, default=None, help="catalogue to measure (default: the bundled explain_patterns.yaml)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    report = measure(args.corpus, args.patterns)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
