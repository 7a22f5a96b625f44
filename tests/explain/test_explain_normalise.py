"""The normal form: wording that changes nothing never changes what a message is explained as.

Every example of every pattern is perturbed the ways pasted text differs (blanks, typographic
quotes, HTML entities, a hard wrap, a log prefix, a container runtime's partial records) and must
still be explained by its own pattern, with the same title; ordinary lines must stay ordinary."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcheck.explain import load_patterns
from envcheck.explain.normalise import (
    MAX_PREFIXES,
    join_partial_records,
    normalise_line,
    search_key,
    strip_prefixes,
    wrapped_lines,
)
from tests.hypothesis_budget import examples

CATALOGUE = load_patterns()
EXAMPLES = [(p.id, text) for p in CATALOGUE.patterns for text in p.examples]


def _titles(text: str) -> set[tuple[str, str]]:
    return {(o.pattern.id, o.title) for o in CATALOGUE.scan_text(text).occurrences}


PREFIXES = (
    "2021-04-09 19:52:41.024315: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] ",
    "E0000 00:00:1796056754.682237    7566 cuda_platform.cc:52] ",
    "2024-05-02T10:11:12.123456789Z stderr F ",
    "[pod/trainer-0/tensorflow] ",
    "trainer-1  | ",
    "[2023-01-01, 12:00:00 UTC] {subprocess.py:92} INFO - ",
    "Jan  2 03:04:05 gpu-node-3 kernel: ",
    "[  123.456789] ",
    "> ",
    "\x1b[31m",
)


def _perturb(text: str, how: str, where: int) -> str:
    """``text`` changed in a way that must not change what it means."""
    if how == "spaces":
        return text.replace(" ", "  ", where % 3 + 1)
    if how == "tabs":
        return text.replace(" ", "\t", 1)
    if how == "quotes":
        return text.replace("'", "\u2019").replace('"', "\u201d")
    if how == "entities":  # a page escapes once (twice at worst, which is read too)
        return html.escape(text, quote=True) if "&amp;" not in text else text
    if how == "prefix":
        return PREFIXES[where % len(PREFIXES)] + text
    if how == "nbsp":
        return text.replace(" ", "\u00a0", 2)
    raise AssertionError(how)


@pytest.mark.parametrize("prefix", PREFIXES)
def test_two_of_the_test_prefixes_stay_within_max_prefixes(prefix):
    # What the property test below relies on when it stacks at most MAX_PREFIXES // 2 of them.
    assert normalise_line(prefix * (MAX_PREFIXES // 2) + "Error: Could not load NVML library") == (
        "Error: Could not load NVML library"
    )


@settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(
    st.sampled_from(EXAMPLES),
    st.lists(
        st.tuples(st.sampled_from(["spaces", "tabs", "quotes", "entities", "prefix", "nbsp"]), st.integers(0, 50)),
        min_size=1,
        max_size=3,
    ),
)
def test_wording_that_changes_nothing_changes_no_explanation(example, perturbations):
    pattern_id, text = example
    wanted = _titles(text)
    changed = text
    prefixes = 0
    for how, where in perturbations:
        if how == "prefix":
            # Each of PREFIXES is at most two prefixes (a time, then glog); past MAX_PREFIXES the
            # rest is read as the message by design, so the test stacks no more than that.
            if 2 * (prefixes + 1) > MAX_PREFIXES:
                continue
            prefixes += 1
        changed = _perturb(changed, how, where)
    assert _titles(changed) == wanted, (pattern_id, changed)


# Every place a terminal or a web page could cut an example (a word that starts lower-case, after
# at least 30 characters of its line and not after what the joiner reads as an end: . ! ? ] ) } |),
# for every pattern: a finite set, so all of it is tried, the same on every run.
_WRAP_END = ".!?])}|"


@pytest.mark.parametrize("pattern_id", sorted({pid for pid, _ in EXAMPLES}))
def test_a_hard_wrap_inside_a_message_is_joined(pattern_id):
    for text in (t for pid, t in EXAMPLES if pid == pattern_id):
        words = text.strip().split(" ")
        if len(words) < 8 or not _titles(text):
            continue
        for cut in range(4, len(words) - 2):
            cut_line = " ".join(words[:cut]).split("\n")[-1]  # an example of two lines: the line that is cut
            if not words[cut][:1].islower() or len(cut_line) < 30 or words[cut - 1][-1:] in _WRAP_END:
                continue  # a line that starts with a capital or a digit (a time), or follows an end, is new
            wrapped = " ".join(words[:cut]) + "\n" + " ".join(words[cut:])
            assert pattern_id in {pid for pid, _ in _titles(wrapped)}, wrapped
            # as a file or a paste ends, with its newline: the scanner keeps the pair in one block
            assert pattern_id in {pid for pid, _ in _titles(wrapped + "\n")}, wrapped + "\n"


def test_the_cases_the_issue_names_read_as_their_plain_forms():
    plain = (
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file"
    )
    for variant in (
        plain.replace(" ", "  "),
        plain.replace("'", "\u2019"),
        plain.replace("'", "&#39;"),
        "Could not load dynamic\nlibrary 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file",
    ):
        assert _titles(variant) == _titles(plain), variant
    assert normalise_line("cudnn handle : CUDNN_STATUS_INTERNAL_ERROR") == "cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
    assert normalise_line("OOM when allocating tensor with shape [2,3]") == "OOM when allocating tensor with shape[2,3]"
    assert normalise_line("a \u201cquoted\u201d word \u2014 and&amp;more") == 'a "quoted" word - and&more'


def test_two_messages_on_consecutive_lines_are_not_joined():
    text = (
        "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file\n"
        "failed call to cuInit: UNKNOWN ERROR (303)"
    )
    assert [o.line_numbers for o in CATALOGUE.scan_text(text).occurrences] == [[1], [2]]


def test_a_wrapped_message_keeps_its_line_number():
    text = "Epoch 1/10\n" + "x" * 40 + " Could not load dynamic\nlibrary 'libcudnn.so.8'\nNext\n"
    (occurrence,) = CATALOGUE.scan_text(text).occurrences
    assert occurrence.line_numbers == [2] and CATALOGUE.scan_text(text).lines == 4
    assert wrapped_lines(text.encode().split(b"\n")) == [
        ([1], b"x" * 40 + b" Could not load dynamic library 'libcudnn.so.8'")
    ]


def test_partial_records_keep_every_line_number():
    block = b"2024-05-02T10:11:12.1Z stderr P abc\n2024-05-02T10:11:12.2Z stderr F def\nnext\n"
    joined = join_partial_records(block)
    assert joined.split(b"\n") == [b"2024-05-02T10:11:12.1Z stderr P abcdef", b"", b"next", b""]


def test_partial_container_records_are_one_line():
    text = (
        "2024-05-02T10:11:12.1Z stderr P Could not load dynamic library 'libcu\n"
        "2024-05-02T10:11:12.2Z stderr F dnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file\n"
    )
    (occurrence,) = CATALOGUE.scan_text(text).occurrences
    assert occurrence.variables["library"] == "libcudnn.so.8" and occurrence.line_numbers == [1]


@pytest.mark.parametrize(
    "line, message",
    [
        ("2021-04-09 19:52:41.024315: W tensorflow/core/x.cc:60] msg", "msg"),
        ("I0000 00:00:1700000000.000000  123 cuda_dnn.cc:529] msg", "msg"),
        ("2024-05-02T10:11:12Z stdout F msg", "msg"),
        ("[pod/a-b/c] msg", "msg"),
        ("web-1  | msg", "msg"),
        ("[2023-01-01, 12:00:00 UTC] {subprocess.py:92} INFO - msg", "msg"),
        ("Dec  1 10:00:00 host kernel: NVRM: Xid (PCI:0000:3b:00): 79", "NVRM: Xid (PCI:0000:3b:00): 79"),
        (
            "[ 1234.567890] NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.",
            "NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.",
        ),
        ("WARNING:tensorflow:msg", "msg"),
        ("| NVIDIA-SMI 535.104.05 |", "| NVIDIA-SMI 535.104.05 |"),
    ],
)
def test_log_prefixes_are_stripped_and_nothing_else(line, message):
    assert strip_prefixes(line) == message


def test_search_keys_fold_what_the_normal_form_folds():
    assert search_key("Handle : CUDNN \u2019x\u2019 shape [2]".encode()) == search_key(b"handle: cudnn 'x' shape[2]")


def test_every_bundled_regex_is_written_against_the_normal_form():
    from envcheck.explain.regexes import _normal_form_problem

    for pattern in CATALOGUE.patterns:
        for regex in pattern.regexes:
            assert _normal_form_problem(regex.pattern, regex.clauses) is None, (pattern.id, regex.pattern)


# A message inside a quoted string: a JSON string, a Go error printed with %q (Docker's and the
# container runtime's errors quote the hook's output), a Python repr. Every quote there is \" or \'.
_QUOTED = [(pid, t) for pid, t in EXAMPLES if "\n" not in t.strip() and ('"' in t or "'" in t) and "\\" not in t]


@pytest.mark.parametrize("pattern_id, text", _QUOTED, ids=[f"{pid}-{n}" for n, (pid, _) in enumerate(_QUOTED)])
def test_a_message_inside_a_quoted_string_reads_as_itself(pattern_id, text):
    wanted = _titles(text)
    escaped = text.replace('"', '\\"').replace("'", "\\'")
    assert _titles(escaped) == wanted


def test_escaped_quotes_and_tabs_in_the_normal_form():
    assert (
        normalise_line('could not select device driver \\"nvidia\\" with')
        == 'could not select device driver "nvidia" with'
    )
    assert normalise_line("dlerror: \\'libcudart.so.11.0\\'") == "dlerror: 'libcudart.so.11.0'"
    assert normalise_line("C:\\\\Program Files\\\\NVIDIA") == "C:\\\\Program Files\\\\NVIDIA"  # other escapes stay
    assert normalise_line("Driver\tVersion:\t535.104") == "Driver Version: 535.104"
    assert search_key(b'exec: \\"nvidia-smi\\": executable') == search_key(b'exec: "nvidia-smi": executable')


# A message pasted inside a shell's single quotes loses its own: TensorFlow's loader lines lose the
# quotes around the file they name. Every example that quotes such a file must still be explained
# by the same pattern, with the same title, without them.
_QUOTED_LIBRARY = re.compile(
    r"(Could not (?:load dynamic|dlopen) library|Could not find) '([^'\s]+\.(?:so[.\d]*|dll|dylib))'"
)
UNQUOTED = [(pattern_id, text) for pattern_id, text in EXAMPLES if _QUOTED_LIBRARY.search(text)]


def test_loader_examples_are_many():
    assert len(UNQUOTED) >= 20


@pytest.mark.parametrize(("pattern_id", "text"), UNQUOTED, ids=[f"{p}-{i}" for i, (p, _) in enumerate(UNQUOTED)])
def test_a_loader_line_without_its_quotes_is_explained_the_same(pattern_id, text):
    assert _titles(_QUOTED_LIBRARY.sub(r"\1 \2", text)) == _titles(text)


@pytest.mark.parametrize(
    "line",
    [
        "Could not find a version that satisfies the requirement tensorflow-gpu==1.15",
        "Could not find module 'C:\\Python38\\lib\\site-packages\\x\\y.dll' (or one of its dependencies)",
        "Could not load dynamic library libcudnn.so.8x here",
    ],
)
def test_other_could_not_lines_keep_their_wording(line):
    assert normalise_line(line) == line
