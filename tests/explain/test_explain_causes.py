"""Ranked causes: the schema (``causes:`` with tell, rule_ids, fix, when, first_if, last_if), the
ranking from the message and the log, the ``assess`` hook's contract, harmless-by-log, the
compatibility matrix behind DLL names, and rules every pattern of the catalogue keeps (Windows
messages get Windows commands, paths in commands are quoted, anchors stay few)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from envcheck.explain import CONFIRMED, RULED_OUT, Cause, PatternsError, explain, load_patterns, with_status
from envcheck.explain.catalogue import DERIVERS
from envcheck.explain.explanations import LATE_DERIVERS

CATALOGUE = load_patterns()
PATTERNS = CATALOGUE.patterns

TWO_CAUSES = """\
schema_version: 1
patterns:
  - id: sample-message
    title: Sample {thing} failed
    needles: ["Sample "]
    regex:
      - 'Sample (?P<thing>\\w{1,20}) failed(?P<late> late)?'
    harmless: false
    meaning: The {thing} step failed.
    causes:
      - id: first-cause
        text: The {thing} step is broken.
        tell:
          text: Run the {thing} step alone.
          commands:
            - shell: bash
              line: run {thing}
        rule_ids: [EC-LIB-001]
      - id: second-cause
        text: The step ran too late.
        tell:
          text: Look at the clock.
        first_if: {vars: {late: ["+"]}}
        fix:
          text: Run it earlier.
      - id: third-cause
        text: Only on builds.
        tell:
          text: It says build.
        when: {vars: {thing: [build]}}
        last_if: {seen: [other-message]}
    fix:
      text: Do the {thing} step again.
    rule_ids: [EC-LIB-001]
    sources: [https://example.org/doc]
    examples: ["Sample build failed"]
    near_misses: ["Sample build worked"]
  - id: other-message
    title: Other
    needles: ["Other thing"]
    regex: ['Other thing']
    harmless: true
    meaning: Other.
    cause: Other.
    fix:
      text: Nothing.
    rule_ids: []
    sources: [https://example.org/doc]
    examples: ["Other thing"]
    near_misses: ["Another thing"]
"""


def catalogue(text: str, tmp_path):
    path = tmp_path / "patterns.yaml"
    path.write_text(text)
    return load_patterns(path)


def ids(explanation):
    return [c.id for c in explanation.causes]


# --- schema ---------------------------------------------------------------------------------------


def test_a_pattern_with_several_causes_loads_and_fills_them(tmp_path):
    (e,) = explain(catalogue(TWO_CAUSES, tmp_path).scan_text("Sample build failed"))
    assert ids(e) == ["first-cause", "second-cause", "third-cause"]
    first = e.causes[0]
    assert first.text == "The build step is broken." and first.tell.text == "Run the build step alone."
    assert [c.line for c in first.tell.commands] == ["run build"] and first.rule_ids == ("EC-LIB-001",)
    assert (
        e.cause == first.text and e.fix.text == "Do the build step again."
    )  # the pattern's fix, the first cause has none
    data = e.to_dict()
    assert [c["id"] for c in data["causes"]] == ids(e) and data["causes"][0]["tell"]["commands"][0][
        "line"
    ] == "run build"
    assert data["causes"][0]["status"] is None


def test_a_single_cause_is_one_cause_named_after_the_pattern(tmp_path):
    (e,) = explain(catalogue(TWO_CAUSES, tmp_path).scan_text("Other thing"))
    assert ids(e) == ["other-message"] and e.causes[0].tell is None


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("      - id: second-cause\n", "      - id: first-cause\n", "given twice"),
        ("      - id: second-cause\n", "      - id: Second_Cause\n", "id"),
        ("        tell:\n          text: Look at the clock.\n", "", "needs 'tell'"),
        ('        first_if: {vars: {late: ["+"]}}\n', '        first_if: {vars: {nope: ["+"]}}\n', "variable 'nope'"),
        (
            "        last_if: {seen: [other-message]}\n",
            "        last_if: {seen: [no-such-message]}\n",
            "no-such-message",
        ),
        ('        first_if: {vars: {late: ["+"]}}\n', "        first_if: {colour: red}\n", "unknown key 'colour'"),
        (
            "        rule_ids: [EC-LIB-001]\n      - id: second",
            "        rule_ids: [EC-LIB-001]\n        severity: high\n      - id: second",
            "severity",
        ),
        ("    causes:\n", "    cause: One.\n    causes:\n", "not both"),
    ],
)
def test_cause_mistakes_name_file_line_and_field(tmp_path, old, new, message):
    assert old in TWO_CAUSES
    with pytest.raises(PatternsError) as raised:
        catalogue(TWO_CAUSES.replace(old, new, 1), tmp_path)
    text = str(raised.value)
    assert message in text and re.search(r"patterns\.yaml:\d+:", text), text


def test_every_cause_cannot_be_conditional(tmp_path):
    text = TWO_CAUSES.replace(
        "      - id: first-cause\n", "      - id: first-cause\n        when: {vars: {thing: [x]}}\n"
    )
    text = text.replace("      - id: second-cause\n", "      - id: second-cause\n        when: {vars: {thing: [x]}}\n")
    with pytest.raises(PatternsError, match="at least one cause must apply without a 'when'"):
        catalogue(text, tmp_path)


@pytest.mark.parametrize(
    "anchors, message",
    [("anchors: [Sample]\n", "lower-case"), ('anchors: ["zzz"]\n', "zzz")],
)
def test_anchors_are_lower_case_and_used(tmp_path, anchors, message):
    with pytest.raises(PatternsError, match=message):
        catalogue(TWO_CAUSES.replace("schema_version: 1\n", "schema_version: 1\n" + anchors), tmp_path)


# --- ranking from the message and the log ---------------------------------------------------------


def test_the_message_and_the_log_rank_the_causes(tmp_path):
    patterns = catalogue(TWO_CAUSES, tmp_path)
    (e,) = explain(patterns.scan_text("Sample build failed late"))
    assert ids(e) == ["second-cause", "first-cause", "third-cause"]  # first_if: the message says "late"
    assert e.fix.text == "Run it earlier."  # the first cause's own fix
    (e,) = explain(patterns.scan_text("Sample test failed"))
    assert ids(e) == ["first-cause", "second-cause"]  # when: only for builds
    by_id = {e.id: e for e in explain(patterns.scan_text("Sample build failed\nOther thing"))}
    assert ids(by_id["sample-message"])[-1] == "third-cause"  # last_if: the other message was seen


def test_real_catalogue_ranks_a_windows_dll_by_what_the_log_shows():
    text = "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The specified module could not be found."
    (e,) = explain(CATALOGUE.scan_text(text))
    assert ids(e)[0] in {"msvc-runtime-missing", "python38-dll-search"} and len(e.causes) >= 3
    cuda = explain(
        CATALOGUE.scan_text("Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found")
    )[0]
    assert ids(cuda)[:2] == ["cuda-not-installed", "cuda-bin-not-on-path"]
    assert "cuda-lib-not-on-path" not in ids(cuda)  # the Linux cause does not apply to a DLL
    log = "failed call to cuInit: UNKNOWN ERROR (303)\nCould not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found"
    by_id = {e.id: e for e in explain(CATALOGUE.scan_text(log))}
    assert ids(by_id["cudart-not-loaded"])[0] == "no-nvidia-gpu"  # the log shows no driver


# --- the assess hook ------------------------------------------------------------------------------


def test_assess_sets_status_and_explain_orders_confirmed_first_ruled_out_last(tmp_path):
    patterns = catalogue(TWO_CAUSES, tmp_path)
    seen = []

    def assess(occurrence, causes):
        seen.append((occurrence.pattern.id, [c.id for c in causes]))
        return [with_status(causes[0], RULED_OUT), dataclasses.replace(causes[2], status=CONFIRMED)]

    (e,) = explain(patterns.scan_text("Sample build failed"), assess=assess)
    assert seen == [("sample-message", ["first-cause", "second-cause", "third-cause"])]
    assert ids(e) == ["third-cause", "second-cause", "first-cause"]
    assert [c.status for c in e.causes] == [CONFIRMED, None, RULED_OUT]  # the one left out stays unchecked
    assert e.cause == "Only on builds." and e.machine == ()


@pytest.mark.parametrize(
    "returned, problem",
    [
        (lambda causes: ["first-cause"], "not a Cause"),
        (lambda causes: [Cause(id="made-up", text="x")], "unknown cause"),
        (lambda causes: [with_status(causes[0], CONFIRMED), causes[0]], "twice"),
        (lambda causes: [dataclasses.replace(causes[0], status="maybe")], "status"),
        (lambda causes: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_a_broken_assess_becomes_a_note_and_keeps_the_ranking(tmp_path, returned, problem):
    (e,) = explain(
        catalogue(TWO_CAUSES, tmp_path).scan_text("Sample build failed"), assess=lambda o, causes: returned(causes)
    )
    assert ids(e) == ["first-cause", "second-cause", "third-cause"] and all(c.status is None for c in e.causes)
    assert len(e.machine) == 1 and problem in e.machine[0].text


def test_with_status_checks_the_status():
    cause = Cause(id="a", text="A")
    assert with_status(cause, CONFIRMED).status == CONFIRMED and cause.status is None
    with pytest.raises(ValueError):
        with_status(cause, "probably")


# --- harmless by the log --------------------------------------------------------------------------


CUDART = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory"
LIBCUDA = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory"
CUINIT_303 = "E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: UNKNOWN ERROR (303)"
FOUND = "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1720] Found device 0 with properties: "


def test_a_log_that_shows_no_gpu_makes_gpu_library_warnings_notices():
    by_id = {e.id: e for e in explain(CATALOGUE.scan_text("\n".join([CUDART, LIBCUDA, CUINIT_303])))}
    assert by_id["cudart-not-loaded"].harmless and "no NVIDIA GPU" in by_id["cudart-not-loaded"].log_note
    assert by_id["libcuda-not-loaded"].harmless and by_id["cuinit-no-driver"].harmless  # each shown by the other
    assert by_id["cudart-not-loaded"].to_dict()["in_this_log"] == by_id["cudart-not-loaded"].log_note


def test_a_message_never_makes_itself_harmless_and_a_found_gpu_wins():
    (alone,) = explain(CATALOGUE.scan_text(CUINIT_303))
    assert not alone.harmless and alone.log_note == ""
    (cudart,) = explain(CATALOGUE.scan_text(CUDART))
    assert not cudart.harmless
    by_id = {e.id: e for e in explain(CATALOGUE.scan_text("\n".join([FOUND, CUDART, LIBCUDA])))}
    assert not by_id["cudart-not-loaded"].harmless and by_id["gpu-found"].harmless


def test_a_harmless_notice_in_a_failing_log_is_part_of_the_failure():
    fallback = "W tensorflow/stream_executor/gpu/asm_compiler.cc:235] Your CUDA software stack is old. We fallback to the NVIDIA driver for some compilation."
    (alone,) = explain(CATALOGUE.scan_text(fallback))
    assert alone.harmless
    invalid = "W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_PTX'"
    by_id = {e.id: e for e in explain(CATALOGUE.scan_text(fallback + "\n" + invalid))}
    assert (
        not by_id["ptxas-too-old-fallback"].harmless
        and "CUDA_ERROR_INVALID_PTX" in by_id["ptxas-too-old-fallback"].log_note
    )


def test_cpu_memory_is_not_gpu_memory():
    text = "OOM when allocating tensor with shape[24,1,2304,1152,3] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"
    assert [e.id for e in explain(CATALOGUE.scan_text(text))] == ["oom-cpu-memory"]
    gpu = "OOM when allocating tensor with shape[3,3,512,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
    assert [e.id for e in explain(CATALOGUE.scan_text(gpu))] == ["oom-allocating-tensor"]


# --- DLL names through the compatibility matrix ---------------------------------------------------


def test_a_windows_dll_is_named_by_its_cuda_generation_and_releases():
    (e,) = explain(CATALOGUE.scan_text("ImportError: Could not find 'cudart64_110.dll'."))
    assert e.variables["cuda_generation"] == "CUDA 11.x" and "CUDA 11.x" in e.title
    releases = e.variables["releases"]
    assert "2.4" in releases and "2.10" in releases and "CUDA 11.2" in releases and "cuDNN 8.1" in releases
    (old,) = explain(CATALOGUE.scan_text("ImportError: Could not find 'cudart64_100.dll'."))
    assert old.variables["cuda_generation"] == "CUDA 10.0" and "1.13" in old.variables["releases"]
    (new,) = explain(
        CATALOGUE.scan_text("Could not locate cublasLt64_12.dll. Please make sure it is in your library path!")
    )
    assert "12" in new.title or "12" in new.meaning


def test_late_derivers_match_the_catalogue_derivers():
    late = {name for name, (_, _, late_names) in DERIVERS.items() if late_names}
    assert set(LATE_DERIVERS) == late


# --- rules every pattern keeps --------------------------------------------------------------------

LINUX_ONLY = re.compile(
    r"\bldconfig\b|LD_LIBRARY_PATH|\bexport\s|\bsudo\s|\bapt(?:-get)?\s|/usr/local/cuda|\blsmod\b|\bdmesg\b"
)


def _texts_and_commands(explanation):
    fixes = [
        explanation.fix,
        *(c.tell for c in explanation.causes if c.tell),
        *(c.fix for c in explanation.causes if c.fix),
    ]
    texts = [explanation.title, explanation.meaning, *(c.text for c in explanation.causes), *(f.text for f in fixes)]
    return texts, [command for f in fixes for command in f.commands]


WINDOWS_EXAMPLES = [
    pytest.param(p.id, text, id=f"{p.id}:{i}")
    for p in PATTERNS
    for i, text in enumerate(p.examples)
    if p.os == ("windows",) or re.search(r"\b\w+64_\d{1,4}\.dll\b|\bnvcuda\.dll\b", text)
]


def test_there_are_windows_messages_to_check():
    assert len(WINDOWS_EXAMPLES) >= 15


@pytest.mark.parametrize("pattern_id, text", WINDOWS_EXAMPLES)
def test_a_windows_message_gets_no_linux_command(pattern_id, text):
    explanations = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    assert explanations
    texts, commands = _texts_and_commands(explanations[0])
    for command in commands:
        assert command.shell in ("powershell", "any"), command
        assert not LINUX_ONLY.search(command.line), command.line
    for text_ in texts:
        assert "ldconfig" not in text_ and "LD_LIBRARY_PATH" not in text_, text_


@pytest.mark.parametrize("pattern", [p for p in PATTERNS if p.os == ("windows",)], ids=lambda p: p.id)
def test_windows_only_patterns_have_no_bash_command_at_all(pattern):
    templates = [*pattern.fixes, *(c.tell for c in pattern.causes if c.tell), *(c.fix for c in pattern.causes if c.fix)]
    for fix in templates:
        for command in fix.commands:
            assert command.shell in ("powershell", "any") and not LINUX_ONLY.search(command.line), command


def _unquoted_spaced_path(line: str) -> bool:
    """A path with a space ("Program Files") outside quotes breaks when pasted."""
    for hit in re.finditer(r"Program Files|NVIDIA GPU Computing Toolkit", line):
        before = line[: hit.start()]
        if before.count('"') % 2 == 0 and before.count("'") % 2 == 0:
            return True
    return False


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.id)
def test_paths_with_spaces_are_quoted_in_commands(pattern):
    templates = [*pattern.fixes, *(c.tell for c in pattern.causes if c.tell), *(c.fix for c in pattern.causes if c.fix)]
    for fix in templates:
        for command in fix.commands:
            assert not _unquoted_spaced_path(command.line), command.line


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.id)
def test_cause_ids_are_slugs_and_multi_cause_patterns_tell_them_apart(pattern):
    assert len({c.id for c in pattern.causes}) == len(pattern.causes)
    for cause in pattern.causes:
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", cause.id)
        if len(pattern.causes) > 1:
            assert cause.tell is not None and cause.tell.text


def test_the_same_cause_id_means_the_same_kind_of_cause_everywhere():
    # a cause id shared by patterns is the corpus's and the assess hook's vocabulary: check it is
    # used by several patterns for the causes that recur (not one id per pattern for the same thing)
    shared = {}
    for p in PATTERNS:
        for c in p.causes:
            shared.setdefault(c.id, set()).add(p.id)
    for recurring in (
        "cuda-not-installed",
        "no-nvidia-gpu",
        "driver-upgraded-no-reboot",
        "other-driver-holds-gpu",
        "release-lacks-arch",
        "gpu-memory-preallocated",
    ):
        assert len(shared[recurring]) >= 2, recurring


def test_almost_every_pass_has_a_gate_word_and_needles_are_lower_case():
    # a pass without a gate word runs over every chunk: keep them few (long strings only)
    # (a library's identifier prefix such as "cudaerror" or "nccl" has no inner word: a handful of
    # those costs one substring pass each, measured in benchmarks/explain_large.py)
    # (Metal's driver names its command buffer errors as one identifier, kIOGPUCommandBufferCallbackError<Name>)
    ungated = [needle for needle, gate in CATALOGUE.gates.items() if not gate]
    assert len(ungated) <= 11 and all(
        len(n) >= 16 or n.startswith(("cu", "nccl", "nvml", "loadlib")) for n in ungated
    ), ungated
    assert all(n == n.lower() for p in PATTERNS for n in p.needles)
