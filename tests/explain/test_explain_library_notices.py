"""Notices of libraries beside the GPU stack that need nothing: PyTorch's optional NNPACK CPU
kernels that cannot start on this CPU (aten/src/ATen/native/NNPACK.cpp), the deprecated pynvml
package's import warning (NVIDIA's bindings are nvidia-ml-py), ONNX Runtime placing some nodes on
the CPU beside the GPU provider (session_state.cc). Each is harmless however it is prefixed; the
lines around them that are failures stay failures."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _ids(text: str) -> list[tuple[str, bool]]:
    return [(e.id, e.harmless) for e in explain(CATALOGUE.scan_text(text))]


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("[W NNPACK.cpp:80] Could not initialize NNPACK! Reason: Unsupported hardware.", "torch-nnpack-unavailable"),
        ("[W NNPACK.cpp:53] Could not initialize NNPACK! Reason: Unknown error!", "torch-nnpack-unavailable"),
        (
            "[W108 14:02:11.000000000 NNPACK.cpp:61] Could not initialize NNPACK! Reason: Unsupported hardware.",
            "torch-nnpack-unavailable",
        ),
        (
            "> **[W NNPACK.cpp:80] Could not initialize NNPACK! Reason: Unsupported hardware.**",
            "torch-nnpack-unavailable",
        ),
        (
            r"C:\Users\u\venv\Lib\site-packages\torch\cuda\__init__.py:54: FutureWarning: The pynvml package is deprecated. Please install nvidia-ml-py instead.",
            "pynvml-deprecated-notice",
        ),
        (
            "/usr/local/lib/python3.10/dist-packages/accelerate/utils/imports.py:12: FutureWarning: The pynvml package is deprecated. Please install nvidia-ml-py instead. If you did not install pynvml directly, please report this to the maintainers of the package that installed pynvml for you.",
            "pynvml-deprecated-notice",
        ),
        (
            "2023-08-01 12:00:00.000 [W:onnxruntime:, session_state.cc:1162 VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the preferred execution providers which may or may not have an negative impact on performance. e.g. ORT explicitly assigns shape related ops to CPU to improve perf.",
            "onnxruntime-nodes-on-cpu-notice",
        ),
        (
            "W onnxruntime: Some nodes were not assigned to the preferred execution providers which may or may not have an negative impact on performance.",
            "onnxruntime-nodes-on-cpu-notice",
        ),
    ],
)
def test_each_notice_is_harmless(text, pattern):
    assert _ids(text) == [(pattern, True)]


def test_a_failure_beside_a_notice_stays_a_failure():
    log = (
        "[W NNPACK.cpp:80] Could not initialize NNPACK! Reason: Unsupported hardware.\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    found = dict(_ids(log))
    assert found["torch-nnpack-unavailable"] is True
    assert any(harmless is False for harmless in found.values())


@pytest.mark.parametrize(
    "text",
    [
        "NNPACK initialized",
        "-- Found NNPACK: /usr/lib/libnnpack.a",
        "Failed to initialize XNNPACK! Reason: Unsupported hardware.",
        "Requirement already satisfied: pynvml in ./venv/lib/python3.11/site-packages (12.0.0)",
        "import pynvml",
        "pynvml.nvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
        "Rerunning with verbose output on a non-minimal build will show node assignments.",
        "All nodes were assigned to the preferred execution providers",
    ],
)
def test_close_lines_are_not_these_notices(text):
    ids = {i for i, _ in _ids(text)}
    assert not ids & {"torch-nnpack-unavailable", "pynvml-deprecated-notice", "onnxruntime-nodes-on-cpu-notice"}
