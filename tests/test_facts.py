"""The facts snapshot: lossless round trip, strict reading, and a fuzzed reader that never crashes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.errors import FactsError
from envcheck.facts import (
    SCHEMA_VERSION,
    Distribution,
    EnvFacts,
    Facts,
    LibrariesFacts,
    LibraryCopy,
    LibraryFacts,
    NvmlFacts,
    NvmlGpu,
    PackagesFacts,
    PlacementResult,
    PythonFacts,
    TensorflowFacts,
    TfDevice,
    facts_from_dict,
    load_facts,
    normalize_name,
    to_dict,
    to_json,
)


def rich_facts() -> Facts:
    """A snapshot touching every kind of field: nested records, tuples, dicts, optionals."""
    return Facts(
        envcheck_version="0.1.0",
        created="2026-01-01T00:00:00+00:00",
        python=PythonFacts(executable="/usr/bin/python3", version="3.11.7", implementation="CPython", bits=64),
        env=EnvFacts(variables={"CUDA_VISIBLE_DEVICES": "0,1", "PATH": "/usr/bin"}),
        packages=PackagesFacts(distributions=(Distribution(name="tensorflow", version="2.15.0", requires=("numpy",)),)),
        nvml=NvmlFacts(
            driver_version="550.54.15",
            cuda_driver_version="12.4",
            gpus=(NvmlGpu(index=0, name="NVIDIA A100", compute_capability="8.0", memory_total_mb=81920),),
        ),
        libraries=LibrariesFacts(
            search_path=("/usr/lib",),
            libraries=(
                LibraryFacts(
                    family="cudart",
                    copies=(
                        LibraryCopy(
                            path="/usr/lib/libcudart.so.12", directory="/usr/lib", origin="ldconfig", loads=True
                        ),
                    ),
                    winner="/usr/lib/libcudart.so.12",
                ),
            ),
        ),
        tensorflow=TensorflowFacts(
            version="2.15.0",
            is_cuda_build=True,
            compute_capabilities=("sm_80", "compute_90"),
            build_info={"cuda_version": "12.2"},
            physical_devices=(
                TfDevice(name="/physical_device:GPU:0", device_type="GPU", details={"compute_capability": "(8, 0)"}),
            ),
            placement=(
                PlacementResult(
                    op="matmul",
                    requested="/GPU:0",
                    device="/job:localhost/replica:0/task:0/device:GPU:0",
                    ok=True,
                    seconds=0.01,
                ),
            ),
            seconds=3.5,
        ),
    )


def test_round_trip_is_lossless():
    facts = rich_facts()
    assert facts_from_dict(json.loads(to_json(facts))) == facts


def test_default_snapshot_round_trips():
    facts = Facts()
    assert facts_from_dict(to_dict(facts)) == facts


def test_whole_report_is_accepted_as_a_snapshot(tmp_path):
    facts = rich_facts()
    report = {"schema_version": 1, "verdict": {}, "findings": [], "facts": to_dict(facts)}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert load_facts(path) == facts


def test_records_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        rich_facts().python.bits = 32  # type: ignore[misc]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer than this envcheck"),
        (lambda d: d.pop("schema_version"), "schema_version"),
        (lambda d: d.update(schema_version="1"), "schema_version"),
        (lambda d: d.update(surprise=1), "unknown key 'surprise'"),
        (lambda d: d["python"].update(bits="64"), "facts.python.bits: expected an integer"),
        (lambda d: d["python"].update(bits=True), "facts.python.bits: expected an integer"),
        (lambda d: d["nvml"].update(gpus={}), "facts.nvml.gpus: expected a list"),
        (lambda d: d["nvml"]["gpus"][0].pop("index"), "missing key 'index'"),
        (lambda d: d["env"].update(variables=["PATH"]), "expected an object"),
        (lambda d: d.update(python=None), "facts.python: expected an object"),
    ],
)
def test_wrong_shapes_are_named(mutate, message):
    data = to_dict(rich_facts())
    mutate(data)
    with pytest.raises(FactsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        facts_from_dict(data)


def test_file_errors_are_one_line(tmp_path):
    cases = {
        "missing": (tmp_path / "nope.json", "no such file"),
        "dir": (tmp_path, "is a directory"),
    }
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    cases["bad"] = (bad_json, "not valid JSON")
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    cases["binary"] = (binary, "not")
    for name, (path, message) in cases.items():
        with pytest.raises(FactsError, match=message) as info:
            load_facts(path)
        assert "\n" not in str(info.value), name


def test_deeply_nested_json_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(FactsError):
        load_facts(path)


def test_name_normalisation():
    assert normalize_name("TensorFlow_GPU") == "tensorflow-gpu"
    assert normalize_name("tf.nightly") == "tf-nightly"
    assert rich_facts().distribution("TensorFlow") is not None
    assert rich_facts().distribution("tensorflow-gpu") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=30,
)


def _mutations_of_valid():
    base = to_dict(rich_facts())
    keys = st.sampled_from(sorted(base))

    @st.composite
    def mutated(draw):
        data = json.loads(json.dumps(base))
        for _ in range(draw(st.integers(1, 3))):
            key = draw(keys)
            data[key] = draw(json_values)
        return data

    return mutated()


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.one_of(json_values, _mutations_of_valid()))
def test_reader_raises_only_its_own_error(data):
    try:
        facts = facts_from_dict(data)
    except FactsError:
        return
    assert isinstance(facts, Facts)
    # What was accepted must survive its own round trip.
    assert facts_from_dict(to_dict(facts)) == facts


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=200))
def test_file_reader_on_arbitrary_bytes(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "f.json"
    path.write_bytes(raw)
    try:
        load_facts(path)
    except FactsError as exc:
        assert "\n" not in str(exc)


def test_a_snapshot_from_an_unknown_os_names_the_file_and_field(tmp_path):
    from envcheck.facts import load_facts

    data = to_dict(Facts())
    data["platform"]["os"] = "solaris"
    path = tmp_path / "solaris.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FactsError, match=r"solaris\.json: facts\.platform\.os: unknown OS 'solaris'"):
        load_facts(path)


def test_version_1_snapshots_are_still_read(tmp_path):
    """Snapshots written before the report moved to schema 2 read as they are, as version 2."""
    import json as _json
    from pathlib import Path as _Path

    from envcheck.facts import SCHEMA_VERSION, load_facts

    source = _Path(__file__).parent / "fixtures" / "facts" / "multi_gpu_server.json"
    data = _json.loads(source.read_text())
    data["schema_version"] = 1
    old = tmp_path / "v1.json"
    old.write_text(_json.dumps(data))
    facts = load_facts(old)
    assert facts.schema_version == SCHEMA_VERSION == 2
    assert facts.nvml.gpus and facts.python.version
