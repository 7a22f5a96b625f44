"""CUDA's reading of CUDA_VISIBLE_DEVICES, case by case (the table PyTorch's TestVisibleDeviceParses
pins down, plus the machine-dependent cases: ranges, UUID prefixes, device order)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck import cuda_devices as cd

UUIDS = [
    "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1",
    "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
    "GPU-e429a63e-c61c-4795-b757-5132caeb8e70",
    "GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98",
    "GPU-bbcd6503-5150-4e92-c266-97cc4390d04e",
    "GPU-472ea263-58d7-410d-cc82-f7fdece5bd28",
    "GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e",
    "GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
]
EIGHT = [cd.Gpu(index=i, uuid=u, compute_capability="8.0", name="A100") for i, u in enumerate(UUIDS)]


def seen(value, gpus=EIGHT, order=None):
    """The nvidia-smi indexes CUDA shows, in CUDA's numbering."""
    resolution = cd.resolve(cd.read_visible_devices(value), gpus, order)
    return [index for index, _ in sorted(resolution.cuda_index.items(), key=lambda kv: kv[1])]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1gpu2,2ampere", [1, 2]),  # the rest of an entry is ignored
        ("0, 1, 2, -1, 3", [0, 1, 2]),  # a negative entry ends the list
        ("0, 1, 2, 1", []),  # a repeated ordinal hides every GPU
        ("2, +3, -0, 5", [2, 3, 0, 5]),  # unary signs
        ("one,two,3,4", []),  # a word first: nothing
        ("4,3,two,one", [4, 3]),  # a word later ends the list
        ("GPU-9e8d35e3", [1]),  # a UUID prefix
        ("GPU-9e8d35e3, 2", [1]),  # a UUID list takes no ordinal
        ("", []),
        ("   ", []),
        ("-1", []),
        ("0,1", [0, 1]),
        ("1,0", [1, 0]),
    ],
)
def test_the_table(value, expected):
    assert seen(value) == expected


def test_unset_shows_everything_in_order():
    assert seen(None) == list(range(8))
    assert not cd.read_visible_devices(None).set


def test_uuid_prefixes_resolve_like_cuda():
    assert seen("GPU-e4,GPU-9e8d35e3") == [2, 1]
    assert seen("GPU-9e8d35e3,GPU-1,GPU-47") == [1, 7, 5]
    assert seen("GPU-123,GPU-9e8d35e3") == []  # the first unknown prefix ends the list
    assert seen("GPU-9e8d35e3,GPU-123,GPU-47") == [1]
    assert seen("GPU-9e8d35e3,GPU-e,GPU-47") == [1]  # an ambiguous prefix ends it too
    assert seen("GPU-9e8d35e3,GPU-47,GPU-9e8") == []  # the same GPU twice: none


def test_reasons_name_where_cuda_stopped():
    r = cd.resolve(cd.read_visible_devices("0,1,2,-1,3"), EIGHT)
    assert (r.stopped_at, r.reason) == ("-1", cd.NEGATIVE)
    r = cd.resolve(cd.read_visible_devices("1, 5, 0"), EIGHT[:2])
    assert (r.stopped_at, r.reason, r.count) == ("5", cd.OUT_OF_RANGE, 1)
    r = cd.resolve(cd.read_visible_devices("0,1,2,1"), EIGHT)
    assert r.reason == cd.REPEATED and r.hides_all
    r = cd.resolve(cd.read_visible_devices("GPU-9e8d35e3,GPU-e"), EIGHT)
    assert (r.stopped_at, r.reason) == ("GPU-e", cd.AMBIGUOUS_UUID)
    r = cd.resolve(cd.read_visible_devices("GPU-9e8d35e3, 2"), EIGHT)
    assert r.reason == cd.MIXED
    r = cd.resolve(cd.read_visible_devices("0,1"), EIGHT)
    assert r.reason is None and r.stopped_at is None and not r.hides_all


def test_loosely_read_entries_are_reported():
    visible = cd.read_visible_devices("1gpu2,2")
    assert [e.text for e in visible.loosely_read] == ["1gpu2"]
    assert not cd.read_visible_devices("1,2").loosely_read


def test_mig_instances_are_counted_not_mapped():
    r = cd.resolve(cd.read_visible_devices("MIG-89c850dc"), EIGHT)
    assert r.mig and r.count == 1 and not r.hides_all and r.cuda_index == {}


MIXED = [
    cd.Gpu(index=0, uuid="GPU-a", compute_capability="6.1", name="GeForce GTX 1060"),
    cd.Gpu(index=1, uuid="GPU-b", compute_capability="8.6", name="GeForce RTX 3090"),
]


def test_fastest_first_numbers_the_most_capable_gpu_zero():
    r = cd.resolve(cd.read_visible_devices(None), MIXED)
    assert r.cuda_index == {1: 0, 0: 1} and r.order == "FASTEST_FIRST" and r.order_guessed
    assert seen("0", MIXED) == [1]  # CUDA's 0 is the RTX 3090, nvidia-smi's 1


def test_pci_bus_id_order_is_nvidia_smis():
    r = cd.resolve(cd.read_visible_devices(None), MIXED, "PCI_BUS_ID")
    assert r.cuda_index == {0: 0, 1: 1} and not r.order_guessed
    assert seen("0", MIXED, "PCI_BUS_ID") == [0]


def test_identical_gpus_keep_pci_order_whatever_the_order():
    r = cd.resolve(cd.read_visible_devices(None), EIGHT)
    assert r.cuda_index == {i: i for i in range(8)} and not r.order_guessed


@settings(max_examples=examples(300), deadline=None)
@given(
    capabilities=st.lists(st.sampled_from(["3.0", "6.1", "7.0", "8.6", "9.0"]), min_size=1, max_size=6),
    order=st.sampled_from([None, "PCI_BUS_ID", "FASTEST_FIRST"]),
    uuids=st.booleans(),
    data=st.data(),
)
def test_the_value_that_keeps_some_gpus_is_read_back_as_exactly_those(capabilities, order, uuids, data):
    gpus = [
        cd.Gpu(index=i, uuid=f"GPU-{i:04d}-{i:08d}" if uuids else None, compute_capability=cc, name=f"card {cc}")
        for i, cc in enumerate(capabilities)
    ]
    keep = data.draw(st.lists(st.sampled_from(range(len(gpus))), unique=True))
    settings_ = dict(cd.keep_settings(keep, gpus, order))
    effective_order = settings_.get("CUDA_DEVICE_ORDER", order)
    resolution = cd.resolve(cd.read_visible_devices(settings_["CUDA_VISIBLE_DEVICES"]), gpus, effective_order)
    assert set(resolution.cuda_index) == set(keep)
    assert sorted(resolution.cuda_index.values()) == list(range(len(keep)))
    if "CUDA_DEVICE_ORDER" in settings_:  # set where CUDA's own order would be a guess
        assert cd.cuda_order(gpus, order)[1] and not uuids
    if uuids and keep:
        assert settings_["CUDA_VISIBLE_DEVICES"].startswith("GPU-")  # by UUID: no order to depend on
