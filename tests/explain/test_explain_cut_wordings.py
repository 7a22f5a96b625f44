"""Messages read by the words that say what failed, not by every word around them: cuDNN 8's
"Could not load library libcudnn_cnn_infer.so.8" is its sub-library loader's message with or
without the ". Error: <dlerror>" that follows (a line cut there, a quote of the first half), and
dockerd's "Unknown runtime specified nvidia" (before Docker 23) is read by "runtime specified
nvidia", however the first word is spelt or paraphrased."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _ids(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text))]


@pytest.mark.parametrize(
    "text, library",
    [
        ("Error: Could not load library libcudnn_cnn_infer.so.8", "libcudnn_cnn_infer.so.8"),
        ("Could not load library libcudnn_ops_train.so.8", "libcudnn_ops_train.so.8"),
        (
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
            "libcudnn_cnn_infer.so.8",
        ),
        ("Could not load library libcublasLt.so.12", "libcublasLt.so.12"),
    ],
)
def test_the_sub_library_is_named_with_or_without_the_error(text, library):
    (explanation,) = explain(CATALOGUE.scan_text(text))
    assert explanation.id == "cudnn-sublibrary-not-loaded" and library in explanation.title


@pytest.mark.parametrize(
    "text",
    [
        "Could not load library",
        "Could not load library libcudnn_",
        "Loaded library libcudnn_cnn_infer.so.8",
    ],
)
def test_close_lines_are_not_the_sub_library_message(text):
    assert "cudnn-sublibrary-not-loaded" not in _ids(text)


@pytest.mark.parametrize(
    "text",
    [
        "docker: Error response from daemon: Unknown runtime specified nvidia.",
        "I am getting unknow runtime specified nvidia.",
        "ERROR: for app  Cannot create container for service app: Unknown runtime specified nvidia",
        "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
    ],
)
def test_dockers_unknown_runtime_however_the_first_word_is_written(text):
    assert _ids(text)[0] == "docker-nvidia-runtime-unknown"


@pytest.mark.parametrize(
    "text",
    [
        "Unknown runtime specified runc-v2",
        "runtime specified nvidia-container-runtime-hook in the config",
        '"default-runtime": "nvidia"',
    ],
)
def test_other_runtimes_are_not_the_nvidia_runtime(text):
    assert "docker-nvidia-runtime-unknown" not in _ids(text)
