"""What a newcomer does first, from the README: the quick start in a fresh venv, the test command in
a venv of its own (which CI runs exactly), and the extras that must not undo the doctor's install."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def code_block_after(marker: str) -> list[str]:
    """The lines of the first ```bash block after ``marker`` in the README."""
    rest = README[README.index(marker) :]
    block = rest[rest.index("```bash\n") + len("```bash\n") :]
    return block[: block.index("```")].strip().splitlines()


def test_the_test_command_runs_in_a_venv_of_its_own_and_ci_runs_it_exactly():
    (command,) = code_block_after("Run the whole test suite")
    (quick_start,) = code_block_after("## Quick start")
    venv = re.match(r"python3 -m venv (\S+) ", command).group(1)
    assert venv != re.match(r"python3 -m venv (\S+) ", quick_start).group(1)  # not the quick start's .venv
    assert command.endswith(f"{venv}/bin/python -m pytest")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci  # CI runs what the README tells a person to run
    assert f"{venv}/" in (REPO / ".gitignore").read_text().splitlines()


def test_the_readme_says_how_long_the_tests_take():
    said = re.search(
        r"On a 2-core machine it takes about (\d+) minutes with the install \(the tests about (\d+)\); "
        r"`-m \"not slow\"`.*? about (\d+)",
        " ".join(README.split()),
    )
    assert said, "the README no longer says how long the test suite takes"
    whole, tests, fast = (int(n) for n in said.groups())
    # The figures as measured from a clean clone (.ci/run), not asserted as wall times here.
    assert fast < tests <= whole


def test_the_train_extra_brings_no_second_tensorflow():
    """The doctor installs tensorflow-cpu on a machine without a GPU; an extra that pulled in
    `tensorflow` beside it would leave two distributions (EC-TF-002: broken)."""
    from envcheck.compare.facets import requirement_name
    from envcheck.matrix import load_matrix

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {requirement_name(r) for r in extras["train"]}
    tf_names = {requirement_name(n) for n in load_matrix().tf_distribution_names()}
    assert {"tensorflow", "tensorflow-cpu"} <= tf_names and not names & tf_names
    assert {"matplotlib", "pillow"} <= names


def test_the_quick_start_says_how_to_run_what_the_page_writes_as_envcheck():
    text = " ".join(README[README.index("## Quick start") : README.index("## Commands")].split())
    assert "source .venv/bin/activate" in text and "`.venv/bin/envcheck`" in text
    assert sys.version_info >= (3, 10)
