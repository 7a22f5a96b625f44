"""The scanner on whole logs and on hostile input: right messages, right lines, bounded cost."""

from __future__ import annotations

import codecs
import gzip
import io

import pytest
from hypothesis import given, settings
from hypothesis_budget import examples
from hypothesis import strategies as st

from envcheck.explain import scanner as explain_module
from envcheck.explain import MAX_LINE_BYTES, cuda_library_version, explain, load_patterns
from tests.conftest import FIXTURES

CATALOGUE = load_patterns()
LOGS = FIXTURES / "logs"
CUDART_100 = (
    "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a "
    "directory that is named in your %PATH% environment variable."
)


def scan_bytes(data: bytes, **kwargs):
    return CATALOGUE.scan(io.BytesIO(data), **kwargs)


def by_id(result):
    return {o.pattern.id: o for o in result.occurrences}


def test_real_tf_221_import_log_on_a_machine_without_gpu():
    """Captured from this project's CPU-only development machine: only harmless notices and the
    driver-less cuInit error."""
    result = CATALOGUE.scan(open(LOGS / "tf221_cpu_machine_import.log", "rb"))
    found = by_id(result)
    assert set(found) == {"absl-log-notice", "onednn-notice", "cpu-optimized-notice", "cuinit-no-driver"}
    assert found["onednn-notice"].count == 2
    assert found["onednn-notice"].line_numbers == [2, 6]
    assert found["cpu-optimized-notice"].count == 2  # the two halves of one notice
    assert found["cuinit-no-driver"].first_line == 8
    assert result.lines == 9
    errors_first = [o.pattern.id for o in result.occurrences]
    assert errors_first[0] == "cuinit-no-driver"


def test_setup_post_windows_session():
    result = CATALOGUE.scan(open(LOGS / "setup_post_windows.log", "rb"))
    assert result.ids == ["win-cudart-dll-not-found"]
    occurrence = result.occurrences[0]
    assert occurrence.first_line == 27
    assert occurrence.variables["cuda_version"] == "10.0"
    assert occurrence.excerpt.startswith("ImportError: Could not find 'cudart64_100.dll'")


def test_linux_log_with_missing_cudnn_among_successful_loads():
    result = CATALOGUE.scan(open(LOGS / "linux_tf24_missing_cudnn.log", "rb"))
    found = by_id(result)
    assert set(found) == {"cudnn-not-loaded", "cannot-dlopen-gpu-libraries", "numa-node-notice", "gpu-found", "cpu-optimized-notice"}
    assert found["cudnn-not-loaded"].variables["library"] == "libcudnn.so.8"
    assert found["cannot-dlopen-gpu-libraries"].count == 2  # the warning and "Skipping registering GPU devices..."
    # "Successfully opened dynamic library libcudart.so.11.0" is not a problem and is not reported
    assert "cudart-not-loaded" not in found
    assert [o.pattern.harmless for o in result.occurrences] == [False, False, True, True, True]


def test_multi_gpu_keras_errors_of_the_setup_post():
    result = CATALOGUE.scan(open(LOGS / "multi_gpu_keras.log", "rb"))
    assert result.ids == ["variable-already-exists", "model-not-picklable", "multi-gpu-model-removed"]
    explanations = explain(result)
    assert all("MirroredStrategy" in e.fix.text for e in explanations)


def test_training_log_with_two_gpus_cudnn_failure_and_oom():
    result = CATALOGUE.scan(open(LOGS / "oom_and_cudnn.log", "rb"))
    found = by_id(result)
    assert found["cudnn-handle-failed"].count == 2
    assert found["cudnn-handle-failed"].title == "cuDNN could not start (CUDNN_STATUS_INTERNAL_ERROR)"
    assert found["oom-allocating-tensor"].variables["shape"] == "256,64,160,160"
    created = [o for o in result.occurrences if o.pattern.id == "gpu-device-created"]
    assert [o.variables["index"] for o in created] == ["0", "1"]  # one explanation per GPU
    assert result.ids.index("conv-algorithm-failed") < result.ids.index("gpu-device-created")


