"""The written order of a pattern's causes follows the training corpus where no context rule acts.

benchmarks/cause_priors.py counts, for each pattern, how often each cause is the confirmed one of
a corpus message the pattern explains first with no context rule moving its causes. A cause
written before one that clear evidence (at least THRESHOLD messages, and more than it) shows to be
more often right fails here, unless the script's KEPT_ORDERS names the source or test that keeps it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from envcheck.explain import explain, load_patterns

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("cause_priors", ROOT / "benchmarks" / "cause_priors.py")
priors = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("cause_priors", priors)  # its dataclasses look their module up
_SPEC.loader.exec_module(priors)

KEPT_ORDERS = priors.KEPT_ORDERS


@pytest.fixture(scope="module")
def counts():
    return priors.count()


def test_the_written_order_does_not_contradict_the_corpus(counts):
    found = {
        (tally.pattern_id, earlier, later): (a, b)
        for tally in counts.values()
        for earlier, a, later, b in tally.contradictions()
    }
    unexplained = {k: v for k, v in found.items() if k not in KEPT_ORDERS}
    assert not unexplained, f"reorder these causes (earlier, later: counts) or keep them with a source: {unexplained}"
    stale = set(KEPT_ORDERS) - set(found)
    assert not stale, f"no longer contradicted by the corpus, drop from KEPT_ORDERS: {stale}"


def test_counts_come_only_from_messages_the_written_order_decides(counts):
    # keras-newer-than-tf is the confirmed cause of at least three such messages
    assert counts["keras-requires-newer-tensorflow"].confirmed["keras-newer-than-tf"] >= priors.THRESHOLD
    assert sum(t.moved for t in counts.values()) > 0  # some messages are ranked by the log, not counted


def _pattern_counts(order, confirmed):
    tally = priors.PatternCounts("p", tuple(order))
    for n, (cause, applicable) in enumerate(confirmed):
        tally.add(cause, list(applicable), f"m{n}")
    return tally


def test_a_later_cause_confirmed_clearly_more_often_is_a_contradiction():
    tally = _pattern_counts(["a", "b"], [("b", "ab")] * 3 + [("a", "ab")] * 2)
    assert tally.contradictions() == [("a", 2, "b", 3)]


@pytest.mark.parametrize(
    "confirmed",
    [
        [("b", "ab")] * 2,  # under the threshold
        [("b", "ab")] * 3 + [("a", "ab")] * 3,  # as often as the earlier one
        [("b", "b")] * 3 + [("a", "ab")],  # the earlier one did not apply (its `when`) to those messages
    ],
)
def test_weak_or_incomparable_evidence_is_not_a_contradiction(confirmed):
    assert _pattern_counts(["a", "b"], confirmed).contradictions() == []


CATALOGUE = load_patterns()
CATALOGUE_BY_ID = {p.id: p for p in CATALOGUE.patterns}
KERAS = "ImportError: Keras requires TensorFlow 2.2 or higher. Install TensorFlow via `pip install tensorflow`\n"


def test_keras_asking_for_a_newer_tensorflow_alone_ranks_the_version_mismatch_first():
    (e,) = [e for e in explain(CATALOGUE.scan_text(KERAS)) if e.id == "keras-requires-newer-tensorflow"]
    assert [c.id for c in e.causes][0] == "keras-newer-than-tf"


def test_keras_after_a_failed_tensorflow_import_still_ranks_the_import_first():
    text = "ImportError: DLL load failed: The specified module could not be found.\n" + KERAS
    (e,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == "keras-requires-newer-tensorflow"]
    assert [c.id for c in e.causes][0] == "tf-import-failed"
    assert not priors.written_order_decides(
        CATALOGUE_BY_ID["keras-requires-newer-tensorflow"], e, frozenset(CATALOGUE.scan_text(text).ids)
    )
