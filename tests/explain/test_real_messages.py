"""The corpus of real messages (tests/fixtures/real_messages/): every message is recognised, the
cause its thread confirmed is among the causes given, harmless is right, and no ordinary line is
reported as something to act on. A message lost, or a near miss flagged, fails here."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from envcheck.explain import explain, load_patterns
from envcheck.explain.parts import MUSL_CAUSE, PATH_REASON_CAUSES, REASON_CAUSES, WINDOWS_CAUSES
from envcheck.explain.status_causes import load_status_causes

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "real_messages"
CATALOGUE = load_patterns()

FIELDS = {"id", "message", "source", "harmless", "cause", "cause_id", "fix"}
OPTIONAL = {"os", "generation"}

# Messages whose thread's verdict the text alone cannot reach, with why (keep this short).
KNOWN_MISSES = {
    # cuInit error 34 (the CUDA stub library) was harmless in that thread only because the CI
    # workers have no GPU; the same line on a GPU machine is a real failure. The message alone
    # cannot tell; with the machine's facts (--facts) it can.
    "driver-cmssw-42657": "harmless",
    # The post wraps PyTorch's message across lines ("Error loading\n...\\torch\\lib\\X.dll\" or\n
    # one of its dependencies."): the line with the code does not hold the path that says the DLL is
    # PyTorch's own copy, so the broken-install cause is not reached.
    "windows-sdnext-2332": "cause",
    # TensorFlow's CUDA diagnostics found no libcuda in the process beside a 418 kernel driver; the
    # cluster's admin traced it to the job's CUDA 10.2 needing a newer driver, which the two lines
    # alone do not show (the cuInit error they follow would).
    "hpc-clusters-trixie-41": "cause",
}


def _families() -> dict[str, list[dict]]:
    out = {}
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name != "ordinary.yaml":
            out[path.stem] = yaml.safe_load(path.read_text(encoding="utf-8"))["messages"]
    return out


FAMILIES = _families()
MESSAGES = [entry for entries in FAMILIES.values() for entry in entries]
ORDINARY = yaml.safe_load((CORPUS / "ordinary.yaml").read_text(encoding="utf-8"))["lines"]
# the catalogue's causes, and the causes cuda_status.yaml gives a status no pattern names (a crash's signal)
STATUS_CAUSE_IDS = {r.template.id for refs in load_status_causes().values() for r in refs}
# the causes a message's parts name (a loader's reason, a Windows code: envcheck/explain/parts.py)
PART_CAUSE_IDS = {c[0] for table in (REASON_CAUSES, PATH_REASON_CAUSES, WINDOWS_CAUSES) for c in table.values()} | {
    MUSL_CAUSE[0]
}
CAUSE_IDS = (
    {p.id for p in CATALOGUE.patterns}
    | {c.id for p in CATALOGUE.patterns for c in p.causes}
    | STATUS_CAUSE_IDS
    | PART_CAUSE_IDS
)


def _param(entry: dict, check: str):
    if KNOWN_MISSES.get(entry["id"]) == check:
        return pytest.param(
            entry, id=entry["id"], marks=pytest.mark.xfail(strict=True, reason="known miss, see KNOWN_MISSES")
        )
    return pytest.param(entry, id=entry["id"])


def _explained(entry: dict):
    return explain(CATALOGUE.scan_text(entry["message"]))


PENDING = ROOT / "tests" / "fixtures" / "real_messages_pending"


def test_messages_not_explained_yet_keep_the_corpus_format_and_share_no_thread_with_it():
    """tests/fixtures/real_messages_pending/ (its README.md): the same fields, other threads."""
    pending = [e for path in sorted(PENDING.glob("*.yaml")) for e in yaml.safe_load(path.read_text())["messages"]]
    assert pending, "the folder is empty: remove it and its README"
    in_corpus = {e["source"].split("#")[0].rstrip("/") for e in MESSAGES}
    for entry in pending:
        assert FIELDS <= set(entry) <= FIELDS | OPTIONAL, entry["id"]
        assert entry["source"].startswith("https://") and entry["message"].strip(), entry["id"]
        assert entry["source"].split("#")[0].rstrip("/") not in in_corpus, entry["id"]
    assert not {e["id"] for e in pending} & {e["id"] for e in MESSAGES}


def test_corpus_is_large_and_well_formed():
    assert len(MESSAGES) >= 150 and len(ORDINARY) >= 30
    assert len(FAMILIES) >= 10
    ids = [e["id"] for e in MESSAGES]
    assert len(set(ids)) == len(ids)
    for entry in MESSAGES:
        assert FIELDS <= set(entry) <= FIELDS | OPTIONAL, entry["id"]
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", entry["id"]), entry["id"]
        assert entry["source"].startswith("https://"), entry["id"]
        assert isinstance(entry["harmless"], bool), entry["id"]
        assert entry["message"].strip() and entry["cause"].strip() and entry["fix"].strip(), entry["id"]
        assert entry.get("os") in (None, "linux", "windows", "macos", "wsl"), entry["id"]
    for item in ORDINARY:
        assert set(item) == {"line", "source"} and item["source"].startswith("https://")
    assert set(KNOWN_MISSES) <= set(ids)


def test_every_cause_id_is_in_the_catalogue_vocabulary():
    unknown = sorted({e["cause_id"] for e in MESSAGES} - CAUSE_IDS)
    assert unknown == []


def test_most_families_have_two_generations_or_sources():
    # a family is not one thread repeated: each holds messages from several threads
    for family, entries in FAMILIES.items():
        assert len({e["source"] for e in entries}) >= 2, family


@pytest.mark.parametrize("entry", [_param(e, "recognised") for e in MESSAGES])
def test_recognised(entry):
    assert _explained(entry), f"{entry['id']}: not recognised"


@pytest.mark.parametrize("entry", [_param(e, "cause") for e in MESSAGES])
def test_confirmed_cause_is_among_the_causes_given(entry):
    given = [[c.id for c in e.causes] for e in _explained(entry)]
    assert any(entry["cause_id"] in ids for ids in given), f"{entry['id']}: wanted {entry['cause_id']}, got {given}"


@pytest.mark.parametrize("entry", [_param(e, "harmless") for e in MESSAGES])
def test_harmless_is_right(entry):
    explanations = _explained(entry)
    assert explanations
    assert all(e.harmless for e in explanations) == entry["harmless"], [(e.id, e.harmless) for e in explanations]


@pytest.mark.parametrize("item", ORDINARY, ids=lambda item: item["line"][:60])
def test_ordinary_line_is_not_reported_as_a_problem(item):
    acted = [e.id for e in explain(CATALOGUE.scan_text(item["line"])) if not e.harmless]
    assert acted == []


def test_known_misses_are_few():
    assert len(KNOWN_MISSES) <= 3


def _benchmark():
    spec = importlib.util.spec_from_file_location("explain_accuracy", ROOT / "benchmarks" / "explain_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_accuracy_benchmark_on_a_tiny_corpus(tmp_path, capsys):
    (tmp_path / "demo.yaml").write_text(
        yaml.safe_dump(
            {
                "messages": [
                    {
                        "id": "right",
                        "message": "ImportError: Could not find 'cudart64_110.dll'.",
                        "source": "https://example.org/1",
                        "harmless": False,
                        "cause": "c",
                        "cause_id": "cuda-not-installed",
                        "fix": "f",
                    },
                    {
                        "id": "unknown",
                        "message": "Epoch 1/10",
                        "source": "https://example.org/2",
                        "harmless": False,
                        "cause": "c",
                        "cause_id": "cuda-not-installed",
                        "fix": "f",
                    },
                ]
            }
        )
    )
    (tmp_path / "ordinary.yaml").write_text(
        yaml.safe_dump(
            {
                "lines": [
                    {"line": "Epoch 3/70", "source": "https://example.org/3"},
                    {"line": "Illegal instruction (core dumped)", "source": "https://example.org/4"},
                ]
            }
        )
    )
    benchmark = _benchmark()
    assert benchmark.main(["--json", "--corpus", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    overall = report["overall"]
    assert (
        overall["messages"] == 2
        and overall["recognised"] == 1
        and overall["cause_right"] == 1
        and overall["cause_first"] == 1
    )
    assert overall["recognised_pct"] == 50.0 and overall["harmless_right_pct"] == 100.0
    assert overall["ordinary_lines"] == 2 and overall["false_positives"] == 1  # the crash line is no ordinary line
    assert report["families"]["demo"]["messages"] == 2
    assert [m["id"] for m in report["misses"]] == ["unknown"]
    assert benchmark.main(["--corpus", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "demo" in text and "false positives: 1" in text
