"""The whole probe chain on this machine, and the snapshots made from it for the rules' tests.

This machine is a CI box without NVIDIA hardware: a CUDA build of TensorFlow that finds no driver,
the pip wheel's libcudart.so.12, and perhaps a CUDA toolkit in /usr/local/cuda. On a machine with
an NVIDIA driver these checks do not describe it and are skipped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import fake_machines
import pytest

from envcheck.facts import load_facts
from envcheck.probes import ProbeOptions, collect
from envcheck.probes.driver import probe_driver
from envcheck.probes.pci import probe_pci

REPO = Path(__file__).resolve().parents[2]
FACTS_DIR = REPO / "tests" / "fixtures" / "facts"

no_nvidia_here = pytest.mark.skipif(
    os.path.exists("/proc/driver/nvidia/version"), reason="describes a machine without an NVIDIA driver"
)


def doctor_json(*args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--json", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO),
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _wheel_cudart_copies(libraries: dict) -> list[dict]:
    cudart = next(f for f in libraries["libraries"] if f["family"] == "cudart")
    return [c for c in cudart["copies"] if c["origin"] == "pip" and c["path"].endswith("libcudart.so.12")]


def _check_gpu_stack_without_nvidia(facts: dict) -> None:
    assert facts["pci"]["status"] == "missing" and facts["pci"]["devices"] == []
    assert facts["driver"]["status"] == "missing" and facts["driver"]["loaded"] is False
    assert (facts["nvml"]["status"], facts["nvml"]["error_kind"]) == ("missing", "library_not_found")
    assert _wheel_cudart_copies(facts["libraries"]), "the nvidia-cuda-runtime-cu12 wheel's libcudart.so.12"
    if os.path.isdir("/usr/local/cuda"):
        assert any(t["path"].startswith("/usr/local/cuda") and t["version"] for t in facts["libraries"]["toolkits"])


@no_nvidia_here
def test_quick_doctor_on_this_machine():
    facts = doctor_json("--quick")["facts"]
    _check_gpu_stack_without_nvidia(facts)
    assert facts["tensorflow"]["status"] == "skipped"
    assert all(c["loads"] is None for f in facts["libraries"]["libraries"] for c in f["copies"])


@no_nvidia_here
@pytest.mark.slow
def test_full_doctor_on_this_machine():
    pytest.importorskip("tensorflow")
    facts = doctor_json()["facts"]
    _check_gpu_stack_without_nvidia(facts)
    (wheel,) = _wheel_cudart_copies(facts["libraries"])
    assert wheel["loads"] is True and wheel["reported_version"].startswith("12.")
    tf = facts["tensorflow"]
    assert tf["status"] == "ok" and tf["is_cuda_build"] is True and tf["version"].startswith("2.")
    assert [(p["op"], p["ok"]) for p in tf["placement"]] == [("matmul", True), ("conv2d", True)]
    assert all(p["device"].endswith("CPU:0") for p in tf["placement"])


def test_another_interpreter_gets_its_own_tensorflow_and_wheel_folders(python_without_tf):
    """--python: TF is looked for, and pip wheels searched, in that interpreter, not this one."""
    facts = collect(ProbeOptions(python=python_without_tf, tf_timeout=60))
    assert (facts.tensorflow.status, facts.tensorflow.error_kind) == ("missing", "not_installed")
    assert not [c for f in facts.libraries.libraries for c in f.copies if c.origin == "pip"]


def test_collect_reads_the_given_root_and_skips_tensorflow_when_quick(tmp_path):
    root = fake_machines.build_server_tree(tmp_path)
    facts = collect(ProbeOptions(quick=True, root=root, system="Linux"))
    assert [d.address for d in facts.pci.devices] == ["0000:07:00.0", "0000:0f:00.0"]
    assert facts.driver.version == fake_machines.SERVER_DRIVER
    assert facts.tensorflow.status == "skipped" and facts.quick is True


def test_an_interrupted_collect_leaves_no_tensorflow_worker_behind(tmp_path, monkeypatch):
    import envcheck.probes as probes

    pidfile = tmp_path / "worker.pid"
    package = tmp_path / "site" / "tensorflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    )
    environ = dict(os.environ, PYTHONPATH=str(package.parent))

    def interrupted(*args, **kwargs):
        import time

        for _ in range(200):  # let the worker reach its sleep, so there is something to stop
            if pidfile.exists() and pidfile.read_text():
                break
            time.sleep(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(probes, "_gpu_stack", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collect(ProbeOptions(environ=environ, tf_timeout=120))
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# --- the committed snapshots -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["this_machine.json", "fake_nvml_2gpu.json"])
def test_snapshots_read_back_and_name_no_machine(name):
    facts = load_facts(FACTS_DIR / name)
    text = (FACTS_DIR / name).read_text()
    assert str(REPO) not in text
    assert facts.platform.hostname == "host" and facts.platform.home == "/home/user"
    assert facts.tensorflow.status == "ok" and facts.tensorflow.is_cuda_build is True


def test_this_machine_snapshot_shows_a_cuda_build_without_a_gpu():
    facts = load_facts(FACTS_DIR / "this_machine.json")
    assert facts.pci.devices == () and facts.nvml.error_kind == "library_not_found"
    assert all(p.device.endswith("CPU:0") and p.ok for p in facts.tensorflow.placement)


def test_two_gpu_snapshot_matches_what_the_probes_say_today(nvml_probe, tmp_path):
    """The snapshot's GPU stack is what the fake NVML and the built trees give now: no drift."""
    saved = load_facts(FACTS_DIR / "fake_nvml_2gpu.json")
    root = fake_machines.build_server_tree(tmp_path)

    def same(a, b):
        return dataclasses.replace(a, seconds=0.0) == dataclasses.replace(b, seconds=0.0)

    assert same(saved.pci, probe_pci(root, system="Linux"))
    assert same(saved.driver, probe_driver(root, system="Linux"))
    fresh = nvml_probe(**fake_machines.SERVER_NVML)
    assert same(saved.nvml, dataclasses.replace(fresh, library=fake_machines.SERVER_NVML_LIBRARY))
    assert [g.compute_capability for g in saved.nvml.gpus] == ["8.0", "8.0"]
