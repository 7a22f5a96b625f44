"""Other frameworks on the same CUDA stack: ONNX Runtime's TensorRT provider and its provider
warning, CuPy, Numba, PaddlePaddle, MXNet and TensorRT's logger. Each message here is written from
the format string of the source that prints it (named in the pattern's ``sources``) with parts a
real run fills in chosen here (other versions, other libraries, Windows paths, wrapped lines), so
the rules are held to what the sources print, not to the wording of one thread."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from tests.explain.test_explain_source_families import CATALOGUE, assert_explained


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


# (message, pattern id, harmless, first cause id)
MESSAGES = [
    # ONNX Runtime's TensorRT provider: the library it names after "with error" decides the cause
    (
        "2025-02-17 11:10:53.6 [E:onnxruntime:Default, provider_bridge_ort.cc:1978 TryGetProviderInfo_TensorRT] "
        "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1637 onnxruntime::Provider& "
        "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
        "libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.10: cannot open shared object file: No such file or directory",
        "onnxruntime-tensorrt-provider-load-failed",
        False,
        "onnxruntime-tensorrt-libraries-missing",
    ),
    (
        "FAIL : Failed to load library libonnxruntime_providers_tensorrt.so with error: libcudnn.so.9: cannot open shared object file: No such file or directory",
        "onnxruntime-tensorrt-provider-load-failed",
        False,
        "onnxruntime-cuda-libraries-missing",
    ),
    (
        "FAIL : Failed to load library libonnxruntime_providers_tensorrt.so with error: libcublasLt.so.12: cannot open shared object file: No such file or directory",
        "onnxruntime-tensorrt-provider-load-failed",
        False,
        "onnxruntime-cuda-libraries-missing",
    ),
    (
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
        '"D:\\venvs\\ort\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll"',
        "onnxruntime-tensorrt-provider-load-failed",
        False,
        None,
    ),
    # ONNX Runtime's provider warning: 1.19+ names the majors it needs
    (
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1032 onnxruntime::python::CreateExecutionProviderInstance] "
        "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies",
        "onnxruntime-provider-create-failed",
        False,
        "onnxruntime-cuda-major-mismatch",
    ),
    (
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:640 CreateExecutionProviderInstance] Failed to create "
        "CUDAExecutionProvider. Please reference https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements to ensure all dependencies are met.",
        "onnxruntime-provider-create-failed",
        False,
        "onnxruntime-cuda-libraries-missing",
    ),
    # CuPy's lazily loaded libraries, any CUDA major, both systems
    (
        "RuntimeError: CuPy failed to load libnvrtc.so.11.2: OSError: libnvrtc.so.11.2: cannot open shared object file: No such file or directory",
        "cupy-library-load-failed",
        False,
        "cupy-toolkit-missing",
    ),
    (
        "CuPy failed to load nvrtc64_112_0.dll: FileNotFoundError: Could not find module 'nvrtc64_112_0.dll' (or one of its dependencies). Try using the full path with constructor syntax.",
        "cupy-library-load-failed",
        False,
        "cupy-toolkit-missing",
    ),
    ("ImportError: CuPy is not correctly installed.", "cupy-import-failed", False, "other-cuda-major"),
    (
        "  CuPy may not function correctly because multiple CuPy packages are installed\n  in your environment:\n\n    cupy, cupy-cuda11x",
        "cupy-multiple-packages-installed",
        False,
        "cupy-multiple-packages-installed",
    ),
    # Numba: the driver's library, a missing entry point, NVVM, fork
    (
        "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: \nCUDA driver library cannot be found.\n"
        "If you are sure that a CUDA driver is installed,\ntry setting environment variable NUMBA_CUDA_DRIVER",
        "numba-cuda-driver-not-found",
        False,
        "driver-not-installed",
    ),
    (
        "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: \nPossible CUDA driver libraries are found but error occurred during load:\n"
        "/opt/lib/libcuda.so: cannot open shared object file: No such file or directory",
        "numba-cuda-driver-not-found",
        False,
        "numba-driver-variable-wrong-library",
    ),
    (
        "numba.cuda.cudadrv.error.CudaDriverError: Driver missing function: cuDriverGetVersion",
        "numba-driver-missing-function",
        False,
        "numba-driver-variable-wrong-library",
    ),
    (
        "numba.cuda.cudadrv.error.CudaDriverError: Driver missing function: cuModuleLoadDataEx",
        "numba-driver-missing-function",
        False,
        "cuda-driver-too-old",
    ),
    (
        "numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:\n"
        "libnvvm.so: cannot open shared object file: No such file or directory",
        "numba-nvvm-not-found",
        False,
        "numba-nvvm-missing",
    ),
    (
        "numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:\n"
        "/opt/cuda-11.0/nvvm/lib64/libnvvm.so: cannot open shared object file: No such file or directory",
        "numba-nvvm-not-found",
        False,
        "numba-nvvm-path-wrong",
    ),
    (
        "NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:\n"
        "Could not find module 'C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.2\\nvvm\\bin\\nvvm64_33_0.dll' "
        "(or one of its dependencies). Try using the full path with constructor syntax.",
        "numba-nvvm-not-found",
        False,
        "numba-nvvm-path-wrong",
    ),
    (
        "numba.cuda.cudadrv.error.CudaDriverError: CUDA initialized before forking",
        "numba-cuda-initialized-before-fork",
        False,
        "numba-cuda-initialized-before-fork",
    ),
    # PaddlePaddle: the dynload check and the version check against the driver
    (
        "RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnCreate.\n"
        "  [Hint: cudnn_dso_handle should not be null.] (at /paddle/paddle/phi/backends/dynload/cudnn.cc:64)",
        "paddle-library-not-loaded",
        False,
        "paddle-cudnn-not-on-path",
    ),
    (
        "W1102 08:00:00.000000  4242 gpu_resources.cc:164] WARNING: device: 0. The installed Paddle is compiled with CUDA 12.3, "
        "but CUDA runtime version in your machine is 12.2, which may cause serious incompatible bug. Please recompile or reinstall Paddle with compatible CUDA version.",
        "paddle-built-for-newer-cuda-than-driver",
        False,
        "paddle-built-for-newer-cuda-than-driver",
    ),
    # MXNet's CPU build asked for a GPU context (Linux and Windows paths, the 0.x wording)
    (
        "mxnet.base.MXNetError: [10:01:02] /work/mxnet/src/storage/storage.cc:123: Compile with USE_CUDA=1 to enable GPU usage",
        "mxnet-built-without-cuda",
        False,
        "mxnet-cpu-build",
    ),
    (
        "./dmlc-core/include/dmlc/././logging.h:208: [22:58:57] src/storage/storage.cc:43: Please compile with CUDA enabled",
        "mxnet-built-without-cuda",
        False,
        "mxnet-cpu-build",
    ),
    # TensorRT's logger: a minor release of cuDNN or cuBLAS other than its build's
    (
        "[08/18/2022-02:11:58] [W] [TRT] TensorRT was linked against cuBLAS/cuBLAS LT 11.6.1 but loaded cuBLAS/cuBLAS LT 11.4.2",
        "tensorrt-linked-library-differs",
        True,
        "tensorrt-linked-library-differs",
    ),
    (
        "[TensorRT] WARNING: TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.4.2",
        "tensorrt-linked-library-differs",
        True,
        "tensorrt-linked-library-differs",
    ),
]


@pytest.mark.parametrize("message, pattern_id, harmless, first", MESSAGES, ids=[m[1] for m in MESSAGES])
def test_message_is_explained_with_the_cause_its_source_implies_first(message, pattern_id, harmless, first):
    assert_explained(message, pattern_id, harmless, first)


def test_a_tensorrt_provider_failure_in_a_windows_log_gets_powershell_only():
    (explanation,) = _explain(
        "C:\\Users\\me> python run.py\n"
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
        '"C:\\Python311\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll"'
    )
    shells = {c.shell for cause in explanation.causes for c in cause.tell.commands}
    assert "bash" not in shells


def test_cupy_beside_nvidias_pip_wheels_puts_the_search_path_first():
    log = (
        "/home/u/venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12\n"
        "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object file: No such file or directory"
    )
    (explanation,) = _explain(log)
    assert explanation.causes[0].id == "cuda-lib-not-on-path"


def test_cupys_windows_message_reads_the_cuda_major_from_the_dll_name():
    (explanation,) = _explain(
        "RuntimeError: CuPy failed to load nvrtc64_120_0.dll: FileNotFoundError: Could not find module 'nvrtc64_120_0.dll' (or one of its dependencies)."
    )
    assert explanation.variables["library"] == "nvrtc64_120_0.dll"
    assert explanation.variables["lib_version"].startswith("12")
    shells = {c.shell for cause in explanation.causes for c in cause.tell.commands}
    assert "bash" not in shells


def test_numba_in_a_container_without_the_driver_puts_the_container_first():
    log = (
        "$ docker run --rm -it numba-image python -c 'from numba import cuda; cuda.detect()'\n"
        "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: \nCUDA driver library cannot be found."
    )
    (explanation,) = _explain(log)
    assert explanation.causes[0].id == "container-without-gpu"


def test_numba_under_wsl2_puts_the_wsl_driver_folder_first():
    log = (
        "Linux pc 5.15.153.1-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n"
        "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: CUDA driver library cannot be found."
    )
    (explanation,) = _explain(log)
    assert explanation.causes[0].id == "wsl-libcuda-path"


def test_the_numba_nvvm_message_over_two_lines_is_one_explanation():
    found = _explain(
        "NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:\n"
        "Could not find module 'nvvm.dll' (or one of its dependencies). Try using the full path with constructor syntax."
    )
    assert [e.id for e in found] == ["numba-nvvm-not-found"]
    assert found[0].causes[0].id == "numba-nvvm-missing"  # the bare name: Numba's own search


def test_the_paddle_version_check_names_both_versions():
    (explanation,) = _explain(
        "WARNING: device: 0. The installed Paddle is compiled with CUDA 11.8, but CUDA runtime version in your machine is 11.2, which may cause serious incompatible bug."
    )
    assert "11.8" in explanation.title and "11.2" in explanation.title


@pytest.mark.parametrize(
    "line",
    [
        # other programs' and ordinary lines that share words with these messages
        "Failed to load library libfoo_plugin.so with error: libbar.so.1: cannot open shared object file",
        "Created TensorrtExecutionProvider on device 0",
        "CuPy failed to load the cache file",
        "multiple CuPy packages are supported",
        "CUDA driver library found",
        "Driver missing function: fopen",
        "libNVVM found",
        "Cannot load image shared library. Cannot invoke method decode",
        "The installed Paddle is compiled with CUDA 11.8",
        "Compile with USE_CUDA=1",
        "TensorRT was linked against CUDA 12.4",
        "Running on CUDAExecutionProvider.",
        "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.",
    ],
)
def test_look_alikes_are_not_these_messages(line):
    ids = set(CATALOGUE.scan_text(line).ids)
    assert not ids & {
        "onnxruntime-tensorrt-provider-load-failed",
        "onnxruntime-provider-create-failed",
        "cupy-library-load-failed",
        "cupy-import-failed",
        "cupy-multiple-packages-installed",
        "numba-cuda-driver-not-found",
        "numba-driver-missing-function",
        "numba-nvvm-not-found",
        "paddle-library-not-loaded",
        "paddle-built-for-newer-cuda-than-driver",
        "mxnet-built-without-cuda",
        "tensorrt-linked-library-differs",
    }


def test_the_paddle_cudnn_check_reads_a_version_the_terminal_cut():
    (explanation,) = _explain(
        "W0617 05:33:02.719738   374 device_context.cc:270] WARNING: device: 0. The installed Paddle is compiled with "
        "CUDNN 7.6, but CUDNN version in your machine is 7               .5, which may cause serious incompatible bug."
    )
    assert explanation.id == "paddle-built-for-newer-cudnn"
    assert explanation.title.endswith("cuDNN 7.5 was loaded")


_PADDLE_IN_DOCKER = (
    "$ docker run --rm -it --gpus all paddle-image python check.py\n"
    "CUDA version: 11.2.142\n"
    "Nvidia driver version: {driver}\n"
    "W0324 15:29:02.249459  3747 init.cc:182] Compiled with WITH_GPU, but no GPU found in runtime."
)


def test_paddle_finding_no_gpu_under_a_driver_older_than_its_cuda_puts_the_driver_first():
    (explanation,) = _explain(_PADDLE_IN_DOCKER.format(driver="440.33.01"))  # CUDA 11.2 needs 450.80.02
    assert explanation.causes[0].id == "cuda-driver-too-old"


def test_paddle_finding_no_gpu_in_a_container_with_a_new_enough_driver_puts_the_container_first():
    (explanation,) = _explain(_PADDLE_IN_DOCKER.format(driver="460.32.03"))
    assert explanation.causes[0].id == "container-without-gpu"


_ORT_CUDNN8 = "FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.8: cannot open shared object file: No such file or directory"


@pytest.mark.parametrize(
    "before, first",
    [
        ("I0000 00:00:1.0 77 cuda_dnn.cc:529] Loaded cuDNN version 90300\n", "onnxruntime-cuda-major-mismatch"),
        ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9\n", "onnxruntime-cuda-major-mismatch"),
        ("I0000 00:00:1.0 77 cuda_dnn.cc:529] Loaded cuDNN version 8902\n", "onnxruntime-cuda-libraries-missing"),
        ("/opt/cudnn/lib/libcudnn.so.8\n", "onnxruntime-cuda-libraries-missing"),
    ],
)
def test_the_cudnn_the_log_shows_beside_onnx_runtimes_provider_decides_its_cause(before, first):
    found = [e for e in _explain(before + _ORT_CUDNN8) if e.id == "onnxruntime-cuda-provider-load-failed"]
    assert found[0].causes[0].id == first


def test_onnx_runtimes_provider_on_a_cuda_12_machine_asking_for_cublas_11_is_the_major():
    log = (
        "Cuda compilation tools, release 12.4, V12.4.131\n"
        "FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file or directory"
    )
    found = [e for e in _explain(log) if e.id == "onnxruntime-cuda-provider-load-failed"]
    assert found[0].causes[0].id == "onnxruntime-cuda-major-mismatch"


@pytest.mark.parametrize(
    "message, first",
    [
        (
            "NvvmSupportError: No supported GPU compute capabilities found. Please check your cudatoolkit version matches your CUDA version.",
            "numba-toolkit-outside-its-range",
        ),
        (
            "UserWarning: CUDA Toolkit 11.1 is unsupported by Numba - 11.2 is the minimum required version.",
            "numba-toolkit-outside-its-range",
        ),
        (
            "numba.cuda.cudadrv.error.NvvmSupportError: GPU compute capability 5.2 is not supported(requires >=7.5)",
            "compute-capability-too-low",
        ),
    ],
)
def test_numbas_architecture_checks_name_the_toolkit_or_the_gpu(message, first):
    assert_explained(message, "numba-no-supported-compute-capability", False, first)


@pytest.mark.parametrize(
    "line",
    [
        "No supported GPU compute capabilities",
        "CUDA Toolkit 12.4 is supported by Numba",
        "compute capability 8.6 is supported",
    ],
)
def test_numbas_architecture_look_alikes_are_not_explained(line):
    assert "numba-no-supported-compute-capability" not in CATALOGUE.scan_text(line).ids


def test_tensorrts_lazy_loading_note_is_harmless_through_tf_trts_logger_too():
    assert_explained(
        "W0112 10:00:00.000000 1 trt_logger.cc:38] TF-TRT Warning: DefaultLogger CUDA lazy loading is not enabled. "
        "Enabling it can significantly reduce device memory usage and speed up TensorRT initialization.",
        "tensorrt-lazy-loading-notice",
        True,
        "tensorrt-lazy-loading-notice",
    )
    assert "tensorrt-lazy-loading-notice" not in CATALOGUE.scan_text("CUDA lazy loading is enabled").ids
