"""``envcheck plan`` end to end against the bundled matrix: the recommendation for each kind of
machine, the output formats, and bad input. Expectations are checked against the matrix itself
(never against numbers remembered here) where the matrix may gain rows."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version

from envcheck.facts import OK, Facts, NvmlFacts, NvmlGpu, PciFacts, PlatformFacts, PythonFacts, to_json
from envcheck.matrix import load_matrix

SETUP_POST = ("--os", "windows", "--python", "3.7", "--gpu", "GeForce GTX 1060", "--driver", "417.35")


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def plan_json(cli, *args):
    result = cli("plan", *args, "--json")
    assert result.code == 0, result.err
    return result.json()


def alternative(data, key):
    return next((a for a in data["alternatives"] if a["key"] == key), None)


def newest_gpu_build(matrix, os, python, capability):
    """The newest GPU build the matrix lists for an OS, Python and compute capability."""
    builds = [
        b
        for b in matrix.tf_releases(os)
        if b.gpu
        and b.supports_python(python)
        and matrix.support(b, capability) != "none"
        and not (os == "windows" and b.tf > matrix.platform.windows_native_gpu_last)
    ]
    return builds[-1] if builds else None


def test_setup_post_case(cli, matrix):
    data = plan_json(cli, *SETUP_POST)
    # Native Windows GPU builds end at 2.10, which supports Python 3.7, built with CUDA 11.2.
    assert (data["kind"], data["os"], data["tensorflow"], data["python"]) == ("gpu", "windows", "2.10", "3.7")
    assert (data["cuda"], data["cudnn"]) == ("11.2", "8.1")
    # CUDA 11.x runs on any driver from 452.39 on Windows; 417.35 is older.
    assert (data["driver_floor"], data["driver_status"]) == ("452.39", "upgrade")
    assert data["requirement"] == "tensorflow==2.10.*"
    keep = alternative(data, "keep-driver")["plan"]
    # With the driver as it is only a CUDA 10.0 release runs (10.0 needs 411.31 on Windows, 10.1 needs 418.96).
    assert keep["cuda"] == "10.0" and keep["driver_status"] == "ok"
    assert Version("1.13") <= Version(keep["tensorflow"]) <= Version("2.0")
    assert keep["requirement"].startswith("tensorflow-gpu==")
    assert alternative(data, "wsl2")["plan"]["os"] == "wsl"
    assert alternative(data, "cpu")["plan"]["kind"] == "cpu"
    assert any("417.35 is older" in r for r in data["reasons"])
    assert data["target"]["origins"] == {"os": "--os", "python": "--python", "gpu": "--gpu", "driver": "--driver"}


def test_setup_post_case_as_text(cli):
    result = cli("plan", *SETUP_POST)
    assert result.code == 0
    assert "Recommended: TensorFlow 2.10 on the GPU, Windows (native)" in result.out
    assert "452.39 or newer (you have 417.35: upgrade it)" in result.out
    assert "https://developer.nvidia.com/cuda-11.2.0-download-archive" in result.out
    assert "Keep driver 417.35" in result.out


def test_linux_with_a_new_card_gets_the_newest_release_with_and_cuda(cli, matrix):
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "GeForce RTX 4090", "--driver", "550.54.14")
    newest = newest_gpu_build(matrix, "linux", "3.11", "8.9")
    assert data["tensorflow"] == str(newest.tf) and newest.tf >= matrix.platform.and_cuda_first
    assert data["requirement"] == f"tensorflow[and-cuda]=={newest.tf}.*"
    assert data["driver_status"] == "ok" and data["gpu_support"] == "native"
    install = [c["line"] for s in data["steps"] for c in s["commands"]]
    assert any(f'pip install "tensorflow[and-cuda]=={newest.tf}.*"' in line for line in install)


def test_old_kepler_card_gets_the_newest_release_that_still_supports_it(cli, matrix):
    data = plan_json(cli, "--os", "linux", "--python", "3.8", "--gpu", "GeForce GTX 780", "--driver", "470.82.01")
    newest = newest_gpu_build(matrix, "linux", "3.8", "3.5")
    assert newest is not None and newest.cuda.major <= 11  # CUDA 12 dropped Kepler
    assert (data["kind"], data["tensorflow"]) == ("gpu", str(newest.tf))
    assert alternative(data, "cpu") is not None


def test_card_below_every_release_gets_the_cpu_plan(cli, matrix):
    lowest = min(b.min_compute_capability for b in matrix.tf_releases("linux") if b.gpu)
    assert lowest > Version("2.1")  # Fermi: no TensorFlow release carries code for it
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--compute-capability", "2.1")
    assert data["kind"] == "cpu" and data["cuda"] is None
    assert any("compute capability 2.1" in r and str(lowest) in r for r in data["reasons"])
    assert alternative(data, "newer-gpu") is not None


def test_windows_with_tf_beyond_native_gpu_support(cli, matrix):
    data = plan_json(
        cli, "--os", "windows", "--tf", "2.15", "--python", "3.11", "--gpu", "GeForce GTX 1060", "--driver", "537.13"
    )
    assert (data["kind"], data["os"], data["tensorflow"]) == ("gpu", "wsl", "2.15")
    assert data["requirement"] == "tensorflow[and-cuda]==2.15.*"
    native = alternative(data, "native-windows")["plan"]
    assert (native["os"], native["tensorflow"]) == ("windows", str(matrix.platform.windows_native_gpu_last))
    assert alternative(data, "cpu")["plan"]["os"] == "windows"
    assert any("no GPU build for native Windows" in r for r in data["reasons"])


def test_wsl2_plan_has_both_sides_and_windows_driver_numbers(cli, matrix):
    data = plan_json(cli, "--os", "wsl", "--python", "3.12", "--gpu", "GeForce RTX 3080", "--driver", "531.41")
    assert data["kind"] == "gpu" and data["os"] == "wsl"
    major = Version(data["cuda"]).major
    assert data["driver_floor"] == str(matrix.minor_compat_floor(major, "windows"))
    assert {s["side"] for s in data["steps"]} == {"windows", "wsl"}


def test_macos_gets_the_cpu_plan(cli):
    data = plan_json(cli, "--os", "macos", "--python", "3.11")
    assert (data["kind"], data["os"], data["cuda"]) == ("cpu", "macos", None)
    assert alternative(data, "apple-metal") is not None


def test_cpu_only(cli):
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--cpu")
    assert data["kind"] == "cpu" and data["requirement"].startswith(
        "tensorflow-cpu=="
    )  # no CUDA, no CUDA start-up errors
    assert data["target"]["origins"]["gpu"] == "--cpu"


def test_this_machine_by_default(cli):
    data = plan_json(cli)
    assert data["target"]["origins"]["os"] == "this machine"
    assert data["target"]["origins"]["python"] == "this interpreter"
    assert data["steps"] and data["reasons"]


def test_another_os_uses_nothing_of_this_machine(cli):
    data = plan_json(cli, "--os", "windows" if __import__("sys").platform != "win32" else "linux")
    assert data["target"]["python"] is None and data["target"]["driver"] is None
    assert "this machine" not in data["target"]["origins"].values()


def _write_facts(tmp_path, **sections):
    facts = Facts(
        python=PythonFacts(version="3.10.12", bits=64),
        platform=PlatformFacts(os="linux", cpu_flags=("avx", "avx2")),
        **sections,
    )
    path = tmp_path / "facts.json"
    path.write_text(to_json(facts))
    return str(path)


def test_plan_from_a_saved_snapshot_with_nvml_gpus(cli, tmp_path, matrix):
    path = _write_facts(
        tmp_path,
        nvml=NvmlFacts(
            status=OK,
            driver_version="535.104.05",
            gpus=(NvmlGpu(index=0, name="NVIDIA GeForce RTX 3090", compute_capability="8.6"),),
        ),
        pci=PciFacts(status=OK),
    )
    data = plan_json(cli, "--facts", path)
    newest = newest_gpu_build(matrix, "linux", "3.10", "8.6")
    assert (data["tensorflow"], data["python"], data["driver_status"]) == (str(newest.tf), "3.10", "ok")
    assert data["target"]["origins"] == {
        "os": "snapshot",
        "python": "snapshot",
        "gpu": "snapshot",
        "driver": "snapshot",
    }


def test_plan_from_a_snapshot_without_gpu_is_for_the_cpu(cli, tmp_path):
    data = plan_json(cli, "--facts", _write_facts(tmp_path, pci=PciFacts(status=OK)))
    assert data["kind"] == "cpu"


def test_unknown_gpu_names_the_nearest_products_and_the_flag_to_give(cli):
    result = cli("plan", "--os", "linux", "--gpu", "RTX 2065")
    assert result.code == 1 and result.out == "" and result.err.count("\n") == 1
    assert "unknown GPU: no GPU named 'RTX 2065'" in result.err
    assert "GeForce RTX 2060 [Turing, 7.5]" in result.err
    assert "give --compute-capability X.Y instead" in result.err
    # Given with its compute capability, a name the matrix does not know is just its label.
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 2065", "--compute-capability", "8.6")
    assert (data["target"]["gpus"], data["target"]["compute_capability"]) == (["RTX 2065"], "8.6")


def test_laptop_gpu_names_plan_like_the_product(cli):
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 4050", "--driver", "550.54.14")
    assert data["target"]["compute_capability"] == "8.9"
    assert data["target"]["gpus"] == ["GeForce RTX 4050 Laptop GPU"]


def test_scripts(cli):
    bash = cli("plan", "--os", "linux", "--python", "3.11", "--gpu", "RTX 4090", "--format", "bash")
    assert bash.code == 0 and bash.out.startswith("#!/usr/bin/env bash")
    ps = cli("plan", *SETUP_POST, "--format", "powershell")
    assert ps.code == 0 and '$ErrorActionPreference = "Stop"' in ps.out and "cudart64_110.dll" in ps.out


@pytest.mark.parametrize(
    "args, code, message",
    [
        (("--gpu", "Banana 9000", "--os", "linux"), 1, "--compute-capability"),
        (("--tf", "9.9", "--os", "linux"), 1, "not in the compatibility matrix"),
        (("--tf", "latest"), 2, "not a version"),
        (("--python", "2.7", "--os", "linux"), 2, "--python 2.7"),
        (("--driver", "new", "--os", "linux"), 2, "--driver new"),
        (("--compute-capability", "eight", "--os", "linux"), 2, "--compute-capability eight"),
        (("--cpu", "--gpu", "RTX 4090"), 2, "not allowed with"),
        (("--cpu", "--compute-capability", "8.6"), 2, "--cpu"),
        (("--os", "plan9"), 2, "unknown choice"),
        (("--json", "--format", "bash"), 2, "not allowed with"),
        (SETUP_POST + ("--format", "bash"), 2, "--format powershell"),
        (("--os", "linux", "--cpu", "--format", "powershell"), 2, "--format bash"),
    ],
)
def test_bad_input_is_one_line_and_the_right_exit_code(cli, args, code, message):
    result = cli("plan", *args)
    assert result.code == code
    assert message in result.err and "Traceback" not in result.err
    assert result.err.count("\n") == 1
    if "--json" in args:  # asked for JSON: the error comes as its one document
        assert json.loads(result.out)["exit_code"] == code
    else:
        assert result.out == ""


def test_missing_snapshot_and_bad_matrix_are_usage_errors(cli, tmp_path):
    missing = cli("plan", "--facts", str(tmp_path / "nope.json"))
    assert missing.code == 2 and "no such file" in missing.err
    bad = tmp_path / "matrix.yaml"
    bad.write_text("schema: 1\nsources: [\n")
    result = cli("plan", "--matrix", str(bad), "--os", "linux", "--cpu")
    assert result.code == 2 and "matrix.yaml" in result.err and "Traceback" not in result.err


def test_as_a_real_process(envcheck_proc):
    result = envcheck_proc("plan", *SETUP_POST, "--json")
    assert result.code == 0 and json.loads(result.out)["tensorflow"] == "2.10"


def test_the_docs_show_what_the_command_prints(cli, plain_envcheck_word):
    """docs/plan.md's example is the command's real output, alternatives included."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "plan.md").read_text()
    command = '$ envcheck plan --os windows --python 3.7 --gpu "GeForce GTX 1060" --driver 417.35\n'
    shown = doc.split(command, 1)[1].split("```", 1)[0]
    printed = cli("plan", *SETUP_POST).out
    assert shown == printed


