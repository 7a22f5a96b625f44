"""GPU names as people and tools spell them, through the bundled matrix: what must resolve, and the
near misses that must not resolve to the wrong product."""

from __future__ import annotations

import re

import pytest

from envcheck.matrix import gpu_name_key, load_matrix, normalize_gpu_name


@pytest.fixture(scope="module")
def m():
    return load_matrix()


@pytest.mark.parametrize(
    "typed, name, capability",
    [
        # GeForce desktop, with the spellings nvidia-smi, pci.ids and people use
        ("GeForce RTX 3080 Ti", "GeForce RTX 3080 Ti", "8.6"),
        ("rtx3080ti", "GeForce RTX 3080 Ti", "8.6"),
        ("RTX 3080", "GeForce RTX 3080", "8.6"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "8.9"),
        ("RTX 4090 Founders Edition", "GeForce RTX 4090", "8.9"),
        ("RTX 4090 D", "GeForce RTX 4090 D", "8.9"),
        ("RTX 4070 Ti SUPER", "GeForce RTX 4070 Ti Super", "8.9"),
        ("RTX 3060 Ti LHR", "GeForce RTX 3060 Ti", "8.6"),
        ("GeForce RTX 3080 12GB", "GeForce RTX 3080", "8.6"),
        ("GeForce RTX 5090 D v2", "GeForce RTX 5090", "12.0"),
        ("RTX 5060 Ti", "GeForce RTX 5060 Ti", "12.0"),
        ("GeForce RTX 2080 SUPER", "GeForce RTX 2080 Super", "7.5"),
        ("GTX 1650", "GeForce GTX 1650", "7.5"),
        ("GeForce GTX 1060 6GB Rev. 2", "GeForce GTX 1060", "6.1"),
        ("GTX 1050 3 GB Max-Q", "GeForce GTX 1050", "6.1"),
        ("GeForce GTX 750 Ti", "GeForce GTX 750 Ti", "5.0"),
        ("GeForce GTX 980M", "GeForce GTX 980M", "5.2"),
        ("GeForce GTX 960M", "GeForce GTX 960M", "5.0"),
        ("GeForce GTX 780", "GeForce GTX 780", "3.5"),
        ("GeForce GTX 680", "GeForce GTX 680", "3.0"),
        ("GeForce GTX 580", "GeForce GTX 580", "2.0"),
        ("GeForce GT 730", "GeForce GT 730", "3.5"),
        ("GeForce GT 730 DDR3,128bit", "GeForce GT 730 DDR3 128bit", "2.1"),
        ("GeForce GT 640 (GDDR5)", "GeForce GT 640 (GDDR5)", "3.5"),
        # laptop parts: "Laptop GPU", "Mobile", "Max-Q" and a bare M name the laptop part
        ("RTX 4050", "GeForce RTX 4050 Laptop GPU", "8.9"),
        ("RTX 4050 Laptop GPU", "GeForce RTX 4050 Laptop GPU", "8.9"),
        ("NVIDIA GeForce RTX 4050 Laptop GPU", "GeForce RTX 4050 Laptop GPU", "8.9"),
        ("RTX 4060 Laptop GPU", "GeForce RTX 4060", "8.9"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "GeForce RTX 3060", "8.6"),
        ("RTX 3080 Ti Laptop GPU", "GeForce RTX 3080 Ti", "8.6"),
        ("RTX 3080M", "GeForce RTX 3080", "8.6"),
        ("RTX 3050 Ti", "GeForce RTX 3050 Ti Laptop GPU", "8.6"),
        ("NVIDIA GeForce RTX 3050Ti Laptop GPU", "GeForce RTX 3050 Ti Laptop GPU", "8.6"),
        ("NVIDIA GeForce RTX 3050 6GB Laptop GPU", "GeForce RTX 3050", "8.6"),
        ("RTX 5090 Laptop GPU", "GeForce RTX 5090", "12.0"),
        ("GeForce GTX 1080 with Max-Q Design", "GeForce GTX 1080", "6.1"),
        ("GTX 1060 Mobile", "GeForce GTX 1060", "6.1"),
        ("GeForce GTX 1650 Ti with Max-Q Design", "GeForce GTX 1650 Ti", "7.5"),
        ("NVIDIA GeForce RTX 2070 Super with Max-Q Design", "GeForce RTX 2070 Super", "7.5"),
        # pci.ids spells the chip and the product in brackets
        ("GP106 [GeForce GTX 1060 6GB]", "GeForce GTX 1060", "6.1"),
        ("TU117M [GeForce GTX 1650 Mobile / Max-Q]", "GeForce GTX 1650", "7.5"),
        ("GK110BGL [Tesla K40m]", "Tesla K40", "3.5"),
        # TITAN
        ("TITAN X (Pascal)", "TITAN X (Pascal)", "6.1"),
        ("GeForce GTX TITAN X", "GeForce GTX TITAN X", "5.2"),
        ("NVIDIA TITAN Xp", "TITAN Xp", "6.1"),
        ("TITAN V", "TITAN V", "7.0"),
        ("NVIDIA TITAN RTX", "TITAN RTX", "7.5"),
        ("GeForce GTX TITAN Black", "GeForce GTX TITAN Black", "3.5"),
        # Quadro, RTX A, RTX Ada, RTX PRO Blackwell
        ("Quadro RTX 6000", "Quadro RTX 6000", "7.5"),
        ("Quadro RTX 5000 with Max-Q Design", "Quadro RTX 5000", "7.5"),
        ("Quadro P4000", "Quadro P4000", "6.1"),
        ("P4000", "Quadro P4000", "6.1"),
        ("Quadro K620", "Quadro K620", "5.0"),
        ("Quadro M6000 24GB", "Quadro M6000", "5.2"),
        ("Quadro GV100", "Quadro GV100", "7.0"),
        ("Quadro T1000 with Max-Q Design", "T1000", "7.5"),
        ("NVIDIA T1000 8GB", "T1000", "7.5"),
        ("NVIDIA T1200 Laptop GPU", "T1200 Laptop GPU", "7.5"),
        ("RTX A6000", "RTX A6000", "8.6"),
        ("NVIDIA RTX A6000", "RTX A6000", "8.6"),
        ("A6000", "RTX A6000", "8.6"),
        ("NVIDIA RTX A5000 Laptop GPU", "RTX A5000", "8.6"),
        ("RTX A3000", "RTX A3000 Laptop GPU", "8.6"),
        ("NVIDIA RTX A2000 12GB", "RTX A2000", "8.6"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation", "8.9"),
        ("RTX 6000 Ada", "RTX 6000 Ada Generation", "8.9"),
        ("RTX 4000 SFF Ada Generation", "RTX 4000 Ada Generation", "8.9"),
        ("NVIDIA RTX 2000 Ada Generation Laptop GPU", "RTX 2000 Ada Generation", "8.9"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Blackwell", "12.0"),
        ("RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell", "12.0"),
        ("RTX PRO 6000", "RTX PRO 6000 Blackwell", "12.0"),
        ("RTX PRO 4000 Blackwell SFF Edition", "RTX PRO 4000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 5000 Blackwell Generation Laptop GPU", "RTX PRO 5000 Blackwell", "12.0"),
        # data centre, as nvidia-smi names them
        ("Tesla K80", "Tesla K80", "3.7"),
        ("Tesla K40m", "Tesla K40", "3.5"),
        ("Tesla K20Xm", "Tesla K20X", "3.5"),
        ("Tesla M60", "Tesla M60", "5.2"),
        ("Tesla P100-PCIE-16GB", "Tesla P100", "6.0"),
        ("Tesla P4", "Tesla P4", "6.1"),
        ("Tesla V100-SXM2-16GB", "Tesla V100", "7.0"),
        ("Tesla V100-DGXS-32GB", "Tesla V100", "7.0"),
        ("Tesla V100S-PCIE-32GB", "Tesla V100", "7.0"),
        ("Tesla T4", "Tesla T4", "7.5"),
        ("NVIDIA T4", "Tesla T4", "7.5"),
        ("A100 80GB PCIe", "A100", "8.0"),
        ("NVIDIA A100-SXM4-40GB", "A100", "8.0"),
        ("NVIDIA A100-PCIE-40GB", "A100", "8.0"),
        ("NVIDIA A30", "A30", "8.0"),
        ("NVIDIA A10", "A10", "8.6"),
        ("NVIDIA A10G", "A10G", "8.6"),
        ("NVIDIA A16", "A16", "8.6"),
        ("NVIDIA A40", "A40", "8.6"),
        ("NVIDIA L4", "L4", "8.9"),
        ("NVIDIA L40S", "L40S", "8.9"),
        ("H100 SXM5", "H100", "9.0"),
        ("NVIDIA H100 80GB HBM3", "H100", "9.0"),
        ("NVIDIA H100 NVL", "H100", "9.0"),
        ("NVIDIA H100 PCIe", "H100", "9.0"),
        ("NVIDIA H200", "H200", "9.0"),
        ("NVIDIA GH200 480GB", "GH200", "9.0"),
        ("NVIDIA GH200 144G HBM3e", "GH200", "9.0"),
        ("NVIDIA B200", "B200", "10.0"),
        ("HGX B200", "B200", "10.0"),
        ("NVIDIA GB200", "GB200", "10.0"),
        ("NVIDIA B300 SXM6 AC", "B300", "10.3"),
        ("GB300", "GB300", "10.3"),
        # Jetson and DGX Spark
        ("Jetson Nano", "Jetson Nano", "5.3"),
        ("Jetson TX1", "Jetson TX1", "5.3"),
        ("Jetson TX2", "Jetson TX2", "6.2"),
        ("Jetson AGX Xavier", "Jetson AGX Xavier", "7.2"),
        ("Xavier NX", "Jetson Xavier NX", "7.2"),
        ("Jetson AGX Orin", "Jetson AGX Orin", "8.7"),
        ("NVIDIA Jetson AGX Orin Developer Kit", "Jetson AGX Orin", "8.7"),
        ("Jetson Orin NX", "Jetson Orin NX", "8.7"),
        ("Orin Nano", "Jetson Orin Nano", "8.7"),
        ("Jetson Orin Nano Super", "Jetson Orin Nano", "8.7"),
        ("Jetson AGX Thor", "Jetson T5000", "11.0"),
        ("Jetson T4000", "Jetson T4000", "11.0"),
        ("DGX Spark", "GB10", "12.1"),
        ("NVIDIA GB10", "GB10", "12.1"),
    ],
)
def test_names_people_type(m, typed, name, capability):
    gpu = m.gpu(typed)
    assert gpu is not None, typed
    assert (gpu.name, str(gpu.compute_capability)) == (name, capability)


@pytest.mark.parametrize(
    "typed, not_this",
    [
        ("RTX 3080", "GeForce RTX 3080 Ti"),
        ("RTX 3080 Ti", "GeForce RTX 3080"),
        ("RTX 3060", "GeForce RTX 3060 Ti"),
        ("GTX 1070", "GeForce GTX 1070 Ti"),
        ("GTX 1650", "GeForce GTX 1650 Ti"),
        ("GTX 1650 Ti", "GeForce GTX 1650"),
        ("GTX 1650 Super", "GeForce GTX 1650"),
        ("RTX 4090", "GeForce RTX 4090 D"),
        ("RTX 4070", "GeForce RTX 4070 Super"),
        ("A100", "A10"),
        ("A10", "A100"),
        ("A10", "A10G"),
        ("T4", "T400"),
        ("T400", "Tesla T4"),
        ("L4", "L40"),
        ("L40", "L40S"),
        ("H20", "H200"),
        ("P4", "Tesla P40"),
        ("P40", "Quadro P4000"),
        ("K40", "Quadro K4000"),
        ("M40", "Quadro M4000"),
        ("A2", "RTX A2000"),
        ("B200", "GB200"),
        ("GTX 980", "GeForce GTX 980M"),
        ("GTX 960", "GeForce GTX 960M"),
        ("Quadro K2200", "Quadro K2200M"),
        ("Quadro RTX 6000", "RTX 6000 Ada Generation"),
        ("RTX 6000 Ada", "Quadro RTX 6000"),
    ],
)
def test_near_misses_do_not_resolve_to_the_other_product(m, typed, not_this):
    gpu = m.gpu(typed)
    assert gpu is not None and gpu.name != not_this, (typed, gpu)


@pytest.mark.parametrize(
    "typed, suggested",
    [
        ("Titan X", {"GeForce GTX TITAN X", "TITAN X (Pascal)"}),  # Maxwell or Pascal
        ("RTX 6000", {"Quadro RTX 6000", "RTX 6000 Ada Generation"}),  # Turing or Ada
        ("GT 640", {"GeForce GT 640 (GDDR3)", "GeForce GT 640 (GDDR5)"}),  # Fermi or Kepler
        ("450", {"GeForce GTS 450", "GeForce MX450"}),  # a model number two lines share: not guessed
        ("RTX 3050 A Laptop GPU", {"GeForce RTX 3050"}),  # an Ada part named like an Ampere one
    ],
)
def test_ambiguous_or_unlisted_names_resolve_to_nothing_and_suggest(m, typed, suggested):
    assert m.gpu(typed) is None
    assert suggested <= {g.name for g in m.gpu_candidates(typed)}


@pytest.mark.parametrize("typed", ["Voodoo 3", "Radeon RX 7900 XTX", "GTX 1061", "MX470", "", "NVIDIA", "Laptop GPU"])
def test_unknown_names(m, typed):
    assert m.gpu(typed) is None


@pytest.mark.parametrize(
    "typed, product",
    [
        ("3080", "GeForce RTX 3080"),  # the model number alone: the RTX 3080, not the 3080 Ti
        ("1080 Ti", "GeForce GTX 1080 Ti"),
        ("710", "GeForce GT 710"),
        ("MX150", "GeForce MX150"),
        ("RTX 2050", "GeForce RTX 2050"),
    ],
)
def test_a_model_number_only_one_line_has_needs_no_line_letters(m, typed, product):
    assert m.gpu(typed).name == product


def test_unknown_names_have_no_far_fetched_suggestions(m):
    assert m.gpu_candidates("Voodoo 3") == []
    assert all("TX1" not in g.name and "TX2" not in g.name for g in m.gpu_candidates("GTX 10"))
    assert "GeForce GTX 1060" in {g.name for g in m.gpu_candidates("GTX 10")}


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA GeForce RTX 4050 Laptop GPU", ("rtx4050", True)),
        ("GeForce RTX 4050", ("rtx4050", False)),
        ("GeForce GTX 1080 with Max-Q Design", ("gtx1080", True)),
        ("GeForce RTX 2070 Mobile / Max-Q Refresh", ("rtx2070", True)),
        ("RTX 3080M", ("rtx3080", True)),
        ("GeForce GTX 980M", ("gtx980m", False)),  # NVIDIA's own three-digit M names are products
        ("Quadro K5000M", ("k5000m", False)),
        ("Quadro RTX 8000", ("quadrortx8000", False)),  # "Quadro RTX" tells Turing from Ada
        ("Quadro P620", ("p620", False)),
        ("Quadro 410", ("quadro410", False)),
        ("RTX A4000", ("a4000", False)),
        ("NVIDIA A100-SXM4-80GB", ("a100", False)),
        ("Tesla V100-SXM2-32GB", ("v100", False)),
        ("GeForce GT 640 (GDDR5)", ("gt640gddr5", False)),  # memory type is what NVIDIA tells these apart by
        ("GA102 [GeForce RTX 3080 Lite Hash Rate]", ("rtx3080", False)),
        ("Jetson AGX Orin Developer Kit", ("agxorin", False)),
    ],
)
def test_name_keys(name, key):
    assert gpu_name_key(name) == key
    assert normalize_gpu_name(name) == key[0] + ("/laptop" if key[1] else "")


