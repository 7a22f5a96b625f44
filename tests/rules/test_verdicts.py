"""Verdicts on realistic machines: the first broken link, its consequences, and the two ways forward."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

from envcheck.findings import BROKEN, CPU_ONLY, DEGRADED, GPU_READY, NOT_INSTALLED, Severity
from envcheck.matrix import load_matrix
from envcheck.verdict import judge

from . import builders as b
from .builders import TensorflowFacts

REPO = Path(__file__).resolve().parents[2]


def by_id(report):
    return {f.id: f for f in report.findings}


def pip_steps(steps):
    return [c.pip_args for s in steps for c in s.commands if c.pip_args]


def test_setup_post_names_the_missing_dll_and_the_cuda_to_install():
    report = judge(b.setup_post())
    verdict = report.verdict
    assert verdict.status == BROKEN  # the import fails: not even the CPU works
    assert verdict.finding_id == "EC-LIB-001" and verdict.first_broken_link == "libraries"
    assert "cudart64_100.dll" in verdict.line and "CUDA 10.0" in verdict.line
    fix = by_id(report)["EC-LIB-001"].fix
    # The download page of the version TF 1.13 needs, not the 9.0 page TF's own message points to.
    assert fix.url == load_matrix().cuda("10.0").download_url
    assert "10.0" in fix.url and "cuda-90" not in fix.url
    assert any("v10.0\\bin" in c.line and c.shell == "powershell" for c in fix.commands)
    # The failed import, the CUDA 9.0 copies and the other CUDA 10.0 DLLs are consequences, not news.
    found = by_id(report)
    for consequence in ("EC-TF-006", "EC-LIB-003", "EC-LIB-008", "EC-LIB-005"):
        assert found[consequence].caused_by == "EC-LIB-001", consequence
    assert "cudart64_90.dll" in found["EC-LIB-003"].title
    assert report.exit_code == 1


def test_setup_post_ways_forward():
    verdict = judge(b.setup_post()).verdict
    # GPU path, the guide's order: CUDA 10.0, then the cuDNN for CUDA 10.0 (the copy in the 9.0
    # folder is 9.0's); the consequences (the import error, the other DLLs) are no steps.
    assert [s.text.split(":")[0] for s in verdict.gpu_path] == ["EC-LIB-001", "EC-LIB-002"]
    cudnn = verdict.gpu_path[1]
    assert "cuDNN 7.4 for CUDA 10.0" in cudnn.text and cudnn.url == load_matrix().cudnn("7.4").download_url
    assert any("CUDA\\v10.0" in c.line and c.line.startswith("Copy-Item") for c in cudnn.commands)
    # CPU path for the probed interpreter: drop the GPU-only package, install the CPU build of the same release.
    assert pip_steps(verdict.cpu_path) == [("uninstall", "-y", "tensorflow-gpu"), ("install", "tensorflow==1.13.1")]
    lines = [c.line for s in verdict.cpu_path for c in s.commands]
    assert lines[0].startswith("& 'C:\\Users\\alex\\AppData\\Local\\Programs\\Python\\Python37\\python.exe' -m pip")
    # TensorFlow 1.13's plain "tensorflow" package has no CUDA: nothing to hide the GPU from.
    assert not any("CUDA_VISIBLE_DEVICES" in line for line in lines)


def test_setup_post_after_installing_cuda_10_and_cudnn_is_clear_up_to_tensorflow():
    report = judge(b.cuda_10_installed(b.setup_post()))
    assert not [f for f in report.findings if f.severity is Severity.ERROR]
    assert report.verdict.status == GPU_READY and "--quick" in report.verdict.line


def test_four_gpu_server_is_ready():
    report = judge(b.server())
    assert report.verdict.status == GPU_READY
    assert report.verdict.line == "GPU ready (4 GPUs)"
    assert report.findings == () and report.exit_code == 0
    assert report.verdict.gpu_path == () and report.verdict.cpu_path == ()
    assert {link.status for link in report.links} == {"ok"}


def test_this_machine_runs_on_the_cpu_and_that_is_a_finished_state():
    report = judge(b.no_gpu())
    assert report.verdict.status == CPU_ONLY and report.exit_code == 0
    assert report.verdict.line == "CPU only: no NVIDIA GPU on this machine; TensorFlow runs on the CPU (nothing to fix)"
    assert by_id(report)["EC-GPU-001"].severity is Severity.INFO
    toolkit = by_id(report)["EC-LIB-005"]
    assert toolkit.severity is Severity.INFO and "CUDA 13.0" in toolkit.title and "12.5" in toolkit.title
    statuses = {link.name: link.status for link in report.links}
    assert statuses["driver"] == "skipped" and statuses["placement"] == "skipped"  # nothing to place on a GPU
    # The CUDA build runs on the CPU; the only step is optional: the same release without CUDA,
    # which prints no CUDA start-up error (CUDA_VISIBLE_DEVICES would not silence it).
    (step,) = report.verdict.cpu_path
    assert step.text.startswith("Optional") and pip_steps((step,)) == [
        ("uninstall", "-y", "tensorflow"),
        ("install", "tensorflow-cpu==2.21.0"),
    ]
    assert not any("CUDA_VISIBLE_DEVICES" in c.line for c in step.commands)


def test_require_gpu_turns_no_usable_gpu_into_exit_1():
    assert judge(b.no_gpu(), require_gpu=True).exit_code == 1
    assert judge(b.server(), require_gpu=True).exit_code == 0


def test_a_gpu_that_is_there_but_unusable_is_broken_exit_1_and_is_hidden_on_the_cpu_path():
    facts = b.tf_sees_no_gpu(
        b.change(b.server(), {"nvml.driver_version": "450.80.02", "driver.version": "450.80.02"}),
        "E cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    )
    report = judge(facts)
    assert report.verdict.status == BROKEN and report.exit_code == 1 and not report.verdict.finished
    assert any("CUDA_VISIBLE_DEVICES=-1" in c.line for s in report.verdict.cpu_path for c in s.commands)


def test_a_driver_too_old_is_the_cause_of_tf_seeing_no_gpu():
    facts = b.tf_sees_no_gpu(
        b.change(b.server(), {"nvml.driver_version": "450.80.02", "driver.version": "450.80.02"}),
        "E cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    )
    report = judge(facts)
    found = by_id(report)
    assert report.verdict.status == BROKEN and report.verdict.finding_id == "EC-DRV-001"
    assert "525.60.13" in report.verdict.line  # the CUDA 12 floor from the matrix
    assert found["EC-PLC-001"].caused_by == "EC-DRV-001"
    # Which older TF runs on this driver as it is, for this Python (answered by the matrix).
    matrix = load_matrix()
    older = [
        x
        for x in matrix.tf_releases("linux")
        if x.gpu
        and x.cuda
        and x.supports_python("3.11")
        and (matrix.minor_compat_floor(x.cuda.major, "linux") or matrix.min_driver(x.cuda, "linux"))
        <= Version("450.80.02")
    ]
    fix = found["EC-DRV-001"].fix
    if older:
        newest = max(older, key=lambda x: x.tf)
        assert f"Or keep driver 450.80.02 and install TensorFlow {newest.tf.major}.{newest.tf.minor}" in fix.text
    else:
        assert "Or keep driver" not in fix.text
    assert all(c.pip_args is None for c in fix.commands), "an alternative must not be run by --apply"


def test_driver_alternative_is_the_newest_release_the_driver_runs():
    # TF 2.4 wants CUDA 11.0 (driver 450.80.02 at least); driver 415 runs CUDA 10.0 releases.
    facts = b.with_tf(b.quick(b.server()), "tensorflow", "2.4.4")
    facts = b.change(facts, {"python.version": "3.7.9", "nvml.driver_version": "415.27", "driver.version": "415.27"})
    matrix = load_matrix()
    fix = by_id(judge(facts))["EC-DRV-001"].fix
    runs = [
        x
        for x in matrix.tf_releases("linux")
        if x.gpu
        and x.cuda
        and x.supports_python("3.7")
        and (matrix.minor_compat_floor(x.cuda.major, "linux") or matrix.min_driver(x.cuda, "linux"))
        <= Version("415.27")
    ]
    assert runs, "the matrix should hold a release built for a CUDA that driver 415 runs"
    newest = max(runs, key=lambda x: x.tf)
    assert f"install TensorFlow {newest.tf.major}.{newest.tf.minor} (built for CUDA {newest.cuda})" in fix.text


def test_hidden_gpus_are_the_reason_not_a_placement_failure():
    facts = b.tf_sees_no_gpu(
        b.with_env(b.server(), CUDA_VISIBLE_DEVICES=""),
        "E cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_NO_DEVICE",
    )
    report = judge(facts)
    assert report.verdict.status == CPU_ONLY and report.verdict.finding_id == "EC-ENV-003"
    assert report.exit_code == 0 and report.verdict.finished  # the CPU, as set: said as such
    assert "EC-PLC-001" not in by_id(report)  # TensorFlow lists no GPU because they are hidden


def test_environment_errors_stay_causes_of_their_own():
    facts = b.with_env(b.no_driver_linux(b.server()), TF_FORCE_GPU_ALLOW_GROWTH="yes", CUDA_VISIBLE_DEVICES="0;1")
    found = by_id(judge(facts))
    assert found["EC-DRV-003"].caused_by == "EC-GPU-002"
    assert found["EC-ENV-001"].caused_by is None


def test_before_tensorflow_is_installed_the_verdict_is_the_plan():
    facts = b.with_distributions(b.no_gpu(), drop=("tensorflow", "keras"))
    facts = b.change(
        facts,
        {
            "tensorflow": TensorflowFacts(
                status="missing", error_kind="not_installed", error="No module named 'tensorflow'"
            )
        },
    )
    report = judge(facts)
    assert report.verdict.status == NOT_INSTALLED and report.verdict.finding_id == "EC-TF-001"
    assert report.exit_code == 0  # the state before the first install is not an error
    assert by_id(report)["EC-TF-001"].severity is Severity.WARNING
    assert (
        report.verdict.plan["tensorflow"] == "2.21" and report.verdict.plan["requirement"] == "tensorflow-cpu==2.21.*"
    )
    assert ("install", "tensorflow-cpu==2.21.*") in pip_steps(report.verdict.cpu_path)
    assert report.verdict.line.startswith(
        "not installed: TensorFlow is not installed yet; for this machine: TensorFlow 2.21"
    )


def test_before_tensorflow_is_installed_on_a_gpu_machine_the_plan_is_the_gpu_build():
    facts = b.with_distributions(b.server(), drop=("tensorflow", "tensorflow-gpu", "keras"))
    facts = b.change(
        facts,
        {
            "tensorflow": TensorflowFacts(
                status="missing", error_kind="not_installed", error="No module named 'tensorflow'"
            )
        },
    )
    report = judge(facts)
    assert report.verdict.status == NOT_INSTALLED
    assert "[and-cuda]" in report.verdict.plan["requirement"] and report.verdict.plan["kind"] == "gpu"
    assert any("[and-cuda]" in a[-1] for a in pip_steps(report.verdict.gpu_path))
    assert pip_steps(report.verdict.cpu_path)  # the CPU-only way is there too


def test_quick_run_without_tensorflow_counts_nvml_gpus():
    report = judge(b.quick(b.server()))
    assert report.verdict.status == GPU_READY
    assert report.verdict.line == "GPU ready (4 GPUs); TensorFlow itself not tested (--quick)"


def test_a_cause_that_was_deselected_leaves_its_consequence_a_cause():
    report = judge(b.setup_post(), ignore=("EC-LIB-001",))
    assert "EC-LIB-001" not in by_id(report)
    assert report.verdict.finding_id == "EC-TF-006"
    assert "cudart64_100.dll" in report.verdict.line


def test_select_by_prefix():
    report = judge(b.setup_post(), select=("EC-TF",))
    assert {f.id for f in report.findings} == {"EC-TF-006"}


def test_fail_on_thresholds():
    warned = b.with_env(b.server(), TF_FORCE_GPU_ALLOW_GROWTH="1")
    assert judge(warned).exit_code == 0
    assert judge(warned, fail_on="warning").exit_code == 1
    assert judge(b.setup_post(), fail_on="never").exit_code == 0


def test_a_crashing_rule_becomes_a_finding_and_the_others_still_run():
    from envcheck.rules.engine import RULES, rule

    @rule("EC-ENV-999", "test rule that crashes", "warning", "environment")
    def crashing(ctx):
        raise KeyError("boom")

    try:
        report = judge(b.setup_post())
    finally:
        del RULES["EC-ENV-999"]
    internal = [f for f in report.findings if f.id == "EC-INT-001"]
    assert len(internal) == 1 and "EC-ENV-999" in internal[0].title and internal[0].severity is Severity.WARNING
    assert report.verdict.finding_id == "EC-LIB-001"


def test_windows_native_after_2_10_gives_the_three_ways():
    facts = b.with_distributions(b.setup_post(), ("tensorflow", "2.15.1"), drop=("tensorflow-gpu",))
    facts = b.change(b.quick(facts), {"python.version": "3.10.11"})
    finding = by_id(judge(facts))["EC-TF-004"]
    assert "WSL2" in finding.fix.text and "2.10" in finding.fix.text and "CPU" in finding.fix.text
    assert any("tensorflow==2.10.*" in c.line for c in finding.fix.commands)
    assert any(c.line == "wsl --install" for c in finding.fix.commands)


def test_compute_capability_names_the_newest_release_for_the_card():
    finding = by_id(judge(b.server_gpus(b.server(), ("GeForce GTX 780", "3.5"))))["EC-CC-001"]
    matrix = load_matrix()
    newest = max(
        (x for x in matrix.tf_releases("linux") if x.gpu and matrix.support(x, "3.5") != "none"), key=lambda x: x.tf
    )
    assert f"is {newest.tf.major}.{newest.tf.minor}" in finding.title and "GeForce GTX 780" in finding.title


def test_facts_file_gives_the_same_findings_anywhere(tmp_path):
    """The snapshot is the only input: another environment, another directory, same JSON verdict."""
    snapshot = REPO / "tests" / "fixtures" / "facts" / "setup_post_win10.json"
    outputs = []
    for extra in (
        {},
        {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": os.environ["PATH"] + ":/opt/cuda-9.0/bin"},
    ):
        env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
        proc = subprocess.run(
            [sys.executable, "-m", "envcheck", "doctor", "--facts", str(snapshot), "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        data = json.loads(proc.stdout)
        outputs.append((data["findings"], data["verdict"]))
    assert outputs[0] == outputs[1]
    assert outputs[0][1]["finding_id"] == "EC-LIB-001"
    assert judge(b.setup_post()).verdict.line == outputs[0][1]["line"]


def test_probed_snapshots_of_this_machine_and_a_two_gpu_server():
    """Snapshots the real probes wrote (this machine; two A100s through the fake NVML)."""
    this = judge(b.named("this_machine"))
    assert this.verdict.status == CPU_ONLY and this.verdict.finding_id == "EC-GPU-001"
    server = judge(b.named("fake_nvml_2gpu"))
    found = by_id(server)
    # Two A100s and a driver, but no cuDNN or cuBLAS wheels next to TF 2.21: broken, because of the libraries.
    assert server.verdict.status == BROKEN and server.verdict.first_broken_link == "libraries"
    assert all(g.finding == server.verdict.finding_id for g in server.gpus)
    assert "EC-GPU-001" not in found and found["EC-PLC-001"].caused_by is not None
    assert "2x NVIDIA A100-SXM4-80GB" in {link.name: link.summary for link in server.links}["gpu"]


def test_installed_but_not_loaded_is_not_no_driver_installed():
    """NVML says the driver is not loaded and the card has no driver bound: the driver is there."""
    facts = b.no_driver_linux(b.server())
    facts = b.change(
        facts,
        {
            "nvml": dataclasses.replace(
                facts.nvml, error_kind="driver_not_loaded", error="Driver Not Loaded", error_code=9, status="error"
            )
        },
    )
    report = judge(facts)
    found = by_id(report)
    assert "EC-GPU-002" not in found
    assert report.verdict.finding_id == "EC-DRV-004" and "installed but not loaded" in report.verdict.line
    assert any("modprobe nvidia" in c.line for c in found["EC-DRV-004"].fix.commands)


def test_nothing_installed_is_still_no_driver():
    report = judge(b.no_driver_linux(b.server()))
    assert report.verdict.finding_id == "EC-GPU-002" and "no NVIDIA driver installed" in report.verdict.line


def test_a_module_built_for_the_old_kernel_only_says_rebuild():
    facts = b.change(
        b.no_driver_linux(b.server()),
        {"driver.kernel_release": "6.8.0-31-generic", "driver.dkms": ("550.54.14/6.5.0-21-generic",)},
    )
    fix = by_id(judge(facts))["EC-DRV-004"].fix
    assert "6.5.0-21-generic" in fix.text and "6.8.0-31-generic" in fix.text
    assert any(c.line == "sudo dkms autoinstall" for c in fix.commands)


def test_libraries_and_module_of_different_installs_need_a_reinstall_not_a_reboot():
    facts = b.change(b.server(), {"driver.version": "535.104.05", "driver.module_file_version": "535.104.05"})
    finding = by_id(judge(facts))["EC-DRV-002"]
    assert "a reboot will not help" in finding.title
    upgraded = b.change(b.server(), {"driver.version": "535.104.05", "driver.module_file_version": "535.129.03"})
    assert "updated without a reboot" in by_id(judge(upgraded))["EC-DRV-002"].title


def test_a_convolution_failing_on_one_gpu_of_four_is_not_four_ready_gpus():
    facts = b.server()
    placement = tuple(
        dataclasses.replace(p, ok=False, device=None, error="CUDNN_STATUS_EXECUTION_FAILED")
        if p.requested == "/GPU:2" and p.op == "conv2d"
        else p
        for p in facts.tensorflow.placement
    )
    report = judge(b.change(facts, {"tensorflow.placement": placement}))
    assert report.verdict.status == DEGRADED and report.verdict.gpus == 3
    assert report.verdict.line.startswith("GPU ready (3 of 4 GPUs); but GPU 2 (Tesla V100-SXM2-32GB, 0000:49:00.0)")
    gpu2 = [g for g in report.gpus if g.index == 2][0]
    assert not gpu2.usable and "conv2d failed on /GPU:2" in gpu2.reason
    assert all(g.usable for g in report.gpus if g.index != 2)
    assert report.exit_code == 1  # the failing GPU is an error finding


def test_cuda_visible_devices_hides_gpus_from_the_count():
    report = judge(b.with_env(b.quick(b.server()), CUDA_VISIBLE_DEVICES="0,1,-1,3"))
    assert report.verdict.gpus == 2
    hidden = [g for g in report.gpus if g.index in (2, 3)]
    assert all(g.cuda_index is None and "hidden by CUDA_VISIBLE_DEVICES" in g.reason for g in hidden)
    assert "EC-ENV-001" in by_id(report)


def test_numpy_2_under_a_numpy_1_tensorflow_is_the_cause_of_the_failed_import():
    from .cases import _tf_requiring

    facts = _tf_requiring(b.server(), "2.1.3")
    facts = b.change(
        facts,
        {
            "tensorflow": TensorflowFacts(
                status="error",
                error_kind="import_failed",
                error="ImportError: numpy.core.multiarray failed to import\nA module that was compiled using NumPy 1.x cannot be run in NumPy 2.1.3",
            )
        },
    )
    report = judge(facts)
    found = by_id(report)
    assert found["EC-TF-010"].severity is Severity.ERROR and found["EC-TF-006"].caused_by == "EC-TF-010"
    assert report.verdict.status == BROKEN and report.verdict.finding_id == "EC-TF-010"
    assert ("install", "numpy<2.0.0,>=1.23.5") in [c.pip_args for c in found["EC-TF-010"].fix.commands]
    # Markers are read for the probed interpreter: the Windows-only and the extra's requirements stay out.
    assert "colorama" not in found["EC-TF-010"].title and "nvidia" not in found["EC-TF-010"].title


def test_a_kepler_card_on_its_last_driver_is_the_first_broken_link_not_the_driver():
    """Tesla K40 (3.5) on driver 470 with a TensorFlow that needs CUDA 12: no driver after 470
    supports Kepler, so the fix is the newest release that runs on the card with that driver."""
    facts = b.server_gpus(b.server(), ("Tesla K40m", "3.5"))
    facts = b.change(facts, {"nvml.driver_version": "470.256.02", "driver.version": "470.256.02"})
    facts = b.tf_sees_no_gpu(
        facts,
        "Ignoring visible gpu device (device: 0, name: Tesla K40m) with Cuda compute capability 3.5. The minimum required Cuda capability is 5.0.",
    )
    report = judge(facts)
    found = by_id(report)
    assert report.verdict.first_broken_link == "compute" and report.verdict.finding_id == "EC-CC-001"
    assert found["EC-DRV-001"].caused_by == "EC-CC-003" and found["EC-CC-003"].caused_by == "EC-CC-001"
    fix = found["EC-CC-001"].fix
    assert "TensorFlow 2.14" in fix.text
    assert not any("525" in c.line or "ubuntu-drivers" in c.line for s in report.verdict.gpu_path for c in s.commands)
    assert [s.text.split(":")[0] for s in report.verdict.gpu_path] == ["EC-CC-001"]


def test_a_gtx_680_fix_sets_up_the_python_its_release_needs():
    """The newest release with code for compute capability 3.0 is far older than Python 3.11: the
    fix creates the Python it needs instead of a pip line that cannot work."""
    facts = b.server_gpus(b.server(), ("GeForce GTX 680", "3.0"))
    facts = b.tf_sees_no_gpu(facts)
    finding = by_id(judge(facts))["EC-CC-001"]
    lines = [c.line for c in finding.fix.commands]
    assert any(line.startswith("python3.") and "-m venv tf-env" in line for line in lines)
    assert any("tensorflow-gpu==" in line and line.startswith("tf-env/bin/python -m pip") for line in lines)
    assert not any(line.startswith("/home") and "tensorflow-gpu==" in line for line in lines)  # not into Python 3.11


def test_an_architecture_still_supported_has_no_ceiling():
    report = judge(b.server())
    assert "EC-CC-003" not in by_id(report)


def test_a_convolution_failing_on_every_gpu_is_broken_not_cpu_only():
    """TensorFlow lists the GPUs and places the convolution there, where it fails: a model with a
    convolution stops; it does not run on the CPU instead."""
    facts = b.server()
    placement = tuple(
        dataclasses.replace(p, ok=False, device=None, error="CUDNN_STATUS_EXECUTION_FAILED") if p.op == "conv2d" else p
        for p in facts.tensorflow.placement
    )
    report = judge(b.change(facts, {"tensorflow.placement": placement}))
    assert report.verdict.status == BROKEN and report.verdict.gpus == 0
    assert report.verdict.first_broken_link == "placement" and report.verdict.finding_id == "EC-PLC-003"
    assert "convolution failed" in report.verdict.reason and report.exit_code == 1


def test_an_illegal_instruction_on_a_cpu_without_avx_is_grouped_under_the_cpu_finding():
    crashed = TensorflowFacts(status="error", error_kind="crashed", signal="SIGILL", returncode=-4, error="SIGILL")
    facts = b.change(b.server(), {"tensorflow": crashed, "platform.cpu_flags": ("sse4_1", "sse4_2")})
    by_id = {f.id: f for f in judge(facts, matrix_loader=load_matrix).findings}
    assert "no AVX" in by_id["EC-TF-007"].title and by_id["EC-TF-007"].caused_by == "EC-TF-012"
    with_avx = b.change(b.server(), {"tensorflow": crashed})
    by_id = {f.id: f for f in judge(with_avx, matrix_loader=load_matrix).findings}
    assert "EC-TF-012" not in by_id and by_id["EC-TF-007"].caused_by is None