def test_plan_for_the_setup_posts_saved_snapshot(cli):
    from pathlib import Path

    snapshot = str(Path(__file__).resolve().parent / "fixtures" / "facts" / "setup_post_win10.json")
    data = plan_json(cli, "--facts", snapshot)
    assert (data["os"], data["tensorflow"], data["python"], data["driver_status"]) == (
        "windows",
        "2.10",
        "3.7",
        "upgrade",
    )
    # The same machine under WSL2: its GPU and Windows driver carry over, its Windows Python does not.
    wsl = plan_json(cli, "--facts", snapshot, "--os", "wsl")
    assert wsl["os"] == "wsl" and wsl["target"]["driver"] == "417.35" and wsl["target"]["python"] is None


@pytest.mark.parametrize(
    "args",
    [
        ("--driver", "５５０.５４"),
        ("--compute-capability", "８.６"),
        ("--python", "3.１１"),
        ("--gpu", ""),
        ("--gpu", "  "),
    ],
)
def test_non_ascii_digits_and_empty_names_are_bad_input(cli, args):
    result = cli("plan", "--os", "linux", *args)
    assert result.code == 2, (result.out, result.err)
    assert "internal error" not in result.err and len(result.err.strip().splitlines()) == 1


def test_tensorflow_1_cpu_check_runs_a_session(cli):
    data = plan_json(cli, "--os", "linux", "--python", "3.6", "--cpu", "--tf", "1.13")
    check = [c["line"] for s in data["steps"] for c in s["commands"] if "import tensorflow" in c["line"]]
    assert check and "tf.Session().run(" in check[0] and "tf.random.normal" not in check[0]
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--cpu", "--tf", "2.15")
    check = [c["line"] for s in data["steps"] for c in s["commands"] if "import tensorflow" in c["line"]]
    assert check and "tf.random.normal" in check[0]


