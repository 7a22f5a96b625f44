"""The status tables (cuda_status.yaml): every status of the CUDA stack is recognised wherever it is
named, with its meaning, and each table says where its values come from."""

from __future__ import annotations

import re

import pytest
import yaml

from envcheck.explain import explain, load_patterns
from envcheck.explain.statuses import FAMILIES, STATUS_FILE, load_statuses, resolve
from envcheck.resources import data_file

CATALOGUE = load_patterns()
TABLES = load_statuses()
RAW = yaml.safe_load(data_file(STATUS_FILE).read_text(encoding="utf-8"))
# success, and a status of the program's own (a device-side assert, ``programs_own``), are named
# by no explanation (test_explain_programs_own)
ERRORS = [s for s in TABLES.statuses if s.value != 0 and not s.programs_own]


def test_every_table_names_its_header_its_release_and_a_source():
    enums = {t["enum"] for t in RAW["tables"]}
    assert {e for family in FAMILIES.values() for e in family} <= enums
    for table in RAW["tables"]:
        assert ".h" in table["header"] or "catalogue" in table["header"], table[
            "enum"
        ]  # a header, or NVIDIA's Xid catalogue
        assert re.search(r"\d", table["versions"]) and table["sources"], table["enum"]
        assert any(s.startswith("https://") for s in table["sources"]), table["enum"]
        names = [v["name"] for v in table["values"]]
        values = [v["value"] for v in table["values"]]
        assert len(set(names)) == len(names) and len(set(values)) == len(values), table["enum"]
        assert all(v["meaning"].strip() and not v["meaning"].endswith(".") for v in table["values"]), table["enum"]


def test_the_tables_are_complete_where_the_headers_say_so():
    # counts from the headers named in the tables (CUDA 12.6.3 + 13.0 additions, cuDNN 9.6, NCCL 2.x)
    sizes = {t["enum"]: len(t["values"]) for t in RAW["tables"]}
    assert sizes["CUresult"] >= 100 and sizes["cudaError_t"] >= 130 and sizes["cudnnStatus_t"] >= 47
    assert sizes["cublasStatus_t"] == 10 and sizes["cufftResult"] == 17 and sizes["ncclResult_t"] == 9
    assert sizes["cusolverStatus_t"] == 25 and sizes["cusparseStatus_t"] == 12 and sizes["nvmlReturn_t"] == 31


@pytest.mark.parametrize(
    "status",
    # (a crash's NTSTATUS and signal are read from exit codes and the words printed: test_explain_exit_codes)
    [s for s in ERRORS if s.enum not in ("Win32 error codes", "NVIDIA Xid", "NTSTATUS", "POSIX signals")],
    ids=lambda s: f"{s.enum}:{s.name}",
)
def test_every_status_is_explained_by_name_with_its_meaning(status):
    explanations = explain(CATALOGUE.scan_text(f"RuntimeError: call failed: {status.name} at line 3"))
    # a pattern for the message explains it with causes and fixes; the status's meaning comes with it
    assert any(e.variables.get("status_name") == status.name for e in explanations), [e.id for e in explanations]
    first = TABLES.by_name(status.name)[0]
    for generic in (e for e in explanations if e.id.endswith("-status")):
        assert first.meaning in generic.meaning


@pytest.mark.parametrize("status", [s for s in ERRORS if s.strings], ids=lambda s: f"{s.enum}:{s.name}")
def test_every_status_is_read_from_the_text_its_library_prints(status):
    family = next(f for f, enums in FAMILIES.items() if status.enum in enums)
    found = resolve({f"{family}_text": status.strings[0] + " (details)"})
    assert found is not None and found.meaning == status.meaning or found.strings[0] == status.strings[0]


