"""The causes of the messages most users meet, decided by what their printing source says: the
text CUDA's error-string functions give a status, whatever program prints it; nvidia-docker 1.0's
own refusal; the CUDA major a missing library's file name carries against the one the log shows;
what a CUDA_VISIBLE_DEVICES value the log sets does to CUDA's device list. Each rule has a case that
triggers it and a close one that does not."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context
from envcheck.explain.contradictions import _cvd_indexes

CATALOGUE = load_patterns()


def _ids(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text))]


def _ranked(text: str, pattern: str) -> list[str]:
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern]
    assert found, _ids(text)
    return [c.id for c in found[0].causes]


# --- cudaErrorNoDevice / CUDA_ERROR_NO_DEVICE by its error string ---------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # Caffe's CHECK_EQ on the runtime's status (common.cpp), the CUDA 9 numbering
        "F0524 09:04:15.975416  9945 common.cpp:152] Check failed: error == cudaSuccess (38 vs. 0)  no CUDA-capable device is detected",
        "CUDA Error: no CUDA-capable device is detected",  # darknet's check_error
        "cudaGetDeviceCount returned 100\n-> no CUDA-capable device is detected",  # the CUDA samples
    ],
)
def test_the_no_device_error_string_is_the_no_device_status_whatever_prints_it(line):
    assert "cuinit-no-device" in _ids(line)


def test_a_program_that_explains_the_same_string_more_specifically_keeps_it():
    line = "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected"
    assert _ids(line) == ["ggml-cuda-init-failed"]


def test_a_line_that_only_counts_cuda_devices_is_not_the_status():
    assert "cuinit-no-device" not in _ids("Detected 1 CUDA Capable device(s)")


# --- nvidia-docker 1.0's CUDA check ---------------------------------------------------------------


def test_nvidia_docker_1_refusing_an_image_newer_than_the_driver_is_the_driver():
    text = "nvidia-docker | 2017/04/19 13:02:34 Error: unsupported CUDA version: driver 7.5 < image 8.0"
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == "container-cuda-requirement-unmet"]
    assert found.causes[0].id == "cuda-driver-too-old"
    assert found.variables["requirement"] == "8.0" and found.variables["driver_cuda"] == "7.5"


def test_another_tools_unsupported_cuda_version_is_not_nvidia_docker():
    assert "container-cuda-requirement-unmet" not in _ids("CMake Error: unsupported CUDA version: 13.0")


# --- a module built for another CUDA major ----------------------------------------------------------

IMPORT_11 = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
IMPORT_CUBLAS_11 = "ImportError: libcublas.so.11: cannot open shared object file: No such file or directory\n"


@pytest.mark.parametrize(
    "shown",
    [
        # the same library of another major on disk (a find or ls line)
        "/opt/conda/lib/python3.10/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12\n",
        # the installed toolkit nvcc reports
        "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.1, V12.1.105\n",
        # a PyTorch wheel's CUDA tag
        "torch 2.1.2+cu121\n",
    ],
)
def test_another_cuda_major_the_log_shows_ranks_the_major_first(shown):
    assert _ranked(shown + IMPORT_11, "cuda-library-import-missing")[0] == "other-cuda-major"


def test_without_another_major_in_the_log_the_wheel_stays_first():
    assert _ranked(IMPORT_11, "cuda-library-import-missing")[0] == "cuda-pip-wheel-missing"
    # the same major installed (CUDA 11.8's toolkit ships libcudart.so.11.0): not another major
    same = "Cuda compilation tools, release 11.8, V11.8.89\n"
    assert _ranked(same + IMPORT_11, "cuda-library-import-missing")[0] != "other-cuda-major"


def test_the_very_file_on_disk_is_the_search_path_not_another_major():
    shown = "/usr/local/cuda-11.8/lib64/libcudart.so.11.0\n/opt/x/lib/libcudart.so.12\n"
    assert _ranked(shown + IMPORT_11, "cuda-library-import-missing")[0] != "other-cuda-major"


def test_a_library_that_numbers_its_own_releases_names_no_cuda_major():
    # CUDA 12's cuFFT is libcufft.so.11: its suffix is not a CUDA major
    text = "/usr/local/cuda-12.2/lib64/libcufft.so.11\nImportError: libcufft.so.10: cannot open shared object file: No such file or directory\n"
    ranked = [c.id for e in explain(CATALOGUE.scan_text(text)) for c in e.causes]
    assert "other-cuda-major" not in ranked


def test_another_major_on_disk_also_ranks_a_ctranslate2_library_miss():
    text = "/usr/lib/x86_64-linux-gnu/libcublas.so.12\nLibrary libcublas.so.11 is not found or cannot be loaded\n"
    assert _ranked(text, "library-not-found-or-not-loaded")[0] == "other-cuda-major"
    plain = "Library libcublas.so.11 is not found or cannot be loaded\n"
    assert _ranked(plain, "library-not-found-or-not-loaded")[0] == "cuda-not-installed"
    assert _ranked(IMPORT_CUBLAS_11, "cuda-library-import-missing")[0] == "cuda-pip-wheel-missing"


# --- CUDA_VISIBLE_DEVICES as the log sets it ----------------------------------------------------------

NO_DEVICE = "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_NO_DEVICE\n"


@pytest.mark.parametrize(
    "text, value",
    [
        ("CUDA_VISIBLE_DEVICES=$0 ./tools/demo.py", None),  # the shell expands it: not in the log
        ("CUDA_VISIBLE_DEVICES=${GPU_ID} python train.py", None),
        ("set CUDA_VISIBLE_DEVICES=%GPU%", None),
        ("CUDA_VISIBLE_DEVICES= python train.py", "empty"),  # set empty, then the command
        ("CUDA_VISIBLE_DEVICES=gpu1 python train.py", "gpu1"),
        ("os.environ['CUDA_VISIBLE_DEVICES'] = 'GPU-8f2e1b0c-6a41-1f2b'", "GPU-8f2e1b0c-6a41-1f2b"),
    ],
)
def test_what_the_log_sets_cuda_visible_devices_to_is_read_as_written(text, value):
    assert read_context(text).get("log_cvd") == value


def test_a_first_entry_that_is_no_index_or_uuid_hides_every_gpu():
    # CUDA shows only the devices listed before the first invalid entry (CUDA C++ Programming Guide)
    assert _cvd_indexes({"log_cvd": "gpu1"}) == []
    assert _ranked("CUDA_VISIBLE_DEVICES=gpu1 python train.py\n" + NO_DEVICE, "cuinit-no-device")[0] == "cvd-hides-all"
    # a GPU's UUID is a valid entry this log cannot check: no lead either way
    assert _cvd_indexes({"log_cvd": "GPU-8f2e1b0c-6a41-1f2b"}) is None
    # a shell variable's value is not in the log: nothing is read from it
    (found,) = explain(CATALOGUE.scan_text("CUDA_VISIBLE_DEVICES=$1 ./tools/demo.py\n" + NO_DEVICE))
    assert not found.variables.get("log_cvd")


# --- cudaErrorInvalidDevice: a device number that names no visible GPU ------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: invalid device ordinal",
        "RuntimeError: CUDA error (10): invalid device ordinal",  # the runtime's numbering before CUDA 10.1
    ],
)
def test_an_invalid_device_ordinal_is_a_gpu_number_the_machine_lacks(line):
    assert _ranked(line, "cuda-runtime-status")[:2] == ["device-index-out-of-range", "visible-devices-renumbered"]


def test_a_log_that_narrows_the_gpus_ranks_their_renumbering_first():
    text = 'os.environ["CUDA_VISIBLE_DEVICES"] = "4,3"\nRuntimeError: CUDA error: invalid device ordinal\n'
    assert _ranked(text, "cuda-runtime-status")[0] == "visible-devices-renumbered"


# --- cuDNN's NOT_INITIALIZED, the status TensorFlow pairs with its driver hint -------------------------


def test_a_cudnn_handle_not_initialized_lists_the_driver_and_other_statuses_do_not():
    not_initialized = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:334] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED"
    )
    internal = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
    )
    assert "driver-too-old-for-cudnn" in _ranked(not_initialized, "cudnn-handle-failed")
    assert "driver-too-old-for-cudnn" not in _ranked(internal, "cudnn-handle-failed")
    # memory stays first: the corpus confirms it most often for this line
    assert _ranked(not_initialized, "cudnn-handle-failed")[0] == "gpu-memory-preallocated"