def test_every_product_name_and_alias_resolves_to_its_own_product(m):
    for gpu in m.gpus():
        for name in (gpu.name, *gpu.aliases):
            assert m.gpu(name) is gpu, (name, m.gpu(name))
            assert m.gpu(f"NVIDIA {name}") is gpu, name


def test_every_product_name_cut_short_still_names_its_product(m):
    # what nvidia-smi's 18-character column leaves of a name, less a word the cut split
    for gpu in m.gpus():
        for name in (gpu.name, *gpu.aliases):
            cut = name[:18]
            if len(name) > 18 and name[18] not in " -":
                cut = re.sub(r"[\s-]*[^\s-]*$", "", cut)
            if len(gpu_name_key(cut)[0]) >= 3:
                assert gpu in m.gpus_beginning(cut), (cut, gpu.name)


@pytest.mark.parametrize(
    "start, some, none_of",
    [
        ("Tesla V100-SXM2", ["Tesla V100"], ["Tesla T4"]),
        ("NVIDIA GeForce RTX 30", ["GeForce RTX 3080", "GeForce RTX 3090"], ["GeForce RTX 4090", "GeForce RTX 2080"]),
        ("NVIDIA A100", ["A100"], ["H100"]),
    ],
)
def test_products_beginning_with_a_cut_name(m, start, some, none_of):
    names = {gpu.name for gpu in m.gpus_beginning(start)}
    assert all(any(n == s or n.endswith(s) for n in names) for s in some), names
    assert not any(n == x or n.endswith(x) for x in none_of for n in names), names


@pytest.mark.parametrize("start", ["", "GT", "NVIDIA", "Quadro K6000 Xtreme", "Radeon RX"])
def test_a_start_too_short_or_of_no_product_begins_nothing(m, start):
    assert m.gpus_beginning(start) == []


def test_coverage_reaches_every_generation_and_line(m):
    names = {g.name for g in m.gpus()}
    assert len(names) >= 290
    for expected in (
        "GeForce GTX 480",
        "Tesla K80",
        "GeForce GTX 980 Ti",
        "GeForce GTX 1080 Ti",
        "Tesla V100",
        "GeForce RTX 2080 Ti",
        "A100",
        "GeForce RTX 4090",
        "H200",
        "B300",
        "GeForce RTX 5090",
        "GB10",
        "Jetson T5000",
        "RTX PRO 2000 Blackwell",
        "Quadro RTX 3000",
        "T500",
        "NVS 810",
    ):
        assert expected in names, expected
