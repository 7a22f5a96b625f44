"""Machines described to the fake libnvidia-ml.so.1 and read by the real pynvml and the real NVML
probe, all in one process (the fake reads its variables at every call); their NVML section is
then put into the 4x V100 server snapshot, whose TensorFlow uses all four GPUs."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from envcheck.facts import NvmlFacts, PciDevice, from_dict

from . import builders as b

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fake_nvml"))
import fakenvml  # noqa: E402

# The server snapshot's driver, so that only the speed facts differ from it.
SERVER_DRIVER = {"driver_version": "535.129.03", "cuda_version": 12020, "nvml_version": "12.535.129.03"}
NVLINK = {(a, c): (10, 0, 0, 0) for a in range(4) for c in range(a + 1, 4)}

_PROBE_ALL = """
import json, os, sys
from envcheck.facts import to_dict
from envcheck.probes.nvml import probe_nvml
machines = json.loads(sys.stdin.read())
out = {}
for name, env in machines.items():
    for key in [k for k in os.environ if k.startswith("FAKE_NVML_")]:
        del os.environ[key]
    os.environ.update(env)
    out[name] = to_dict(probe_nvml())
print(json.dumps(out))
"""


def probe_machines(machines: dict[str, dict], build_dir: Path) -> dict[str, NvmlFacts]:
    """name -> the NVML section the probe reads from {"gpus": [...], "pairs": {...}}."""
    library = fakenvml.build(build_dir, "current")
    described = {
        name: fakenvml.environment(gpus=tuple(m["gpus"]), pairs=m.get("pairs"), **SERVER_DRIVER)
        for name, m in machines.items()
    }
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "LD_LIBRARY_PATH": str(library)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE_ALL], input=json.dumps(described), capture_output=True, text=True, env=env,
        timeout=120, cwd=str(REPO), check=True,
    )  # fmt: skip
    sections = {name: from_dict(NvmlFacts, data) for name, data in json.loads(done.stdout).items()}
    # The library's path as a real driver installs it, not the test's build folder.
    return {
        name: dataclasses.replace(s, library="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.129.03")
        for name, s in sections.items()
    }


def server_with(nvml: NvmlFacts, **env: str):
    """The server with these GPUs on its NVML and, at the same addresses, on its PCI bus."""
    server = b.server()
    devices = tuple(_pci_device(gpu) for gpu in nvml.gpus)
    facts = dataclasses.replace(server, nvml=nvml, pci=dataclasses.replace(server.pci, devices=devices))
    return b.with_env(facts, **env) if env else facts


def _pci_device(gpu) -> PciDevice:
    """The bus's view of an NVML GPU ("00000000:07:00.0" as sysfs writes it): the fake's A100s and T4s."""
    return PciDevice(
        address=(gpu.pci_bus_id or "")[4:].lower(),
        vendor_id="0x10de",
        device_id="0x1eb8" if "T4" in (gpu.name or "") else "0x20b2",
        class_code="0x030200",
        driver="nvidia",
        name=gpu.name,
    )