@pytest.mark.parametrize(
    "text, name",
    [
        (
            "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version",
            "cudaErrorInsufficientDriver",
        ),
        ("CUDA error 700", "cudaErrorIllegalAddress"),
        ("cuBLAS error: 13", "CUBLAS_STATUS_EXECUTION_FAILED"),
        ("cuDNN error (8)", "CUDNN_STATUS_EXECUTION_FAILED"),
        ("NCCL error: 5", "ncclInvalidUsage"),
        ("cuCtxCreate failed with CUresult = 999", "CUDA_ERROR_UNKNOWN"),
        ("pynvml.NVMLError_GpuIsLost: GPU is lost", "NVML_ERROR_GPU_IS_LOST"),
        ("Failed to initialize NVML: Insufficient Permissions", "NVML_ERROR_NO_PERMISSION"),
    ],
)
def test_a_status_given_by_number_or_by_its_text_is_recognised(text, name):
    explanations = explain(CATALOGUE.scan_text(text))
    assert any(name in (e.title + e.meaning + e.variables.get("status_name", "")) for e in explanations), [
        (e.id, e.title) for e in explanations
    ]


@pytest.mark.parametrize(
    "text",
    ["CUDNN_STATUS_SUCCESS", "cudaSuccess", "CUDA_ERROR_NOT_A_STATUS", "CUFFT_R2C", "NCCL error: 42", "CUresult = 0"],
)
def test_success_and_unknown_names_are_not_explained_as_statuses(text):
    assert [e.id for e in explain(CATALOGUE.scan_text(text)) if e.variables.get("status_name")] == []


def test_a_specific_message_is_explained_by_its_own_pattern_not_the_status_table():
    (only,) = explain(
        CATALOGUE.scan_text("failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
    )
    assert only.id == "cuinit-no-device"


def test_cudnn_numbers_of_both_numberings_are_read():
    assert resolve({"cudnn_number": "1001"}).name == "CUDNN_STATUS_NOT_INITIALIZED"
    assert resolve({"cudnn_number": "1"}).name == "CUDNN_STATUS_NOT_INITIALIZED"


@pytest.mark.parametrize("status", [s for s in ERRORS if s.enum == "NVIDIA Xid"], ids=lambda s: s.name)
def test_every_xid_of_the_catalogue_is_explained_from_the_kernel_log(status):
    line = f"[ 812.5] NVRM: Xid (PCI:0000:3b:00): {status.value}, pid=4242, name=python3, details"
    (found,) = explain(CATALOGUE.scan_text(line))
    assert found.id == "nvrm-xid" and status.meaning in found.meaning and found.variables["pci"] == "0000:3b:00"


@pytest.mark.parametrize(
    "status", [s for s in ERRORS if s.enum == "Win32 error codes"], ids=lambda s: f"WinError {s.value}"
)
def test_every_windows_code_is_read_with_its_meaning(status):
    text = f'OSError: [WinError {status.value}] {status.strings[0]}. Error loading "C:\\x\\torch\\lib\\a.dll" or one of its dependencies.'
    explanations = explain(CATALOGUE.scan_text(text))
    assert any(e.variables.get("windows_meaning") == status.meaning for e in explanations), [e.id for e in explanations]


_WIN32_PAGE = re.compile(r"https://learn\.microsoft\.com/windows/win32/debug/system-error-codes--(\d+)-(\d+)-$")


def test_every_windows_code_names_the_microsoft_page_of_its_range():
    # Microsoft documents the system error codes one page per range (0-499, 500-999, ...,
    # 12000-15999): a code's source is the page whose range holds it.
    table = next(t for t in RAW["tables"] if t["enum"] == "Win32 error codes")
    for value in table["values"]:
        page = _WIN32_PAGE.match(value.get("source", ""))
        assert page is not None, value["name"]
        assert int(page.group(1)) <= value["value"] <= int(page.group(2)), value["name"]
    (status,) = TABLES.by_name("ERROR_SXS_CANT_GEN_ACTCTX")
    assert status.source.endswith("system-error-codes--12000-15999-") and status.source.startswith("winerror.h")
