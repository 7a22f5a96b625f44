"""The examples in README.md and docs/ are what envcheck prints: every block that starts with one
`$ envcheck plan|explain|matrix ...` line is run, and each line it shows must be a line of the real
output, in the same order. A shown line with "..." that the output does not have marks where the
example leaves lines out. (The doctor's examples are checked against named machines in
test_render.py.)

Commands that name a snapshot run against the test fixture of that machine, under the name the
document uses; explain without --facts or --no-probe looks at "this machine" through a snapshot of
one like the machine the documents were written on (Linux, Python 3.11, TensorFlow 2.21, no GPU)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from envcheck.cli import main

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO / "tests" / "fixtures" / "facts"
SNAPSHOTS = {"setup-post-machine.json": FACTS / "setup_post_win10.json"}
THIS_KIND_OF_MACHINE = FACTS / "this_machine.json"
CHECKED = ("plan", "explain", "matrix")
WIDTH = 100  # the documents' examples are at 100 columns


def examples() -> list[tuple[str, int, str, list[str]]]:
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if not (line.startswith("```") and number + 1 < len(lines)):
                continue
            first = lines[number + 1]
            if not first.startswith("$ envcheck ") or first.split()[2] not in CHECKED:
                continue
            body = []
            for shown in lines[number + 2 :]:
                if shown.startswith("```"):
                    break
                body.append(shown)
            if any(b.startswith("$ ") for b in body):
                continue  # a list of commands, not one command's output
            found.append((doc.relative_to(REPO).as_posix(), number + 2, first[2:], body))
    return found


EXAMPLES = examples()


def test_the_documents_have_examples_to_check():
    kinds = {command.split()[1] for _, _, command, _ in EXAMPLES}
    assert {"plan", "explain"} <= kinds


@pytest.mark.parametrize("doc, line, command, shown", EXAMPLES, ids=[f"{d}:{n}" for d, n, _, _ in EXAMPLES])
def test_example_is_the_real_output(doc, line, command, shown, tmp_path, monkeypatch, capsys):
    from envcheck import invocation

    monkeypatch.setattr(invocation, "envcheck_word", lambda shell_name="bash": "envcheck")
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    for name, fixture in SNAPSHOTS.items():
        if name in argv:
            shutil.copy(fixture, tmp_path / name)
    if argv[0] == "explain" and "--facts" not in argv and "--no-probe" not in argv:
        import envcheck.probes
        from envcheck.facts import load_facts

        # "This machine" is the snapshot of one like it: the probe answers with its facts.
        monkeypatch.setattr(envcheck.probes, "collect", lambda options: load_facts(str(THIS_KIND_OF_MACHINE)))
    main(argv)
    real = [r.rstrip() for r in capsys.readouterr().out.splitlines()]
    position = 0
    for text in shown:
        text = text.rstrip()
        try:
            position = real.index(text, position) + 1
        except ValueError:
            if not re.search(r"\.\.\.|…", text):
                pytest.fail(
                    f"{doc}:{line}: {command!r} does not print, at this point:\n  {text}\nit prints:\n"
                    + "\n".join(real)
                )
