"""envcheck diff as a user meets it: a machine compared with itself finds nothing, whichever way
each side was probed; between a venv without TensorFlow and one with it, the tensorflow line comes
first and the packages it pulled in are counted, not listed one by one."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.commands.diff import probe_in_full
from envcheck.compare.diff import Side, compare
from envcheck.facts import MISSING, Distribution, TensorflowFacts, to_json
from envcheck.render.diff import render
from envcheck.verdict import judge
from tests.rules import builders

REPO = Path(__file__).resolve().parents[2]
# What `pip install tensorflow` pulls into an empty venv besides tensorflow itself (2.21 on Linux).
TENSORFLOW_DEPENDENCIES = (
    "absl-py astunparse flatbuffers gast google-pasta grpcio h5py libclang ml-dtypes namex numpy opt-einsum optree "
    "packaging protobuf requests six termcolor typing-extensions wrapt urllib3 idna certifi charset-normalizer"
).split()


def as_quick(facts):
    """The same machine as `doctor --quick` takes it: no TensorFlow import, no library loaded."""
    libraries = [
        dataclasses.replace(lib, copies=[dataclasses.replace(c, loads=None, reported_version=None) for c in lib.copies])
        for lib in facts.libraries.libraries
    ]
    return dataclasses.replace(
        facts,
        quick=True,
        libraries=dataclasses.replace(facts.libraries, libraries=libraries),
        tensorflow=TensorflowFacts(status="skipped"),
    )


def with_tensorflow_dependencies(facts):
    location = facts.packages.distributions[0].location
    extra = [Distribution(name=name, version="1.0", location=location) for name in TENSORFLOW_DEPENDENCIES]
    packages = dataclasses.replace(facts.packages, distributions=[*facts.packages.distributions, *extra])
    return dataclasses.replace(facts, packages=packages)


def without_tensorflow(facts):
    """The venv before `pip install tensorflow`: only what the installer brought."""
    keep = [d for d in facts.packages.distributions if d.name in ("nvidia-ml-py",)]
    return dataclasses.replace(
        facts,
        packages=dataclasses.replace(facts.packages, distributions=keep),
        tensorflow=TensorflowFacts(
            status=MISSING, error="TensorFlow is not installed in this interpreter", error_kind="not_installed"
        ),
    )


def diff_of(a, b):
    return compare(Side("A.json", judge(a)), Side("B.json", judge(b)))


@pytest.mark.parametrize("machine", ["no_gpu", "server", "setup_post"])
def test_a_full_snapshot_and_a_quick_one_of_the_same_machine_do_not_differ(machine):
    full = getattr(builders, machine)()
    for a, b in ((full, as_quick(full)), (as_quick(full), full)):
        d = diff_of(a, b)
        assert d.differences == (), [x.label for x in d.differences]
        assert any("--quick" in note and "left out" in note for note in d.notes)


def test_a_full_snapshot_and_a_quick_one_still_show_what_both_probed():
    full = builders.server()
    changed = dataclasses.replace(full, nvml=dataclasses.replace(full.nvml, driver_version="550.54.14"))
    labels = [x.label for x in diff_of(full, as_quick(changed)).differences]
    assert "driver version (NVML)" in labels


def test_the_live_side_is_probed_as_the_saved_one_was():
    import argparse

    def args(**flags):
        return argparse.Namespace(full=flags.get("full", False), quick=flags.get("quick", False))

    full, quick = Side("a", judge(builders.no_gpu())), Side("a", judge(as_quick(builders.no_gpu())))
    assert probe_in_full(args(), full) and not probe_in_full(args(), quick)
    assert probe_in_full(args(full=True), quick) and not probe_in_full(args(quick=True), full)


def test_between_no_tensorflow_and_tensorflow_the_tensorflow_line_comes_first_and_the_rest_is_counted():
    after = with_tensorflow_dependencies(builders.no_gpu())
    before = without_tensorflow(after)
    text = render(diff_of(before, after), width=100, color=False)
    lines = text.splitlines()
    why = lines.index("Why the verdicts differ")
    assert lines[why + 1].startswith("  TensorFlow")
    assert lines[why + 2] == "    package tensorflow (B only): 2.21.0"
    only_in_b = [line for line in lines if line.endswith(" (B only): 1.0")]
    assert only_in_b == []  # the dependencies are counted ...
    counted = sum(int(n) for n in re.findall(r"(\d+) packages? only in B", text))
    assert counted == len(TENSORFLOW_DEPENDENCIES) + 1  # ... all of them, and keras (tensorflow's own is listed)
    assert len(lines) < 40
    verbose = render(diff_of(before, after), width=100, color=False, verbose=True)
    assert all(f"package {name} (B only): 1.0" in verbose for name in TENSORFLOW_DEPENDENCIES)


def _envcheck(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def test_diff_against_this_machine_now_finds_nothing_on_an_unchanged_machine(tmp_path):
    saved = _envcheck("doctor", "--quick", "--save-facts", "before.json", cwd=tmp_path)
    assert saved.returncode in (0, 1), saved.stderr
    now = _envcheck("diff", "before.json", "-", cwd=tmp_path)
    assert now.returncode == 0, now.stdout + now.stderr
    assert "No differences" in now.stdout
    assert "B: this machine now (--quick)" in now.stdout  # probed as the snapshot was: quick


@pytest.mark.slow
def test_a_full_snapshot_is_compared_with_a_full_probe(tmp_path):
    """The README's `doctor --save-facts before.json` is the full doctor: `diff before.json -` then
    imports TensorFlow too, and an unchanged machine still shows no difference."""
    assert _envcheck("doctor", "--save-facts", "before.json", cwd=tmp_path).returncode in (0, 1)
    now = _envcheck("diff", "before.json", "-", "--json", cwd=tmp_path)
    assert now.returncode == 0, now.stdout + now.stderr
    import json

    document = json.loads(now.stdout)
    assert document["b"]["quick"] is False and document["explaining"] == document["other"] == []


def test_a_snapshot_file_written_and_read_back_compares_equal(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(to_json(builders.server()))
    result = _envcheck("diff", str(path), str(path), cwd=tmp_path)
    assert result.returncode == 0 and "No differences" in result.stdout
