"""Where the program ran, read from the log: a container, WSL, a hosted notebook, a conda or virtual
environment, an IDE. Each sign fires on the words that environment prints about itself and not on a
look-alike; the signs rank the causes that depend on them; a log's own platform gets only its own
shell's commands."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import platform_of, read_context


def _accuracy_benchmark():
    """benchmarks/explain_accuracy.py, whose rules for a Windows or macOS message's commands these
    tests hold the catalogue to."""
    if "explain_accuracy" not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "benchmarks" / "explain_accuracy.py"
        spec = importlib.util.spec_from_file_location("explain_accuracy", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["explain_accuracy"]


BENCHMARK = _accuracy_benchmark()
LINUX_ONLY, NOT_ON_MACOS, commands_shown = BENCHMARK.LINUX_ONLY, BENCHMARK.NOT_ON_MACOS, BENCHMARK.commands_shown

CATALOGUE = load_patterns()

SIGNS = [
    # containers
    ("docker run --gpus all -it --rm tensorflow/tensorflow:latest-gpu python", "log_container", "docker"),
    (
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
        "log_container",
        "docker",
    ),
    ("$ sudo docker exec -it trainer bash", "log_container", "docker"),
    ("ls: cannot access '/.dockerenv': Permission denied", "log_container", "docker"),
    ("nvidia-container-cli: initialization error: nvml error: driver not loaded", "log_container", "docker"),
    (
        "docker: Error response from daemon: failed to create shim: OCI runtime create failed: runc create failed",
        "log_container_start",
        "yes",
    ),
    (
        "stderr: nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
        "log_container_start",
        "yes",
    ),
    ("podman run --device nvidia.com/gpu=all ubuntu nvidia-smi", "log_container", "podman"),
    ("kubectl logs trainer-0 -n ml", "log_container", "kubernetes"),
    ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", "log_container", "kubernetes"),
    ("2024-05-01T10:00:00.123456789Z stderr F Traceback (most recent call last):", "log_container", "kubernetes"),
    ("NVIDIA Release 23.10 (build 71422512)", "log_container", "ngc"),
    # hosted notebooks
    ("from google.colab import drive", "log_hosted", "colab"),
    ('File "/content/drive/MyDrive/train.py", line 3', "log_hosted", "colab"),
    (
        'File "/usr/local/lib/python3.10/dist-packages/keras/src/engine/training.py", line 1\n'
        'File "/content/train.py", line 9',
        "log_hosted",
        "colab",
    ),
    ('File "/kaggle/working/train.py", line 12', "log_hosted", "kaggle"),
    # conda
    ("/home/ada/miniconda3/envs/tf/lib/python3.9/site-packages/tensorflow/__init__.py", "log_conda", "yes"),
    (r"C:\Users\ada\anaconda3\envs\tf\lib\site-packages\tensorflow\__init__.py", "log_conda", "yes"),
    ("/home/ada/.conda/envs/tf/lib/python3.10/site-packages/keras", "log_conda", "yes"),
    ("/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py", "log_conda", "yes"),
    ("(base) ada@box:~$ python train.py", "log_conda", "yes"),
    ("$ conda activate tf", "log_conda", "yes"),
    # virtual environments
    ("/home/ada/project/.venv/lib/python3.11/site-packages/tensorflow/python/x.py", "log_venv", "yes"),
    (r"C:\Users\ada\project\venv\Lib\site-packages\torch\__init__.py", "log_venv", "yes"),
    ("/home/ada/.cache/pypoetry/virtualenvs/app-x1-py3.10/lib/python3.10/site-packages/x", "log_venv", "yes"),
    ("(venv) ada@box:~/project$ python train.py", "log_venv", "yes"),
    # where the script was started
    ("File /tmp/ipykernel_4021/2781726395.py:3", "log_ide", "jupyter"),
    ("<ipython-input-3-8c1b0f9f0a1d> in <module>", "log_ide", "jupyter"),
    ("Cell In[4], line 2", "log_ide", "jupyter"),
    ("Process finished with exit code -1073740791 (0xC0000409)", "log_ide", "pycharm"),
    ("/home/ada/.vscode-server/extensions/ms-python.debugpy-2024.0.0/bundled/libs/debugpy/x.py", "log_ide", "vscode"),
    # NVIDIA's pip wheels
    ("/home/ada/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "log_pip_cuda", "yes"),
    ("Successfully installed nvidia-cudnn-cu12-9.1.0.70", "log_pip_cuda", "yes"),
]

LOOK_ALIKES = [
    ("/home/ada/docker/train.py", "log_container"),  # a path with the word in it
    ("python -m pip install docker", "log_container"),
    ("Requirement already satisfied: docker in ./.venv/lib/python3.11/site-packages", "log_container"),
    ("pod install", "log_container"),  # CocoaPods
    ("NVIDIA Release 23.10 (build 71422512)", "log_container_start"),  # inside a container that started
    ("NVIDIA released driver 550.54 today", "log_container"),
    ('File "/usr/local/lib/python3.10/dist-packages/tensorflow/x.py"', "log_hosted"),  # any Debian Python
    ('File "/var/www/content/app.py"', "log_hosted"),
    ("/home/ada/.kaggle/kaggle.json", "log_hosted"),  # Kaggle's API key on someone's machine
    ("/home/ada/.pyenv/versions/3.10.4/envs/tf/lib/python3.10/site-packages/x", "log_conda"),  # pyenv-virtualenv
    ("python -m pip install condense", "log_conda"),
    ("/home/ada/environment/lib/python3.10/site-packages/x.py", "log_venv"),
    ("python -m pip install python-dotenv", "log_venv"),
    ("python -m pip install jupyter ipykernel", "log_ide"),
    ("Process exited", "log_ide"),
    ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "log_pip_cuda"),
]


@pytest.mark.parametrize("text, name, value", SIGNS)
def test_a_sign_of_where_it_ran_is_read(text, name, value):
    assert read_context(text).get(name) == value


@pytest.mark.parametrize("text, name", LOOK_ALIKES)
def test_a_look_alike_is_not_a_sign(text, name):
    assert name not in read_context(text)


@pytest.mark.parametrize(
    "text, platform",
    [
        ("open /dev/dxg failed", "wsl"),
        ("libdxcore.so: cannot open shared object file", "wsl"),
        (r"I c:\tf_jenkins\home\workspace\release-win\gpu_device.cc:975] Creating TensorFlow device", "windows"),
        (r"no CUDA-capable device is detected at ..\aten\src\THC\THCGeneral.cpp:51", "windows"),
        (r"(env) C:\pinokio\api\xtts.git>", "windows"),
    ],
)
def test_more_platform_signs(text, platform):
    assert platform_of(text) == platform


@pytest.mark.parametrize(
    "text",
    ["dxgkrnl loaded", r"a regex like a:\d", "http://host/C:\\x", r"\\server\share\file"],
)
def test_platform_look_alikes(text):
    assert platform_of(text) is None


def _first(text: str, pattern_id: str) -> str:
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    return found.causes[0].id


LIBCUDA = (
    "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcuda.so.1'; "
    "dlerror: libcuda.so.1: cannot open shared object file: No such file or directory"
)
CUINIT_NO_DRIVER = "E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
CUINIT_303 = "failed call to cuInit: UNKNOWN ERROR (303)"
TORCH_NO_DRIVER = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"
CUDART = (
    "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; "
    "dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory"
)
NVML_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
SMI_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
    "driver is installed and running."
)
SMI_NO_NVML = "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver is properly installed and present in your system."
CUDNN = (
    "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudnn.so.8'; "
    "dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory"
)
CUBLAS = (
    "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcublas.so.11'; "
    "dlerror: libcublas.so.11: cannot open shared object file: No such file or directory"
)
IN_A_CONTAINER = "==========\n== CUDA ==\n==========\nNVIDIA Release 23.10 (build 71422512)\n"
UNDER_WSL = "Linux box 5.15.133.1-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n"
IN_COLAB = 'File "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py", line 298\nFile "/content/train.py", line 4\n'
IN_CONDA = 'File "/home/ada/miniconda3/envs/tf/lib/python3.9/site-packages/tensorflow/__init__.py", line 1\n'
ON_WINDOWS = (
    'File "C:\\Users\\ada\\AppData\\Local\\Programs\\Python\\Python310\\lib\\site-packages\\torch\\cuda\\__init__.py"\n'
)


@pytest.mark.parametrize(
    "message, pattern_id, sign, without, with_sign",
    [
        (LIBCUDA, "libcuda-not-loaded", IN_A_CONTAINER, "no-nvidia-gpu", "container-without-gpu"),
        (LIBCUDA, "libcuda-not-loaded", UNDER_WSL, "no-nvidia-gpu", "wsl-libcuda-path"),
        (CUINIT_303, "cuinit-no-driver", IN_A_CONTAINER, "no-nvidia-gpu", "container-without-gpu"),
        (CUINIT_303, "cuinit-no-driver", UNDER_WSL, "no-nvidia-gpu", "wsl-driver-missing"),
        (CUINIT_NO_DRIVER, "cuinit-no-device", IN_A_CONTAINER, "cvd-hides-all", "container-without-gpu"),
        (TORCH_NO_DRIVER, "torch-no-nvidia-driver", IN_COLAB, "container-driver-capabilities", "no-nvidia-gpu"),
        (
            TORCH_NO_DRIVER,
            "torch-no-nvidia-driver",
            ON_WINDOWS,
            "container-driver-capabilities",
            "driver-not-installed",
        ),
        (CUDART, "cudart-not-loaded", IN_CONDA, "cuda-not-installed", "cuda-lib-not-on-path"),
        (
            NVML_MISMATCH,
            "nvml-driver-library-mismatch",
            IN_A_CONTAINER,
            "driver-upgraded-no-reboot",
            "container-driver-files-mismatch",
        ),
        (
            NVML_MISMATCH,
            "nvml-driver-library-mismatch",
            UNDER_WSL,
            "driver-upgraded-no-reboot",
            "wsl-linux-driver-installed",
        ),
        (SMI_NO_DRIVER, "nvidia-smi-no-driver", UNDER_WSL, "module-not-built-for-kernel", "wsl-linux-driver-installed"),
        (SMI_NO_NVML, "nvidia-smi-no-nvml-library", IN_A_CONTAINER, "ldcache-stale", "container-without-gpu"),
        (CUDNN, "cudnn-not-loaded", IN_CONDA, "cudnn-not-installed", "cudnn-lib-not-on-path"),
        (CUBLAS, "cuda-math-library-not-loaded", IN_CONDA, "cuda-partly-installed", "cuda-lib-not-on-path"),
    ],
)
def test_where_it_ran_ranks_the_cause_that_depends_on_it(message, pattern_id, sign, without, with_sign):
    assert _first(message, pattern_id) == without
    assert _first(sign + message, pattern_id) == with_sign


def test_no_cuda_drivers_in_a_container_is_the_container_first():
    message = (
        "I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used."
    )
    assert _first(message, "no-cuda-drivers") == "no-nvidia-gpu"
    assert _first(IN_A_CONTAINER + message, "no-cuda-drivers") == "container-without-gpu"


def test_a_native_windows_log_rules_out_containers_and_wsl():
    (found,) = [e for e in explain(CATALOGUE.scan_text(ON_WINDOWS + CUINIT_303)) if e.id == "cuinit-no-driver"]
    dropped = dict(found.dropped)
    assert {"container-without-gpu", "wsl-driver-missing"} <= set(dropped)
    assert "native Windows" in dropped["container-without-gpu"]
    (plain,) = [e for e in explain(CATALOGUE.scan_text(CUINIT_303)) if e.id == "cuinit-no-driver"]
    assert {"container-without-gpu", "wsl-driver-missing"} <= {c.id for c in plain.causes}


def test_a_container_the_host_could_not_start_is_not_the_images_driver_files():
    hook = (
        "Cannot start service web: failed to create shim: OCI runtime create failed: runc create failed: error "
        "running hook #0: exit status 1, stderr: nvidia-container-cli: initialization error: nvml error: "
        "driver/library version mismatch: unknown"
    )
    (found,) = [e for e in explain(CATALOGUE.scan_text(hook)) if e.id == "nvml-driver-library-mismatch"]
    assert found.causes[0].id == "driver-upgraded-no-reboot"
    assert "container-driver-files-mismatch" not in {c.id for c in found.causes}


def test_under_wsl_there_is_no_kernel_module_to_blame():
    (found,) = [e for e in explain(CATALOGUE.scan_text(UNDER_WSL + SMI_NO_DRIVER)) if e.id == "nvidia-smi-no-driver"]
    assert {"module-not-built-for-kernel", "secure-boot-unsigned-module", "other-driver-holds-gpu"} <= set(
        dict(found.dropped)
    )
    (plain,) = [e for e in explain(CATALOGUE.scan_text(SMI_NO_DRIVER)) if e.id == "nvidia-smi-no-driver"]
    assert "wsl-linux-driver-installed" not in {c.id for c in plain.causes} and not plain.dropped


def test_a_windows_log_in_a_container_keeps_the_container_cause():
    text = ON_WINDOWS + "docker run --gpus all trainer\n" + CUINIT_303
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == "cuinit-no-driver"]
    assert found.causes[0].id == "container-without-gpu"


# A pattern printed on several systems: its example in a log from native Windows, or from macOS.
PREFIX = {"windows": "PS C:\\Users\\ada\\project> python train.py\n", "macos": "/Users/ada/project/train.py\n"}
CASES = [
    pytest.param(system, p.id, text, id=f"{system}:{p.id}:{i}")
    for system in PREFIX
    for p in CATALOGUE.patterns
    if not p.os or (system in p.os and len(p.os) > 1)
    for i, text in enumerate(p.examples)
    if platform_of(text) in (None, system)  # a Linux library's own message names Linux
]


def test_there_are_many_messages_of_several_systems():
    assert sum(1 for c in CASES if c.values[0] == "windows") >= 150


@pytest.mark.parametrize("system, pattern_id, text", CASES)
def test_a_log_gets_only_its_own_platforms_commands(system, pattern_id, text):
    explanations = [e for e in explain(CATALOGUE.scan_text(PREFIX[system] + text)) if e.id == pattern_id]
    assert explanations
    for command in commands_shown(explanations[0]):
        if system == "windows":
            assert command.shell in ("powershell", "any") and not LINUX_ONLY.search(command.line), command
        else:
            assert command.shell in ("bash", "any") and not NOT_ON_MACOS.search(command.line), command


@pytest.mark.parametrize(
    "message, pattern_id",
    [
        ("Blas SGEMM launch failed : m=1, n=1, k=1", "blas-launch-failed"),
        ("Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0.", "cudnn-version-mismatch"),
        (CUINIT_303, "cuinit-no-driver"),
        (
            "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
            "docker-nvidia-runtime-unknown",
        ),
        (
            "F tensorflow/core/platform/cpu_feature_guard.cc:37] The TensorFlow library was compiled to use AVX "
            "instructions, but these aren't available on your machine.",
            "tf-cpu-feature-missing",
        ),
    ],
)
def test_a_windows_log_gets_powershell_where_linux_gets_bash(message, pattern_id):
    def shells(prefix: str) -> set[str]:
        (found,) = [e for e in explain(CATALOGUE.scan_text(prefix + message)) if e.id == pattern_id]
        return {c.shell for c in commands_shown(found)}

    assert "powershell" in shells(PREFIX["windows"]) and "bash" not in shells(PREFIX["windows"])
    linux = shells("/home/ada/project/train.py\n")
    assert "bash" in linux and "powershell" not in linux
