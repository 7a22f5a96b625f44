"""Plain-text wrapping for the table cells of scan and fleet (render/lines.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.render.lines import wrap_words

PATH = "/home/ml/venvs/train/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8"


def test_words_wrap_at_spaces_and_a_long_path_after_a_separator():
    lines = wrap_words(f"shadows the good libcudnn.so.8 at {PATH}", 40)
    assert all(len(line) <= 40 for line in lines)
    assert "".join(lines[1:]) == PATH  # the path, broken only after its slashes
    assert all(line.endswith("/") for line in lines[1:-1])


def test_short_text_is_one_line():
    assert wrap_words("TensorFlow: not installed", 40) == ["TensorFlow: not installed"]
    assert wrap_words("", 10) == [""]


@given(st.text(alphabet="ab /\\-.", max_size=200), st.integers(min_value=1, max_value=60))
@settings(max_examples=examples(200))
def test_nothing_is_lost_and_no_line_is_too_long(text, width):
    lines = wrap_words(text, width)
    assert all(len(line) <= width for line in lines)
    assert "".join(lines).replace(" ", "") == "".join(text.split())
