"""Which framework a log comes from decides which allocator's behaviour a memory cause may blame:
TensorFlow reserves nearly all of each GPU's memory when its process starts, PyTorch reserves none
(its caching allocator takes memory as tensors need it). A PyTorch log that shows nothing of
TensorFlow does not get "TensorFlow's own reservation" as a cause; a log with both, or with
TensorFlow alone, still does."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()

PYTORCH_CUBLAS = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
TORCH_FRAME = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 40, in <module>\n'
    "    out = model(x)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl\n'
    "    return forward_call(*args, **kwargs)\n"
)


def _causes(text: str) -> list[str]:
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.causes]
    assert found, text
    return [c.id for c in found[0].causes]


@pytest.mark.parametrize(
    "text",
    [
        PYTORCH_CUBLAS,
        TORCH_FRAME + "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtMatmul( ltHandle, computeDesc)`",
        "CUBLAS_STATUS_ALLOC_FAILED\nCUDA kernel errors might be asynchronously reported at some other API call",
        "C:\\Users\\me\\envs\\t\\Lib\\site-packages\\torch\\functional.py\nCUBLAS_STATUS_ALLOC_FAILED",
    ],
)
def test_a_pytorch_log_is_not_told_about_tensorflows_reservation(text):
    assert read_context(text).get("log_framework") == "pytorch"
    causes = _causes(text)
    assert "gpu-memory-preallocated" not in causes
    assert causes[0] == "other-process-holds-gpu"


@pytest.mark.parametrize(
    "text",
    [
        # TensorFlow's own cuBLAS line
        "E tensorflow/stream_executor/cuda/cuda_blas.cc:226] failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED",
        # both frameworks in one process: TensorFlow's reservation may be what PyTorch ran into
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1510] Created device /job:localhost/replica:0/task:0/device:GPU:0\n"
        + PYTORCH_CUBLAS,
        "import tensorflow as tf\nimport torch\n" + PYTORCH_CUBLAS,
        # neither named: nothing decided
        "CUBLAS_STATUS_ALLOC_FAILED",
    ],
)
def test_a_log_that_shows_tensorflow_or_no_framework_keeps_the_cause(text):
    assert read_context(text).get("log_framework") is None
    assert "gpu-memory-preallocated" in _causes(text)


@pytest.mark.parametrize(
    "text",
    [
        "torchvision is not installed; see the docs",  # the word alone
        "pip install torch==2.1.0",  # an install line names no process
        "The model was saved with torch.save and loaded in TensorFlow",  # prose, and TensorFlow
        "c10d is a library name in prose",
    ],
)
def test_words_that_are_not_pytorchs_frames_or_lines_say_nothing(text):
    assert read_context(text).get("log_framework") is None
