"""The whole input is context: versions, platform, GPU and crash shown anywhere in a log change
the ranking, the harmless verdict, the commands, and drop the causes they contradict."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import platform_of, read_context

CATALOGUE = load_patterns()


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


def test_versions_printed_anywhere_are_read():
    log = (
        "Python 3.8.10\nTensorFlow version: 2.3.0\n| NVIDIA-SMI 455.23.05    Driver Version: 455.23.05    CUDA Version: 11.1 |\n"
        "kernel reported version is: 455.23.5\n" + "Epoch 1/10\n" * 3
    )
    context = read_context(log)
    assert context["log_tf"] == "2.3.0" and context["log_python"] == "3.8" and context["log_driver"] == "455.23.05"
    assert context["log_driver_cuda"] == "11.1" and context["log_kernel_driver"] == "455.23.5"


@pytest.mark.parametrize(
    "text, platform",
    [
        ("PS C:\\Users\\ada> python train.py", "windows"),
        ('File "C:\\Users\\ada\\AppData\\Local\\Programs\\Python\\Python39\\lib\\site-packages\\x.py"', "windows"),
        ("zsh: illegal hardware instruction  python", "macos"),
        ("/Users/ada/miniforge3/lib/python3.9/site-packages", "macos"),
        ("ls /usr/lib/wsl/lib", "wsl"),
        ("/home/ada/.venv/lib/python3.10/site-packages/tensorflow", "linux"),
        ("Epoch 1/10", None),
    ],
)
def test_the_platform_is_read_from_paths_shells_and_prompts(text, platform):
    assert platform_of(text) == platform


def test_the_tensorflow_the_log_prints_decides_which_release_is_meant():
    log = (
        "TensorFlow version: 2.3.0\n"
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library "
        "'libcusolver.so.10'; dlerror: libcusolver.so.10: cannot open shared object file: No such file or directory"
    )
    (found,) = _explain(log)
    assert "2.3" in found.meaning and "CUDA 10.1" in found.meaning and "2.4" not in found.meaning


def test_driver_library_and_kernel_module_at_different_versions_is_the_cause():
    log = (
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:204] kernel reported version is: 384.90.0\n"
        "libcuda reported version is: 384.111.0\n"
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_UNKNOWN"
    )
    (found,) = _explain(log)
    assert found.causes[0].id == "driver-upgraded-no-reboot" and "384.111.0" in found.causes[0].text
    same = log.replace("384.111.0", "384.90.0")
    assert all(c.id != "driver-upgraded-no-reboot" for c in _explain(same)[0].causes)


def test_a_cause_the_log_contradicts_is_dropped_not_listed():
    without_gpu = "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_UNKNOWN"
    assert any(c.id == "no-nvidia-gpu" for c in _explain(without_gpu)[0].causes)
    with_gpu = "Found device 0 with properties: name: Tesla K80\n" + without_gpu
    (found,) = [e for e in _explain(with_gpu) if not e.harmless]
    assert all(c.id != "no-nvidia-gpu" for c in found.causes)
    assert ("no-nvidia-gpu" in dict(found.dropped)) and found.to_dict()["ruled_out_by_the_log"]


def test_a_newer_cudnn_is_never_called_older():
    (found,) = _explain("Loaded runtime CuDNN library: 7.3.1 but source was compiled with: 7.0.3.")
    assert all(c.id != "cudnn-too-old" for c in found.causes)
    (older,) = _explain("Loaded runtime CuDNN library: 7.0.3 but source was compiled with: 7.3.1.")
    assert older.causes[0].id == "cudnn-too-old"


def test_an_older_or_other_major_cudnn_is_never_called_a_newer_minor():
    # the two numbers cuda_dnn.cc prints decide the relation; "newer minor" is offered only when they show one
    newer = _explain(
        "Loaded runtime CuDNN library: 7101 (compatibility version 7100) but source was compiled with 7004"
    )
    assert newer[0].causes[0].id == "cudnn-minor-differs"
    for text in (
        "Loaded runtime CuDNN library: 5005 (compatibility version 5000) but source was compiled with 5103",
        "Loaded runtime CuDNN library: 6021 (compatibility version 6000) but source was compiled with 7005",
    ):
        (found,) = _explain(text)
        assert all(c.id != "cudnn-minor-differs" for c in found.causes)


def test_a_notice_followed_by_a_crash_is_not_harmless():
    notice = "I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine."
    assert all(e.harmless for e in _explain(notice))
    crashed = _explain(notice + "\nAborted (core dumped)")
    assert crashed and not any(e.harmless for e in crashed)
    # the crash's own report (SIGABRT) says how the process died; the notice is the lead to why
    assert [e.variables.get("status_name") for e in crashed if e.id == "process-crash-status"] == ["SIGABRT"]
    leads = [e for e in crashed if e.id != "process-crash-status"]
    assert leads and all("crash" in e.log_note for e in leads)


def test_a_macos_illegal_instruction_gets_macos_advice():
    (found,) = _explain("zsh: illegal hardware instruction  python -c 'import tensorflow'")
    lines = " ".join(c.line for c in found.fix.commands)
    assert "/proc/cpuinfo" not in lines and "platform.machine()" in lines
    (linux,) = _explain("Illegal instruction (core dumped)")
    assert "/proc/cpuinfo" in " ".join(c.line for c in linux.fix.commands)


@pytest.mark.parametrize(
    "line, cudnn",
    [
        ("I tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:424] Loaded cuDNN version 8600", "8.6.0"),
        ("I external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:531] Loaded cuDNN version 90300", "9.3.0"),
        ("Loaded cuDNN version 7605", "7.6.5"),
        ("cuDNN version: 8.1", "8.1"),
    ],
)
def test_cudnn_is_read_from_the_integer_tensorflow_logs(line, cudnn):
    assert read_context(line)["log_cudnn"] == cudnn


def test_a_cudnn_count_that_is_not_a_version_is_not_read():
    assert "log_cudnn" not in read_context("Loaded cuDNN version \nran 8600 steps")


def test_only_nvidia_smis_header_gives_the_drivers_cuda():
    header = "|  NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |"
    context = read_context(header)
    assert context["log_driver_cuda"] == "12.2" and "log_cuda" not in context
    # a CUDA version printed on its own line is a toolkit's or a build's, not the driver's
    plain = read_context("CUDA version: 11.2\ncuDNN version: 8.1")
    assert plain["log_cuda"] == "11.2" and "log_driver_cuda" not in plain
    both = read_context(header + "\nBuild info: CUDA version: 11.8")
    assert both["log_driver_cuda"] == "12.2" and both["log_cuda"] == "11.8"


@pytest.mark.parametrize(
    "line, cudnn",
    [
        ("Loaded cuDNN version 5110", "5.1.10"),
        ("Loaded cuDNN version 90100", "9.1.0"),
        ("I0000 00:00:1712345678.123 cuda_dnn.cc:529] Loaded cuDNN version 8907", "8.9.7"),
    ],
)
def test_every_integer_form_cudnn_version_h_defines_is_read(line, cudnn):
    assert read_context(line)["log_cudnn"] == cudnn


@pytest.mark.parametrize(
    "header, driver_cuda",
    [
        # nvidia-smi 450-era table header, narrower padding
        ("| NVIDIA-SMI 450.80.02    Driver Version: 450.80.02    CUDA Version: 11.0     |", "11.0"),
        # 560+ prints "CUDA Version" after a wider gap; a copy from a web page loses the pipes
        ("NVIDIA-SMI 560.35.03              Driver Version: 560.35.03      CUDA Version: 12.6", "12.6"),
        ("| NVIDIA-SMI 580.65.06  Driver Version: 580.65.06  CUDA Version: 13.0 |", "13.0"),
    ],
)
def test_the_header_is_read_whatever_its_padding(header, driver_cuda):
    context = read_context(header)
    assert context["log_driver_cuda"] == driver_cuda and "log_cuda" not in context
