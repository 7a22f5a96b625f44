"""A plan's bash script, run for real on the machine it was planned for, ends with success."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_plan_for_this_machine_runs_to_the_end(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    script = subprocess.run(
        [sys.executable, "-m", "envcheck", "plan", "--format", "bash"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    if "nvidia" in script.lower() and "tensorflow-cpu" not in script:
        pytest.skip("this machine's plan needs a GPU driver or CUDA downloads, which a test cannot make")
    path = tmp_path / "install-tf.sh"
    path.write_text(script)
    done = subprocess.run(["bash", str(path)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1500)
    if done.returncode != 0 and ("Could not find a version" in done.stderr or "connection" in done.stderr.lower()):
        pytest.skip("the package index cannot be reached from here")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.strip().endswith("is installed in ./tf-env")
    assert "Verdict:" in done.stdout  # the script's own check ran the doctor on the new environment
