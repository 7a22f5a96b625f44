"""Where the program ran, read from what each platform prints about itself, ranks the causes of
the messages it gives: WSL 1's kernel string (no GPU at all there), macOS's and zsh's words for a
signal and a log dated before Apple silicon existed (Rosetta or an old Intel CPU behind SIGILL),
Colab's GPU check and its magic command (the notebook's runtime), the tensorflow-gpu stub fetched
on native Windows (no GPU build after 2.10), and Windows' shells not finding nvidia-smi."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import platform_of, read_context

CATALOGUE = load_patterns()


def _explained(text: str, pattern_id: str):
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    return found


def _causes(text: str, pattern_id: str) -> list[str]:
    return [c.id for c in _explained(text, pattern_id).causes]


# --- WSL 1 ----------------------------------------------------------------------------------------

WSL1_KERNEL = "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #488-Microsoft"
WSL2_KERNEL = "Linux version 5.15.90.1-microsoft-standard-WSL2 (oe-user@oe-host) (x86_64-msft-linux-gcc (GCC) 9.3.0)"
NVSMI = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
LIBCUDA = "W tensorflow/stream_executor/platform/default/dso_loader.cc:55] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory"


def test_wsl_versions_are_read_from_the_kernel_string():
    assert read_context(WSL1_KERNEL)["log_wsl"] == "1"
    assert read_context(WSL2_KERNEL)["log_wsl"] == "2"
    assert platform_of(WSL1_KERNEL) == "wsl"
    assert "log_wsl" not in read_context("Linux version 6.5.0-14-generic (buildd@lcy02-amd64-110)")


@pytest.mark.parametrize("message, pattern_id", [(NVSMI, "nvidia-smi-no-driver"), (LIBCUDA, "libcuda-not-loaded")])
def test_under_wsl1_the_missing_gpu_is_wsl1s(message, pattern_id):
    assert _causes(WSL1_KERNEL + "\n" + message, pattern_id)[0] == "wsl1-no-gpu"
    assert "wsl1-no-gpu" not in _causes(WSL2_KERNEL + "\n" + message, pattern_id)
    assert "wsl1-no-gpu" not in _causes(message, pattern_id)


# --- SIGILL on a Mac ------------------------------------------------------------------------------


def test_zsh_reports_sigill_in_its_own_words():
    assert read_context("illegal hardware instruction  python3")["log_shell"] == "zsh"
    assert "log_shell" not in read_context("Illegal instruction (core dumped)")


@pytest.mark.parametrize(
    "text",
    [
        "illegal hardware instruction",  # zsh's message, the login shell of every Mac since 10.15
        "[1]    57761 illegal hardware instruction  python",
        "Illegal instruction: 4",  # bash on macOS
        "Python 3.8.5 (default, Sep  4 2020, 02:22:02)\n[Clang 10.0.0 ] :: Anaconda, Inc. on darwin\nzsh: illegal hardware instruction  python",
    ],
)
def test_a_macs_sigill_points_at_rosetta_first(text):
    assert _causes(text, "illegal-instruction")[:2] == ["rosetta-x86-python", "illegal-instruction"]


def test_a_linux_or_windows_sigill_has_no_rosetta_cause():
    assert _causes("/home/u/venv/bin/python: Illegal instruction (core dumped)", "illegal-instruction") == [
        "illegal-instruction"
    ]
    assert "rosetta-x86-python" not in _causes(
        r"C:\Users\u\app> python x.py" + "\nProcess finished with exit code -1073741795 (0xC000001D)",
        "illegal-instruction",
    )


def test_a_mac_log_from_before_apple_silicon_points_at_the_cpu():
    fma = (
        "2017-07-11 22:23:19.310625: F tensorflow/core/platform/cpu_feature_guard.cc:35] The TensorFlow library was "
        "compiled to use FMA instructions, but these aren't available on your machine.\nAbort trap: 6"
    )
    assert read_context(fma)["log_year"] == "2017"
    assert _causes(fma, "tf-cpu-feature-missing")[0] == "cpu-without-avx"
    recent = fma.replace("2017-07-11", "2023-02-13")
    assert _causes(recent, "tf-cpu-feature-missing")[0] == "rosetta-x86-python"
    old_sigill = (
        "2019-03-01 10:00:00.000001: I tensorflow/core/platform/cpu_feature_guard.cc:141] start\nIllegal instruction: 4"
    )
    assert _causes(old_sigill, "illegal-instruction")[0] == "illegal-instruction"


def test_a_macs_commands_are_macos_ones():
    explanation = _explained(
        "Python 3.9.12 on darwin\nzsh: illegal hardware instruction  python", "illegal-instruction"
    )
    lines = [c.line for c in explanation.fix.commands] + [
        c.line for cause in explanation.causes if cause.tell for c in cause.tell.commands
    ]
    assert lines and not any("/proc/" in line for line in lines)


# --- hosted notebooks -----------------------------------------------------------------------------

COLAB_CHECK = "----> 4   raise SystemError('GPU device not found')\nSystemError: GPU device not found"


def test_colabs_gpu_check_points_at_the_runtime_first():
    causes = _causes(COLAB_CHECK, "tf-lists-no-gpu")
    assert causes[0] == "notebook-runtime-without-gpu"
    assert {"hosted-tf-cuda-mismatch", "notebook-runtime-stale"} <= set(causes)


def test_a_notebook_whose_tensorflow_fails_on_the_images_cuda_points_at_that_tensorflow():
    log = (
        "!pip install tf-nightly-gpu\n"
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; "
        "dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n" + COLAB_CHECK
    )
    assert _causes(log, "tf-lists-no-gpu")[0] == "hosted-tf-cuda-mismatch"


def test_a_local_machine_gets_no_notebook_causes():
    causes = _causes("Num GPUs Available:  0", "tf-lists-no-gpu")
    assert not {"notebook-runtime-without-gpu", "hosted-tf-cuda-mismatch", "notebook-runtime-stale"} & set(causes)


def test_colabs_magic_command_names_colab_and_rules_out_windows():
    log = "%tensorflow_version 2.x\nNum GPUs Available:  0"
    assert read_context(log)["log_hosted"] == "colab"
    causes = _causes(log, "tf-lists-no-gpu")
    assert causes[0] == "notebook-runtime-without-gpu" and "tf-windows-gpu-ended" not in causes


# --- native Windows -------------------------------------------------------------------------------

STUB = "Collecting tensorflow-gpu\n  Downloading tensorflow-gpu-2.12.0.tar.gz (2.6 kB)\n  Preparing metadata (setup.py) ... error"


def test_the_tensorflow_gpu_stub_on_windows_points_at_the_ended_windows_gpu_build():
    on_windows = (
        STUB
        + "\n"
        + r'    File "C:\Users\u\venv\lib\site-packages\setuptools\_vendor\packaging\requirements.py", line 35'
    )
    causes = _causes(on_windows, "tensorflow-gpu-removed")
    assert causes[0] == "tf-windows-gpu-ended"
    on_linux = (
        STUB
        + "\n"
        + '    File "/home/u/venv/lib/python3.10/site-packages/setuptools/_vendor/packaging/requirements.py", line 35'
    )
    assert _causes(on_linux, "tensorflow-gpu-removed") == ["tensorflow-gpu-removed"]


@pytest.mark.parametrize(
    "message",
    [
        "'nvidia-smi' is not recognized as an internal or external command,\noperable program or batch file.",
        "nvidia-smi : The term 'nvidia-smi' is not recognized as the name of a cmdlet, function, script file, or operable program.",
    ],
)
def test_windows_shells_not_finding_nvidia_smi_point_at_its_folder(message):
    explanation = _explained(message, "windows-nvidia-smi-not-found")
    assert [c.id for c in explanation.causes][0] == "nvsmi-not-on-path"
    assert all(c.shell == "powershell" for c in explanation.fix.commands)


def test_under_wsl1_the_no_driver_lines_are_not_a_cpu_only_machines_notices():
    lines = (
        LIBCUDA + "\n"
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:313] failed call to cuInit: UNKNOWN ERROR (303)\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this "
        "host (PC): /proc/driver/nvidia/version does not exist"
    )
    assert _explained(lines, "libcuda-not-loaded").harmless  # no GPU shown: a CPU-only machine's notice
    assert not _explained(WSL1_KERNEL + "\n" + lines, "libcuda-not-loaded").harmless


def test_a_macs_cpu_is_read_from_uname_and_ranks_the_sigill_causes():
    intel = "Darwin host 21.4.0 Darwin Kernel Version 21.4.0: root:xnu-8020.101.4~15/RELEASE_X86_64 x86_64\nIllegal instruction: 4"
    apple = "Darwin host 23.3.0 Darwin Kernel Version 23.3.0: root:xnu-10002.81.5~7/RELEASE_ARM64_T6000 arm64\nIllegal instruction: 4"
    assert read_context(intel)["log_mac_cpu"] == "intel" and read_context(apple)["log_mac_cpu"] == "apple"
    assert _causes(intel, "illegal-instruction")[0] == "illegal-instruction"
    assert _causes(apple, "illegal-instruction")[0] == "rosetta-x86-python"


def test_a_notebook_cell_installing_another_tensorflow_points_at_that_tensorflow():
    assert read_context("!pip install tf-nightly-gpu")["log_tf_pip_install"] == "yes"
    assert "log_tf_pip_install" not in read_context("!pip install tensorflow-datasets")
    assert "log_tf_pip_install" not in read_context("$ pip install tensorflow==2.5.0")  # a terminal, not a notebook
    assert _causes("!pip install tf-nightly-gpu\n" + COLAB_CHECK, "tf-lists-no-gpu")[0] == "hosted-tf-cuda-mismatch"
