"""The NVML probe, run with the real nvidia-ml-py against the fake libnvidia-ml.so.1.

Each case is a fresh process (pynvml loads the library once per process) whose LD_LIBRARY_PATH
points at the fake and whose FAKE_NVML_* variables describe the machine.
"""

from __future__ import annotations

import subprocess
import sys

import fakenvml
import pytest

from envcheck.facts import NVML_ERROR_KINDS
from envcheck.probes.nvml import error_kind, format_cuda_version, normalise_bus_id, probe_nvml


def test_two_gpu_server_is_read_in_full(nvml_probe, fake_nvml_dirs):
    gpus = (
        fakenvml.a100(0, procs=[(4242, "python3", 1536), (4343, "jupyter-lab", 512)], mem_used_mb=2052),
        fakenvml.a100(1, mig=True),
    )
    facts = nvml_probe(gpus=gpus)
    assert facts.status == "ok" and facts.error is None
    assert facts.driver_version == "550.54.15"
    assert facts.cuda_driver_version == "12.4"
    assert facts.nvml_version == "12.550.54.15"
    assert facts.library == str(fake_nvml_dirs["current"] / "libnvidia-ml.so.1")
    first, second = facts.gpus
    assert first.name == "NVIDIA A100-SXM4-80GB"
    assert first.uuid == "GPU-4c2a9f3e-1b7d-4e0a-9c61-000000000000"
    assert first.serial == "1323221000000"
    assert first.pci_bus_id == "0000:07:00.0"  # NVML's 8-digit domain, in sysfs form
    assert second.pci_bus_id == "0000:0f:00.0"
    assert first.compute_capability == "8.0"
    assert (first.memory_total_mb, first.memory_used_mb) == (81920, 2052)
    assert [(p.pid, p.name, p.used_memory_mb) for p in first.processes] == [
        (4242, "python3", 1536),
        (4343, "jupyter-lab", 512),
    ]
    assert first.mig_mode is False and second.mig_mode is True
    assert second.processes == ()
    assert first.query_errors == {} and first.status == "ok"


def test_geforce_card_without_serial_or_mig_is_fine(nvml_probe):
    gtx = {"name": "NVIDIA GeForce GTX 1060 6GB", "cc": "6.1", "mem_total_mb": 6144, "pci": "00000000:01:00.0"}
    (gpu,) = nvml_probe(gpus=(gtx,), driver_version="418.87.01", cuda_version=10010).gpus
    assert gpu.status == "ok"
    assert gpu.serial is None and gpu.mig_mode is None and gpu.uuid is None
    assert gpu.query_errors == {}  # "Not Supported" is an answer, not an error
    assert gpu.compute_capability == "6.1"


@pytest.mark.parametrize(
    "code, kind, status",
    [
        (9, "driver_not_loaded", "error"),
        (18, "version_mismatch", "error"),
        (15, "gpu_lost", "error"),
        (4, "no_permission", "error"),
        (999, "unknown", "error"),
        (12, "library_not_found", "missing"),
    ],
)
def test_init_failures_become_kinds(nvml_probe, code, kind, status):
    facts = nvml_probe(gpus=(fakenvml.a100(0),), init_error=code)
    assert (facts.status, facts.error_kind, facts.error_code) == (status, kind, code)
    assert facts.gpus == ()
    assert f"NVML error {code}" in facts.error


def test_one_lost_gpu_does_not_hide_the_other(nvml_probe):
    facts = nvml_probe(gpus=(fakenvml.a100(0, error=15), fakenvml.a100(1)))
    assert facts.status == "ok"
    lost, good = facts.gpus
    assert (lost.status, lost.error_kind, lost.error_code) == ("error", "gpu_lost", 15)
    assert lost.name is None
    assert (good.status, good.name) == ("ok", "NVIDIA A100-SXM4-80GB")


def test_gpu_lost_midway_marks_the_gpu_and_keeps_what_was_read(nvml_probe):
    (gpu,) = nvml_probe(gpus=(fakenvml.a100(0, fail={"memory": 15}),)).gpus
    assert gpu.status == "error" and gpu.error_kind == "gpu_lost"
    assert gpu.name == "NVIDIA A100-SXM4-80GB"
    assert gpu.memory_total_mb is None
    assert gpu.query_errors["memory"].startswith("gpu_lost")


def test_forbidden_process_list_is_a_query_error_not_a_broken_gpu(nvml_probe):
    (gpu,) = nvml_probe(gpus=(fakenvml.a100(0, fail={"processes": 4}),)).gpus
    assert gpu.status == "ok"
    assert gpu.query_errors == {"processes": "no_permission: Insufficient Permissions (NVML error 4)"}


def test_failing_device_count_is_a_global_error(nvml_probe):
    facts = nvml_probe(gpus=(fakenvml.a100(0),), count_error=15)
    assert facts.status == "error" and facts.error_kind == "gpu_lost"
    assert facts.driver_version == "550.54.15"  # what was read before the failure stays


def test_old_driver_answers_through_older_entry_points(nvml_probe):
    """No _v2 CUDA version, no _v3 process list: the probe falls back and loses nothing."""
    facts = nvml_probe("old", gpus=(fakenvml.a100(0, procs=[(7, "python", 100)]),))
    assert facts.status == "ok"
    assert facts.cuda_driver_version == "12.4"
    assert [p.pid for p in facts.gpus[0].processes] == [7]
    assert facts.query_errors == {} and facts.gpus[0].query_errors == {}


def test_ancient_driver_without_init_entry_point_is_function_not_found(nvml_probe):
    facts = nvml_probe("ancient", gpus=(fakenvml.a100(0),))
    assert (facts.status, facts.error_kind, facts.error_code) == ("error", "function_not_found", 13)


def test_no_library_at_all(tmp_path, probe_env):
    """An empty LD_LIBRARY_PATH folder and no driver: this machine's own state."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from envcheck.probes.nvml import probe_nvml; f = probe_nvml(); print(f.status, f.error_kind, f.error)",
        ],
        capture_output=True,
        text=True,
        env=probe_env(LD_LIBRARY_PATH=str(tmp_path)),
        timeout=60,
    )
    assert proc.stdout.split()[:2] == ["missing", "library_not_found"]
    assert "libnvidia-ml.so.1" in proc.stdout  # the loader's own reason is kept


# --- pieces that need no library ---------------------------------------------------------------


def test_every_kind_is_a_declared_kind():
    for code in (4, 9, 12, 13, 15, 18, 999, 1, None):
        assert error_kind(code) in NVML_ERROR_KINDS


def test_binding_that_raises_something_else_is_still_a_fact():
    class BrokenBinding:
        def nvmlInit(self):
            raise OSError("libnvidia-ml.so.1: wrong ELF class: ELFCLASS32")

        def nvmlShutdown(self):
            raise AssertionError("never initialised, never shut down")

    facts = probe_nvml(BrokenBinding())
    assert (facts.status, facts.error_kind) == ("error", "unknown")
    assert "wrong ELF class" in facts.error


@pytest.mark.parametrize("value, text", [(12040, "12.4"), (11080, "11.8"), (10010, "10.1"), (13000, "13.0"), (0, None)])
def test_cuda_version_format(value, text):
    assert format_cuda_version(value) == text


def test_bus_id_normalisation():
    assert normalise_bus_id("00000000:3B:00.0") == "0000:3b:00.0"
    assert normalise_bus_id("0001:af:00.0") == "0001:af:00.0"
    assert normalise_bus_id("") is None
