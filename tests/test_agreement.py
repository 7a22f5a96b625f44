"""Commands that answer the same question give the same answer: they all ask the knowledge layer
(the matrix and the machine view), none keeps a copy."""

from __future__ import annotations

import pytest
from rules import builders as b

from envcheck.matrix import load_matrix
from envcheck.verdict import judge

# (release, --os, a compute capability the build has native code for, a Python it supports)
CASES = [
    ("2.15", "wsl", "7.5", "3.11"),
    ("2.15", "linux", "7.5", "3.11"),
    ("2.21", "wsl", "8.0", "3.12"),
    ("2.10", "windows", "7.5", "3.9"),
    ("2.10", "wsl", "7.5", "3.9"),
    ("1.13", "windows", "6.1", "3.6"),
    ("2.4", "linux", "7.0", "3.8"),
]


@pytest.mark.parametrize("tf, os, cc, python", CASES)
def test_matrix_and_plan_give_the_same_driver_and_install_line(cli, tf, os, cc, python):
    plan = cli("plan", "--os", os, "--tf", tf, "--compute-capability", cc, "--python", python, "--json").json()
    answer = cli("matrix", "tf", tf, "--os", os, "--json").json()
    assert plan["driver_floor"] == answer["driver_floor"]
    assert plan["requirement"] == answer["install"]


def test_wsl_reads_the_windows_driver_table_everywhere(cli):
    matrix = load_matrix()
    need = matrix.driver_requirement("12.2", "wsl")
    assert need.os == "windows" and need.minimum == matrix.minor_compat_floor(12, "windows")
    answer = cli("matrix", "tf", "2.15", "--os", "wsl", "--json").json()
    assert answer["driver_floor"] == str(need.minimum) != str(matrix.driver_requirement("12.2", "linux").minimum)


def test_doctor_gpu_path_installs_what_plan_installs(cli):
    """A Linux machine with a CPU-only TensorFlow and a GPU: the doctor's fix and the plan for the
    same release name the same requirement."""
    facts = b.with_distributions(b.server(), ("tensorflow-cpu", "2.15.1"), drop=("tensorflow",))
    facts = b.change(
        facts,
        {
            "tensorflow.is_cuda_build": False,
            "tensorflow.distribution": "tensorflow-cpu",
            "tensorflow.distributions": ("tensorflow-cpu",),
        },
    )
    report = judge(facts)
    finding = next(f for f in report.findings if f.id == "EC-TF-005")
    install = [c.pip_args for c in finding.fix.commands if c.pip_args and c.pip_args[0] == "install"]
    plan = cli(
        "plan", "--os", "linux", "--tf", "2.15", "--compute-capability", "7.0", "--python", "3.11", "--json"
    ).json()
    assert install and install[0][-1].split("==")[0] == plan["requirement"].split("==")[0]
