"""What the programs between a message and its reader do to it changes nothing of what it is
explained as: a terminal that cuts every line at its width (mid-word, nothing added or lost), a
word-wrapper that breaks at blanks (with or without an indent), a wrapper that puts its prefix on
every line, CRLF line ends. The corpus's one-line messages are transformed and must keep their
explanation ids, first causes and harmless verdicts (``benchmarks/explain_transforms.py`` measures
the same over the whole corpus). Look-alikes stay as they are: lines of one template repeated at
the same width, a traceback's frame and its code, a prefix that is part of the message."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcheck.explain import explain, load_patterns
from envcheck.explain.normalise import (
    decode_envelopes,
    join_terminal_cuts,
    learn_wrapper,
    strip_colour,
    strip_prefixes,
    strip_wrappers,
    wrapped_runs,
)
from tests.hypothesis_budget import examples

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "real_messages"
CATALOGUE = load_patterns()

sys.path.insert(0, str(ROOT / "benchmarks"))
from explain_transforms import PREFIXES, hard_wrap, prefixed, word_wrap  # noqa: E402

# One-line messages whose reading a transform still changes, by transform (what is left to do:
# a single cut line, which may be a terminal's or a word-wrapper's, is read both ways and a half
# that explains itself keeps its own reading; a cut before a word that starts a record).
STILL_CHANGED: dict[str, set[str]] = {
    "hard": {
        "other-frameworks-comfyui-gimm-vfi-17",
        "windows-materialsearch-105",
    },
    "prefix": {
        "containers-nvidia-docker-74",
        "harmless-tensorflow-1071",
        "harmless-tensorflow-1071-2",
        "harmless-tensorflow-3727",
        "memory-tf-pose-estimation-674",
        "windows-tensorflow-44291",
        "windows-tensorflow-62375",
    },
    "word": {
        "compute-capability-fauxpilot-19",
        "compute-capability-nnunet-2188",
        "containers-nvidia-docker-1348",
        "containers-tensorflow-44597",
        "containers-vortex-106",
        "cudnn-automl-33",
        "cudnn-jax-ml-jax-1351",
        "cudnn-jax-ml-jax-6517",
        "driver-cmssw-42657",
        "harmless-keras-frcnn-116",
        "harmless-tensorflow-53608",
        "harmless-terratorch-5",
        "images-horovod-192",
        "images-kaggle-docker-python-363",
        "linux-libraries-misskey-8961",
        "linux-libraries-tensorflow-1324",
        "linux-whisper-webui-114",
        "macos-invokeai-1076",
        "macos-metal-roop-unleashed-1015",
        "macos-mlx-621",
        "macos-numpy-26918",
        "memory-models-6450",
        "memory-pytorch-cyclegan-962",
        "other-frameworks-jax-22416",
        "other-frameworks-mt3-145",
        "other-frameworks-onnxruntime-22491",
        "windows-comfyui-zluda-9",
        "windows-cx-freeze-1787",
        "windows-llamafactory-5132",
        "windows-materialsearch-105",
        "windows-pytorch-129568",
        "windows-pytorch-131662",
        "windows-pytorch3d-1872",
        "windows-tensorflow-24886",
        "windows-tensorflow-windows-wheel-48",
        "windows-yolov7-1036",
    },
}


def _one_line_messages() -> list[dict]:
    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name != "ordinary.yaml":
            out.extend(
                e
                for e in yaml.safe_load(path.read_text(encoding="utf-8"))["messages"]
                if "\n" not in e["message"].strip()
            )
    return out


MESSAGES = _one_line_messages()


def _verdict(text: str) -> tuple:
    return tuple(
        sorted((e.id, e.causes[0].id if e.causes else "", e.harmless) for e in explain(CATALOGUE.scan_text(text)))
    )


def _kept(kind: str) -> list[dict]:
    return [e for e in MESSAGES if e["id"] not in STILL_CHANGED[kind]]


_SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@_SETTINGS
@given(st.sampled_from(_kept("hard")), st.sampled_from([40, 53, 67, 80, 97, 120]), st.booleans())
def test_a_terminal_cut_at_its_width_changes_no_explanation(entry, width, crlf):
    text = entry["message"].strip()
    wrapped = hard_wrap(text, width)
    if wrapped.count("\n") < 3:
        return  # fewer than three cuts: a word-wrapper's width could look the same (read both ways)
    if crlf:
        wrapped = wrapped.replace("\n", "\r\n") + "\r\n"
    assert _verdict(wrapped) == _verdict(text), (entry["id"], wrapped)


@_SETTINGS
# (the container runtime's own prefix says the program ran in a container: a fact that ranks causes)
@given(st.sampled_from(_kept("prefix")), st.sampled_from(sorted(set(PREFIXES) - {"cri"})))
def test_a_wrappers_prefix_on_every_line_changes_no_explanation(entry, wrapper):
    text = entry["message"].strip()
    assert _verdict(prefixed(text, wrapper)) == _verdict(text), (entry["id"], wrapper)


@_SETTINGS
@given(st.sampled_from(_kept("word")), st.sampled_from([72, 100]), st.sampled_from(["", "  "]))
def test_a_word_wrap_at_blanks_changes_no_explanation(entry, width, indent):
    text = entry["message"].strip()
    assert _verdict(word_wrap(text, width, indent)) == _verdict(text), (entry["id"], width, indent)


CUDNN = (
    "2021-04-09 19:52:41.024315: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] "
    "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: "
    "No such file or directory"
)
NVIDIA_SMI = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
    "NVIDIA driver is installed and running."
)


@pytest.mark.parametrize("width", [40, 57, 61])
@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_a_terminal_cut_reads_as_the_line_it_was(width, line_end):
    wrapped = line_end.join(hard_wrap(CUDNN, width).split("\n")) + line_end + "next line" + line_end
    (occurrence,) = CATALOGUE.scan_text(wrapped).occurrences
    assert occurrence.pattern.id == "cudnn-not-loaded" and occurrence.variables["library"] == "libcudnn.so.8"
    assert occurrence.line_numbers == [1]
    assert CATALOGUE.scan_text(wrapped).lines == len(wrapped.split(line_end)) - 1  # every line keeps its number


@pytest.mark.parametrize("width", [80, 113, 150])
def test_one_or_two_terminal_cuts_are_read_both_ways(width):
    # a width fewer than three cut lines show could be a word-wrapper's: the run is read both ways
    wrapped = hard_wrap(CUDNN, width) + "\n"
    assert [o.pattern.id for o in CATALOGUE.scan_text(wrapped).occurrences] == ["cudnn-not-loaded"]


def test_a_terminal_cut_keeps_the_blanks_at_the_cut():
    # the cut falls on a blank: the next line starts with it, and nothing is added
    text = "x" * 39 + " Could not load dynamic library 'libcudart.so.11.0'; dlerror: cannot open shared object file"
    joined = join_terminal_cuts(hard_wrap(text, 40).encode() + b"\n")
    assert joined.split(b"\n")[0] == text.encode()


def test_a_compose_prefix_cut_by_the_terminal_keeps_it_on_the_first_line_only():
    wrapped = hard_wrap("trainer-1  | " + CUDNN, 60)
    assert [o.pattern.id for o in CATALOGUE.scan_text(wrapped).occurrences] == ["cudnn-not-loaded"]


@pytest.mark.parametrize("indent", ["", "  ", "    "])
def test_a_word_wrap_with_a_hanging_indent_reads_as_one_message(indent):
    wrapped = "\n".join(textwrap.wrap(NVIDIA_SMI, 60, subsequent_indent=indent))
    assert [e.id for e in explain(CATALOGUE.scan_text(wrapped))] == ["nvidia-smi-no-driver"]


def test_a_word_wrap_that_starts_a_line_with_an_upper_case_word_is_a_run():
    lines = [
        b"NVIDIA-SMI has failed because it couldn't communicate with the",
        b"NVIDIA driver. Make sure that the latest",
    ]
    ((where, length, texts, trusted),) = wrapped_runs(lines)
    assert where == [0] and length == 2 and texts[0] == b" ".join(lines) and trusted


# --- look-alikes ----------------------------------------------------------------------------------


def test_lines_of_one_template_at_one_width_are_records_not_a_cut():
    block = "".join(f"Could not load dynamic library 'libcudart.so.{n}'; dlerror: x\n" for n in range(6)).encode()
    assert join_terminal_cuts(block) == block
    assert len(CATALOGUE.scan_text(block.decode()).occurrences) == 6


def test_log_records_of_one_width_are_not_joined():
    block = (
        b"2024-05-02 10:11:12.000001: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1871] Adding visible gpu devices: 0\n"
        b"2024-05-02 10:11:12.000002: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1871] Adding visible gpu devices: 1\n"
        b"2024-05-02 10:11:13.000001: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1258] Device interconnect\n"
    )
    assert join_terminal_cuts(block) == block


def test_a_real_two_line_message_is_not_one_cut_line():
    # Two of TensorFlow's lines, each ended by its program: the first is not as wide as a terminal's cut
    # would make it, and nothing joins them outright.
    text = (
        "2020-05-03 02:06:12.462209: I tensorflow/stream_executor/cuda/cuda_driver.cc:764] failed to allocate 2.2K "
        "(2304 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    model.fit(x, y)\n"
    )
    assert join_terminal_cuts(text.encode()) == text.encode()
    lines = text.encode().split(b"\n")
    assert all(where != [2] for where, _, _, _ in wrapped_runs(lines))  # a frame and its code stay two


def test_a_prompt_after_a_long_line_is_a_new_line():
    lines = [b"x" * 70 + b" Could not load dynamic", b"$ nvidia-smi", b"y" * 70]
    assert all(0 not in where for where, _, _, _ in wrapped_runs(lines))


@pytest.mark.parametrize(
    "line",
    [
        "srun: error: Unable to allocate resources: Requested node configuration is not available",
        "nvidia-container-cli: initialization error: nvml error: driver not loaded",
        "| NVIDIA-SMI 535.104.05 Driver Version: 535.104.05 CUDA Version: 12.2 |",
    ],
)
def test_a_prefix_that_is_part_of_the_message_stays(line):
    assert strip_prefixes(line) == line


# --- a program's output inside another's record ----------------------------------------------------

TWO_LINES = "Traceback (most recent call last):\n" + CUDNN


@pytest.mark.parametrize(
    "record",
    [
        json.dumps({"time": "2024-05-01T10:00:00Z", "level": "error", "message": TWO_LINES}),
        json.dumps({"log": TWO_LINES + "\n", "stream": "stderr", "time": "2024-05-01T10:00:00.1Z"}),  # docker json-file
        json.dumps({"MESSAGE": TWO_LINES, "_PID": "1234"}),  # journalctl -o json
        repr([line + "\n" for line in TWO_LINES.split("\n")]),  # a list of lines
        repr(TWO_LINES),
        repr(TWO_LINES.encode()),
    ],
)
def test_a_record_holding_the_output_reads_as_the_output(record):
    assert _verdict(record) == _verdict(TWO_LINES)
    assert decode_envelopes(record.encode()).split(b"\n")[:2] == [line.encode() for line in TWO_LINES.split("\n")]


@pytest.mark.parametrize(
    "line",
    [
        '{"event": "step", "loss": 0.25, "note": "a\\nb"}',  # a record with no message field
        "['unterminated\\n",  # not a literal
        "print('a\\nb')",  # code, not a value
    ],
)
def test_what_is_not_a_record_of_output_stays(line):
    assert decode_envelopes(line.encode()) == line.encode()


def test_a_wrappers_prefix_is_learned_from_most_first_lines_only():
    assert learn_wrapper(b"trainer-1  | a\ntrainer-1  | b\nunprefixed c\n") is not None
    assert learn_wrapper(b"0: a\nplain b\nplain c\n") is None  # one line of three is no wrapper's
    assert learn_wrapper(b">>> import tensorflow as tf\n>>> tf.config.list_physical_devices('GPU')\n") is None
    quoted = b"> >>> import tensorflow as tf\n> >>> tf.config.list_physical_devices('GPU')\n> []\n"
    assert strip_wrappers(quoted, learn_wrapper(quoted), small=True).split(b"\n")[:3] == [
        b">>> import tensorflow as tf",
        b">>> tf.config.list_physical_devices('GPU')",
        b"[]",
    ]
    block = b"[1,0]<stderr>:a\n[1,0]<stderr>:b\n" * 40_000  # a large log: one replace of the literal
    assert strip_wrappers(block, learn_wrapper(block), small=False) == b"a\nb\n" * 40_000


def test_colour_escapes_take_no_column_and_hold_no_word():
    coloured = "\x1b[1;31mCould not load dynamic library\x1b[0m 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open"
    assert [o.pattern.id for o in CATALOGUE.scan_text(coloured).occurrences] == ["cudnn-not-loaded"]
    assert strip_colour(b"\x1b[32mok\x1b[0m\nnext\x1b[K") == b"ok\nnext"


def test_a_one_line_json_record_reads_as_its_message():
    record = json.dumps({"level": "error", "message": "Killed"})
    assert [e.id for e in explain(CATALOGUE.scan_text(record))] == [
        e.id for e in explain(CATALOGUE.scan_text("Killed"))
    ]


def test_a_word_wrapped_message_is_not_also_read_as_its_tail():
    # the dlerror's tail on lines 2-3 is part of the loader's message on line 1, not a message of its own
    wrapped = (
        "Could not load library libcudnn_ops_infer.so.8. Error:\n"
        "libcudnn_ops_infer.so.8: cannot open shared object file: No such file or\n"
        "directory"
    )
    assert [e.id for e in explain(CATALOGUE.scan_text(wrapped))] == [
        e.id for e in explain(CATALOGUE.scan_text(wrapped.replace("\n", " ")))
    ]


def test_two_messages_after_a_sentence_end_stay_two():
    notice = (
        "I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU"
        " set up on your machine."
    )
    ids = [o.pattern.id for o in CATALOGUE.scan_text(notice + "\nAborted (core dumped)").occurrences]
    assert sorted(ids) == ["cudart-stub-ignore-hint", "process-crash-status"]
    two = "nvcc fatal   : Unsupported gpu architecture 'compute_61'\ncudaCheckError() failed : invalid device function"
    assert len(explain(CATALOGUE.scan_text(two))) == 2


def test_a_logger_record_after_the_widest_line_starts_a_line_of_its_own():
    # the widest line of a block of records is no cut line when the next one is the logger's own
    # record: TensorFlow's diagnostics are four notices, not one notice running into the next
    records = (
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:163] retrieving CUDA diagnostic information for host: node7\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:200] libcuda reported version is: 470.82.1\n"
        "2024-05-02 10:11:12.123456: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:204] kernel reported version is: 470.82.1"
    )
    found = {o.pattern.id for o in load_patterns().scan_text(records).occurrences}
    assert found == {"tf-gpu-diagnostic-notices"}
    # a message a forum cut at its width still reads as one line
    cut = (
        "2024-05-02 10:11:12.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic\n"
        "library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory"
    )
    assert "cudart-not-loaded" in {o.pattern.id for o in load_patterns().scan_text(cut).occurrences}
