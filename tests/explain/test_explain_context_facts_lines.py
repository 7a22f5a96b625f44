"""The lines a context reader runs its regexes on (envcheck/explain/lines.py)."""

from __future__ import annotations

from envcheck.explain.lines import lines_with


def _spans(hints, text, more=0):
    return [text[a:b] for a, b in lines_with(hints, text, text.lower(), more)]


def test_each_line_holding_a_hint_once_in_order():
    text = "one GPU\nnothing\ngpu: A and GPU again\nlast gpu"
    assert _spans(("gpu",), text) == ["one GPU", "gpu: A and GPU again", "last gpu"]
    assert _spans(("nothing", "one"), text) == ["one GPU", "nothing"]
    assert _spans(("absent",), text) == []


def test_the_lines_after_a_hint_come_with_it():
    text = ">>> torch.cuda.get_device_name(0)\n'NVIDIA GeForce GTX 1050'\n>>> exit()"
    assert _spans(("get_device_name",), text, more=1) == [text[: text.index("\n>>> exit")]]
    assert _spans(("exit()",), text, more=3) == [">>> exit()"]  # the text ends first


def test_where_lower_casing_changes_the_length_the_whole_text_is_read_if_it_holds_a_hint():
    text = "İstanbul host\nname: NVIDIA T4"  # "İ" lower-cases to two characters
    lowered = text.lower()
    assert len(lowered) != len(text)
    assert lines_with(("name:",), text, lowered) == [(0, len(text))]
    assert lines_with(("absent",), text, lowered) == []