def test_pinned_release_says_when_it_runs_through_ptx_or_unchecked(cli, matrix):
    # An RTX 3060 (8.6) and 2.15's Linux build (sm_75, compute_80): PTX, so the full driver minimum.
    assert matrix.support(matrix.tf_build("2.15", "linux"), "8.6") == "ptx"
    data = plan_json(
        cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 3060", "--driver", "550.54.14", "--tf", "2.15"
    )
    assert data["gpu_support"] == "ptx" and any("runs through PTX" in r for r in data["reasons"])
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--driver", "550.54.14", "--tf", "2.15")
    assert any("compute capability is not known" in r for r in data["reasons"])


def test_pinned_past_native_windows_on_a_card_wsl2_cannot_run_says_why(cli, matrix):
    wsl = matrix.tf_build("2.15", "wsl")
    assert matrix.support(wsl, "3.5") == "none"
    data = plan_json(
        cli, "--os", "windows", "--python", "3.11", "--gpu", "GTX 780", "--driver", "472.12", "--tf", "2.15"
    )
    assert data["kind"] == "cpu"
    lowest_code = wsl.compute_capabilities[0]
    assert any("WSL2" in r and lowest_code in r and "none for 3.5" in r for r in data["reasons"])


def test_a_pinned_patch_release_is_installed_exactly(cli):
    data = plan_json(
        cli, "--os", "linux", "--python", "3.10", "--gpu", "RTX 3060", "--driver", "550.54.14", "--tf", "2.14.0"
    )
    assert data["tensorflow"] == "2.14" and data["requirement"] == "tensorflow[and-cuda]==2.14.0"
    assert alternative(data, "cpu")["plan"]["requirement"] == "tensorflow-cpu==2.14.0"
    steps = " ".join(c["line"] for s in data["steps"] for c in s["commands"])
    assert '"tensorflow[and-cuda]==2.14.0"' in steps
    # A minor release still takes the series' newest patch.
    assert (
        plan_json(cli, "--os", "linux", "--python", "3.10", "--cpu", "--tf", "2.14")["requirement"]
        == "tensorflow-cpu==2.14.*"
    )


