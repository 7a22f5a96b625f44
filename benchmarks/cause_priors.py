"""How often each of a pattern's causes is the one a thread confirmed, where the written order decides.

A pattern lists its causes most likely first (explain_patterns.yaml). Context rules move them for
one message: a cause's ``first_if`` / ``last_if``, the log's contradictions (``weigh`` drops a
cause or points at one), the cause a message's parts name (``part_causes``), the driver split the
log shows (``log_causes``) and a status's own causes (``fallback`` patterns). Where none of them
acts, the written order is the answer, so it should follow how often each cause is the confirmed
one.

For every error of the training corpus (tests/fixtures/real_messages/) with a ``cause_id``, this
takes the first explanation shown. When no context rule acted on it and the confirmed cause is one
of that pattern's causes, the message counts for that cause. Per pattern it prints the written
order with the counts, and the pairs where a cause is written before one confirmed clearly more
often: in the messages both causes applied to (a cause's ``when``), the later one confirmed at
least ``THRESHOLD`` times and more often than the earlier. ``--json`` adds the corpus ids counted.
tests/explain/test_cause_priors.py fails on such a pair unless it names the source that keeps it.

    python benchmarks/cause_priors.py              # patterns with a count, and the contradictions
    python benchmarks/cause_priors.py --all        # every multi-cause pattern
    python benchmarks/cause_priors.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_CORPUS = ROOT / "tests" / "fixtures" / "real_messages"
ORDINARY_FILE = "ordinary.yaml"
# Clear evidence: the cause that should move up is confirmed at least this often (and more often
# than the cause written before it).
THRESHOLD = 3

# (pattern, earlier cause, later cause) -> why the earlier stays first though the corpus favours the
# later. Each entry names the statement it keeps; a context rule that decides the case makes the
# entry unneeded (tests/explain/test_cause_priors.py then says so).
KEPT_ORDERS = {
    # Index 0 exists wherever any GPU does (CUDA C++ Programming Guide, CUDA_VISIBLE_DEVICES): a log
    # that shows CUDA_VISIBLE_DEVICES=0 cannot mean an index out of range, and no rule rules it out
    # there (test_explain_build_ranking: ..._visible_devices_the_log_sets_ranks_its_cause).
    ("cuinit-no-device", "cvd-hides-all", "cvd-out-of-range"): "CUDA_VISIBLE_DEVICES=0 names an existing GPU",
    # Both causes rise to the front on their own signs (custom-build-arch when the project's own
    # cudaCheckError() printed it, compute-capability-too-low when the log names an old GPU); where
    # both show, the failing kernel is the project's own build, compiled by its own nvcc -arch list
    # (nvcc guide, GPU feature list), so the written order breaks the tie for it
    # (test_explain_documented_causes: ..._own_kernel_on_an_old_gpu_is_its_own_build_first).
    ("no-kernel-image-for-device", "custom-build-arch", "compute-capability-too-low"): (
        "a project's own kernel on an old GPU is its own build first"
    ),
}


@dataclass
class PatternCounts:
    pattern_id: str
    order: tuple[str, ...]  # the causes as written
    confirmed: Counter = field(default_factory=Counter)  # cause id -> messages, written order deciding
    # (earlier, later) -> messages where both applied (``when``) and one of the two was confirmed,
    # as [earlier's count, later's count]: a cause is only weighed against one it was listed with
    pairs: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    moved: int = 0  # messages this pattern explained first where a context rule acted
    examples: dict[str, list[str]] = field(default_factory=dict)  # cause id -> corpus ids counted

    def add(self, cause_id: str, applicable: list[str], entry_id: str) -> None:
        self.confirmed[cause_id] += 1
        self.examples.setdefault(cause_id, []).append(entry_id)
        for i, earlier in enumerate(applicable):
            for later in applicable[i + 1 :]:
                if cause_id in (earlier, later):
                    self.pairs.setdefault((earlier, later), [0, 0])[cause_id == later] += 1

    def contradictions(self, threshold: int = THRESHOLD) -> list[tuple[str, int, str, int]]:
        """(earlier cause, its count, later cause, its count) for each written pair that clear
        evidence contradicts: the later one confirmed at least ``threshold`` times, and more
        often than the earlier, in the messages both applied to."""
        return [(earlier, a, later, b) for (earlier, later), (a, b) in self.pairs.items() if b >= threshold and b > a]


def load_errors(folder: Path) -> list[dict[str, Any]]:
    import yaml

    entries = []
    for path in sorted(folder.glob("*.yaml")):
        if path.name == ORDINARY_FILE:
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        entries.extend(e for e in data.get("messages") or [] if e.get("cause_id") and not e.get("harmless"))
    return entries


def written_order_decides(pattern: Any, explanation: Any, seen: frozenset[str]) -> bool:
    """Whether the explanation's causes are the pattern's, in the written order, with no context
    rule acting on them."""
    from envcheck.explain.contradictions import POINTED_AT_BY_LOG
    from envcheck.explain.explanations import log_causes, part_causes

    variables = explanation.variables
    if pattern.fallback and variables.get("status_name"):
        return False  # a status's own causes (cuda_status.yaml), not the pattern's
    if explanation.dropped:
        return False  # the log ruled a cause out
    applicable = [c for c in pattern.causes if c.when is None or c.when.holds(variables, seen)]
    for cause in applicable:
        for condition in (cause.first_if, cause.last_if):
            if condition is not None and condition.holds(variables, seen):
                return False
        if POINTED_AT_BY_LOG.get(cause.id, lambda v: False)(variables):
            return False
    own = {c.id for c in pattern.causes}
    if any(c.id not in own for c in (*part_causes(variables), *log_causes(pattern, variables))):
        return False
    # the status's other causes that follow the pattern's own (explanations.status_causes_beside)
    # are not the pattern's written order
    given = [c.id for c in explanation.causes if c.id in own]
    written = [c.id for c in applicable]
    return given == written


def count(corpus: Path = DEFAULT_CORPUS, patterns: Optional[Path] = None) -> dict[str, PatternCounts]:
    """Pattern id -> its counts, for every pattern with two or more causes."""
    from envcheck.explain import explain, load_patterns

    catalogue = load_patterns(patterns) if patterns else load_patterns()
    by_id = {p.id: p for p in catalogue.patterns}
    counts = {p.id: PatternCounts(p.id, tuple(c.id for c in p.causes)) for p in catalogue.patterns if len(p.causes) > 1}
    for entry in load_errors(corpus):
        result = catalogue.scan_text(entry["message"])
        explanations = explain(result)
        if not explanations or explanations[0].id not in counts:
            continue
        first = explanations[0]
        tally = counts[first.id]
        if not written_order_decides(by_id[first.id], first, frozenset(result.ids)):
            tally.moved += 1
        elif entry["cause_id"] in tally.order:
            tally.add(entry["cause_id"], [c.id for c in first.causes], entry["id"])
    return counts


def report(counts: dict[str, PatternCounts], show_all: bool = False) -> dict[str, Any]:
    rows = []
    for tally in counts.values():
        if not show_all and not tally.confirmed:
            continue
        rows.append(
            {
                "pattern": tally.pattern_id,
                "order": [[cause, tally.confirmed[cause]] for cause in tally.order],
                "counted": dict(tally.examples),  # cause id -> the corpus ids counted for it
                "moved_by_context": tally.moved,
                "contradictions": [
                    {"earlier": a, "earlier_count": ac, "later": b, "later_count": bc}
                    for a, ac, b, bc in tally.contradictions()
                ],
            }
        )
    return {
        "threshold": THRESHOLD,
        "patterns": rows,
        "contradicted": [r["pattern"] for r in rows if r["contradictions"]],
    }


def render(data: dict[str, Any]) -> str:
    lines = ["written order of each pattern's causes, with how often each is the confirmed cause", ""]
    for row in data["patterns"]:
        flag = "  <- contradicted" if row["contradictions"] else ""
        lines.append(f"{row['pattern']} (moved by context: {row['moved_by_context']}){flag}")
        for cause, n in row["order"]:
            lines.append(f"  {n:>4}  {cause}")
    lines.append("")
    if data["contradicted"]:
        lines.append(f"a cause written before one confirmed more often (at least {data['threshold']} times and more):")
        for row in data["patterns"]:
            for c in row["contradictions"]:
                kept = KEPT_ORDERS.get((row["pattern"], c["earlier"], c["later"]))
                lines.append(
                    f"  {row['pattern']}: {c['earlier']} ({c['earlier_count']}) before {c['later']} ({c['later_count']})"
                    + (f"  [kept: {kept}]" if kept else "")
                )
    else:
        lines.append(f"no written order contradicts the corpus (threshold {data['threshold']})")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="a folder in the training format")
    parser.add_argument("--patterns", type=Path, default=None, help="another catalogue file")
    parser.add_argument("--all", action="store_true", help="every multi-cause pattern, counted or not")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    data = report(count(args.corpus, args.patterns), show_all=args.all)
    print(json.dumps(data, indent=2) if args.json else render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
