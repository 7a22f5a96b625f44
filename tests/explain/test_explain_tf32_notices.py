"""TensorFloat-32 notices: TensorFlow's cuda_blas.cc logs once that a float32 matmul runs in TF32
(a GPU of compute capability 8.0 or newer, TF32 on by default since TensorFlow 2.4); PyTorch's
torch.compile suggests turning TF32 matmuls on, and PyTorch 2.9 says the allow_tf32 switches give
way to fp32_precision. All are notices about a working GPU, never errors."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _ids(text: str) -> list[tuple[str, bool]]:
    return [(e.id, e.harmless) for e in explain(CATALOGUE.scan_text(text))]


@pytest.mark.parametrize(
    "line",
    [
        "2023-02-09 03:29:59.014936: I tensorflow/stream_executor/cuda/cuda_blas.cc:1774] TensorFloat-32 will be used for the matrix multiplication. This will only be logged once.",
        "2025-03-29 05:31:54.477339: I tensorflow/compiler/xla/stream_executor/cuda/cuda_blas.cc:637] TensorFloat-32 will be used for the matrix multiplication. This will only be logged once.",
        "I0000 00:00:1700000000.123456    4711 cuda_blas.cc:1407] TensorFloat-32 will be used for the matrix multiplication. This will only be logged once.",
    ],
)
def test_tensorflows_notice_is_harmless_and_shows_a_gpu(line):
    assert _ids(line) == [("tf32-matmul-notice", True)]
    (explanation,) = explain(CATALOGUE.scan_text(line))
    assert "8.0" in explanation.meaning and "enable_tensor_float_32_execution" in explanation.fix.text
    assert CATALOGUE.get("tf32-matmul-notice").shows == "gpu"


@pytest.mark.parametrize(
    "line",
    [
        "/opt/venv/lib/python3.11/site-packages/torch/_inductor/compile_fx.py:135: UserWarning: TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled. Consider setting `torch.set_float32_matmul_precision('high')` for better performance.",
        "/srv/.venv/lib/python3.12/site-packages/torch/backends/__init__.py:46: UserWarning: Please use the new API settings to control TF32 behavior, such as torch.backends.cudnn.conv.fp32_precision = 'tf32' or torch.backends.cuda.matmul.fp32_precision = 'ieee'.",
    ],
)
def test_pytorchs_notices_are_harmless(line):
    assert _ids(line) == [("torch-harmless-notices", True)]


@pytest.mark.parametrize(
    "line",
    [
        "TensorFloat-32 execution disabled",
        "tf.config.experimental.enable_tensor_float_32_execution(False)",
        "torch.backends.cuda.matmul.allow_tf32 = True",
        "TensorFloat32 tensor cores are used for convolutions",
        "Use the new API settings",
    ],
)
def test_close_lines_are_not_notices(line):
    assert _ids(line) == []


def test_the_notices_are_cheap_to_look_for():
    gates = CATALOGUE.gates
    for needle in (
        "tensorfloat will be used for the matrix multiplication",
        "tensor cores for float matrix multiplication available but not enabled",
        "please use the new api settings to control tf behavior",
    ):
        assert gates.get(needle), needle  # each pass has a gate word
