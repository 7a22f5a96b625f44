"""The TensorFlow probe: every way the worker can end becomes facts, never a crash.

Fault injection uses fake ``tensorflow`` packages on PYTHONPATH (they shadow the real one) and fake
interpreters, so these tests run the real worker script without paying for a TensorFlow import.
The real import is exercised once, in the slow test at the end.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.facts import TF_ERROR_KINDS
from envcheck.probes.tensorflow import (
    MARKER,
    MAX_LOG_LINES,
    facts_from_worker,
    important_log_lines,
    probe_tensorflow,
    signal_name,
)

# --- the worker's output, as facts (pure) --------------------------------------------------------

COMPLETE = {
    "stage": "done",
    "version": "2.15.1",
    "location": "/home/user/venv/lib/python3.11/site-packages/tensorflow",
    "distributions": ["tensorflow", "tensorflow-gpu"],
    "is_cuda_build": True,
    "is_rocm_build": False,
    "cuda_version": "12.2",
    "cudnn_version": "8",
    "compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"],
    "build_info": {"cpu_compiler": "clang", "is_tensorrt_build": "True"},
    "physical_devices": [
        {"name": "/physical_device:CPU:0", "device_type": "CPU", "details": {}},
        {
            "name": "/physical_device:GPU:0",
            "device_type": "GPU",
            "details": {"device_name": "NVIDIA GeForce RTX 3090", "compute_capability": "8.6"},
        },
    ],
    "logical_devices": [
        {"name": "/device:CPU:0", "device_type": "CPU"},
        {"name": "/device:GPU:0", "device_type": "GPU"},
    ],
    "placement": [
        {
            "op": "matmul",
            "requested": "/GPU:0",
            "device": "/job:localhost/replica:0/task:0/device:GPU:0",
            "ok": True,
            "error": None,
            "seconds": 0.41,
        },
        {
            "op": "conv2d",
            "requested": "/GPU:0",
            "device": None,
            "ok": False,
            "error": "UnimplementedError: DNN library is not found.",
            "seconds": 0.02,
        },
    ],
    "mapped_libraries": ["/usr/lib/x86_64-linux-gnu/libcuda.so.535.154.05"],
    "import_seconds": 3.2,
}


def output(*results: dict, noise: str = "") -> str:
    return noise + "".join(f"\n{MARKER}\n{json.dumps(r)}\n" for r in results)


def test_complete_result_is_ok_with_every_field():
    facts = facts_from_worker(output(dict(COMPLETE, stage="placement", partial=True), COMPLETE), "", 0)
    assert facts.status == "ok" and facts.error_kind is None
    assert (facts.version, facts.distribution, facts.distributions) == (
        "2.15.1",
        "tensorflow",
        ("tensorflow", "tensorflow-gpu"),
    )
    assert facts.is_cuda_build is True and facts.cuda_version == "12.2" and facts.cudnn_version == "8"
    assert facts.compute_capabilities[-1] == "compute_90"
    assert facts.physical_devices[1].details == {"device_name": "NVIDIA GeForce RTX 3090", "compute_capability": "8.6"}
    matmul, conv = facts.placement
    assert matmul.ok and matmul.device.endswith("GPU:0") and matmul.seconds == 0.41
    assert not conv.ok and conv.error == "UnimplementedError: DNN library is not found."
    assert facts.mapped_libraries == ("/usr/lib/x86_64-linux-gnu/libcuda.so.535.154.05",)
    assert facts.import_seconds == 3.2 and facts.returncode == 0


def test_tensorflow_not_installed():
    facts = facts_from_worker(output({"stage": "find", "not_installed": True}), "", 0)
    assert (facts.status, facts.error_kind) == ("missing", "not_installed")


def test_import_failure_reported_by_the_worker():
    message = (
        "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a "
        "directory that is named in your %PATH% environment variable. Download and install CUDA 10.0 from this URL: "
        "https://developer.nvidia.com/cuda-90-download-archive"
    )
    result = {"stage": "import", "failed_stage": "import", "error": message}
    facts = facts_from_worker(output({"stage": "import", "partial": True}, result), "", 0)
    assert (facts.status, facts.error_kind, facts.failed_stage) == ("error", "import_failed", "import")
    assert "cudart64_100.dll" in facts.error


def test_import_failure_without_any_result_is_read_from_stderr():
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "C:\\Python36\\lib\\site-packages\\tensorflow\\python\\pywrap_tensorflow.py", line 58, in <module>\n'
        "ImportError: DLL load failed: The specified module could not be found.\n"
        "\nFailed to load the native TensorFlow runtime.\n"
    )
    facts = facts_from_worker("", stderr, 1)
    assert facts.error_kind == "import_failed"
    assert "Failed to load the native TensorFlow runtime" in facts.error or "DLL load failed" in facts.error
    assert any("DLL load failed" in line for line in facts.log_lines)


def test_crash_after_the_cheap_stages_keeps_what_was_learnt():
    partial = {k: v for k, v in COMPLETE.items() if k not in ("placement", "mapped_libraries")}
    partial.update(stage="placement", partial=True)
    facts = facts_from_worker(output(partial), "Fatal Python error: Segmentation fault\n", -signal.SIGSEGV)
    assert (facts.status, facts.error_kind, facts.signal, facts.failed_stage) == (
        "error",
        "crashed",
        "SIGSEGV",
        "placement",
    )
    assert facts.version == "2.15.1" and facts.is_cuda_build is True
    assert facts.placement == ()
    assert "Fatal Python error: Segmentation fault" in facts.log_lines


def test_timeout_keeps_the_partial_result_and_says_where():
    facts = facts_from_worker(output({"stage": "import", "partial": True}), "", -9, timed_out=True, timeout=5)
    assert (facts.error_kind, facts.failed_stage) == ("timeout", "import")
    assert "5 s" in facts.error


@pytest.mark.parametrize(
    "stdout, kind",
    [
        ("Welcome to my custom interpreter!\n", "bad_output"),
        (f"\n{MARKER}\n{{not json\n", "bad_output"),
        (f"\n{MARKER}\n[1, 2, 3]\n", "bad_output"),
        ("", "worker_failed"),
    ],
)
def test_unreadable_or_absent_output(stdout, kind):
    facts = facts_from_worker(stdout, "", 1)
    assert facts.status == "error" and facts.error_kind == kind


def test_stage_failure_after_import():
    result = dict(COMPLETE, failed_stage="devices", error="RuntimeError: Physical devices cannot be modified")
    facts = facts_from_worker(output(result), "", 0)
    assert (facts.error_kind, facts.failed_stage) == ("worker_failed", "devices")


def test_every_error_kind_used_is_declared():
    cases = [
        facts_from_worker("", "", 1),
        facts_from_worker("garbage", "", 0),
        facts_from_worker("", "ImportError: x", 1),
        facts_from_worker("", "", -11),
        facts_from_worker("", "", None, timed_out=True),
        facts_from_worker(output({"not_installed": True}), "", 0),
    ]
    assert {f.error_kind for f in cases} <= set(TF_ERROR_KINDS)


def test_signal_names():
    assert signal_name(-11) == "SIGSEGV"
    assert signal_name(-6) == "SIGABRT"
    assert signal_name(0xC0000005) == "access violation"  # how Windows reports a crash
    assert signal_name(1) is None and signal_name(0) is None


# --- which log lines are kept --------------------------------------------------------------------

TF1_WINDOWS = """\
2019-03-10 14:20:01.123456: I tensorflow/stream_executor/platform/default/dso_loader.cc:42] Successfully opened dynamic library cudart64_100.dll
2019-03-10 14:20:01.223456: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX2
"""
TF24_LINUX = """\
2021-02-01 10:01:02.345678: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory
2021-02-01 10:01:02.345999: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1757] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU.
2021-02-01 10:01:02.400000: E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected
"""
TF216_LINUX = """\
I0000 00:00:1712345678.123456   12345 port.cc:113] oneDNN custom operations are on. You may see slightly different numerical results.
E0000 00:00:1712345678.223456   12345 cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered
W0000 00:00:1712345678.323456   12345 py_utils.cc:38] TF-TRT Warning: Could not find TensorRT
I0000 00:00:1712345679.000000   12345 gpu_device.cc:2022] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 22259 MB memory:  -> device: 0, name: NVIDIA GeForce RTX 3090, pci bus id: 0000:01:00.0, compute capability: 8.6
MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0
_EagerConst: (_EagerConst): /job:localhost/replica:0/task:0/device:GPU:0
"""


def test_log_lines_that_matter_are_kept_without_timestamps():
    lines = important_log_lines(TF1_WINDOWS, TF24_LINUX, TF216_LINUX)
    assert (
        "I tensorflow/stream_executor/platform/default/dso_loader.cc:42] Successfully opened dynamic library cudart64_100.dll"
        in lines
    )
    assert any(
        line.startswith(
            "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudnn.so.8'"
        )
        for line in lines
    )
    assert any("Cannot dlopen some GPU libraries" in line for line in lines)
    assert any("failed call to cuInit: CUDA_ERROR_NO_DEVICE" in line for line in lines)
    assert any(line.startswith("E cuda_dnn.cc:9261] Unable to register cuDNN factory") for line in lines)
    assert any("TF-TRT Warning" in line for line in lines)
    assert any("Created device" in line and "compute capability: 8.6" in line for line in lines)
    assert "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0" in lines
    joined = "\n".join(lines)
    assert "oneDNN" not in joined and "AVX2" not in joined and "_EagerConst" not in joined
    assert "1712345678" not in joined  # timestamps and thread ids are dropped


def test_log_lines_are_deduplicated_and_bounded():
    noisy = "\n".join(
        f"W0000 00:00:17.{i:06d}   1 dso_loader.cc:60] Could not load dynamic library 'libcudnn.so.8'"
        for i in range(50)
    )
    assert len(important_log_lines(noisy)) == 1
    many = "\n".join(f"Could not load dynamic library 'libfoo{i}.so'" for i in range(500))
    assert len(important_log_lines(many)) == MAX_LOG_LINES


# --- the real worker script, with fake TensorFlow packages and fake interpreters ---------------


def fake_tf(tmp_path: Path, body: str) -> dict[str, str]:
    package = tmp_path / "fake-site" / "tensorflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(package.parent)
    return env


def test_worker_import_failure_like_the_setup_post(tmp_path):
    env = fake_tf(
        tmp_path,
        "raise ImportError(\"Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a "
        'directory that is named in your %PATH% environment variable.")\n',
    )
    facts = probe_tensorflow(None, env, timeout=60)
    assert (facts.status, facts.error_kind, facts.failed_stage) == ("error", "import_failed", "import")
    assert "cudart64_100.dll" in facts.error
    assert facts.import_seconds is not None


def test_worker_that_segfaults_during_import(tmp_path):
    env = fake_tf(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    facts = probe_tensorflow(None, env, timeout=60)
    assert (facts.error_kind, facts.signal, facts.failed_stage) == ("crashed", "SIGSEGV", "import")
    assert facts.returncode == -signal.SIGSEGV


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1].startswith("Z")  # a zombie has finished
    except OSError:
        return True


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to see that the helper is gone")
def test_worker_that_hangs_is_killed_with_everything_it_started(tmp_path):
    pidfile = tmp_path / "helper.pid"
    env = fake_tf(
        tmp_path,
        "import subprocess, sys, time\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(helper.pid))\n"
        "time.sleep(120)\n",
    )
    facts = probe_tensorflow(None, env, timeout=2)
    assert (facts.status, facts.error_kind, facts.failed_stage) == ("error", "timeout", "import")
    helper = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not _gone(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(helper)


def test_interpreter_that_prints_garbage(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'this is not the interpreter you are looking for'\nexit 0\n")
    fake.chmod(0o755)
    facts = probe_tensorflow(str(fake), {}, timeout=30)
    assert (facts.status, facts.error_kind) == ("error", "bad_output")
    assert "not the interpreter" in facts.error


def test_interpreter_that_cannot_start(tmp_path):
    facts = probe_tensorflow(str(tmp_path / "no-such-python"), {}, timeout=30)
    assert (facts.status, facts.error_kind) == ("error", "worker_failed")
    assert "cannot run" in facts.error


def test_interpreter_without_tensorflow(python_without_tf):
    facts = probe_tensorflow(python_without_tf, dict(os.environ), timeout=60)
    assert (facts.status, facts.error_kind) == ("missing", "not_installed")


def test_worker_does_not_import_envchecks_own_tensorflow_module(tmp_path):
    """The worker sits next to envcheck/probes/tensorflow.py; a fake TF proves which one is imported."""
    env = fake_tf(tmp_path, "raise ImportError('the fake tensorflow package was imported')\n")
    facts = probe_tensorflow(None, env, timeout=60)
    assert "the fake tensorflow package was imported" in facts.error


# --- the real TensorFlow of this machine ---------------------------------------------------------


@pytest.mark.slow
def test_real_tensorflow_cuda_build_without_a_driver_runs_both_ops_on_the_cpu():
    pytest.importorskip("tensorflow")
    facts = probe_tensorflow(None, dict(os.environ), timeout=300)
    assert facts.status == "ok", facts.error
    assert facts.distribution == "tensorflow"
    assert facts.version.startswith("2.")
    assert facts.is_cuda_build is True and facts.cuda_version.startswith("12")
    assert any(cc.startswith(("sm_", "compute_")) for cc in facts.compute_capabilities)
    assert [d.device_type for d in facts.physical_devices] == ["CPU"]
    assert [(p.op, p.requested, p.ok) for p in facts.placement] == [
        ("matmul", "/CPU:0", True),
        ("conv2d", "/CPU:0", True),
    ]
    assert all(p.device.endswith("device:CPU:0") for p in facts.placement)
    # TF says why it found no GPU; the wording changed across releases.
    assert any(("cuInit" in line) or ("cuda drivers" in line) for line in facts.log_lines), facts.log_lines
    assert any("(MatMul): /job:" in line or "Executing op MatMul" in line for line in facts.log_lines)
    assert any("libcudart.so.12" in path for path in facts.mapped_libraries)


def test_process_that_exits_inside_the_import_with_an_import_error_on_stderr():
    """A native extension that prints its failure and exits instead of raising."""
    stderr = "ImportError: libcublas.so.11: cannot open shared object file: No such file or directory\n"
    facts = facts_from_worker(output({"stage": "import", "partial": True}), stderr, 1)
    assert (facts.error_kind, facts.failed_stage) == ("import_failed", "import")
    assert "libcublas.so.11" in facts.error
    quiet = facts_from_worker(output({"stage": "import", "partial": True}), "", 1)
    assert (quiet.error_kind, quiet.failed_stage) == ("worker_failed", "import")


@pytest.mark.parametrize(
    "line, kept",
    [
        ("Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found", True),
        ("Successfully opened dynamic library libcublas.so.10", True),
        ("Cannot dlopen some GPU libraries. Skipping registering GPU devices...", True),
        ("failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", True),
        ("Could not find cuda drivers on your machine, GPU will not be used.", True),
        ("Loaded cuDNN version 8907", True),
        ("Failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED", True),
        ("TF-TRT Warning: Could not find TensorRT", True),
        ("MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0", True),
        ("_EagerConst: (_EagerConst): /job:localhost/replica:0/task:0/device:GPU:0", False),
        ("Executing op Conv2D in device /job:localhost/replica:0/task:0/device:GPU:0", True),
        ("Executing op RandomUniform in device /job:localhost/replica:0/task:0/device:GPU:0", False),
        ("Created device /job:localhost/replica:0/task:0/device:GPU:0 with 10 MB memory", True),
        (
            "kernel driver does not appear to be running on this host (gpu01): /proc/driver/nvidia/version does not exist",
            True,
        ),
        ("kernel reported version is: 550.54.15", True),
        ("Ignoring visible gpu device (device: 0, name: GeForce GT 730, compute capability: 3.5)", True),
        ("ImportError: DLL load failed while importing _pywrap_tensorflow_internal", True),
        ("OOM when allocating tensor with shape[8192,8192]", True),
        ("ptxas returned an error during compilation of ptx to sass", True),
        ("Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice", True),
        ("Fatal Python error: Segmentation fault", True),
        ("oneDNN custom operations are on. You may see slightly different numerical results", False),
        (
            "This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.",
            False,
        ),
        ("To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow", False),
        ("Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX2 FMA", False),
    ],
)
def test_each_log_pattern_keeps_its_line_and_leaves_its_neighbour(line, kept):
    assert (important_log_lines(line) == (line,)) is kept


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(sorted(set(COMPLETE) | {"partial", "failed_stage", "error", "not_installed"}))


@settings(max_examples=examples(150), deadline=None)
@given(
    result=st.dictionaries(_keys, _json, max_size=12),
    stderr=st.text(max_size=200),
    returncode=st.one_of(st.none(), st.integers(-64, 300)),
    timed_out=st.booleans(),
)
# Seconds no snapshot can hold (2**63 as a float, a 30-digit integer): unknown, not a snapshot
# that the next --facts refuses.
@example(result={"import_seconds": 9.223372036854776e18}, stderr="", returncode=None, timed_out=False)
@example(result={"placement": [{"op": "matmul", "seconds": 10**30}]}, stderr="", returncode=0, timed_out=False)
def test_any_worker_output_becomes_a_snapshot_that_reads_back(result, stderr, returncode, timed_out):
    """Whatever a worker (or something posing as one) prints, the facts are valid and round-trip."""
    from envcheck.facts import Facts, facts_from_dict, to_json

    facts = facts_from_worker(output(result), stderr, returncode, timed_out=timed_out)
    assert facts.status in ("ok", "error", "missing")
    assert facts.error_kind is None or facts.error_kind in TF_ERROR_KINDS
    snapshot = Facts(tensorflow=facts)
    assert facts_from_dict(json.loads(to_json(snapshot))) == snapshot
