"""Commands that answer the same question give the same answer: they all ask the knowledge layer
(the matrix and the machine view), none keeps a copy."""

from __future__ import annotations

import pytest
from rules import builders as b

from envcheck.facts import NvmlFacts, PciFacts
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


# --- the same snapshot, every command that answers a question about it ----------------------------


def _snapshots():
    from rules.cases import _not_installed

    kepler = b.change(
        b.tf_sees_no_gpu(b.server_gpus(b.server(), ("Tesla K40m", "3.5"))),
        {"nvml.driver_version": "470.256.02", "driver.version": "470.256.02"},
    )
    old_driver = b.change(b.server(), {"nvml.driver_version": "450.80.02", "driver.version": "450.80.02"})
    wsl = b.change(
        b.server(),
        {
            "platform.os": "wsl",
            "pci": PciFacts(status="missing"),
            "nvml": NvmlFacts(status="missing", error_kind="library_not_found", error="NVML Shared Library Not Found"),
        },
    )
    return {
        "server": b.server(),
        "setup post": b.setup_post(),
        "no GPU": b.no_gpu(),
        "not installed, GPU": _not_installed(b.server()),
        "not installed, no GPU": _not_installed(b.no_gpu()),
        "Kepler on 470": kepler,
        "driver too old": old_driver,
        "WSL2 without NVML": wsl,
        "one GPU busy": b.failing_ops(b.server(), ("/GPU:1",), b.BUSY),
    }


SNAPSHOTS = _snapshots()


@pytest.fixture(params=sorted(SNAPSHOTS))
def snapshot(request, tmp_path):
    from envcheck.facts import to_json

    path = tmp_path / "facts.json"
    path.write_text(to_json(SNAPSHOTS[request.param]))
    return str(path)


def test_gpu_present_doctor_and_plan(cli, snapshot):
    doctor = cli("doctor", "--facts", snapshot, "--json").json()
    plan = cli("plan", "--facts", snapshot, "--json").json()
    assert plan["target"]["has_gpu"] == {"present": True, "absent": False, "unknown": None}[doctor["gpu_presence"]]
    assert plan["target"]["gpus"] == [g["name"] for g in doctor["gpus"] if not g["hidden"]]


def test_usable_gpus_doctor_and_fleet(cli, snapshot):
    doctor = cli("doctor", "--facts", snapshot, "--json").json()
    assert doctor["verdict"]["gpus"] == sum(1 for g in doctor["gpus"] if g["usable"])
    fleet = cli("fleet", snapshot, "--json").json()
    (node,) = fleet["nodes"]
    assert node["verdict"]["line"] == doctor["verdict"]["line"] and node["exit_code"] == doctor["exit_code"]


def test_recommended_tensorflow_doctor_and_plan(cli, snapshot):
    doctor = cli("doctor", "--facts", snapshot, "--json").json()
    plan = cli("plan", "--facts", snapshot, "--json").json()
    verdict = doctor["verdict"]
    if verdict["status"] == "not-installed":
        assert verdict["plan"]["tensorflow"] == plan["tensorflow"]
        assert verdict["plan"]["requirement"] == plan["requirement"]
    installed = doctor["facts"]["tensorflow"]["version"] or ""
    installed_minor = ".".join(installed.split(".")[:2])
    for step in verdict["gpu_path"]:
        for c in step["commands"]:
            line = c["line"]
            if "pip install" not in line or "tensorflow" not in line or "==" not in line:
                continue
            release = ".".join(line.split("==")[1].strip("\"'").split(".")[:2])
            if release == installed_minor:
                continue  # a fix for the installed release (its CUDA wheels), no recommendation
            # The doctor moves to the plan's release, or offers the plan's own "keep your driver".
            keep = {a["plan"]["tensorflow"] for a in plan["alternatives"] if a["key"] == "keep-driver" and a["plan"]}
            assert release == plan["tensorflow"] or release in keep, line


def test_driver_floor_doctor_plan_and_matrix(cli, snapshot):
    doctor = cli("doctor", "--facts", snapshot, "--json").json()
    tf = doctor["facts"]["tensorflow"]["version"]
    os_name = doctor["facts"]["platform"]["os"] or "linux"
    if not tf:
        return
    release = ".".join(tf.split(".")[:2])
    matrix = cli("matrix", "tf", release, "--os", os_name, "--json").json()
    if not matrix["gpu"]:
        return
    plan = cli("plan", "--facts", snapshot, "--tf", release, "--json").json()
    if plan["kind"] == "gpu" and plan["gpu_support"] != "ptx":
        assert plan["driver_floor"] == matrix["driver_floor"]
    for gpu in doctor["gpus"]:
        cuda = next(link for link in gpu["links"] if link["name"] == "cuda")
        if "older than" in cuda["evidence"]:
            assert f"older than {matrix['driver_floor']}," in cuda["evidence"]


def test_install_line_doctor_plan_matrix_and_explain(cli, snapshot):
    doctor = cli("doctor", "--facts", snapshot, "--json").json()
    verdict = doctor["verdict"]
    if verdict["status"] == "not-installed":
        plan = cli("plan", "--facts", snapshot, "--json").json()
        os_name = doctor["facts"]["platform"]["os"] or "linux"
        answer = cli("matrix", "tf", plan["tensorflow"], "--os", os_name, "--json").json()
        assert verdict["plan"]["requirement"] == plan["requirement"]
        if plan["kind"] == "gpu":
            assert plan["requirement"] == answer["install"]
    # explain attaches the doctor's own findings, with the doctor's commands, never a copy.
    by_id = {f["id"]: f for f in doctor["findings"]}
    message = "E cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
    import io
    import sys

    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(message.encode()), encoding="utf-8")
    try:
        explained = cli("explain", "--facts", snapshot, "--json", "-").json()
    finally:
        sys.stdin = old
    for explanation in explained["explanations"]:
        for note in explanation["on_this_machine"]:
            if note["finding"]:
                finding = by_id[note["finding"]]
                assert [c["line"] for c in note["commands"]] == [c["line"] for c in finding["fix"]["commands"]]


def test_explain_attaches_the_doctors_own_finding_with_its_install_line(cli, monkeypatch):
    import io

    snapshot = str(b.FACTS_DIR / "fake_nvml_2gpu.json")
    doctor = cli("doctor", "--facts", snapshot, "--json").json()
    message = "W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.9'; dlerror: libcudnn.so.9: cannot open shared object file"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(message.encode()), encoding="utf-8"))
    explained = cli("explain", "--facts", snapshot, "--json", "-").json()
    attached = [n for e in explained["explanations"] for n in e["on_this_machine"] if n["finding"]]
    assert attached
    by_id = {f["id"]: f for f in doctor["findings"]}
    for note in attached:
        assert [c["line"] for c in note["commands"]] == [c["line"] for c in by_id[note["finding"]]["fix"]["commands"]]
