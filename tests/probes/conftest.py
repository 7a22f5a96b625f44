"""Fixtures for the GPU-stack probes: the fake NVML library, sysfs trees, probe subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.facts import NvmlFacts, from_dict

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fake_nvml"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fakenvml  # noqa: E402
from fake_machines import pci_device, write  # noqa: E402


@pytest.fixture(scope="session")
def fake_nvml_dirs(tmp_path_factory):
    """variant -> directory holding that build of libnvidia-ml.so.1 (built once per session)."""
    if fakenvml.compiler() is None:
        pytest.skip("no C compiler on PATH to build the fake libnvidia-ml.so.1")
    base = tmp_path_factory.mktemp("fake-nvml")
    return {variant: fakenvml.build(base / variant, variant) for variant in fakenvml.VARIANTS}


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without anything that would point NVML or CUDA elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_NVML_", "LD_LIBRARY_PATH"))}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


@pytest.fixture
def probe_env():
    """``probe_env(**extra)``: a clean environment for a probe subprocess."""
    return clean_env


_NVML_PROBE = (
    "import json; from envcheck.probes.nvml import probe_nvml; from envcheck.facts import to_dict; "
    "print(json.dumps(to_dict(probe_nvml())))"
)


@pytest.fixture
def nvml_probe(fake_nvml_dirs):
    """Run the real probe and the real pynvml against the fake library, in a fresh process."""

    def run(variant: str = "current", **machine) -> NvmlFacts:
        env = clean_env(LD_LIBRARY_PATH=str(fake_nvml_dirs[variant]), **fakenvml.environment(**machine))
        proc = subprocess.run(
            [sys.executable, "-c", _NVML_PROBE], capture_output=True, text=True, env=env, timeout=120, cwd=str(REPO)
        )
        assert proc.returncode == 0, proc.stderr
        return from_dict(NvmlFacts, json.loads(proc.stdout))

    return run


@pytest.fixture
def make_tree(tmp_path):
    """A filesystem root to fill: ``make_tree.file(relative, text)`` and ``make_tree.pci(...)``."""

    class Tree:
        root = tmp_path

        def file(self, relative: str, text: str = "") -> Path:
            return write(tmp_path / relative, text)

        def pci(self, *args, **kwargs) -> None:
            pci_device(tmp_path, *args, **kwargs)

    return Tree()


@pytest.fixture(scope="session")
def python_without_tf(tmp_path_factory):
    """Another interpreter: a virtual environment with nothing installed."""
    import venv

    target = tmp_path_factory.mktemp("env-without-tf")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(target)
    return str(target / "bin" / "python")
