"""The scanner on whole logs and on hostile input: right messages, right lines, bounded cost."""

from __future__ import annotations

import codecs
import gzip
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.explain import MAX_LINE_BYTES, cuda_library_version, explain, load_patterns
from envcheck.explain import scanner as explain_module
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
    assert set(found) == {
        "cudnn-not-loaded",
        "cannot-dlopen-gpu-libraries",
        "numa-node-notice",
        "gpu-found",
        "cpu-optimized-notice",
        "xla-mlir-startup-notices",  # "Not creating XLA devices, tf_xla_enable_xla_devices not set"
        "tf-gpu-setup-notices",  # "Successfully opened dynamic library libcudart.so.11.0" and the like
    }
    assert found["cudnn-not-loaded"].variables["library"] == "libcudnn.so.8"
    assert found["cannot-dlopen-gpu-libraries"].count == 2  # the warning and "Skipping registering GPU devices..."
    # "Successfully opened dynamic library libcudart.so.11.0" is a harmless notice, not a problem
    assert "cudart-not-loaded" not in found
    assert found["tf-gpu-setup-notices"].pattern.harmless
    assert [o.pattern.harmless for o in result.occurrences] == [False, False, True, True, True, True, True]


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
    # the log prefix (time, level, source file) is not part of the message
    assert occurrence.excerpt.startswith("Could not load dynamic library 'libcudnn.so.8'")
    long_line = CUDART_100 + " " + "x" * 1000
    (occurrence,) = CATALOGUE.scan_text(long_line).occurrences
    assert occurrence.excerpt.startswith("ImportError: Could not find") and occurrence.excerpt.endswith("x…")
    assert len(occurrence.excerpt) == explain_module.EXCERPT_CHARS + 1


# --- the scanner's shortcuts (distinct lines, digits aside, gate words) change no result ----------


def reference_scan(data: bytes, max_line: int = MAX_LINE_BYTES):
    """The plain scanner the shortcuts must agree with: every line in its normal form, every
    pattern, in order (fallbacks only where nothing else matched; covered messages left out)."""
    from envcheck.explain.catalogue import fill
    from envcheck.explain.normalise import normalise_line, search_key

    found = {}
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        head = raw[:max_line]
        key = search_key(head)
        text = normalise_line(head.decode("utf-8", "replace").rstrip("\r"))
        matched = False
        for pattern in sorted(CATALOGUE.patterns, key=lambda p: p.fallback):
            if (pattern.fallback and matched) or not any(search_key(n.encode()) in key for n in pattern.needles):
                continue
            for regex in pattern.regexes:
                variables = next(
                    (v for v in (pattern.variables(h) for h in regex.compiled.finditer(text)) if v is not None), None
                )
                if variables is not None:
                    entry = found.setdefault((pattern.id, fill(pattern.title, variables)), [0, []])
                    entry[0] += 1
                    entry[1].append(number)
                    matched = True
                    break
    present = {pattern_id for pattern_id, _ in found}
    covered = {p.id for p in CATALOGUE.patterns if present.intersection(p.covered_by)}
    found = {k: v for k, v in found.items() if k[0] not in covered}
    return {key: (count, numbers[:5]) for key, (count, numbers) in found.items()}


def scanned(data: bytes, **kwargs):
    return {(o.pattern.id, o.title): (o.count, o.line_numbers) for o in scan_bytes(data, **kwargs).occurrences}


_VARIED = st.sampled_from(
    [
        "2024-05-02 10:11:{s}.{us}: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.{v}'; dlerror: libcudart.so.{v}: cannot open shared object file",
        "{s}/781 [==========>...] - ETA: {us}s - loss: 0.{v}",
        "E0000 00:00:17960567{us}.682237    {s} cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
        "ImportError: Could not find 'cudart64_{v}0.dll'. TensorFlow requires that this DLL be installed",
        "OOM when allocating tensor with shape[{s},{us}] and type float on /job:localhost/replica:0/task:0/device:GPU:{v} by allocator GPU_{v}_bfc",
        "Epoch {s}/70",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:{us}] Allocator (GPU_0_bfc) ran out of memory trying to allocate {v}.{s}GiB. The caller indicates that this is not a failure",
    ]
)


@settings(max_examples=examples(80), deadline=None)
@given(
    lines=st.lists(
        st.tuples(_VARIED, st.integers(0, 99), st.integers(0, 9999), st.sampled_from(["10", "11", "1", "12"])),
        max_size=60,
    ),
    chunk=st.integers(min_value=64, max_value=4096),
)
def test_grouping_lines_by_their_words_changes_nothing(lines, chunk):
    data = "\n".join(t.format(s=s, us=us, v=v) for t, s, us, v in lines).encode()
    assert scanned(data, chunk_bytes=chunk) == reference_scan(data)


def test_a_message_repeated_with_other_numbers_is_counted_in_line_order():
    lines = [
        "2024-05-02 10:11:12.000001: W dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: x",
        "Epoch 1/70",
        "2024-05-02 10:11:13.000002: W dso_loader.cc:64] Could not load dynamic library 'libcudart.so.10.1'; dlerror: x",
        "2024-05-02 10:11:14.000003: W dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: x",
        "Epoch 2/70",
        "2024-05-02 10:11:15.000004: W dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: x",
    ]
    result = scanned("\n".join(lines).encode())
    assert result == {
        ("cudart-not-loaded", "CUDA runtime libcudart.so.11.0 could not be loaded"): (3, [1, 4, 6]),
        ("cudart-not-loaded", "CUDA runtime libcudart.so.10.1 could not be loaded"): (1, [3]),
    }


def test_the_first_line_numbers_stay_in_order_when_distinct_lines_share_a_message():
    a = "failed call to cuInit: UNKNOWN ERROR (303)"
    b = "E0000 00:00:1796056754.682237    7566 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)"
    data = "\n".join([a, b, a, b, b, a, a, b]).encode()
    (occurrence,) = scan_bytes(data).occurrences
    assert occurrence.count == 8 and occurrence.line_numbers == [1, 2, 3, 4, 5] and occurrence.first_line == 1


def test_binary_chunks_search_only_their_lines_of_text():
    junk = bytes(range(256)).replace(b"\n", b"") * 4
    lines = [junk] * 20 + [CUDART_100.encode()] + [junk] * 20 + [b"Epoch 1/10\x1b[0m - loss: 0.5\r"]
    result = scan_bytes(b"\n".join(lines) + b"\n")
    assert result.ids == ["win-cudart-dll-not-found"] and result.occurrences[0].first_line == 21
    assert result.lines == 42


def test_gate_words_are_whole_words_inside_their_needle():
    from envcheck.explain.scanner import gate_word

    assert gate_word(b"could not load dynamic library '") == b"dynamic"
    assert gate_word(b"to cuinit: ") == b"cuinit"
    assert gate_word(b"ptxas") == b""  # may be part of a longer word: no gate, the pass always runs
    assert gate_word(b"cuda_error_") == b"error"
