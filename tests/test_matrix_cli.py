"""`envcheck matrix`: the three queries, their JSON keys, and exit codes 0, 1 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.cli import main

MINIMAL = Path(__file__).parent / "fixtures" / "matrix" / "minimal.yaml"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["matrix", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_tf_json_keys_and_values(capsys):
    answer = run_json(capsys, "tf", "2.15")
    assert {
        "tf",
        "os",
        "python",
        "cuda",
        "cudnn",
        "compute_capabilities",
        "min_compute_capability",
        "libraries",
        "sources",
    } <= answer.keys()
    assert answer["tf"] == "2.15" and answer["os"] == "linux"
    assert answer["python"] == ["3.9", "3.10", "3.11"]
    assert (answer["cuda"], answer["cudnn"], answer["min_compute_capability"]) == ("12.2", "8.9", "5.0")
    assert "libcudart.so.12" in answer["libraries"]
    assert answer["sources"] and all(s.startswith("http") for s in answer["sources"])


def test_tf_windows_1_13(capsys):
    answer = run_json(capsys, "tf", "1.13.1", "--os", "windows")
    assert (answer["cuda"], answer["cudnn"]) == ("10.0", "7.4")
    assert "cudart64_100.dll" in answer["libraries"]


def test_tf_cpu_only_platform_has_null_cuda(capsys):
    answer = run_json(capsys, "tf", "2.11", "--os", "windows")
    assert answer["cuda"] is None and answer["cudnn"] is None and answer["gpu"] is False
    assert answer["compute_capabilities"] == [] and answer["min_compute_capability"] is None


def test_tf_human_output(capsys):
    code, out, _ = run(capsys, "tf", "2.10", "--os", "windows")
    assert code == 0
    assert out.startswith("TensorFlow 2.10 on windows: GPU build (CUDA 11.2, cuDNN 8.1)")
    assert "cudart64_110.dll" in out and "source:" in out


def test_wsl_answers_with_the_linux_build(capsys):
    assert run_json(capsys, "tf", "2.15", "--os", "wsl")["os"] == "linux"


def test_cuda_json(capsys):
    answer = run_json(capsys, "cuda", "11.2")
    assert answer["cuda"] == "11.2"
    assert answer["min_driver"] == {"linux": "460.27.03", "windows": "460.82"}
    assert "8.6" in answer["supported_architectures"] and "3.0" not in answer["supported_architectures"]
    assert answer["sources"]


def test_gpu_json(capsys):
    answer = run_json(capsys, "gpu", "GeForce", "GTX", "1060", "6GB")
    assert (answer["name"], answer["compute_capability"]) == ("GeForce GTX 1060", "6.1")
    assert "1.13" in answer["native"]["windows"]
    assert "2.21" in answer["native"]["linux"]


def test_gpu_that_only_runs_through_ptx(capsys):
    answer = run_json(capsys, "gpu", "rtx5090")
    assert answer["compute_capability"] == "12.0"
    assert answer["native"] == {}
    assert "2.15" in answer["ptx"]["linux"] and "2.16" not in answer["ptx"]["linux"]
    assert "2.21" not in answer["ptx"]["linux"]  # compiles for the card with a PTX ISA older than it
    assert "2.16" in answer["older_ptx_isa"]["linux"] and "2.21" in answer["older_ptx_isa"]["linux"]
    assert run_json(capsys, "gpu", "RTX 4090")["older_ptx_isa"] == {}


def test_gpu_too_old_for_any_release(capsys):
    code, out, _ = run(capsys, "gpu", "GeForce GTX 680")
    assert code == 0
    assert "compute capability 3.0" in out


@pytest.mark.parametrize(
    "argv, says",
    [
        (("tf", "3.0"), "TensorFlow 3.0 is not in the matrix (it covers TensorFlow 1.0 to 2.21)"),
        (("cuda", "10"), "CUDA 10 is not in the matrix"),
        (("cuda", "99.1"), "it covers CUDA"),
        (("gpu", "Voodoo 3"), "no GPU named 'Voodoo 3'"),
        (("gpu", "titan x"), "(nearest: "),
    ],
)
def test_not_found_exits_1_with_one_line(capsys, argv, says):
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert out == ""
    assert says in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [("tf", "banana"), ("tf", "2.15", "--os", "solaris"), ("cuda", "twelve"), ("tf",), ("frobnicate", "1")],
)
def test_malformed_arguments_exit_2(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("envcheck") and "Traceback" not in err


def test_user_matrix_file(capsys):
    answer = run_json(capsys, "tf", "2.10", "--matrix", str(MINIMAL))
    assert answer["compute_capabilities"] == ["sm_35", "sm_50", "compute_80"]
    code, _, err = run(capsys, "--matrix", str(MINIMAL), "tf", "2.15")
    assert code == 1 and "covers TensorFlow 2.10 to 2.11" in err


def test_release_without_a_build_for_that_os(capsys):
    code, _, err = run(capsys, "tf", "2.11", "--os", "linux", "--matrix", str(MINIMAL))
    assert code == 1
    assert "TensorFlow 2.11 has no linux build in the matrix (it has: windows)" in err


def test_broken_user_matrix_exits_2_naming_the_line(capsys, tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_text(MINIMAL.read_text().replace('cudnn: "8.1"', 'cudnn: "8.x"', 1))
    code, out, err = run(capsys, "tf", "2.10", "--matrix", str(bad))
    assert code == 2 and out == ""
    assert f"{bad}, line " in err and "tensorflow[0].linux.cudnn" in err


def test_gpu_ranges_do_not_end_at_a_patch_row(capsys):
    answer = run_json(capsys, "gpu", "A100")
    assert "2.15" in answer["ptx"]["linux"] and "2.15.0" not in answer["ptx"]["linux"]
    code, out, _ = run(capsys, "gpu", "A100")
    assert code == 0 and "on linux: TensorFlow 1.0-2.15\n" in out


def test_empty_matrix_path_exits_2(capsys):
    code, out, err = run(capsys, "tf", "2.15", "--matrix", "")
    assert code == 2 and out == "" and "--matrix needs a path" in err


def test_gpu_json_names_the_last_driver_branch_and_pci_ids(capsys):
    kepler = run_json(capsys, "gpu", "Tesla", "K80")
    assert (kepler["architecture"], kepler["last_driver_branch"], kepler["pci_ids"]) == ("Kepler", "470", ["102d"])
    ampere = run_json(capsys, "gpu", "NVIDIA A100-SXM4-80GB")
    assert ampere["last_driver_branch"] is None and "20b2" in ampere["pci_ids"]


def test_gpu_text_says_which_drivers_the_gpu_can_never_get(capsys):
    code, out, _ = run(capsys, "gpu", "GeForce GTX 1080")
    assert code == 0
    assert out.splitlines()[:2] == [
        "GeForce GTX 1080: compute capability 6.1 (Pascal)",
        "  last driver branch: 580 (drivers after it do not support Pascal GPUs)",
    ]
    code, out, _ = run(capsys, "gpu", "RTX 4090")
    assert code == 0 and "last driver branch" not in out


def test_gpu_laptop_part_that_has_no_desktop_twin(capsys):
    answer = run_json(capsys, "gpu", "RTX 4050")
    assert (answer["name"], answer["compute_capability"], answer["architecture"]) == (
        "GeForce RTX 4050 Laptop GPU",
        "8.9",
        "Ada Lovelace",
    )


@pytest.mark.parametrize(
    "name, says",
    [
        ("RTX 6000", "(nearest: RTX 6000 Ada Generation [Ada Lovelace, 8.9], Quadro RTX 6000 [Turing, 7.5]"),
        ("RTX 2065", "GeForce RTX 2060 [Turing, 7.5]"),
        ("Voodoo 3", "no GPU named 'Voodoo 3' in the matrix; look its compute capability up with `nvidia-smi"),
    ],
)
def test_unknown_gpu_is_one_line_with_the_nearest_products(capsys, name, says):
    code, out, err = run(capsys, "gpu", name)
    assert code == 1 and out == ""
    assert err.startswith("envcheck: error: unknown GPU: ")
    assert says in err and "https://developer.nvidia.com/cuda-gpus" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "query", [("tf", "2.15"), ("tf", "1.13", "--os", "windows"), ("cuda", "12.2"), ("gpu", "RTX 3090")]
)
@pytest.mark.parametrize("columns", [60, 80])
def test_text_fits_the_terminal_width(capsys, monkeypatch, query, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = run(capsys, *query)
    assert code == 0
    for line in out.splitlines():
        if len(line) > columns:
            # Only what cannot be broken runs past: a command to copy, a source URL, one long word.
            label, _, rest = (
                line.partition("  ") if not line.startswith(("note: ", "source: ")) else line.partition(" ")
            )
            assert line.startswith(("install ", "source: ")) or " " not in rest.strip(), line
    monkeypatch.setenv("COLUMNS", "200")
    _, wide, _ = run(capsys, *query)
    assert len(wide.splitlines()) <= len(out.splitlines())  # wider terminals get fewer, longer lines
