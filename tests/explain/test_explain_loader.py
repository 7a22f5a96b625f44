"""Validation of a patterns file: every mistake is one readable error naming file, line and field."""

from __future__ import annotations

import textwrap

import pytest

from envcheck.explain import PatternsError, load_patterns, parse_patterns, repeat_problem

GOOD = """\
schema_version: 1
patterns:
  - id: sample-message
    title: Sample {thing} failed
    needles: ["Sample "]
    regex:
      - 'Sample (?P<thing>\\w{1,20}) failed'
    harmless: false
    meaning: The {thing} step failed.
    cause: Something.
    fix:
      text: Do the {thing} step again.
      commands:
        - shell: bash
          line: echo {thing}
    rule_ids: [EC-LIB-001]
    sources: [https://example.org/doc]
    examples: ["Sample build failed"]
    near_misses: ["Sample build worked"]
"""


def parse(text: str, tmp_path):
    path = tmp_path / "patterns.yaml"
    path.write_text(text)
    return load_patterns(path)


def test_a_good_file_loads_and_scans(tmp_path):
    catalogue = parse(GOOD, tmp_path)
    result = catalogue.scan_text("x\nSample build failed\n")
    assert result.ids == ["sample-message"]
    assert result.occurrences[0].title == "Sample build failed"
    assert result.occurrences[0].first_line == 2


@pytest.mark.parametrize(
    "old, new, line, message",
    [
        ("    harmless: false\n", "    harmless: 'no'\n", 8, "field 'harmless': expected true or false"),
        ("    harmless: false\n", "", 3, "field 'harmless': expected true or false"),
        (
            "    cause: Something.\n",
            "    cause: Something.\n    severity: high\n",
            11,
            "field 'severity': unknown field",
        ),
        ("\\w{1,20}", "\\w+", 7, "unbounded repeat"),
        ("(?P<thing>\\w{1,20})", "(?P<thing>(?:\\w{1,5} ){1,4})", 7, "nested repeat"),
        ("(?P<thing>\\w{1,20})", "(?P<thing>[a-)", 7, "does not compile"),
        (
            "    meaning: The {thing} step failed.\n",
            "    meaning: The {other} step failed.\n",
            9,
            "placeholder {other} is not captured",
        ),
        ("    meaning: The {thing} step failed.\n", "    meaning: The {thing step failed.\n", 9, "bad placeholder"),
        ("          line: echo {thing}\n", "          line: echo {nope}\n", 15, "field 'line': placeholder {nope}"),
        ("        - shell: bash\n", "        - shell: fish\n", 14, "field 'shell': shell must be one of"),
        ("[EC-LIB-001]", "[LIB-1]", 16, "'LIB-1' is not a rule id"),
        ("  - id: sample-message\n", "  - id: Sample Message\n", 3, "lower-case words"),
        ('    examples: ["Sample build failed"]\n', "", 3, "field 'examples': expected a non-empty list"),
        ('    near_misses: ["Sample build worked"]\n', "    near_misses: []\n", 19, "field 'near_misses'"),
        ("    fix:\n", "    derive: magic\n    fix:\n", 11, "unknown deriver 'magic'"),
        ("    fix:\n", "    specialize: magic\n    fix:\n", 11, "unknown specializer 'magic'"),
        ("    fix:\n", "    os: [beos]\n    fix:\n", 11, "unknown OS 'beos'"),
        (
            "    title: Sample {thing} failed\n",
            "    title: Sample {thing} failed\n    title: again\n",
            5,
            "key 'title' given twice",
        ),
    ],
)
def test_mistakes_name_file_line_and_field(tmp_path, old, new, line, message):
    assert old in GOOD
    with pytest.raises(PatternsError) as info:
        parse(GOOD.replace(old, new, 1), tmp_path)
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'patterns.yaml'}:{line}:"), text
    assert message in text
    assert "\n" not in text


def test_duplicate_ids_name_both_lines(tmp_path):
    entry = GOOD.split("patterns:\n", 1)[1]
    with pytest.raises(PatternsError, match=r"patterns.yaml:20: pattern id 'sample-message' already used at line 3"):
        parse(GOOD + entry, tmp_path)


@pytest.mark.parametrize(
    "text, message",
    [
        ("schema_version: 2\npatterns: []\n", "schema_version must be 1"),
        ("schema_version: 1\npatterns: []\n", "'patterns' must be a non-empty list"),
        ("- just\n- a list\n", "expected a mapping"),
        ("schema_version: 1\npatterns: [\n", "not valid YAML"),
        ("schema_version: 1\npatterns:\n  - 12\n", "every item of 'patterns' must be a mapping"),
    ],
)
def test_whole_file_mistakes(tmp_path, text, message):
    with pytest.raises(PatternsError, match=message):
        parse(text, tmp_path)


