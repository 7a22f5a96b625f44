"""A snapshot without a library probe (a hand-written or partial one, read with --facts) cannot make
a GPU build that loads the CUDA libraries "ready": TensorFlow 2.15 on Linux needs the nvidia-* pip
wheels or system CUDA libraries, and nothing looked for them. The verdict says it is probably
ready and that the libraries were not checked. Where TensorFlow itself shows they loaded (it lists
the GPU, or ran ops on it), or where the build loads none (a CPU-only build, macOS), the verdict is
the same with the libraries section as without it."""

from __future__ import annotations

import dataclasses
import json

import generated as g
import properties as p

from envcheck.facts import SKIPPED, Distribution, LibrariesFacts, PackagesFacts, TensorflowFacts, to_json
from envcheck.findings import CPU_ONLY, GPU_READY

A40 = next(c for c in g.cards() if c.cc == "8.6")
UNCHECKED = "the CUDA libraries were not checked"


def _linux_215(**changes) -> g.Spec:
    return dataclasses.replace(g.Spec("linux", "2.15", (A40,), g.drivers("linux", "2.15")[-1]), **changes)


def _without_libraries(facts):
    return dataclasses.replace(facts, libraries=LibrariesFacts(status=SKIPPED))


def _tf_not_run(facts):
    return dataclasses.replace(facts, tensorflow=TensorflowFacts(status=SKIPPED))


def test_a_hand_written_snapshot_without_libraries_for_tf_2_15_on_linux_is_not_ready(cli, tmp_path):
    """What a person writes for --facts: the packages, the driver and the GPU; no library probe and
    no TensorFlow run."""
    data = json.loads(to_json(g.snapshot(_linux_215())))
    del data["libraries"], data["tensorflow"]
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(data))
    result = cli("doctor", "--facts", str(path), "--json")
    report = result.json()
    verdict = report["verdict"]
    assert verdict["status"] == GPU_READY and verdict["gpus"] == 1  # the GPU's chain has no broken link
    assert verdict["line"].startswith("GPU probably ready (1 GPU); " + UNCHECKED), verdict["line"]
    libraries = next(link for link in report["links"] if link["name"] == "libraries")
    assert (libraries["status"], libraries["summary"]) == ("skipped", "not probed")


def test_the_same_snapshot_with_its_libraries_is_ready():
    facts = _tf_not_run(g.snapshot(_linux_215()))
    assert facts.libraries.libraries  # every library the build loads, found and loadable
    line = p.judged(facts).verdict.line
    assert line.startswith("GPU ready (1 GPU)") and UNCHECKED not in line, line
    unprobed = p.judged(_without_libraries(facts)).verdict.line
    assert unprobed.startswith("GPU probably ready (1 GPU); " + UNCHECKED), unprobed


def test_tensorflow_that_ran_on_the_gpu_or_listed_it_shows_the_libraries_loaded():
    """TensorFlow registers a GPU only once every CUDA library has loaded: the same verdict with
    the library probe as without it."""
    facts = g.snapshot(_linux_215())
    listed_only = dataclasses.replace(facts, tensorflow=dataclasses.replace(facts.tensorflow, placement=()))
    for shown in (facts, listed_only):
        with_libraries = p.judged(shown).verdict.to_dict()
        assert with_libraries == p.judged(_without_libraries(shown)).verdict.to_dict()
        assert with_libraries["line"].startswith("GPU ready (1 GPU)"), with_libraries["line"]


def test_where_the_libraries_do_not_matter_the_verdict_is_unchanged():
    """A CPU-only build loads no CUDA library, and macOS has no CUDA build: a missing library probe
    changes nothing there."""
    cpu_build = g.snapshot(_linux_215())
    cpu_build = dataclasses.replace(
        cpu_build,
        packages=PackagesFacts(distributions=(Distribution(name="tensorflow-cpu", version="2.15.1"),)),
        tensorflow=dataclasses.replace(cpu_build.tensorflow, distribution="tensorflow-cpu", is_cuda_build=False),
    )
    mac = g.snapshot(_linux_215())
    mac = dataclasses.replace(
        mac,
        platform=dataclasses.replace(mac.platform, system="Darwin", os="macos", machine="arm64", distro="macOS 14"),
        python=dataclasses.replace(mac.python, machine="arm64"),
        packages=PackagesFacts(distributions=(Distribution(name="tensorflow", version="2.15.1"),)),
        pci=dataclasses.replace(mac.pci, status=SKIPPED, devices=()),
        driver=dataclasses.replace(mac.driver, status=SKIPPED),
        nvml=dataclasses.replace(mac.nvml, status=SKIPPED, gpus=()),
        tensorflow=dataclasses.replace(
            mac.tensorflow, is_cuda_build=False, physical_devices=mac.tensorflow.physical_devices[:1], placement=()
        ),
    )
    for facts in (cpu_build, mac, _tf_not_run(cpu_build), _tf_not_run(mac)):
        verdict = p.judged(facts).verdict
        assert verdict.to_dict() == p.judged(_without_libraries(facts)).verdict.to_dict()
        assert "probably" not in verdict.line and UNCHECKED not in verdict.line, verdict.line
    assert p.judged(mac).verdict.status == CPU_ONLY
