"""Architectures: the compute capabilities each spans and the last driver branch that supports it."""

from __future__ import annotations

import pytest

from envcheck.matrix import load_matrix


@pytest.fixture(scope="module")
def m():
    return load_matrix()


@pytest.mark.parametrize(
    "asked, architecture, branch",
    [
        ("Fermi", "Fermi", "390"),
        ("2.1", "Fermi", "390"),
        ("Kepler", "Kepler", "470"),
        ("3.0", "Kepler", "470"),
        ("3.5", "Kepler", "470"),
        ("3.7", "Kepler", "470"),
        ("Maxwell", "Maxwell", "580"),
        ("5.2", "Maxwell", "580"),
        ("5.3", "Maxwell", "580"),
        ("Pascal", "Pascal", "580"),
        ("6.1", "Pascal", "580"),
        ("Volta", "Volta", "580"),
        ("7.0", "Volta", "580"),
        ("Turing", "Turing", None),
        ("7.5", "Turing", None),
        ("8.6", "Ampere", None),
        ("8.9", "Ada Lovelace", None),
        ("ada", "Ada Lovelace", None),
        ("ADA LOVELACE", "Ada Lovelace", None),
        ("9.0", "Hopper", None),
        ("10.0", "Blackwell", None),
        ("11.0", "Blackwell", None),
        ("12.0", "Blackwell", None),
        ("12.1", "Blackwell", None),
        ("sm_86", "Ampere", None),
    ],
)
def test_last_driver_branch(m, asked, architecture, branch):
    assert m.architecture(asked).name == architecture
    assert m.last_driver_branch(asked) == branch


@pytest.mark.parametrize("asked", ["8.8", "1.3", "4.0", "9", "Rubin", "", "banana"])
def test_what_the_matrix_does_not_know(m, asked):
    assert m.architecture(asked) is None
    assert m.last_driver_branch(asked) is None
    assert m.supports_driver(asked, "550.54.14") is None


@pytest.mark.parametrize(
    "asked, driver, supported",
    [
        ("3.5", "470.256.02", True),
        ("3.5", "474.44", True),  # Windows numbers the 470 branch 471-474
        ("3.5", "495.44", False),
        ("Kepler", "535.54.03", False),
        ("2.1", "391.35", True),
        ("2.1", "397.93", False),
        ("6.1", "580.95.05", True),
        ("6.1", "581.57", True),  # Windows, 580 branch
        ("6.1", "590.44.01", False),
        ("Volta", "595.45.04", False),
        ("8.6", "595.45.04", True),
        ("12.0", "590.48.01", True),
        ("3.5", "latest", None),
    ],
)
def test_drivers_past_the_last_branch(m, asked, driver, supported):
    assert m.supports_driver(asked, driver) is supported


def test_every_gpu_row_is_of_a_known_architecture_and_within_it(m):
    for gpu in m.gpus():
        arch = m.architecture(gpu.architecture)
        assert arch is not None and arch.name == gpu.architecture, gpu
        assert str(gpu.compute_capability) in arch.compute_capabilities, gpu
        assert m.architecture(str(gpu.compute_capability)) is arch, gpu


def test_architectures_name_their_sources_and_do_not_overlap(m):
    seen: set[str] = set()
    for arch in m.architectures():
        assert arch.sources, arch
        assert not seen & set(arch.compute_capabilities), arch
        seen |= set(arch.compute_capabilities)
    assert [a.name for a in m.architectures() if a.last_driver_branch] == [
        "Fermi",
        "Kepler",
        "Maxwell",
        "Pascal",
        "Volta",
    ]


def test_every_cuda_architecture_up_to_blackwell_is_known_but_8_8(m):
    built = {a for c in m.cuda_releases() for a in c.architectures}
    assert {a for a in built if m.architecture(a) is None} == {"8.8"}


@pytest.mark.parametrize(
    "capability, os, cuda, driver",
    [
        ("12.0", "linux", "12.8", "570.26"),  # GeForce RTX 50
        ("12.0", "windows", "12.8", "570.65"),
        ("12.0", "wsl", "12.8", "570.65"),  # the Windows driver
        ("10.0", "linux", "12.8", "570.26"),  # B200
        ("8.9", "linux", "11.8", "520.61.05"),  # RTX 40
        ("9.0", "linux", "11.8", "520.61.05"),  # H100
        ("8.6", "linux", "11.1", "455.23"),  # RTX 30
        ("7.5", "windows", "10.0", "411.31"),  # Turing
    ],
)
def test_first_driver_of_an_architecture_is_that_of_its_first_cuda(m, capability, os, cuda, driver):
    release, first = m.first_driver(capability, os)
    assert (f"{release.version.major}.{release.version.minor}", str(first)) == (cuda, driver)


@pytest.mark.parametrize("capability", ["3.5", "5.0", "2.0", "99.9", "sm_86"])
def test_no_first_driver_where_the_table_does_not_reach_back_or_knows_nothing(m, capability):
    # 3.5, 5.0 and 2.0 are already in the table's oldest CUDA: their first release is older than it
    assert m.first_driver(capability, "linux") is None


def test_a_build_for_an_older_cuda_still_needs_the_cards_first_driver(m):
    from envcheck.matrix.runs import runs_on_gpu

    build = m.tf_build("2.15", "linux")  # CUDA 12.2, compute_80 PTX for newer cards
    common = dict(archs=build.compute_capabilities, cuda=build.cuda, compute_capability="12.0", os="linux")
    old = runs_on_gpu(m, **common, driver="560.35.03")  # runs CUDA 12.2, predates compute capability 12.0
    assert old.runs is False and str(old.driver_needed) == "570.26" and old.card_cuda == "12.8"
    assert "predates" in old.reason
    new = runs_on_gpu(m, **common, driver="570.124.04")
    assert new.runs is True and new.card_cuda == "12.8"
    ampere = runs_on_gpu(m, **{**common, "compute_capability": "8.6"}, driver="560.35.03")
    assert ampere.runs is True and ampere.card_cuda is None  # the build's CUDA asks for more than 8.6's first
