"""The versions a log prints, in the spellings TensorFlow, pip, Python's prompt, NVIDIA's driver and
cuDNN's header print them, read as context; and what they decide once read (the matrix's build row
against the GPU, the cuDNN and the driver the log shows). Each reading has a look-alike that must
not count: another package's version, the build's own versions in get_build_info()."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.build_facts import build_facts
from envcheck.explain.context import read_context
from envcheck.explain.status_causes import VERSION_CHECKS
from envcheck.matrix import load_matrix

CATALOGUE = load_patterns()


def _explained(text: str, pattern_id: str):
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    assert found, text
    return found[0]


@pytest.mark.parametrize(
    "text, version",
    [
        (">>> import tensorflow as tf\n>>> print(tf.__version__)\n2.4.1", "2.4.1"),
        (">>> tf.__version__\n'2.11.0'", "2.11.0"),
        ("In [3]: tf.__version__\nOut[3]: '2.15.0'", "2.15.0"),
        (">>> print(tensorflow.__version__)\n1.15.0", "1.15.0"),
        ("$ pip show tensorflow\nName: tensorflow\nVersion: 2.13.1\nSummary: TensorFlow is ...", "2.13.1"),
        ("Name: tensorflow-gpu\r\nVersion: 1.14.0\r\n", "1.14.0"),
        ("Processing ./tensorflow-2.4.1-cp38-cp38-manylinux2010_x86_64.whl", "2.4.1"),
        ("  Downloading tensorflow_gpu-2.10.1-cp39-cp39-win_amd64.whl (455.9 MB)", "2.10.1"),
        ("/usr/local/lib/python3.8/dist-packages/tensorflow_gpu-2.4.1.dist-info/METADATA", "2.4.1"),
        ("tensorflow-base           2.4.1           gpu_py38h29c2da4_0", "2.4.1"),
        ("TF version: 2.9.0", "2.9.0"),
        ("Requirement already satisfied: tensorflow in ./venv/lib/python3.8/site-packages (2.6.2)", "2.6.2"),
    ],
)
def test_tensorflow_versions_are_read_in_each_spelling(text, version):
    assert read_context(text).get("log_tf") == version


@pytest.mark.parametrize(
    "text",
    [
        "Name: tensorflow-estimator\nVersion: 2.4.0",
        "Name: tensorflow-io-gcs-filesystem\nVersion: 0.34.0",
        "/usr/lib/python3/dist-packages/tensorflow_estimator-2.4.0.dist-info/METADATA",
        "Processing ./tensorflow_io_gcs_filesystem-0.21.0-cp38-cp38-manylinux_2_12_x86_64.whl",
        "Requirement already satisfied: tensorflow-estimator in /usr/lib/python3/dist-packages (2.4.0)",
        "tensorboard               2.4.1",
        ">>> print(np.__version__)\n1.19.5",
        ">>> print(tf.__version__)\n>>> x = 2.5",
        "TF_VERSION=2.4.1 is set by the job",
    ],
)
def test_another_packages_version_is_not_tensorflows(text):
    assert "log_tf" not in read_context(text)


def test_cudnn_headers_defines_are_read_as_its_version():
    text = "$ grep CUDNN_MAJOR -A 2 /usr/include/cudnn_version.h\n#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 2\n"
    assert read_context(text)["log_cudnn"] == "8.9.2"
    # a header without the lines after the major, or another library's defines, says nothing
    assert "log_cudnn" not in read_context("#define CUDNN_MAJOR 8\n#define CUDNN_VERSION (CUDNN_MAJOR * 1000)")
    assert "log_cudnn" not in read_context("#define NCCL_MAJOR 2\n#define NCCL_MINOR 18")


def test_a_bare_cudnn_major_is_a_major_not_an_integer_version():
    assert read_context("cuDNN: 8")["log_cudnn"] == "8"
    assert (
        read_context("I tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded cuDNN version 8100")["log_cudnn"]
        == "8.1.0"
    )


@pytest.mark.parametrize(
    "line",
    [
        "{'cpu_compiler': '/dt9/usr/bin/gcc', 'cuda_compute_capabilities': ['sm_35', 'sm_50'], 'cuda_version': '11.2', 'cudnn_version': '8', 'is_cuda_build': True}",
        "OrderedDict([('cuda_compute_capabilities', ['sm_35']), ('cuda_version', '11.0'), ('cudnn_version', '8'), ('is_cuda_build', True)])",
    ],
)
def test_the_build_info_dict_is_no_installed_cuda(line):
    facts = read_context(line)
    assert "log_cuda" not in facts and "log_cudnn" not in facts
    # a line of its own still is
    assert read_context("cuda_version: 11.2")["log_cuda"] == "11.2"


def test_the_kernel_modules_version_is_read_from_its_load_line():
    facts = read_context(
        "[    5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023"
    )
    assert facts["log_kernel_driver"] == "535.104.05"
    # the module's refusal of another client is its own pattern's to read and rank
    facts = read_context(
        "[ 12.3] NVRM: API mismatch: the client has the version 550.127.05, but\n"
        "[ 12.3] NVRM: this kernel module has the version 535.183.01.  Please"
    )
    assert "log_driver" not in facts and "log_kernel_driver" not in facts
    # the open kernel module's own name, and no other line saying "loading"
    assert "log_kernel_driver" not in read_context("NVRM: loading firmware for GSP 535.104.05")


def test_a_patch_of_the_last_windows_gpu_release_has_its_gpu_build():
    matrix = load_matrix()
    facts = build_facts({"log_tf": "2.10.1", "log_os": "windows"}, matrix)
    assert "log_tf_no_gpu_build" not in facts and facts["log_tf_cuda"] == "11.2"
    assert build_facts({"log_tf": "2.11.0", "log_os": "windows"}, matrix) == {"log_tf_no_gpu_build": "windows"}


def _no_kernel_image(tf: str, capability: str, extra: str = "") -> list[str]:
    text = (
        f"tensorflow=={tf}\n{extra}"
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1716] Found device 0 with properties:\n"
        f"pciBusID: 0000:01:00.0 name: NVIDIA GPU computeCapability: {capability}\n"
        "InternalError: CUDA error: no kernel image is available for execution on the device"
    )
    return [c.id for c in _explained(text, "no-kernel-image-for-device").causes]


def test_no_kernel_image_with_the_builds_machine_code_for_the_gpu_is_not_the_release():
    # TensorFlow 2.4's wheels carry sm_75 (the matrix, from its fatbinaries)
    ids = _no_kernel_image("2.4.1", "7.5")
    assert ids[0] == "custom-build-arch"
    assert "release-lacks-arch" not in ids and "compute-capability-too-low" not in ids
    # 8.6 runs only from the compute_80 PTX: the release's libraries may lack it, the cause stays
    assert "release-lacks-arch" in _no_kernel_image("2.4.1", "8.6")
    # a GPU the build has no code for: the release first
    assert _no_kernel_image("2.17.0", "5.2")[0] in ("release-lacks-arch", "compute-capability-too-low")


def test_a_pytorch_log_is_not_judged_by_tensorflows_build():
    torch = '  File "/usr/lib/python3/site-packages/torch/cuda/__init__.py", line 1, in init\n'
    # the TensorFlow pin is another program's: this is PyTorch's kernel
    text = (
        "tensorflow==2.4.1\n" + torch + "name: NVIDIA GPU computeCapability: 7.5\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    )
    assert "release-lacks-arch" in [c.id for c in _explained(text, "no-kernel-image-for-device").causes]


def _cudnn_missing(shown: str, loader: str = "libcudnn.so.8") -> list[str]:
    text = (
        f"tensorflow==2.4.1\ncuDNN version: {shown}\n"
        f"W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library '{loader}';"
        f" dlerror: {loader}: cannot open shared object file: No such file or directory"
    )
    return [c.id for c in _explained(text, "cudnn-not-loaded").causes]


def test_a_missing_cudnn_of_the_major_shown_installed_is_not_another_major():
    ids = _cudnn_missing("8.0.5")
    assert ids[0] == "cudnn-lib-not-on-path" and "cudnn-other-major" not in ids
    assert _cudnn_missing("7.6.5")[0] == "cudnn-other-major"


def test_cudnns_own_versions_decide_over_the_builds():
    text = (
        "tensorflow==2.4.1\n"
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:363] Loaded runtime CuDNN library: 8.0.4 but source was"
        " compiled with: 7.6.5.  CuDNN library major and minor version needs to match or have higher minor version"
    )
    ids = [c.id for c in _explained(text, "cudnn-version-mismatch").causes]
    assert "cudnn-other-major" in ids and "cudnn-too-old" not in ids


@pytest.mark.parametrize(
    "variables, runs",
    [
        # TensorFlow 2.4 was built with CUDA 11.0: driver 440 is older, 470 runs it
        ({"log_tf_cuda": "11.0", "log_driver": "440.33.01"}, False),
        ({"log_tf_cuda": "11.0", "log_driver": "470.57.02"}, True),
        ({"log_tf_cuda": "12.2", "log_driver_cuda": "12.0"}, False),
        ({"log_tf_cuda": "12.2", "log_driver_cuda": "12.2"}, True),
        # the CUDA the log prints decides over the build's
        ({"log_tf_cuda": "12.2", "log_cuda": "11.8", "log_driver": "520.61.05"}, True),
    ],
)
def test_the_driver_is_judged_against_the_cuda_the_program_runs(variables, runs):
    runs_check, _ = VERSION_CHECKS["driver-runs-log-cuda"]
    older_check, _ = VERSION_CHECKS["driver-older-than-log-cuda"]
    assert runs_check(variables) is runs and older_check(variables) is (not runs)


def test_without_any_cuda_the_driver_is_not_judged():
    runs_check, _ = VERSION_CHECKS["driver-runs-log-cuda"]
    older_check, _ = VERSION_CHECKS["driver-older-than-log-cuda"]
    assert not runs_check({"log_driver": "440.33.01"}) and not older_check({"log_driver": "440.33.01"})
