"""The planner's policy and steps against a small fixed matrix, so each rule of the choice is pinned
down whatever rows the bundled matrix gains. Numbers are real ones (NVIDIA's driver tables,
TensorFlow's tested build configurations); the 2.13 row's pip pins exist to exercise the
constraints-file path."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.version import Version

from envcheck.errors import NotFoundError, UsageError
from envcheck.facts import (
    MISSING,
    OK,
    SKIPPED,
    Facts,
    NvmlFacts,
    NvmlGpu,
    PciDevice,
    PciFacts,
    PlatformFacts,
    PythonFacts,
)
from envcheck.matrix import parse_matrix
from envcheck.planner import Target, apply_overrides, make_plan, target_from_facts
from envcheck.planner.options import CPU, DRIVER_INSTALL, DRIVER_OK, DRIVER_UNKNOWN, DRIVER_UPGRADE, GPU, driver_floor
from envcheck.planner.policy import choose
from envcheck.planner.steps import BASH, POWERSHELL
from envcheck.render.plan import render_json, render_script, render_text

MATRIX_YAML = """
schema: 2
sources:
  s: {url: "https://example.org/tables", title: test tables}
platform:
  windows_native_gpu_last: "2.10"
  tensorflow_gpu_last_real: "2.11"
  tensorflow_gpu_dummy: ">=2.12"
  and_cuda_first: "2.14"
  gpu_in_tensorflow_package_from: "2.1"
  macos_gpu: false
  sources: [s]
distributions:
- {name: tensorflow-gpu, cuda: always, sources: [s]}
- {name: tensorflow, cuda: release, sources: [s]}
- {name: tensorflow-cpu, cuda: never, sources: [s]}
tensorflow:
- tf: "1.15"
  distribution: tensorflow-gpu
  linux:
    python: ["3.5", "3.6", "3.7"]
    cuda: "10.0"
    cudnn: "7.4"
    compute_capabilities: [sm_35, sm_52, sm_60, sm_61, compute_70]
    libraries: [libcudart.so.10.0, libcudnn.so.7]
    sources: [s]
  windows:
    python: ["3.5", "3.6", "3.7"]
    cuda: "10.0"
    cudnn: "7.4"
    compute_capabilities: [sm_35, sm_52, sm_60, sm_61, compute_70]
    libraries: [cudart64_100.dll, cudnn64_7.dll]
    sources: [s]
- tf: "2.10"
  distribution: tensorflow
  linux:
    python: ["3.7", "3.8", "3.9", "3.10"]
    cuda: "11.2"
    cudnn: "8.1"
    compute_capabilities: [sm_35, sm_50, sm_60, sm_70, sm_75, compute_80]
    libraries: [libcudart.so.11.0, libcudnn.so.8]
    sources: [s]
  windows:
    python: ["3.7", "3.8", "3.9", "3.10"]
    cuda: "11.2"
    cudnn: "8.1"
    compute_capabilities: [sm_35, sm_50, sm_60, sm_70, sm_75, compute_80]
    libraries: [cudart64_110.dll, cublas64_11.dll, cudnn64_8.dll]
    sources: [s]
  macos:
    python: ["3.7", "3.8", "3.9", "3.10"]
    cuda: null
    sources: [s]
- tf: "2.13"
  distribution: tensorflow
  linux:
    python: ["3.8", "3.9", "3.10", "3.11"]
    cuda: "11.8"
    cudnn: "8.6"
    compute_capabilities: [sm_35, sm_50, sm_60, sm_70, sm_75, compute_80]
    pip_cuda:
      extra: and-cuda
      packages:
        nvidia-cudnn-cu11: "==8.6.0.163"
        nvidia-cuda-runtime-cu11: "==11.8.89"
    sources: [s]
  windows:
    python: ["3.8", "3.9", "3.10", "3.11"]
    cuda: null
    sources: [s]
- tf: "2.16"
  distribution: tensorflow
  linux:
    python: ["3.9", "3.10", "3.11", "3.12"]
    cuda: "12.3"
    cudnn: "8.9"
    compute_capabilities: [sm_50, sm_60, sm_70, sm_80, compute_90]
    libraries: [libcudart.so.12, libcudnn.so.8]
    pip_cuda:
      extra: and-cuda
      packages:
        nvidia-cudnn-cu12: "==8.9.7.29"
    sources: [s]
  windows:
    python: ["3.9", "3.10", "3.11", "3.12"]
    cuda: null
    sources: [s]
  macos:
    python: ["3.9", "3.10", "3.11", "3.12"]
    cuda: null
    sources: [s]
