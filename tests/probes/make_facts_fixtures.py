"""Regenerate the facts snapshots the rules are tested against (run by hand, not by pytest):

    python tests/probes/make_facts_fixtures.py

* ``this_machine.json``: ``envcheck doctor --json`` on the machine running this script.
* ``fake_nvml_2gpu.json``: the same machine's interpreter, libraries and TensorFlow, with the GPU
  stack of a two-A100 server: the fake libnvidia-ml answering for NVML, and built sysfs and
  /proc trees for PCI and the kernel driver. The NVML library path is set to where that driver's
  real library lives rather than the temporary build folder.

Host name, user and home become "host", "user" and "/home/user"; the checkout's own folder becomes
"/home/user/envcheck", so no snapshot names the machine it was made on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = REPO / "tests" / "fixtures" / "facts"
sys.path[:0] = [str(REPO), str(HERE)]

import fake_machines  # noqa: E402
import fakenvml  # noqa: E402

from envcheck.facts import facts_from_dict, to_dict  # noqa: E402
from envcheck.probes.driver import probe_driver  # noqa: E402
from envcheck.probes.pci import probe_pci  # noqa: E402

NEUTRAL_HOME = "/home/user"
NEUTRAL_CHECKOUT = "/home/user/envcheck"

_COLLECT = """
import json, sys
from envcheck.facts import to_json
from envcheck.probes import ProbeOptions, collect
environ = json.load(open(sys.argv[1]))
print(to_json(collect(ProbeOptions(environ=environ))))
"""


def neutralise(data, hostname: str, user: str, home: str):
    """Every string with the checkout, home, user and host replaced by neutral values."""
    replacements = [(str(REPO), NEUTRAL_CHECKOUT), (home, NEUTRAL_HOME)]

    def fix(value):
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v) for v in value]
        if not isinstance(value, str):
            return value
        for old, new in replacements:
            if old and old != "/":
                value = re.sub(rf"(?<![\w.-]){re.escape(old)}(?=[/:\s]|$)", new, value)
        return value

    out = fix(data)
    out["platform"]["hostname"] = "host" if hostname else None
    out["platform"]["user"] = "user" if user else None
    out["platform"]["home"] = NEUTRAL_HOME if home else None
    return out


def _neutral(facts_dict: dict) -> dict:
    p = facts_dict["platform"]
    return neutralise(facts_dict, p.get("hostname") or "", p.get("user") or "", p.get("home") or "")


def this_machine() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO),
        check=True,
    )
    return _neutral(json.loads(proc.stdout)["facts"])


def fake_server() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        library_dir = fakenvml.build(tmp_path / "nvml")
        tree = fake_machines.build_server_tree(tmp_path / "root")
        environ_file = tmp_path / "environ.json"
        environ_file.write_text(json.dumps(dict(os.environ)))
        env = dict(os.environ, PYTHONPATH=str(REPO), LD_LIBRARY_PATH=str(library_dir))
        env.update(fakenvml.environment(**fake_machines.SERVER_NVML))
        proc = subprocess.run(
            [sys.executable, "-c", _COLLECT, str(environ_file)],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(REPO),
            check=True,
        )
        facts = facts_from_dict(json.loads(proc.stdout))
        facts = dataclasses.replace(
            facts,
            pci=probe_pci(tree, system="Linux"),
            driver=probe_driver(tree, system="Linux"),
            nvml=dataclasses.replace(facts.nvml, library=fake_machines.SERVER_NVML_LIBRARY),
        )
    return _neutral(to_dict(facts))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in (("this_machine.json", this_machine), ("fake_nvml_2gpu.json", fake_server)):
        data = make()
        facts_from_dict(data)  # the strict reader must accept what is written
        (OUT / name).write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
