"""The CUDA linkers: nvlink refusing a GPU target it does not know or an input of a newer CUDA
(as XLA prints its output), and nvJitLink's nvJitLinkResult read as a status table (nvJitLink.h)."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.statuses import load_statuses

CATALOGUE = load_patterns()
XLA = "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: nvlink exited with non-zero error code 256, output: "


def _one(text: str):
    found = [e for e in explain(CATALOGUE.scan_text(text)) if not e.harmless]
    assert len(found) == 1, [e.id for e in found]
    return found[0]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_120", "sm_100f"])
def test_nvlink_without_the_gpu_target(arch):
    explanation = _one(XLA + f"nvlink fatal   : Value '{arch}' is not defined for option 'arch'")
    assert explanation.id == "nvlink-unknown-gpu-target" and arch in explanation.title
    assert explanation.causes[0].id == "nvlink-older-than-gpu"


@pytest.mark.parametrize(
    "line",
    [
        "nvcc fatal   : Value 'sm_90a' is not defined for option 'gpu-architecture'",
        "nvlink fatal   : Value 'sm_80' is not defined for option 'maxrregcount'",
    ],
)
def test_other_options_are_not_nvlinks_target(line):
    assert "nvlink-unknown-gpu-target" not in [e.id for e in explain(CATALOGUE.scan_text(line))]


@pytest.mark.parametrize(
    "numbers, newer, older",
    [
        ("(129 vs 128)", "12.9", "12.8"),
        ("(118 vs 117)", "11.8", "11.7"),
        ("(122 vs 120)", "12.2", "12.0"),
        ("(92 vs 91)", "9.2", "9.1"),
    ],
)
def test_an_input_newer_than_nvlink_names_both_releases(numbers, newer, older):
    explanation = _one(
        XLA
        + f"nvlink fatal   : Input file '/tmp/tempfile-host-8ba750b0-2357013-5fbfed708a26f.cubin' newer than toolkit {numbers}"
    )
    assert explanation.id == "nvlink-input-newer-than-toolkit"
    assert f"nvlink of CUDA {older} is older than what it links (CUDA {newer})" == explanation.title


def test_xlas_own_cubin_points_at_two_toolkits_a_library_at_the_build():
    xla = _one(XLA + "nvlink fatal   : Input file '/tmp/tempfile-box-1-2-3.cubin' newer than toolkit (129 vs 128)")
    assert [c.id for c in xla.causes] == ["ptxas-newer-than-nvlink", "library-newer-than-toolkit"]
    build = _one(
        "nvlink fatal   : Input file '/opt/nvshmem/lib/libnvshmem_device.a:gpu_coll.cu.o' newer than toolkit (122 vs 121) (target: sm_70)"
    )
    assert build.causes[0].id == "library-newer-than-toolkit"


@pytest.mark.parametrize(
    "line",
    [
        "nvlink warning : SM Arch ('sm_75') not found in 'build/kernels/layout.o'",
        "nvlink fatal   : Undefined reference to '_Z3foov' in 'main.o'",
        "Input file newer than toolkit",
    ],
)
def test_other_nvlink_lines(line):
    ids = [e.id for e in explain(CATALOGUE.scan_text(line))]
    assert "nvlink-input-newer-than-toolkit" not in ids and "nvlink-unknown-gpu-target" not in ids


# --- nvJitLink ------------------------------------------------------------------------------------


def test_the_nvjitlink_table_is_nvjitlink_h():
    table = {s.name: s.value for s in load_statuses().statuses if s.enum == "nvJitLinkResult"}
    assert table["NVJITLINK_SUCCESS"] == 0 and table["NVJITLINK_ERROR_PTX_COMPILE"] == 4
    assert table["NVJITLINK_ERROR_FINALIZE"] == 9 and table["NVJITLINK_ERROR_OUTDATED_LIBRARY"] == 14
    assert table["NVJITLINK_ERROR_UNRECOGNIZED_ARCH"] == 16 and table["NVJITLINK_ERROR_LTO_NOT_ENABLED"] == 18
    assert sorted(table.values()) == list(range(19))


@pytest.mark.parametrize(
    "line, name, first",
    [
        (
            "nvJitLinkCreate returned NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
            "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
            "nvjitlink-older-than-gpu",
        ),
        (
            "RuntimeError: NVJITLINK_ERROR_UNSUPPORTED_ARCH error",
            "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
            "nvjitlink-older-than-gpu",
        ),
        (
            "nvJitLinkComplete failed: NVJITLINK_ERROR_PTX_COMPILE",
            "NVJITLINK_ERROR_PTX_COMPILE",
            "nvjitlink-older-than-input",
        ),
        ("ERROR: NVJITLINK_ERROR_OUTDATED_LIBRARY", "NVJITLINK_ERROR_OUTDATED_LIBRARY", "nvjitlink-older-than-input"),
    ],
)
def test_nvjitlink_statuses_by_name_with_causes(line, name, first):
    explanation = _one(line)
    assert explanation.id == "nvjitlink-status" and explanation.variables["status_name"] == name
    assert explanation.causes[0].id == first


@pytest.mark.parametrize(
    "line", ["NVJITLINK_SUCCESS", "NVJITLINK_ERROR_NOT_A_STATUS", "NVJITLINK_INPUT_PTX", "import nvjitlink"]
)
def test_not_a_nvjitlink_failure(line):
    assert [e.id for e in explain(CATALOGUE.scan_text(line)) if not e.harmless] == []
