"""A log whose known messages are all harmless notices but that ends in a Python traceback: the
report must not read as "all is well". CPython prints an uncaught exception as "Traceback (most
recent call last):", the frames, then "<name>: <message>" at the start of a line (Lib/traceback.py);
IPython's ultratb names the exception on the traceback's first line and ends with the same line."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import uncaught_exception
from envcheck.explain.report import ExplainReport

CATALOGUE = load_patterns()
NOTICE = (
    "2023-01-01 12:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is "
    "optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in "
    "performance-critical operations:  AVX2 FMA\n"
)
TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    model.fit(x, y)\n'
IPYTHON = (
    "---------------------------------------------------------------------------\n"
    "ValueError                                Traceback (most recent call last)\n"
    "<ipython-input-3-5d4> in <module>\n----> 1 model.fit(x, y)\n\n"
)


def _report(text: str) -> ExplainReport:
    scan = CATALOGUE.scan_text(text)
    return ExplainReport(source="the argument", scan=scan, explanations=explain(scan))


@pytest.mark.parametrize(
    "text, line",
    [
        (TRACEBACK + "ValueError: Shapes (None, 10) and (None, 1) are incompatible\n", "ValueError: Shapes (None, 10)"),
        (
            TRACEBACK + "tensorflow.python.framework.errors_impl.InvalidArgumentError: logits and labels must have "
            "the same first dimension\n",
            "tensorflow.python.framework.errors_impl.InvalidArgumentError: logits",
        ),
        (IPYTHON + "ValueError: Input 0 of layer dense is incompatible with the layer\n", "ValueError: Input 0"),
        (TRACEBACK + "ModuleNotFoundError: No module named 'cv2'\n", "ModuleNotFoundError: No module named 'cv2'"),
        (TRACEBACK + "SystemExit: 2\n", "SystemExit: 2"),
        # a chained exception: the last traceback's line is the one that ended the program
        (
            TRACEBACK
            + "KeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\n"
            + TRACEBACK
            + "RuntimeError: loading failed\n",
            "RuntimeError: loading failed",
        ),
    ],
)
def test_a_harmless_notice_before_an_unknown_python_error_is_not_the_whole_story(text, line):
    report = _report(NOTICE + text)
    assert report.explanations and all(e.harmless for e in report.explanations)
    assert report.unexplained_error.startswith(line)
    assert report.to_dict()["unexplained_error"].startswith(line)


@pytest.mark.parametrize(
    "text",
    [
        NOTICE,  # notices alone: harmless it is
        # an exception line in the middle, the program going on after it (a script printing one)
        NOTICE + "ValueError: printed by a script, no traceback\nEpoch 2/10\n",
        NOTICE + "UserWarning: a warning's line is no stop\n",
        NOTICE + TRACEBACK + "KeyboardInterrupt\n",  # the user pressed Ctrl-C
        NOTICE + TRACEBACK + "    raise ValueError: indented, a frame's source line\n",
    ],
)
def test_no_unexplained_error_without_an_uncaught_exception(text):
    assert _report(text).unexplained_error == ""


@pytest.mark.parametrize(
    "end, line",
    [
        ("ValueError: Shapes (None, 10) and (None, 1) are incompatible\n\n", "ValueError: Shapes"),
        (
            "tensorflow.python.framework.errors_impl.InternalError: Failed copying input tensor to GPU\n",
            "tensorflow.python.framework.errors_impl.InternalError: Failed copying",
        ),
        ("RuntimeError\n", "RuntimeError"),
    ],
)
def test_a_pasted_end_without_its_traceback_is_still_an_uncaught_exception(end, line):
    # people paste the last line of a traceback: the line CPython prints just before the program stops
    report = _report(NOTICE + end)
    assert report.unexplained_error.startswith(line)


def test_an_explained_error_is_not_also_called_unexplained():
    text = (
        NOTICE + TRACEBACK + "tensorflow.python.framework.errors_impl.UnknownError: Failed to get convolution "
        "algorithm. This is probably because cuDNN failed to initialize, so try looking to see if a warning log "
        "message was printed above. [Op:Conv2D]\n"
    )
    report = _report(text)
    assert report.to_act_on >= 1
    assert report.unexplained_error == "" and report.to_dict()["unexplained_error"] is None


def test_the_text_report_says_so(cli):
    result = cli(
        "explain", "--no-probe", NOTICE + TRACEBACK + "ValueError: Shapes (None, 10) and (None, 1) are incompatible"
    )
    assert result.code == 0
    first_lines = " ".join(result.out.split("\n")[:4])
    assert "(0 to act on, 1 harmless)" in first_lines
    assert "ends in a Python error none of these messages explains: ValueError: Shapes" in first_lines
    alone = cli("explain", "--no-probe", TRACEBACK + "ValueError: Shapes (None, 10) and (None, 1) are incompatible")
    assert alone.code == 1  # nothing known was found
    assert "It ends in a Python error envcheck does not know: ValueError: Shapes" in alone.out


def test_the_exception_line_is_bounded():
    line = uncaught_exception(TRACEBACK + "ValueError: " + "x" * 10_000 + "\n")
    assert line.startswith("ValueError: x") and len(line) <= 320


# TensorFlow's cudart_stub.cc prints "Could not find cuda drivers on your machine, GPU will not be
# used." when it cannot open the CUDA runtime: a notice on a machine without an NVIDIA GPU, the
# failure to fix on one whose GPU or driver the same log shows.
STUB = (
    "2023-07-13 15:38:30.515088: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your "
    "machine, GPU will not be used.\n"
)
SMI = (
    "| NVIDIA-SMI 525.85.12    Driver Version: 525.85.12    CUDA Version: 12.0     |\n"
    "|   0  NVIDIA GeForce RTX 3090  Off  | 00000000:01:00.0  On |                  N/A |\n"
)


def _stub(text: str):
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == "no-cuda-drivers"]
    return found


@pytest.mark.parametrize("before", [SMI, "NVIDIA-SMI 535.104.05 Driver Version: 535.104.05 CUDA Version: 12.2\n"])
def test_the_cuda_stub_notice_is_a_failure_where_the_log_shows_a_gpu_or_driver(before):
    found = _stub(before + STUB)
    assert not found.harmless
    assert "this log shows" in found.log_note and found.causes[0].id != "no-nvidia-gpu"


@pytest.mark.parametrize("before", ["", "$ python train.py\n", "CUDA Version 12.1.1\n"])
def test_the_cuda_stub_notice_alone_stays_a_notice(before):
    found = _stub(before + STUB)
    assert found.harmless and not found.log_note
