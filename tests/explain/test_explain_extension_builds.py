"""PyTorch's extension builder (torch.utils.cpp_extension) looking for a CUDA toolkit: CUDA_HOME
unset because no toolkit was found, because pip built in an isolated environment with a torch of its
own, or because the torch is a CPU-only build; its notice that it found a toolkit but no usable
CUDA. And a WinError 127 from a DLL that loaded but lacks a function. Each rule has a case where it
decides and a close one where it does not."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()

CUDA_HOME = "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."


def _explained(text: str) -> list:
    return explain(CATALOGUE.scan_text(text))


def _ranked(text: str, pattern: str) -> list[str]:
    found = [e for e in _explained(text) if e.id == pattern]
    assert found, [e.id for e in _explained(text)]
    return [c.id for c in found[0].causes]


# --- what the log says about the build, read ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        r"      C:\Users\a\AppData\Local\Temp\pip-build-env-35rk4nwc\overlay\Lib\site-packages\torch\utils\cpp_extension.py",
        '        File "/tmp/pip-build-env-x2q5xdsw/normal/lib/python3.10/site-packages/setuptools/build_meta.py"',
        "  Installing build dependencies ... done",
        "  × Getting requirements to build editable did not run successfully.",
        "  Getting requirements to build wheel ... error",
    ],
)
def test_pips_isolated_build_is_recognised(text):
    assert read_context(text).get("log_pip_build_isolation") == "yes"


@pytest.mark.parametrize(
    "text",
    [
        # pip installing a wheel, or a build with isolation off, prints neither
        "Successfully installed torch-2.3.1",
        "  Preparing metadata (setup.py) ... done",
        "Building wheels for collected packages: sam2",
        r"C:\Users\a\AppData\Local\Temp\pip-install-c0_v5dr2\bmtrain\setup.py",
        "We are installing build dependencies by hand",
    ],
)
def test_other_pip_lines_are_not_build_isolation(text):
    assert "log_pip_build_isolation" not in read_context(text)


@pytest.mark.parametrize(
    "text",
    [
        "torch==2.3.1+cpu",
        "Successfully installed torch-2.4.0+cpu torchvision-0.19.0+cpu",
        "torch 2.1.2+cpu",
        "2.3.1+cpu",
        "torch.__version__ = '1.13.1+cpu'",
    ],
)
def test_a_cpu_only_torch_is_recognised_by_its_version_label(text):
    assert read_context(text).get("log_torch_cpu") == "yes"


@pytest.mark.parametrize(
    "text",
    [
        "torch==2.3.1+cu121",
        "2.3.1+cu118",
        "onnxruntime 1.17.0+cpu build of something 2.3.1+cpu here",
        "jaxlib 0.4.28+cpu",
    ],
)
def test_other_version_labels_are_not_a_cpu_torch(text):
    assert "log_torch_cpu" not in read_context(text)


# --- CUDA_HOME not set: three reasons ------------------------------------------------------------


def test_cuda_home_unset_without_other_signs_ranks_the_missing_toolkit_first():
    assert _ranked(CUDA_HOME, "cuda-home-not-set")[0] == "cuda-home-not-set"


def test_the_exceptions_line_without_its_second_sentence_is_recognised():
    assert _ranked("EnvironmentError: CUDA_HOME environment variable is not set", "cuda-home-not-set")
    # another program's notice about the same variable is not PyTorch's error
    assert not [
        e
        for e in _explained("note: CUDA_HOME environment variable is not set, using the CPU")
        if e.id == "cuda-home-not-set"
    ]


def test_pips_isolated_build_on_windows_ranks_build_isolation_first():
    log = (
        "  Installing build dependencies ... done\n"
        "  Getting requirements to build editable ... error\n"
        r"      File "
        r'"C:\Users\u\AppData\Local\Temp\pip-build-env-cliwrnjy\overlay\Lib\site-packages\torch\utils\cpp_extension.py"'
        ", line 2416, in _join_cuda_home\n"
        f"      {CUDA_HOME}\n"
    )
    assert _ranked(log, "cuda-home-not-set")[0] == "pip-build-isolation-torch"


def test_pips_isolated_build_on_linux_keeps_the_missing_toolkit_first():
    # PyPI's Linux torch is a CUDA build: there the isolated build finds a toolkit that exists
    log = (
        "  Installing build dependencies ... done\n"
        '        File "/tmp/pip-build-env-x2q5xdsw/overlay/lib/python3.10/site-packages/torch/utils/cpp_extension.py",'
        " line 2416, in _join_cuda_home\n"
        f"      {CUDA_HOME}\n"
    )
    ranked = _ranked(log, "cuda-home-not-set")
    assert ranked[0] == "cuda-home-not-set"
    assert "pip-build-isolation-torch" in ranked


@pytest.mark.parametrize(
    "log",
    [
        f"torch 2.3.1+cpu\n{CUDA_HOME}",
        f"AssertionError: Torch not compiled with CUDA enabled\n{CUDA_HOME}",
    ],
)
def test_a_cpu_only_torch_in_the_log_ranks_it_first(log):
    assert _ranked(log, "cuda-home-not-set")[0] == "torch-cpu-wheel"


def test_a_cuda_torch_in_the_log_does_not_rank_the_cpu_build_first():
    assert _ranked(f"torch 2.3.1+cu121\n{CUDA_HOME}", "cuda-home-not-set")[0] == "cuda-home-not-set"


# --- the builder found a toolkit but no usable CUDA ------------------------------------------------


@pytest.mark.parametrize(
    "line, home",
    [
        ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'", "/usr/local/cuda"),
        ("No CUDA runtime is found, using CUDA_HOME='/usr/bin/nvcc'", "/usr/bin/nvcc"),
        (
            r"No CUDA runtime is found, using CUDA_HOME='C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1'",
            r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1",
        ),
    ],
)
def test_no_cuda_runtime_names_the_toolkit_it_found(line, home):
    found = [e for e in _explained(line) if e.id == "torch-extension-no-cuda-runtime"]
    assert found and home in found[0].title
    assert not found[0].harmless


@pytest.mark.parametrize(
    "log, first",
    [
        ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'", "torch-cpu-wheel"),
        ("torch==1.13.1+cpu\nNo CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'", "torch-cpu-wheel"),
    ],
)
def test_no_cuda_runtime_ranks_the_cpu_build_first(log, first):
    ranked = _ranked(log, "torch-extension-no-cuda-runtime")
    assert ranked[0] == first
    assert "no-nvidia-gpu" in ranked


@pytest.mark.parametrize(
    "text",
    [
        "No CUDA runtime is found",
        "Using CUDA_HOME='/usr/local/cuda'",
        "No CUDA runtime found, falling back to the CPU",
    ],
)
def test_close_lines_are_not_the_no_cuda_runtime_notice(text):
    assert not [e for e in _explained(text) if e.id == "torch-extension-no-cuda-runtime"]


# --- WinError 127: a version mix, said outright --------------------------------------------------


def test_error_127_from_a_cudnn_sub_library_ranks_mixed_versions_first():
    ranked = _ranked("Could not load library cudnn_cnn_infer64_8.dll. Error code 127", "cudnn-sublibrary-not-loaded")
    assert ranked[0] == "mixed-library-versions"


def test_error_126_from_a_cudnn_sub_library_keeps_zlib_first():
    ranked = _ranked("Could not load library cudnn_cnn_infer64_8.dll. Error code 126", "cudnn-sublibrary-not-loaded")
    assert ranked[0] == "cudnn-zlib-missing"
    assert "mixed-library-versions" not in ranked[:1]