def test_unreadable_files(tmp_path):
    with pytest.raises(PatternsError, match="no such file"):
        load_patterns(tmp_path / "missing.yaml")
    with pytest.raises(PatternsError, match="is a directory"):
        load_patterns(tmp_path)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PatternsError, match="not a text file"):
        load_patterns(binary)


def test_placeholders_must_be_captured_by_every_regex(tmp_path):
    two_regexes = GOOD.replace(
        "      - 'Sample (?P<thing>\\w{1,20}) failed'\n",
        "      - 'Sample (?P<thing>\\w{1,20}) failed'\n      - 'Sample failed'\n",
    )
    with pytest.raises(PatternsError, match="placeholder {thing} is not captured by every regex"):
        parse(two_regexes, tmp_path)


def test_literal_braces_are_written_doubled(tmp_path):
    catalogue = parse(GOOD.replace("echo {thing}", "echo ${{HOME}} {thing}"), tmp_path)
    from envcheck.explain import explain

    (explanation,) = explain(catalogue.scan_text("Sample build failed"))
    assert explanation.fix.commands[0].line == "echo ${HOME} build"


@pytest.mark.parametrize(
    "regex, problem",
    [
        ("a{1,10}b", None),
        ("(?:ab){0,3}", None),
        ("(?:a|bc)?d{0,5}", None),
        ("a*", "unbounded"),
        ("a+?", "unbounded"),
        ("a{2,}", "unbounded"),
        ("a{1,5000}", "unbounded"),
        ("(?:a{1,3}){1,3}", "nested"),
        ("(?:x|(?:a{1,3}b){2,4})", "nested"),
        ("(?=(?:a{1,2}){1,2})", "nested"),
        # the work a regex can do, not just each repeat (issue: four of these ran for minutes)
        (r"\w{0,1000}\w{0,1000}\w{0,1000}\w{0,1000}x", "multiply"),
        (r"\w{0,100}\w{0,100}x", "multiply"),
        (r"[a-z]{0,100}-{0,100}x", None),  # disjoint: no character can go to either
        (r"\w{0,300}:\w{0,300}", None),  # a colon \w cannot match ends the run
        (r"\w{0,300}a\w{0,300}", "multiply"),  # an 'a' both can match does not
        (r"[^']{0,300}'[^']{0,300}", None),
        ("(?:a|ab){0,100}", "alternation"),
        ("(?:a|b){0,100}", None),
        ("(" * 40 + "a" + ")" * 40, "nested 40 deep"),
    ],
)
def test_repeat_problem(regex, problem):
    found = repeat_problem(regex)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    "regex",
    [r"\\w{0,1000}\\w{0,1000}\\w{0,1000}\\w{0,1000}x", "(" * 400 + "a" + ")" * 400],
    ids=["work", "nesting"],
)
def test_a_patterns_file_whose_regex_could_run_for_long_is_one_line_exit_2(cli, tmp_path, regex):
    bad = tmp_path / "slow.yaml"
    bad.write_text(
        "schema_version: 1\npatterns:\n  - id: x\n    title: t\n    harmless: false\n"
        f'    needles: ["a"]\n    regex: ["{regex}"]\n'
    )
    result = cli("explain", "--patterns", str(bad), "--no-probe", "a" * 3000)
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
    assert "multiply" in result.err or "nested 400 deep" in result.err


def test_a_patterns_file_nested_400_deep_is_one_line_exit_2(cli, tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("schema_version: 1\npatterns:\n  - id: x\n    title: " + "[" * 400 + "]" * 400 + "\n")
    result = cli("explain", "--patterns", str(deep), "--no-probe", "anything")
    assert result.code == 2 and "nested deeper than" in result.err and result.err.count("\n") == 1


def test_bad_patterns_file_on_the_command_line_is_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(textwrap.dedent(GOOD).replace("harmless: false", "harmless: maybe"))
    result = cli("explain", "--patterns", str(bad), "--no-probe", "anything")
    assert result.code == 2
    assert "field 'harmless': expected true or false" in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_parse_without_a_file(tmp_path):
    catalogue = parse_patterns(GOOD, tmp_path / "inline.yaml")
    assert [p.id for p in catalogue.patterns] == ["sample-message"]