@pytest.mark.parametrize(
    "capability, version, shown",
    [
        ("9.x", "3.11.2", "Python 3.11"),
        ("８.６", "3.12.0rc1", "Python 3.12"),
        ("8.6", "three", "Python not given"),
        ("8.6", "2.7.18", "Python 2.7"),
    ],
)
def test_a_snapshot_with_odd_values_plans_without_crashing(cli, tmp_path, capability, version, shown):
    facts = Facts(
        python=PythonFacts(version=version, bits=64),
        platform=PlatformFacts(os="linux", system="Linux"),
        nvml=NvmlFacts(
            status=OK,
            driver_version="550.54.14",
            gpus=(NvmlGpu(index=0, name="Weird GPU", compute_capability=capability),),
        ),
    )
    path = tmp_path / "odd.json"
    path.write_text(to_json(facts))
    result = cli("plan", "--facts", str(path))
    assert result.code == 0, result.err
    assert shown in result.out.splitlines()[0]


def test_a_kepler_card_is_planned_within_its_last_driver_branch(cli):
    from envcheck.matrix import load_matrix

    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "Tesla K40")
    assert data["tensorflow"] == "2.14"  # the newest with code for 3.5; CUDA 12's 525+ drivers never reach Kepler
    assert load_matrix().supports_driver("3.5", data["driver_floor"]) is True
    newer = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 3090")
    assert newer["tensorflow"] != "2.14" and not any("branch, so the plan" in r for r in newer["reasons"])


