"""The log's side of two judgements the machine's facts also make.

"No CUDA driver" notices (the patterns ``machine.gpu_presence`` specializes) are expected on a
machine without an NVIDIA GPU and a failure on one with a GPU: a log that shows an NVIDIA GPU
(nvidia-smi's table, the bug-report form's "GPU model and memory") that TensorFlow did not find
makes them something to act on. And a statement typed at Python's prompt is read with the value
printed after it: ``tf.config.list_physical_devices('GPU')`` answered ``[]`` is TensorFlow listing
no GPU, whatever harmless notices surround it.
"""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()

# tsl/cuda/cudart_stub.cc's notice (TensorFlow 2.13 and later)
STUB = "2024-01-01 10:00:00.000000: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.\n"
# nvidia-smi's device row (its table format)
SMI = (
    "+---------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 535.113.01             Driver Version: 535.113.01   CUDA Version: 12.2     |\n"
    "|   0  NVIDIA GeForce GTX 1650        Off | 00000000:01:00.0  On |                  N/A |\n"
)
CREATED = (
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1886] Created device /job:localhost/replica:0/task:0/"
    "device:GPU:0 with 2860 MB memory:  -> device: 0, name: NVIDIA GeForce GTX 1650, pci bus id: 0000:01:00.0, "
    "compute capability: 7.5\n"
)


def _verdicts(text: str) -> dict[str, bool]:
    return {e.id: e.harmless for e in explain(CATALOGUE.scan_text(text))}


def test_no_cuda_driver_is_a_notice_in_a_log_without_a_gpu():
    assert _verdicts(STUB) == {"no-cuda-drivers": True}


@pytest.mark.parametrize(
    "shown",
    [
        SMI,
        "### GPU model and memory\n\nNvidia GT 1030 2gb\n\n### Current behavior?\n",
        "### GPU model and memory\n\nRTX 3080 10GB\n",
    ],
)
def test_no_cuda_driver_is_a_failure_in_a_log_that_shows_an_nvidia_gpu(shown):
    (explanation,) = [e for e in explain(CATALOGUE.scan_text(shown + STUB)) if e.id == "no-cuda-drivers"]
    assert explanation.harmless is False
    assert "no-nvidia-gpu" not in [c.id for c in explanation.causes]
    assert explanation.log_note


@pytest.mark.parametrize("answer", ["N/A", "none", "Intel UHD 620"])
def test_a_form_answer_that_names_no_nvidia_gpu_changes_nothing(answer):
    assert _verdicts(f"### GPU model and memory\n\n{answer}\n\n" + STUB)["no-cuda-drivers"] is True


def test_a_gpu_that_tensorflow_found_keeps_the_notice_harmless():
    assert _verdicts(SMI + STUB + CREATED)["no-cuda-drivers"] is True


# Python's prompt (sys.ps1), IPython's, and a shell's python -c: the statement, the log records
# the call wrote (TensorFlow's start-up lines), then the value's repr.
@pytest.mark.parametrize(
    "text",
    [
        ">>> import tensorflow as tf\n>>> tf.config.list_physical_devices('GPU')\n[]\n",
        ">>> tf.config.list_physical_devices('GPU')\n" + STUB + "[]\n",
        "In [2]: tf.config.list_physical_devices('GPU')\nOut[2]: []\n",
        "PS C:\\work> python -c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\"\n[]\n",
        ">>>        tf.config.list_physical_devices('GPU')\n[]\n",  # blanks a page or a paste doubled
        "In  [2]:\ttf.config.list_physical_devices('GPU')\nOut[2]: []\n",
        # a web page's no-break spaces between the words of the command and of IPython's prompt
        "$\u00a0python3\u00a0-c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\"\n[]\n",
        "In\u00a0[2]: tf.config.list_physical_devices('GPU')\nOut[2]: []\n",
        # a statement a terminal cut: the prompt's line holds no needle, the next one does
        "$ python3 -c \"import tensorflow\nas tf; print(tf.config.list_physical_devices('GPU'))\"\n[]\n",
        ">>> tf.test.is_gpu_available()\nWARNING:tensorflow:From <stdin>:1: is_gpu_available (from tensorflow.python.framework.test_util) is deprecated and will be removed in a future version.\nInstructions for updating:\nUse `tf.config.list_physical_devices('GPU')` instead.\nFalse\n",
    ],
)
def test_a_statement_and_its_answer_are_read_together(text):
    assert "tf-lists-no-gpu" in CATALOGUE.scan_text(text).ids


@pytest.mark.parametrize(
    "text",
    [
        ">>> tf.config.list_physical_devices('GPU')\n[PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')]\n",
        ">>> tf.config.list_physical_devices('GPU')\n>>> gpus = []\n>>> gpus\n[]\n",
        "tf.config.list_physical_devices('GPU')\n[]\n",  # a script's line, not a statement at a prompt
        ">>> tf.test.is_gpu_available()\nTrue\n",
    ],
)
def test_another_answer_or_no_prompt_is_not_read_as_no_gpu(text):
    assert "tf-lists-no-gpu" not in CATALOGUE.scan_text(text).ids


def test_harmless_notices_beside_an_empty_device_list_are_not_the_whole_story():
    log = (
        ">>> import tensorflow as tf\n" + STUB + "2024-01-01 10:00:01.000000: W tensorflow/compiler/tf2tensorrt/utils/"
        "py_utils.cc:38] TF-TRT Warning: Could not find TensorRT\n>>> tf.config.list_physical_devices('GPU')\n[]\n"
    )
    verdicts = _verdicts(log)
    assert verdicts["tf-lists-no-gpu"] is False
    assert not all(verdicts.values())