def test_same_message_is_counted_not_repeated():
    text = "\n".join(["noise"] * 3 + [CUDART_100] * 7 + ["more noise"])
    (occurrence,) = CATALOGUE.scan_text(text).occurrences
    assert occurrence.count == 7
    assert occurrence.first_line == 4
    assert occurrence.line_numbers == [4, 5, 6, 7, 8]  # the first few only


def test_different_files_are_different_explanations():
    text = (
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: x\n"
        "Could not load dynamic library 'libcublas.so.11'; dlerror: x\n"
        "Could not load dynamic library 'libcublasLt.so.11'; dlerror: x\n"
    )
    titles = [o.title for o in CATALOGUE.scan_text(text).occurrences]
    assert titles == [
        "CUDA runtime libcudart.so.11.0 could not be loaded",
        "CUDA library libcublas.so.11 could not be loaded",
        "CUDA library libcublasLt.so.11 could not be loaded",
    ]


def test_unknown_text_finds_nothing():
    result = CATALOGUE.scan_text("Epoch 1/10\nloss: 0.53 - accuracy: 0.81\nall good\n")
    assert result.occurrences == ()
    assert result.lines == 3


@pytest.mark.parametrize("data, lines", [(b"", 0), (b"one", 1), (b"one\n", 1), (b"one\ntwo", 2), (b"\n\n", 2)])
def test_line_counting(data, lines):
    assert scan_bytes(data).lines == lines


def test_windows_line_endings_and_utf8_bom():
    data = codecs.BOM_UTF8 + b"noise\r\n" + CUDART_100.encode() + b"\r\n"
    (occurrence,) = scan_bytes(data).occurrences
    assert occurrence.first_line == 2
    assert not occurrence.excerpt.endswith("\r")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_logs_from_powershell_redirection(encoding):
    text = "noise\r\n" + CUDART_100 + "\r\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    result = scan_bytes(data, chunk_bytes=64)
    assert result.ids == ["win-cudart-dll-not-found"]
    assert result.occurrences[0].first_line == 2


def test_binary_bytes_around_a_message():
    junk = bytes(b for b in range(256) if b != ord("\n"))
    data = junk * 50 + b"\n" + b"\xff\xfe\x00" + CUDART_100.encode() + b"\x00\x80\n" + junk
    result = scan_bytes(data)
    assert result.ids == ["win-cudart-dll-not-found"]
    assert result.occurrences[0].first_line == 2


def test_a_megabyte_line_of_a_then_a_message():
    data = b"a" * 1_000_000 + b"\n" + CUDART_100.encode() + b"\n"
    result = scan_bytes(data)
    assert result.ids == ["win-cudart-dll-not-found"]
    assert result.occurrences[0].first_line == 2
    assert result.lines == 2


def test_long_line_is_cut_at_the_limit():
    """A message within the first MAX_LINE_BYTES of a long line is found; one beyond is not."""
    early = CUDART_100.encode() + b" " + b"x" * (3 * MAX_LINE_BYTES)
    late = b"x" * (2 * MAX_LINE_BYTES) + b" Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
    result = scan_bytes(early + b"\n" + late + b"\nend\n", chunk_bytes=4096)
    assert result.ids == ["win-cudart-dll-not-found"]
    assert result.lines == 3


def test_a_line_longer_than_a_chunk_does_not_shift_line_numbers():
    data = b"y" * 50_000 + b"\n" * 2 + CUDART_100.encode() + b"\n"
    for chunk in (1000, 4096, 1 << 20):
        (occurrence,) = scan_bytes(data, chunk_bytes=chunk, max_line_bytes=2000).occurrences
        assert occurrence.first_line == 3


