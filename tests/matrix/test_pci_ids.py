"""PCI device ids to products: the bundled matrix's ids, the spellings a lookup accepts, and what a
machine with a GPU but no driver gets from them."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from envcheck.facts import OK, Facts, PciDevice, PciFacts
from envcheck.matrix import load_matrix, parse_pci_device_id
from envcheck.planner import target_from_facts


@pytest.fixture(scope="module")
def m():
    return load_matrix()


@pytest.mark.parametrize(
    "device_id, name",
    [
        ("1180", "GeForce GTX 680"),  # Kepler, from pci.ids
        ("102d", "Tesla K80"),
        ("1023", "Tesla K40"),  # pci.ids: Tesla K40m
        ("17c8", "GeForce GTX 980 Ti"),
        ("1c03", "GeForce GTX 1060"),
        ("1c20", "GeForce GTX 1060"),  # the laptop part
        ("1b06", "GeForce GTX 1080 Ti"),
        ("15f8", "Tesla P100"),
        ("1db4", "Tesla V100"),
        ("1d81", "TITAN V"),
        ("1eb8", "Tesla T4"),  # Turing and later, from NVIDIA's README
        ("1e04", "GeForce RTX 2080 Ti"),
        ("1f82", "GeForce GTX 1650"),
        ("20b0", "A100"),
        ("20b5", "A100"),
        ("2204", "GeForce RTX 3090"),
        ("2208", "GeForce RTX 3080 Ti"),
        ("2206", "GeForce RTX 3080"),
        ("2236", "A10"),
        ("2230", "RTX A6000"),
        ("2684", "GeForce RTX 4090"),
        ("28a1", "GeForce RTX 4050 Laptop GPU"),
        ("26b9", "L40S"),
        ("27b8", "L4"),
        ("2330", "H100"),
        ("2335", "H200"),
        ("2901", "B200"),
        ("2b85", "GeForce RTX 5090"),
        ("2bb1", "RTX PRO 6000 Blackwell"),
        ("2e12", "GB10"),
    ],
)
def test_device_ids_name_their_product(m, device_id, name):
    gpu = m.gpu_by_pci_id(device_id)
    assert gpu is not None and gpu.name == name, (device_id, gpu)


@pytest.mark.parametrize(
    "spelled", ["1c03", "0x1c03", "0x1C03", "1C03", "10de:1c03", "10DE:1C03", "0x10de:0x1c03", " 1c03 "]
)
def test_spellings_of_an_id(m, spelled):
    assert parse_pci_device_id(spelled) == "1c03"
    assert m.gpu_by_pci_id(spelled).name == "GeForce GTX 1060"


@pytest.mark.parametrize("spelled", ["8086:1c03", "1c0", "1c033", "0xzzzz", "", "GeForce GTX 1060", "10de:"])
def test_what_is_not_an_nvidia_device_id(m, spelled):
    assert parse_pci_device_id(spelled) is None
    assert m.gpu_by_pci_id(spelled) is None


@pytest.mark.parametrize(
    "device_id",
    [
        "1e78",  # NVIDIA's README: Quadro RTX 6000 or 8000, by subsystem only
        "25b6",  # A2 and A16, by subsystem only
        "0f02",  # pci.ids: a Fermi GeForce GT 730; the GT 730 by name is Kepler
        "ffff",
    ],
)
def test_ids_that_do_not_name_one_known_product_are_unknown(m, device_id):
    assert m.gpu_by_pci_id(device_id) is None


def test_ids_are_lower_case_hex_and_name_one_product(m):
    seen: dict[str, str] = {}
    for gpu in m.gpus():
        for device_id in gpu.pci_ids:
            assert re.fullmatch(r"[0-9a-f]{4}", device_id), device_id
            assert device_id not in seen, (device_id, seen.get(device_id), gpu.name)
            seen[device_id] = gpu.name
            assert m.gpu_by_pci_id(device_id) is gpu
    assert len(seen) >= 500
    assert {g.architecture for g in m.gpus() if g.pci_ids} >= {
        "Fermi",
        "Kepler",
        "Maxwell",
        "Pascal",
        "Volta",
        "Turing",
        "Ampere",
        "Ada Lovelace",
        "Hopper",
        "Blackwell",
    }


def test_a_gpu_without_a_driver_or_pci_ids_is_known_by_its_device_id(m):
    # No pci.ids on the machine, no driver: the PCI bus gives only the device id.
    facts = Facts(
        pci=PciFacts(
            status=OK,
            devices=(PciDevice(address="0000:01:00.0", vendor_id="0x10de", device_id="0x2684", class_code="0x030000"),),
        )
    )
    target = target_from_facts(facts, m)
    assert target.gpu_names == ("GeForce RTX 4090",)
    assert target.compute_capability == Version("8.9")
    assert not any("not known without its driver" in n for n in target.notes)


def test_an_unknown_device_id_still_asks_for_the_gpu(m):
    facts = Facts(
        pci=PciFacts(
            status=OK,
            devices=(PciDevice(address="0000:01:00.0", vendor_id="0x10de", device_id="0x2b8f", class_code="0x030000"),),
        )
    )
    target = target_from_facts(facts, m)
    assert target.has_gpu and target.compute_capability is None
    assert target.gpu_names == ("NVIDIA device 0x2b8f",)
    assert any("--compute-capability" in n for n in target.notes)


@pytest.mark.parametrize(
    "device_id, name",
    [
        ("1e30", "Quadro RTX 6000"),  # the README's row without a subsystem; an RTX 8000 by subsystem is 7.5 too
        ("25a2", "GeForce RTX 3050"),  # the 3050 Laptop GPU; by subsystem a 3050 Ti or 3060 Laptop GPU, all 8.6
        ("25a0", "GeForce RTX 3050 Ti Laptop GPU"),
        ("25a9", "GeForce RTX 2050"),  # GA107: not in NVIDIA's table, named by the README and pci.ids
        ("128b", "GeForce GT 710"),
        ("1f97", "GeForce MX450"),
    ],
)
def test_an_id_named_by_its_row_without_a_subsystem(m, device_id, name):
    product = m.gpu_by_pci_id(device_id)
    assert product is not None and product.name == name
