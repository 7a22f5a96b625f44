"""TensorFlow's own GPU/CUDA messages, enumerated from the source that prints them
(tests/fixtures/source_messages/tensorflow_gpu.yaml): every format, filled with several values and
printed bare, with TensorFlow's classic log prefix and with absl's, is recognised with the right
verdict. A start-up notice (NUMA node, CPU instructions, oneDNN, a factory registered twice, TF-TRT
not found, a device created, the XLA service) is harmless; a failure is not, and where the source
checks one thing just before printing it, that is the first cause given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from envcheck.explain import explain, load_patterns

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "fixtures" / "source_messages" / "tensorflow_gpu.yaml"
CATALOGUE = load_patterns()
ENTRIES = yaml.safe_load(TABLE.read_text(encoding="utf-8"))["messages"]
LEVELS = {"I", "W", "E", "F", "raise", "status", "raw"}

# Entries whose verdict the line alone cannot reach, with why (keep this short).
KNOWN_GAPS = {
    # redzone_allocator.cc prints the ptxas status and "Relying on driver to perform ptx
    # compilation" in one record: a fallback notice. Its first line is the same "ptxas exited with
    # non-zero error code" that XLA's failing compilations print, and the lines are read one by one.
    "ptxas-driver-fallback-redzone": "harmless",
    # GPUProcessState::GetGPUAllocator returns no allocator for several reasons it does not log;
    # nothing in the line says which
    "gpu-allocator-unavailable": "unrecognised",
}


def variants(entry: dict) -> list[str]:
    """The format filled in: variant i takes value i (cycling) of every placeholder."""
    fill = entry.get("fill") or {}
    count = max((len(values) for values in fill.values()), default=1)
    return [entry["format"].format_map({k: v[i % len(v)] for k, v in fill.items()}) for i in range(count)]


def printed(entry: dict, text: str) -> list[str]:
    """The text as a user pastes it: bare, and for a logged message with each log prefix."""
    if entry["level"] not in {"I", "W", "E", "F"}:
        return [text]
    if entry.get("bare") is False:  # a line that says nothing without its prefix (a matrix row)
        return [f"2024-05-01 12:00:00.123456: I {entry['file']}:123] {text}"]
    level, path = entry["level"], entry["file"]
    classic = f"2024-05-01 12:00:00.123456: {level} {path}:123] {text}"
    absl = f"{level}0000 00:00:1731234567.123456   12345 {path.rsplit('/', 1)[-1]}:123] {text}"
    return [text, classic, absl]


def cases() -> list:
    out = []
    for entry in ENTRIES:
        for i, text in enumerate(variants(entry)):
            for j, line in enumerate(printed(entry, text)):
                name = f"{entry['id']}-{i}-{('bare', 'classic', 'absl')[j]}"
                marks = ()
                if entry["id"] in KNOWN_GAPS:
                    marks = pytest.mark.xfail(strict=True, reason=f"known gap: {KNOWN_GAPS[entry['id']]}")
                out.append(pytest.param(entry, line, id=name, marks=marks))
    return out


def test_known_gaps_are_few_and_in_the_table():
    assert len(KNOWN_GAPS) <= 3 and set(KNOWN_GAPS) <= {e["id"] for e in ENTRIES}


def verdict(line: str) -> tuple[list[str], bool, list[str]]:
    explanations = explain(CATALOGUE.scan_text(line))
    ids = [e.id for e in explanations]
    first_causes = [e.causes[0].id for e in explanations if e.causes]
    return ids, bool(explanations) and all(e.harmless for e in explanations), first_causes


def test_table_is_well_formed():
    assert len(ENTRIES) >= 80
    ids = [e["id"] for e in ENTRIES]
    assert len(set(ids)) == len(ids)
    for entry in ENTRIES:
        assert {"id", "file", "release", "level", "format", "harmless"} <= set(entry), entry["id"]
        assert set(entry) <= {"id", "file", "release", "level", "format", "fill", "harmless", "cause", "bare"}, entry[
            "id"
        ]
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", entry["id"]), entry["id"]
        assert entry["level"] in LEVELS and isinstance(entry["harmless"], bool), entry["id"]
        names = set(re.findall(r"(?<!\{)\{(\w+)\}(?!\})", entry["format"]))
        assert names == set(entry.get("fill") or {}), entry["id"]
    # both classes are held, and most of the table is failures or notices alike
    assert sum(e["harmless"] for e in ENTRIES) >= 30 and sum(not e["harmless"] for e in ENTRIES) >= 30


@pytest.mark.parametrize("entry, line", cases())
def test_source_message_is_recognised_with_its_verdict(entry, line):
    ids, harmless, first_causes = verdict(line)
    assert ids, f"{entry['id']}: not recognised: {line!r}"
    assert harmless == entry["harmless"], f"{entry['id']}: harmless={harmless} ({ids}) for {line!r}"
    if entry.get("cause"):
        assert entry["cause"] in first_causes[:1] or entry["cause"] in ids[:1], (entry["id"], ids, first_causes)


def _classify() -> dict[str, list[str]]:
    """For a look at the table: the variants by class (right, wrong verdict, not recognised)."""
    out: dict[str, list[str]] = {"right": [], "wrong": [], "unrecognised": []}
    for entry in ENTRIES:
        for i, text in enumerate(variants(entry)):
            for line in printed(entry, text):
                ids, harmless, first_causes = verdict(line)
                cause_ok = not entry.get("cause") or entry["cause"] in first_causes[:1] or entry["cause"] in ids[:1]
                key = (
                    "unrecognised" if not ids else ("right" if harmless == entry["harmless"] and cause_ok else "wrong")
                )
                out[key].append(f"{entry['id']}#{i}: {ids} {first_causes[:2]} :: {line[:110]!r}")
    return out


def _found(text: str) -> list[tuple[str, bool]]:
    return [(e.id, e.harmless) for e in explain(CATALOGUE.scan_text(text))]


def test_no_ptxas_is_a_notice_until_a_driver_or_compile_failure_follows():
    notice = (
        "W tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:70] Can't find ptxas binary in ${CUDA_DIR}/bin.  "
        "Will back to the GPU driver for PTX -> sass compilation.  This is OK so long as you don't see a warning "
        "below about an out-of-date driver version."
    )
    assert _found(notice) == [("ptxas-not-found-driver-fallback", True)]
    failed = (
        notice
        + "\nW tensorflow/core/framework/op_kernel.cc:1767] OP_REQUIRES failed at xla_ops.cc:489 : Not found: ./bin/ptxas not found"
    )
    found = dict(_found(failed))
    assert found["ptxas-not-found"] is False and found["ptxas-not-found-driver-fallback"] is False


def test_the_diagnostics_version_lines_stand_back_beside_the_cuinit_failure():
    versions = (
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:163] retrieving CUDA diagnostic information for host: node7\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:200] libcuda reported version is: 470.82.1\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:204] kernel reported version is: 470.82.1\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:313] kernel version seems to match DSO: 470.82.1"
    )
    assert {i for i, _ in _found(versions)} == {"tf-gpu-diagnostic-notices"}
    failed = (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n"
        + versions
    )
    found = _found(failed)
    assert "tf-gpu-diagnostic-notices" not in {i for i, _ in found} and not all(h for _, h in found)


def test_a_missing_device_node_is_a_failure_where_the_log_shows_a_gpu():
    line = "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:132] no NVIDIA GPU device is present: /dev/nvidia0 does not exist"
    assert _found(line) == [("nvidia-device-node-absent", True)]
    smi = "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |\n"
    assert ("nvidia-device-node-absent", False) in _found(smi + line)
    (explanation,) = explain(CATALOGUE.scan_text("docker run --rm -it tensorflow/tensorflow:latest-gpu\n" + line))
    assert explanation.causes[0].id == "container-without-gpu"


@pytest.mark.parametrize(
    "line",
    [
        # the same words about another thing, or the statuses where a version stands
        "libcuda reported version is: Not found: was unable to find libcuda.so DSO loaded into this program",
        "ImportError: Could not import tensorflow_hub",
        "Total allocated memory is 6442450944 bytes",
        "Unexpected Event status: 1 in cuCtxSynchronize()",
        "Loaded TensorRT engine from /models/plan.trt",
        "RuntimeError: Incompatible TensorRT engine",
        "Failed to determine cuDNN version",
        "No supported devices found for platform CUDA",
        "Could not parse entry in config.yaml",
        "Device memory: 2555904 bytes free, 8589934592 bytes needed.",
        "Cannot set memory growth on non-GPU",
        "Engine creation failed: the native segment could not run",
        "Error retrieving driver version from the registry",
        "no NVIDIA GPU device is present",
        "could not open driver version path",
    ],
)
def test_look_alikes_are_not_these_patterns(line):
    new = {
        "tf-gpu-diagnostic-notices",
        "tf-imported-from-source-tree",
        "cpu-allocation-large-warning",
        "gpu-stream-failed-fatal",
        "cudnn-driver-version-unreadable",
        "nvidia-device-node-absent",
        "nvidia-driver-version-unreadable",
        "memory-growth-with-virtual-devices",
        "ptxas-not-found-driver-fallback",
        "cudnn-version-undetermined-notice",
        "visible-device-list-unparsable",
        "tensorrt-major-version-incompatible",
        "tf-built-without-cuda-capabilities",
        "cudnn-handle-memory-usage",
        "memory-growth-on-non-gpu",
        "trt-engine-native-fallback",
    }
    assert not new & set(CATALOGUE.scan_text(line).ids)


def test_the_memory_figures_after_a_cudnn_handle_failure_stand_behind_it():
    detail = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:367] Memory usage: 2555904 bytes free, 8589934592 bytes total."
    )
    (alone,) = explain(CATALOGUE.scan_text(detail))
    assert alone.id == "cudnn-handle-memory-usage" and not alone.harmless
    assert alone.causes[0].id == "gpu-memory-preallocated"
    log = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:361] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
        + detail
    )
    assert [e.id for e in explain(CATALOGUE.scan_text(log))] == ["cudnn-handle-failed"]


def test_a_logical_gpu_without_a_memory_limit_is_its_own_first_cause():
    (found,) = explain(CATALOGUE.scan_text("ValueError: Setting memory limit is required for GPU virtual devices"))
    assert found.id == "virtual-device-config-invalid" and found.causes[0].id == "virtual-device-without-memory-limit"
    (other,) = explain(
        CATALOGUE.scan_text(
            "InvalidArgumentError: It's invalid to set per_process_gpu_memory_fraction when virtual_devices is set."
        )
    )
    assert "virtual-device-without-memory-limit" not in [c.id for c in other.causes]