def test_gzip_streams_scan_like_plain_text():
    log = (LOGS / "linux_tf24_missing_cudnn.log").read_bytes()
    plain = scan_bytes(log)
    packed = CATALOGUE.scan(gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(log))))
    assert packed.ids == plain.ids and packed.lines == plain.lines


def test_distinct_explanations_are_capped(monkeypatch):
    monkeypatch.setattr(explain_module, "MAX_GROUPS", 3)
    text = "\n".join(f"Could not load dynamic library 'libcudart.so.{n}'; dlerror: x" for n in range(10))
    result = CATALOGUE.scan_text(text)
    assert len(result.occurrences) == 3
    assert result.dropped == 7


_LINES = st.sampled_from(
    [
        CUDART_100,
        "failed call to cuInit: UNKNOWN ERROR (303)",
        "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file",
        "oneDNN custom operations are on. You may see slightly different numerical results",
        "Epoch 3/70 - loss: 0.41",
        "",
        "é ü — 漢字",
    ]
)


@settings(max_examples=examples(60), deadline=None)
@given(lines=st.lists(_LINES, max_size=40), chunk=st.integers(min_value=1, max_value=300))
def test_chunk_size_never_changes_the_result(lines, chunk):
    data = "\n".join(lines).encode()
    reference = scan_bytes(data)
    result = scan_bytes(data, chunk_bytes=chunk)
    assert [(o.pattern.id, o.title, o.count, o.line_numbers) for o in result.occurrences] == [
        (o.pattern.id, o.title, o.count, o.line_numbers) for o in reference.occurrences
    ]
    assert result.lines == reference.lines == expected_lines(data)


def expected_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@settings(max_examples=examples(100), deadline=None)
@given(data=st.binary(max_size=3000), chunk=st.integers(min_value=1, max_value=512))
def test_arbitrary_bytes_never_crash_and_lines_add_up(data, chunk):
    result = scan_bytes(data, chunk_bytes=chunk, max_line_bytes=256)
    if data[:2] not in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):  # those are re-encoded first
        assert result.lines == expected_lines(data)
    explain(result)


@pytest.mark.parametrize(
    "name, family, version",
    [
        ("cudart64_100.dll", "cudart", "10.0"),
        ("cudart64_92.dll", "cudart", "9.2"),
        ("cudart64_80.dll", "cudart", "8.0"),
        ("cudart64_110.dll", "cudart", "11.0"),
        ("cudart64_12.dll", "cudart", "12"),
        ("cudnn64_7.dll", "cudnn", "7"),
        ("cublas64_11.dll", "cublas", "11"),
        ("cublasLt64_11.dll", "cublas", "11"),
        ("cusolver64_10.dll", "cusolver", "10"),
        ("libcudart.so.11.0", "cudart", "11.0"),
        ("libcudart.so.12", "cudart", "12"),
        ("libcudnn.so.8", "cudnn", "8"),
        ("libcudnn_cnn_infer.so.8", "cudnn", "8"),
        ("libcublasLt.so.11", "cublas", "11"),
        ("libcudart.so", "cudart", ""),
        ("notalibrary.txt", "", ""),
    ],
)
def test_cuda_library_version(name, family, version):
    assert cuda_library_version(name) == (family, version)


def test_excerpt_starts_where_the_message_starts():
    line = (
        "2021-01-12 10:01:33.530021: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] "
        "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file"
    )
    (occurrence,) = CATALOGUE.scan_text(line).occurrences
    assert occurrence.excerpt.startswith("…Could not load dynamic library 'libcudnn.so.8'")
    long_line = CUDART_100 + " " + "x" * 1000
    (occurrence,) = CATALOGUE.scan_text(long_line).occurrences
    assert occurrence.excerpt.startswith("ImportError: Could not find") and occurrence.excerpt.endswith("x…")
    assert len(occurrence.excerpt) == explain_module.EXCERPT_CHARS + 1
