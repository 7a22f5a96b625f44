"""PyTorch messages in the wordings of its earlier releases as well as the current ones: the MPS
fallback's "is not current implemented" (sic, PyTorch 1.12 and 1.13) beside "is not currently
implemented", and torch/backends/cudnn's version check, "cuDNN version mismatch ... linked
against" (the exact-version check before 1.1), "incompatibility ... linked against" (integers)
and "incompatibility ... found runtime version" (tuples). A newer minor of the same cuDNN major is
refused only by the exact check of the early releases, so it is that cause first; an older cuDNN
or another major is a cuDNN shadowing PyTorch's own."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


@pytest.mark.parametrize(
    "text, op",
    [
        (
            "NotImplementedError: The operator 'aten::_index_put_impl_' is not current implemented for the MPS device.",
            "aten::_index_put_impl_",
        ),
        (
            "NotImplementedError: The operator 'aten::index.Tensor' is not currently implemented for the MPS device. If you want this op to be added in priority during the prototype phase of this feature, please comment on https://github.com/pytorch/pytorch/issues/77764.",
            "aten::index.Tensor",
        ),
        ("The operator 'torchvision::nms' is not current implemented for the MPS device.", "torchvision::nms"),
    ],
)
def test_the_mps_fallback_message_of_every_release(text, op):
    (explanation,) = _explain(text)
    assert explanation.id == "mps-op-not-implemented" and op in explanation.title
    assert "PYTORCH_ENABLE_MPS_FALLBACK" in explanation.fix.text


@pytest.mark.parametrize(
    "text",
    [
        "The operator 'aten::add.out' is implemented for the MPS device",
        "The operator is not currently implemented for the CUDA device",
        "PYTORCH_ENABLE_MPS_FALLBACK=1",
    ],
)
def test_close_lines_are_not_the_mps_message(text):
    assert "mps-op-not-implemented" not in [e.id for e in _explain(text)]


@pytest.mark.parametrize(
    "text, compiled, loaded, first",
    [
        # the exact check of PyTorch before 1.1: a newer minor refused
        (
            "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7605",
            "7.1.2",
            "7.6.5",
            "cudnn-minor-differs",
        ),
        (
            "cuDNN version mismatch: PyTorch was compiled against 6021 but linked against 6030",
            "6.0.21",
            "6.0.30",
            "cudnn-minor-differs",
        ),
        # an older minor or another major: refused by every release
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7603 but linked against 7501",
            "7.6.3",
            "7.5.1",
            "torch-cudnn-version-incompatible",
        ),
        (
            "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7005 but linked against 6021",
            "7.0.5",
            "6.0.21",
            "torch-cudnn-version-incompatible",
        ),
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (8, 9, 7). PyTorch already comes bundled with cuDNN.",
            "9.1.0",
            "8.9.7",
            "torch-cudnn-version-incompatible",
        ),
    ],
)
def test_the_cudnn_check_of_every_release_names_both_versions(text, compiled, loaded, first):
    (explanation,) = _explain(text)
    assert explanation.id == "torch-cudnn-version-incompatible"
    assert compiled in explanation.title and loaded in explanation.title
    causes = [c.id for c in explanation.causes]
    assert causes[0] == first
    if first == "torch-cudnn-version-incompatible":
        assert "cudnn-minor-differs" not in causes  # a minor the early check alone refuses is not this


@pytest.mark.parametrize(
    "text",
    [
        "cuDNN version compatibility",
        "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0; PyTorch was compiled against NumPy 1.x",
        "torch.backends.cudnn.version() = 7605",
    ],
)
def test_close_lines_are_not_the_cudnn_check(text):
    assert "torch-cudnn-version-incompatible" not in [e.id for e in _explain(text)]
