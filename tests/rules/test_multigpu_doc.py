"""docs/multigpu.md's doctor and fleet examples are what envcheck prints for the fake-NVML
machines they name (the real pynvml and probe against tests/fake_nvml), at 100 columns: each
shown line is a line of the real output, in order; a "..." line marks lines left out.

``python -m tests.rules.test_multigpu_doc`` (from the repository root) prints the outputs."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from envcheck.compare.fleet import read_fleet
from envcheck.facts import to_json
from envcheck.render.fleet import render as render_fleet
from envcheck.render.terminal import render as render_doctor
from envcheck.verdict import judge

from .speed_machines import NVLINK, fakenvml, probe_machines, server_with

DOC = Path(__file__).resolve().parents[2] / "docs" / "multigpu.md"


def H(index: int, **overrides):
    v100 = {"name": "Tesla V100-SXM2-32GB", "cc": "7.0", "mem_total_mb": 32768, "pcie": (3, 16, 3, 16, 3),
            "clocks": (1530, 1530, 877, 877), "power": (250_000, 300_000, 300_000), "nvlink": (6, 6)}  # fmt: skip
    return fakenvml.healthy(index, **{**v100, **overrides})


MACHINES = {
    "healthy": {"gpus": [H(i) for i in range(4)], "pairs": NVLINK},
    "slowed": {
        "gpus": [
            H(0),
            H(1, events=0x60, temp=(93, 88), clocks=(765, 1530, 877, 877)),
            H(2, pcie=(3, 4, 3, 16, 3)),
            H(3),
        ],
        "pairs": NVLINK,
    },
    "x4": {"gpus": [H(0), H(1), H(2, pcie=(3, 4, 3, 16, 3)), H(3)], "pairs": NVLINK},
    "thermal": {"gpus": [H(0), H(1, events=0x40, temp=(94, 88), clocks=(765, 1530, 877, 877)), H(2), H(3)], "pairs": NVLINK},
    "busy": {"gpus": [H(0), H(1), H(2), H(3, procs=[(4242, "python3", 31130)], mem_used_mb=31200)], "pairs": NVLINK},
}  # fmt: skip
NODES = {"node-03": "x4", "node-05": "thermal", "node-07": "busy"}


def outputs(build_dir: Path) -> dict[str, str]:
    from envcheck import invocation

    saved = invocation.envcheck_word  # the plain word, as the docs show it; put back after
    invocation.envcheck_word = lambda shell_name="bash": "envcheck"
    try:
        sections = probe_machines(MACHINES, build_dir)
        slowed = judge(server_with(sections["slowed"]))
        folder = build_dir / "fleet"
        folder.mkdir()
        paths = []
        for number in range(1, 9):
            name = f"node-{number:02d}"
            facts = server_with(sections[NODES.get(name, "healthy")])
            facts = dataclasses.replace(facts, platform=dataclasses.replace(facts.platform, hostname=name))
            (folder / f"{name}.json").write_text(to_json(facts))
            paths.append(str(folder / f"{name}.json"))
        return {
            "$ envcheck doctor --facts a100-server.json": render_doctor(slowed, color=False, width=100),
            "$ envcheck doctor -v --facts a100-server.json": render_doctor(
                slowed, verbose=True, color=False, width=100
            ),
            "$ envcheck fleet node-*.json": render_fleet(read_fleet(paths), width=100, color=False),
        }
    finally:
        invocation.envcheck_word = saved


def blocks() -> list[tuple[str, list[str]]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    found = []
    for number, line in enumerate(lines[:-1]):
        if (
            line.startswith("```")
            and lines[number + 1].startswith("$ envcheck ")
            and "validate" not in lines[number + 1]
        ):
            body = []
            for shown in lines[number + 2 :]:
                if shown.startswith("```"):
                    break
                body.append(shown)
            found.append((lines[number + 1], body))
    return found


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if fakenvml.compiler() is None:
        pytest.skip("no C compiler on PATH to build the fake libnvidia-ml.so.1")
    return outputs(tmp_path_factory.mktemp("multigpu-doc"))


def test_the_documents_examples_are_the_real_output(real):
    found = blocks()
    assert {command for command, _ in found} == set(real)
    for command, shown in found:
        output = [line.rstrip() for line in real[command].splitlines()]
        position = 0
        for text in shown:
            if text.strip() == "...":
                continue
            assert text.rstrip() in output[position:], f"{command}: {text!r} is not in the real output (in order)"
            position = output.index(text.rstrip(), position) + 1


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for command, text in outputs(Path(folder)).items():
            sys.stdout.write(f"{command}\n{text}\n")


def test_the_readmes_multi_gpu_line_is_the_real_output(real):
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Why is my multi-GPU job slow?", 1)[1].split("```", 2)[1]
    shown = [line for line in section.splitlines() if line.strip()]
    doctor = real["$ envcheck doctor --facts a100-server.json"].splitlines()
    start = doctor.index(shown[0])
    assert doctor[start : start + len(shown)] == shown