cuda:
- {version: "10.0", min_driver: {linux: "410.48", windows: "411.31"}, architectures: ["3.0", "3.5", "6.1", "7.5"], download_url: "https://developer.nvidia.com/cuda-10.0-download-archive", sources: [s]}
- {version: "11.2", min_driver: {linux: "460.27.03", windows: "460.82"}, architectures: ["3.5", "8.6"], download_url: "https://developer.nvidia.com/cuda-11.2.0-download-archive", sources: [s]}
- {version: "11.8", min_driver: {linux: "520.61.05", windows: "520.06"}, architectures: ["3.5", "9.0"], sources: [s]}
- {version: "12.3", min_driver: {linux: "545.23.06", windows: "545.84"}, architectures: ["5.0", "9.0"], sources: [s]}
cuda_majors:
- {major: 11, minor_compat_floor: {linux: "450.80.02", windows: "452.39"}, sources: [s]}
- {major: 12, minor_compat_floor: {linux: "525.60.13", windows: "527.41"}, sources: [s]}
cudnn:
- {version: "7.4", cuda: ["10.0"], download_url: "https://developer.nvidia.com/rdp/cudnn-archive", sources: [s]}
- {version: "8.1", cuda: ["11.2"], sources: [s]}
- {version: "8.6", cuda: ["11.8"], sources: [s]}
- {version: "8.9", cuda: ["12.3"], sources: [s]}
architectures:
- {name: Kepler, compute_capabilities: ["3.0", "3.5"], last_driver_branch: "470", sources: [s]}
- {name: Pascal, compute_capabilities: ["6.1"], last_driver_branch: "580", sources: [s]}
- {name: Ada Lovelace, compute_capabilities: ["8.9"], last_driver_branch: null, sources: [s]}
- {name: Hopper, compute_capabilities: ["9.0"], last_driver_branch: null, sources: [s]}
gpus:
- {architecture: Kepler, compute_capability: "3.0", products: [GeForce GTX 680], sources: [s]}
- {architecture: Kepler, compute_capability: "3.5", products: [GeForce GTX 780], sources: [s]}
- {architecture: Pascal, compute_capability: "6.1", products: [GeForce GTX 1060], sources: [s]}
- {architecture: Ada Lovelace, compute_capability: "8.9", products: [GeForce RTX 4090], sources: [s]}
- {architecture: Hopper, compute_capability: "9.0", products: [H100], sources: [s]}
"""


@pytest.fixture(scope="module")
def matrix():
    return parse_matrix(MATRIX_YAML, Path("test-matrix.yaml"))


def machine(matrix, **flags) -> Target:
    """A target from command-line values only (another machine)."""
    return apply_overrides(None, matrix, **flags)


def alternative(choice, key):
    return next((a for a in choice.alternatives if a.key == key), None)


# --- the recommendation --------------------------------------------------------------------------


def test_setup_post_case_recommends_the_last_native_windows_release_and_a_driver_upgrade(matrix):
    choice = choose(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="417.35"))
    o = choice.option
    assert (o.kind, o.os, o.tf, o.python, o.cuda, o.cudnn) == (GPU, "windows", "2.10", "3.7", "11.2", "8.1")
    assert str(o.driver_floor) == "452.39" and o.driver_status == DRIVER_UPGRADE
    keep = alternative(choice, "keep-driver").option
    assert (keep.tf, keep.cuda, str(keep.driver_floor), keep.driver_status) == ("1.15", "10.0", "411.31", DRIVER_OK)
    assert alternative(choice, "wsl2").option.tf == "2.16"
    assert alternative(choice, "cpu").option.kind == CPU
    assert any("2.10" in r and "native Windows" in r for r in choice.reasons)
    assert any("417.35 is older" in r for r in choice.reasons)


def test_a_driver_that_is_new_enough_needs_no_upgrade_and_no_keep_driver_alternative(matrix):
    choice = choose(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="452.39"))
    assert choice.option.tf == "2.10" and choice.option.driver_status == DRIVER_OK
    assert alternative(choice, "keep-driver") is None


def test_no_release_runs_on_a_very_old_driver(matrix):
    choice = choose(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="400.00"))
    keep = alternative(choice, "keep-driver")
    assert keep.option is None and "must be upgraded" in keep.text


def test_linux_new_card_gets_the_newest_release_with_the_cuda_extra(matrix):
    plan = make_plan(matrix, machine(matrix, os="linux", python="3.11", gpu="RTX 4090", driver="550.54.14"))
    o = plan.option
    assert (o.tf, o.cuda_extra, o.support, o.driver_status) == ("2.16", "and-cuda", "native", DRIVER_OK)
    assert str(o.driver_floor) == "525.60.13"  # CUDA 12's minor-version floor, not 12.3's own 545.23.06
    lines = [l.line for s in plan.steps for l in s.lines]
    assert any('"tensorflow[and-cuda]==2.16.*"' in l for l in lines)
    assert not any("LD_LIBRARY_PATH" in l for l in lines)
    assert alternative(plan.choice, "newer-python") is None  # 2.16 is already the newest


def test_an_older_python_gets_its_newest_release_and_a_newer_python_alternative(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.8", gpu="RTX 4090", driver="550.54.14"))
    assert choice.option.tf == "2.13" and not choice.option.python_change
    newer = alternative(choice, "newer-python")
    assert newer.option.tf == "2.16" and "3.9-3.12" in newer.text


def test_ptx_only_card_needs_the_toolkits_own_driver_minimum(matrix):
    # H100 (9.0) runs 2.16 only through compute_90 PTX; JIT needs the full CUDA 12.3 driver.
    ptx = choose(matrix, machine(matrix, os="linux", python="3.11", gpu="H100", driver="535.104.05")).option
    assert ptx.support == "ptx" and str(ptx.driver_floor) == "545.23.06" and ptx.driver_status == DRIVER_UPGRADE
    native = choose(matrix, machine(matrix, os="linux", python="3.11", gpu="RTX 4090", driver="535.104.05")).option
    assert native.support == "native" and native.driver_status == DRIVER_OK
    assert any("PTX" in r for r in choose(matrix, machine(matrix, os="linux", python="3.11", gpu="H100")).reasons)


def test_driver_floor_applies_minor_version_compatibility_from_cuda_11_only(matrix):
    b10 = matrix.tf_build("1.15", "linux")
    b11 = matrix.tf_build("2.10", "linux")
    assert str(driver_floor(matrix, b10, "linux", "native")) == "410.48"
    assert str(driver_floor(matrix, b11, "linux", "native")) == "450.80.02"
    assert str(driver_floor(matrix, b11, "linux", "ptx")) == "460.27.03"
    assert str(driver_floor(matrix, b11, "windows", "native")) == "452.39"


def test_wsl_compares_the_windows_driver_with_windows_minimums(matrix):
    # 526.98 passes the Linux floor of CUDA 12 (525.60.13) but not the Windows one (527.41).
    wsl = choose(matrix, machine(matrix, os="wsl", python="3.11", gpu="RTX 4090", driver="526.98")).option
    linux = choose(matrix, machine(matrix, os="linux", python="3.11", gpu="RTX 4090", driver="526.98")).option
    assert (wsl.tf, str(wsl.driver_floor), wsl.driver_status) == ("2.16", "527.41", DRIVER_UPGRADE)
    assert (linux.tf, str(linux.driver_floor), linux.driver_status) == ("2.16", "525.60.13", DRIVER_OK)


def test_kepler_card_gets_the_newest_release_that_still_carries_its_code(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.10", gpu="GeForce GTX 780", driver="470.82.01"))
    assert (choice.option.kind, choice.option.tf, choice.option.support) == (GPU, "2.13", "native")
    assert alternative(choice, "cpu").option.tf == "2.16"


def test_kepler_card_with_a_python_too_new_for_its_releases_changes_python(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.12", gpu="GeForce GTX 780"))
    assert choice.option.tf == "2.13" and choice.option.python == "3.11" and choice.option.python_change
    assert any("No TensorFlow GPU build" in r and "Python 3.12" in r for r in choice.reasons)
    assert alternative(choice, "cpu").option.tf == "2.16"  # the CPU keeps Python 3.12


def test_a_card_too_old_for_every_release_gets_the_cpu_plan(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.11", gpu="GeForce GTX 680"))
    assert choice.option.kind == CPU and choice.option.tf == "2.16"
    assert any("compute capability 3.0" in r and "3.5" in r for r in choice.reasons)
    assert "compute capability 5.0" in alternative(choice, "newer-gpu").text


def test_python_newer_than_every_release_is_replaced_by_the_newest_supported(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.13", gpu="RTX 4090", driver="550.54.14"))
    assert choice.option.tf == "2.16" and choice.option.python == "3.12" and choice.option.python_change


def test_32_bit_python_is_never_planned_for(matrix):
    target = replace(
        machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="452.39"), python_bits=32
    )
    choice = choose(matrix, target)
    assert choice.option.tf == "2.10" and choice.option.python_change
    assert any("32-bit" in w for w in choice.warnings)
    steps = make_plan(matrix, target).steps
    assert any(s.title == "Install 64-bit Python 3.10" for s in steps)


def test_macos_gets_the_cpu_plan_and_the_metal_pointer(matrix):
    choice = choose(matrix, machine(matrix, os="macos", python="3.11"))
    assert (choice.option.kind, choice.option.tf) == (CPU, "2.16")
    assert alternative(choice, "apple-metal") is not None
    assert any("macOS" in r for r in choice.reasons)


def test_cpu_flag_gives_the_cpu_plan_with_plain_tensorflow(matrix):
    plan = make_plan(matrix, machine(matrix, os="linux", python="3.11", cpu=True))
    assert plan.option.kind == CPU and plan.option.tf == "2.16"
    lines = [l.line for s in plan.steps for l in s.lines]
    assert any('"tensorflow==2.16.*"' in l for l in lines)
    assert not any("and-cuda" in l or "nvidia-smi" in l for l in lines)


def test_unknown_gpu_still_plans_for_the_gpu_but_says_the_capability_was_not_checked(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.11"))
    assert choice.option.kind == GPU and choice.option.support is None
    assert choice.option.driver_status == DRIVER_UNKNOWN
    assert any("not known" in r and "5.0" in r for r in choice.reasons)


# --- a pinned release ----------------------------------------------------------------------------


def test_pinned_release_beyond_native_windows_gpu_moves_to_wsl2(matrix):
    choice = choose(
        matrix, machine(matrix, os="windows", python="3.11", gpu="GeForce GTX 1060", driver="537.13", tf="2.16")
    )
    o = choice.option
    assert (o.kind, o.os, o.tf, o.cuda_extra) == (GPU, "wsl", "2.16", "and-cuda")
    native = alternative(choice, "native-windows").option
    assert (native.os, native.tf, native.python) == ("windows", "2.10", "3.10")
    assert alternative(choice, "cpu").option.os == "windows"


def test_pinned_release_that_drops_the_card_gives_the_cpu_and_the_last_release_for_it(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.11", gpu="GeForce GTX 780", tf="2.16"))
    assert choice.option.kind == CPU and choice.option.tf == "2.16"
    assert alternative(choice, "older-release").option.tf == "2.13"


def test_pinned_release_with_the_wrong_python_names_the_python_to_install(matrix):
    choice = choose(matrix, machine(matrix, os="linux", python="3.7", gpu="RTX 4090", tf="2.16.1"))
    assert choice.option.tf == "2.16" and choice.option.python == "3.12" and choice.option.python_change
    assert any("needs Python 3.9-3.12" in r for r in choice.reasons)


def test_pinned_release_not_in_the_matrix_is_not_guessed(matrix):
    with pytest.raises(NotFoundError, match="not in the compatibility matrix"):
        choose(matrix, machine(matrix, os="linux", tf="9.9"))
    with pytest.raises(NotFoundError, match="no TensorFlow 1.15 build for macOS"):
        choose(matrix, machine(matrix, os="macos", tf="1.15"))


# --- the steps -----------------------------------------------------------------------------------


def _lines(plan, shell=None):
    return [l.line for s in plan.steps for l in s.lines if shell is None or l.shell == shell]


def test_release_before_the_cuda_extra_gets_a_constraints_file_and_the_wheel_library_path(matrix):
    plan = make_plan(matrix, machine(matrix, os="linux", python="3.11", gpu="GeForce GTX 1060", tf="2.13"))
    lines = _lines(plan)
    assert plan.option.cuda_extra is None  # 2.13 predates tensorflow[and-cuda]
    assert any("tf-constraints.txt" in l and "'nvidia-cudnn-cu11==8.6.0.163'" in l for l in lines)
    assert any(
        'pip install -c tf-constraints.txt "tensorflow==2.13.*" nvidia-cuda-runtime-cu11 nvidia-cudnn-cu11' in l
        for l in lines
    )
    assert any(l.startswith("export LD_LIBRARY_PATH=") and "nvidia" in l for l in lines)


def test_release_without_cuda_wheels_on_linux_gets_the_toolkit_and_cudnn_downloads(matrix):
    plan = make_plan(
        matrix, machine(matrix, os="linux", python="3.10", gpu="GeForce GTX 1060", driver="470.82.01", tf="2.10")
    )
    assert plan.option.kind == GPU and plan.option.cuda_extra is None
    links = [s.url for s in plan.steps]
    assert "https://developer.nvidia.com/cuda-11.2.0-download-archive" in links
    assert any(l.startswith("export LD_LIBRARY_PATH=/usr/local/cuda-11.2/lib64") for l in _lines(plan))
    assert any('"tensorflow==2.10.*"' in l for l in _lines(plan))


def test_native_windows_steps_name_the_exact_dlls_folders_and_path(matrix):
    plan = make_plan(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="417.35"))
    lines = _lines(plan, POWERSHELL)
    assert not _lines(plan, BASH)
    assert any(r"CUDA\v11.2" in l for l in lines)
    assert any("cudart64_110.dll" in l and "Test-Path" in l for l in lines)
    assert any("cudnn64_8.dll" in l and "Test-Path" in l for l in lines)
    assert any(l.startswith('Copy-Item "$cudnn\\bin\\*"') for l in lines)
    assert any("extras\\CUPTI\\lib64" in l and l.startswith("$env:Path") for l in lines)
    assert any('pip install "tensorflow==2.10.*"' in l for l in lines)
    assert any('[version]"452.39"' in l for l in lines)
    titles = [s.title for s in plan.steps]
    assert titles[0].startswith("Upgrade the NVIDIA driver from 417.35 to 452.39")
    assert any("Visual C++" in t for t in titles)


def test_native_windows_1x_release_installs_tensorflow_gpu_and_checks_with_the_1x_api(matrix):
    plan = make_plan(
        matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="417.35", tf="1.15")
    )
    lines = _lines(plan)
    assert any('"tensorflow-gpu==1.15.*"' in l for l in lines)
    assert any("cudart64_100.dll" in l for l in lines)
    assert any("is_gpu_available" in l for l in lines) and not any("list_physical_devices" in l for l in lines)


def test_wsl2_steps_split_windows_and_linux_sides_and_install_no_linux_driver(matrix):
    plan = make_plan(matrix, machine(matrix, os="wsl", python="3.11", gpu="RTX 4090", driver="526.98"))
    sides = {s.side for s in plan.steps}
    assert sides == {"windows", "wsl"}
    windows = [l.line for s in plan.steps if s.side == "windows" for l in s.lines]
    inside = [l.line for s in plan.steps if s.side == "wsl" for l in s.lines]
    assert any("wsl --install" in l for l in windows) and any('[version]"527.41"' in l for l in windows)
    assert any("nvidia-smi" == l for l in inside) and any("/usr/lib/wsl/lib/libcuda.so.1" in l for l in inside)
    assert any('"tensorflow[and-cuda]==2.16.*"' in l for l in inside)
    assert not any("apt" in l and "cuda" in l for l in inside)


def test_every_bash_script_parses(matrix, tmp_path):
    cases = [
        dict(os="linux", python="3.11", gpu="RTX 4090", driver="550.54.14"),
        dict(os="linux", python="3.10", gpu="GeForce GTX 1060"),
        dict(os="linux", python="3.11", gpu="GeForce GTX 1060", tf="2.13"),
        dict(os="wsl", python="3.11", gpu="RTX 4090", driver="526.98"),
        dict(os="macos", python="3.11"),
        dict(os="linux", cpu=True),
    ]
    for i, flags in enumerate(cases):
        script = render_script(make_plan(matrix, machine(matrix, **flags)), BASH)
        path = tmp_path / f"plan{i}.sh"
        path.write_text(script)
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, (flags, proc.stderr)
        assert script.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in script


def test_scripts_comment_every_command_and_check_native_programs_in_powershell(matrix):
    plan = make_plan(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="417.35"))
    script = render_script(plan, POWERSHELL).splitlines()
    commands = [i for i, line in enumerate(script) if line and not line.startswith("#")]
    for i in commands[1:-1]:  # after $ErrorActionPreference, before the closing echo
        assert script[i - 1].startswith("#"), script[i]
    venv = next(line for line in script if line.startswith("py -3.7 -m venv"))
    assert venv.endswith('if ($LASTEXITCODE -ne 0) { throw "failed (exit code $LASTEXITCODE)" }')
    persistent = next(line for line in script if "SetEnvironmentVariable" in line)
    assert persistent.startswith("# ")  # changing the user's PATH for good is opt-in


def test_script_for_the_wrong_shell_is_a_usage_error(matrix):
    with pytest.raises(UsageError, match="--format powershell"):
        render_script(make_plan(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060")), BASH)
    with pytest.raises(UsageError, match="--format bash"):
        render_script(make_plan(matrix, machine(matrix, os="linux", python="3.11", cpu=True)), POWERSHELL)
    # WSL2 has both sides: each shell gets its own side as commands, the other as comments.
    wsl = make_plan(matrix, machine(matrix, os="wsl", python="3.11", gpu="RTX 4090"))
    ps = render_script(wsl, POWERSHELL)
    assert "\nwsl --install -d Ubuntu" in ps and "\n#   nvidia-smi" in ps


def test_json_has_the_documented_keys(matrix):
    import json

    data = json.loads(
        render_json(
            make_plan(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="417.35"))
        )
    )
    for key in ("tensorflow", "python", "cuda", "cudnn", "driver_floor", "steps", "alternatives", "reasons"):
        assert key in data
    assert (data["tensorflow"], data["cuda"], data["cudnn"], data["driver_floor"]) == ("2.10", "11.2", "8.1", "452.39")
    keep = next(a for a in data["alternatives"] if a["key"] == "keep-driver")
    assert keep["plan"]["cuda"] == "10.0" and keep["plan"]["requirement"] == "tensorflow-gpu==1.15.*"


def test_text_names_the_decision_and_the_upgrade(matrix):
    text = render_text(
        make_plan(matrix, machine(matrix, os="windows", python="3.7", gpu="GeForce GTX 1060", driver="417.35"))
    )
    assert "Recommended: TensorFlow 2.10 on the GPU, Windows (native)" in text
    assert "452.39 or newer (you have 417.35: upgrade it)" in text
    assert "Keep driver 417.35" in text


# --- warnings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, warned",
    [(("sse4_1", "sse4_2"), True), (("avx", "avx2", "fma"), False), (None, False)],
)
def test_a_cpu_without_avx_is_warned_about(matrix, flags, warned):
    target = replace(machine(matrix, os="linux", python="3.11", cpu=True), cpu_flags=flags)
    assert any("AVX" in w for w in choose(matrix, target).warnings) is warned


# --- the machine, from facts and flags -----------------------------------------------------------


def _facts(**sections) -> Facts:
    base = dict(
        python=PythonFacts(version="3.10.12", bits=64),
        platform=PlatformFacts(os="linux", cpu_flags=("avx", "avx2")),
    )
    base.update(sections)
    return Facts(**base)


def test_target_from_nvml_takes_the_lowest_capability_and_the_driver(matrix):
    facts = _facts(
        nvml=NvmlFacts(
            status=OK,
            driver_version="535.104.05",
            gpus=(
                NvmlGpu(index=0, name="NVIDIA GeForce RTX 4090", compute_capability="8.9"),
                NvmlGpu(index=1, name="NVIDIA GeForce GTX 1060 6GB", compute_capability="6.1"),
            ),
        )
    )
    t = target_from_facts(facts, matrix)
    assert (t.has_gpu, t.compute_capability, str(t.driver), t.python, t.os) == (
        True,
        Version("6.1"),
        "535.104.05",
        "3.10",
        "linux",
    )
    assert t.origin("gpu") == "NVML" and t.origin("driver") == "NVML"
    assert choose(matrix, t).option.tf == "2.16"


def test_target_from_pci_without_driver_asks_for_a_driver_install(matrix):
    facts = _facts(
        pci=PciFacts(
            status=OK,
            devices=(
                PciDevice(
                    address="0000:01:00.0",
                    vendor_id="0x10de",
                    device_id="0x1c03",
                    class_code="0x030000",
                    name="GeForce GTX 1060",
                ),
            ),
        ),
    )
    t = target_from_facts(facts, matrix)
    assert t.has_gpu and t.compute_capability == Version("6.1") and t.driver is None
    plan = make_plan(matrix, t)
    assert plan.option.driver_status == DRIVER_INSTALL
    assert plan.steps[0].title.startswith("Install the NVIDIA driver")


@pytest.mark.parametrize("status", [MISSING, OK])
def test_target_with_no_nvidia_device_plans_for_the_cpu(matrix, status):
    t = target_from_facts(_facts(pci=PciFacts(status=status)), matrix)
    assert t.has_gpu is False
    choice = choose(matrix, t)
    assert choice.option.kind == CPU and any("No NVIDIA GPU was found" in r for r in choice.reasons)


def test_target_whose_gpu_probes_did_not_run_leaves_the_gpu_unknown(matrix):
    t = target_from_facts(_facts(), matrix)
    assert t.has_gpu is None and any("did not run" in n and "--gpu" in n for n in t.notes)


def test_target_without_driver_or_pci_bus_leaves_the_gpu_unknown(matrix):
    # Windows: no sysfs, and NVML did not load: a GPU without a driver looks the same as none.
    facts = _facts(pci=PciFacts(status=SKIPPED), nvml=NvmlFacts(status=MISSING, error_kind="library_not_found"))
    t = target_from_facts(facts, matrix)
    assert t.has_gpu is None and any("no NVIDIA driver answered" in n for n in t.notes)


def test_flags_override_facts_and_say_so(matrix):
    t = target_from_facts(_facts(pci=PciFacts(status=OK)), matrix)
    t = apply_overrides(t, matrix, gpu="RTX 4090", driver="550.54.14", python="3.11")
    assert (t.has_gpu, t.compute_capability, str(t.driver), t.python) == (True, Version("8.9"), "550.54.14", "3.11")
    assert t.origin("gpu") == "--gpu" and t.origin("python") == "--python"


@pytest.mark.parametrize(
    "flags, message",
    [
        (dict(python="2.7"), "--python 2.7"),
        (dict(python="three"), "--python three"),
        (dict(compute_capability="8"), "--compute-capability 8"),
        (dict(driver="latest"), "--driver latest"),
        (dict(cpu=True, driver="550.54.14"), "--cpu"),
        (dict(gpu="GeForce GTX 1060", compute_capability="7.5"), "6.1, not 7.5"),
        (dict(tf="newest"), "not a version"),
        (dict(os="beos"), "--os beos"),
    ],
)
def test_bad_values_are_usage_errors(matrix, flags, message):
    with pytest.raises(UsageError, match=message.replace(".", r"\.")):
        machine(matrix, **flags)


def test_unknown_gpu_name_is_not_found_with_suggestions(matrix):
    with pytest.raises(NotFoundError, match="--compute-capability") as info:
        machine(matrix, gpu="GTX 10")
    assert "GeForce GTX 1060" in str(info.value)


def test_pinned_release_that_needs_a_newer_driver_offers_keeping_it(matrix):
    choice = choose(
        matrix, machine(matrix, os="linux", python="3.10", gpu="GeForce GTX 1060", driver="440.33", tf="2.10")
    )
    assert choice.option.driver_status == DRIVER_UPGRADE
    assert alternative(choice, "keep-driver").option.tf == "1.15"


def test_a_driver_version_on_a_machine_without_gpu_plans_for_an_unknown_gpu(matrix):
    t = target_from_facts(_facts(pci=PciFacts(status=MISSING)), matrix)
    t = apply_overrides(t, matrix, driver="550.54.14")
    assert t.has_gpu is None and choose(matrix, t).option.kind == GPU


def test_windows_machine_planned_for_wsl2_keeps_gpu_and_driver_but_not_python(matrix):
    from envcheck.planner.target import retarget

    facts = _facts(
        platform=PlatformFacts(os="windows"),
        python=PythonFacts(version="3.7.9", bits=64),
        nvml=NvmlFacts(
            status=OK,
            driver_version="531.41",
            gpus=(NvmlGpu(index=0, name="GeForce RTX 4090", compute_capability="8.9"),),
        ),
    )
    windows = target_from_facts(facts, matrix)
    wsl = retarget(windows, "wsl")
    assert (wsl.os, wsl.python, str(wsl.driver), wsl.compute_capability) == ("wsl", None, "531.41", Version("8.9"))
    assert retarget(windows, "windows") is windows
    assert retarget(windows, "linux") is None  # another machine: nothing of this one applies
    assert choose(matrix, wsl).option.tf == "2.16"