def test_a_card_newer_than_the_builds_cuda_is_planned_with_its_own_first_driver(cli):
    """An RTX 5090 (12.0, first in CUDA 12.8 with driver 570.26) on TensorFlow built with CUDA
    12.5: the driver to install is the card's, not the 555 that CUDA 12.5 alone would ask for."""
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 5090", "--driver", "535.54")
    assert data["kind"] == "gpu" and data["driver_floor"] == "570.26"
    assert any("Compute capability 12.0 needs NVIDIA driver 570.26" in r and "CUDA 12.8" in r for r in data["reasons"])
    ada = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 4090", "--driver", "535.54")
    assert ada["driver_floor"] != "570.26" and not any("Compute capability 8.9 needs" in r for r in ada["reasons"])


@pytest.mark.parametrize(
    ("python", "gpu", "names_the_gpu"),
    [
        # TensorFlow 2.16+ supports Python 3.12 but does not run on Blackwell: the card is the limit.
        ("3.12", "GeForce RTX 5090", True),
        # No GPU build of any release supports Python 3.14: the card has nothing to do with it.
        ("3.14", "GeForce RTX 4090", False),
    ],
)
def test_the_python_reason_says_whether_the_gpu_or_the_os_limits_it(cli, matrix, python, gpu, names_the_gpu):
    data = plan_json(cli, "--os", "linux", "--python", python, "--gpu", gpu, "--driver", "580.65.06")
    reason = next(r for r in data["reasons"] if f"supports Python {python}" in r)
    assert reason.startswith("No TensorFlow GPU build for Linux")
    assert ("that runs on compute capability" in reason) is names_the_gpu
    assert data["python"] != python  # another Python is planned either way


@pytest.mark.parametrize(
    "gpu, tf, says",
    [
        # 12.0 is above every code the build lists; its PTX is the reason, not a minimum it misses
        ("RTX 5090", "2.20", ["PTX ISA", "predates compute capability 12.0"]),
        # below the build's lowest code
        ("GTX 780", "2.20", ["none for 3.5"]),
    ],
)
def test_a_pinned_release_that_does_not_run_on_the_gpu_says_why_in_the_verdicts_own_words(cli, gpu, tf, says):
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", gpu, "--tf", tf)
    assert data["kind"] == "cpu"
    reason = next(r for r in data["reasons"] if "does not run on compute capability" in r)
    assert all(word in reason for word in says), reason
    assert "or higher" not in reason  # never "no code for 12.0 (it needs 6.0 or higher)"


def test_a_pinned_release_that_runs_on_the_gpu_gives_no_such_reason(cli):
    data = plan_json(cli, "--os", "linux", "--python", "3.11", "--gpu", "RTX 4090", "--tf", "2.20")
    assert data["kind"] == "gpu"
    assert not any("does not run on" in r for r in data["reasons"])
