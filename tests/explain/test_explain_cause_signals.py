"""Signals in a message or its log that decide which of a message's causes comes first.

- A CUDA project's own error check: the cudaCheckError() helper projects copy into their kernels'
  sources prints "cudaCheckError() failed[ at FILE:LINE] : " and cudaGetErrorString's text after
  the project's own kernel launch, so a kernel without code for the GPU was compiled by the
  project's build (its nvcc -arch / -gencode), not shipped by the framework.
- cuDNN 8's sub-libraries (libcudnn_ops_infer.so.8 ...) are opened by file name with dlopen(3),
  which searches LD_LIBRARY_PATH, the ld.so cache and the system folders: a copy inside a Python
  package or a conda environment that the log shows on disk is installed but off the search path.
"""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _first(text: str):
    explanations = explain(CATALOGUE.scan_text(text))
    assert explanations, text
    return explanations[0]


def _ids(explanation) -> list[str]:
    return [c.id for c in explanation.causes]


# --- a project's own kernel check ------------------------------------------------------------------

OWN_CHECK = [
    # Faster-RCNN_TF's ROI pooling op built for another architecture (its make.sh's -arch)
    "cudaCheckError() failed : invalid device function",
    # the helper's other wordings: with the file and line, and its second check after a synchronize
    "cudaCheckError() failed at /home/user/src/nms_kernel.cu:118 : invalid device function",
    "CudaCheckError() with sync failed at ext/roi_align_kernel.cu:77 : invalid device function",
]


@pytest.mark.parametrize("text", OWN_CHECK)
def test_the_projects_own_check_puts_its_build_first(text):
    explanation = _first(text)
    assert explanation.id == "cuda-runtime-status"
    assert explanation.variables.get("status_name") == "cudaErrorInvalidDeviceFunction"
    assert _ids(explanation)[0] == "custom-build-arch"
    assert "release-lacks-arch" in _ids(explanation)


def test_the_projects_own_check_of_a_missing_kernel_image_puts_its_build_first():
    text = "cudaCheckError() failed at src/kernels.cu:42 : no kernel image is available for execution on the device"
    explanation = _first(text)
    assert explanation.id == "no-kernel-image-for-device"
    assert _ids(explanation)[0] == "custom-build-arch"


@pytest.mark.parametrize(
    "text",
    [
        # the framework's own launch: the release's architectures come first
        "RuntimeError: CUDA error: invalid device function",
        "F .\\tensorflow/core/kernels/random_op_gpu.h:232] Non-OK-status: GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>, num_blocks, block_size, 0, d.stream(), gen, data, size, dist) status: Internal: no kernel image is available for execution on the device",
    ],
)
def test_without_the_projects_check_the_release_comes_first(text):
    explanation = _first(text)
    assert _ids(explanation)[0] == "release-lacks-arch"
    assert "custom-build-arch" in _ids(explanation)


def test_the_check_is_a_log_fact_that_ranks_a_later_line_too():
    log = "Loaded network /data/VGGnet_fast_rcnn_iter_70000.ckpt\ncudaCheckError() failed : invalid device function\n"
    assert read_context(log).get("log_kernel_check")
    assert _ids(_first(log))[0] == "custom-build-arch"


@pytest.mark.parametrize(
    "text",
    [
        # the program's own assertion in its kernel, never the GPU setup
        "cudaCheckError() failed : device-side assert triggered",
        # prose about the helper, and a line that prints no status
        "Define cudaCheckError() to check every kernel launch",
        "cudaCheckError() returned",
    ],
)
def test_a_line_that_only_names_the_helper_is_not_explained(text):
    assert "cuda-runtime-status" not in CATALOGUE.scan_text(text).ids


@pytest.mark.parametrize(
    "text", ["we call cudaCheckError() after every launch", "cudaCheckError() returned", "cudaCheckErrors() failed : x"]
)
def test_the_helper_named_without_its_failure_sets_no_fact(text):
    assert "log_kernel_check" not in read_context(text)


# --- cuDNN 8's sub-libraries off the search path ---------------------------------------------------

MISSING_OPS = (
    "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared "
    "object file: No such file or directory\nPlease make sure libcudnn_ops_infer.so.8 is in your library path!\n"
)


@pytest.mark.parametrize(
    "shown",
    [
        # NVIDIA's pip wheel in a user's site-packages (a locate line)
        "/home/me/.local/lib/python3.8/site-packages/nvidia/cudnn/lib/libcudnn_ops_infer.so.8\n",
        # PyTorch's own copy in a conda environment (a find line)
        "/opt/conda/lib/python3.10/site-packages/torch/lib/libcudnn_ops_infer.so.8\n",
        # a virtual environment's torch/lib, shown by ls
        "-rwxr-xr-x 1 me me 97M Mar 17 venv/lib/python3.11/site-packages/torch/lib/libcudnn_ops_infer.so.8\n",
    ],
)
def test_the_sub_library_shown_on_disk_is_off_the_search_path(shown):
    explanation = _first(MISSING_OPS + shown)
    assert explanation.id == "cudnn-sublibrary-not-loaded"
    assert _ids(explanation)[0] == "cudnn-lib-not-on-path"


def test_a_conda_environment_in_the_log_puts_the_search_path_first():
    log = "(base) user@host:~$ python transcribe.py\n" + MISSING_OPS
    assert _ids(_first(log))[0] == "cudnn-lib-not-on-path"


def test_nothing_shown_keeps_a_missing_cudnn_first_and_lists_the_search_path():
    ids = _ids(_first(MISSING_OPS))
    assert ids[0] == "cudnn-not-installed"
    assert "cudnn-lib-not-on-path" in ids


def test_another_cudnn_file_on_disk_does_not_point_at_the_search_path():
    # only the main library was installed (an incomplete copy): the sub-library is not on disk
    log = "$ ls /usr/local/cuda/lib64/libcudnn.so.8\n/usr/local/cuda/lib64/libcudnn.so.8\n" + MISSING_OPS
    ids = _ids(_first(log))
    assert ids[0] != "cudnn-lib-not-on-path"
    assert "cudnn-incomplete" in ids


def test_a_windows_dll_gets_the_windows_path_cause_not_the_loaders():
    ids = _ids(_first("Could not locate cudnn_cnn_infer64_8.dll. Please make sure it is in your library path!"))
    assert "cudnn-lib-not-on-path" not in ids
    assert "cudnn-not-on-path" in ids


# --- a suspend and resume before CUDA failed --------------------------------------------------------

CUINIT_UNKNOWN = (
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n"
)


@pytest.mark.parametrize(
    "said",
    [
        "It worked until I suspended the laptop; after I resume from suspend I get:\n",
        "Everything is fine after a reboot, but after hibernation TensorFlow prints\n",
        "[12345.678901] PM: suspend entry (deep)\n[12399.001122] PM: suspend exit\n",
        "Jan 05 09:12:01 host systemd-sleep[2211]: Entering sleep state 'suspend'...\n",
        "when the machine wakes up from sleep the GPU is gone:\n",
    ],
)
def test_a_suspend_the_input_tells_of_puts_the_unified_memory_modules_state_first(said):
    log = said + CUINIT_UNKNOWN
    assert read_context(log).get("log_suspend")
    assert _ids(_first(log))[0] == "uvm-bad-state"


def test_without_a_suspend_the_missing_module_stays_first():
    assert _ids(_first(CUINIT_UNKNOWN))[0] == "nvidia-uvm-not-loaded"


@pytest.mark.parametrize(
    "said",
    [
        # a shell's job control, not the machine's power state
        "zsh: suspended  python train.py\n",
        "[1]+  Stopped                 python train.py\n",
        # a job scheduler's word and other uses of "sleep"
        "time.sleep(5)\nsleep 10 && python train.py\n",
    ],
)
def test_job_control_and_sleep_calls_are_no_suspend(said):
    log = said + CUINIT_UNKNOWN
    assert "log_suspend" not in read_context(log)
    assert _ids(_first(log))[0] == "nvidia-uvm-not-loaded"


def test_a_status_only_unknown_error_after_a_suspend_ranks_the_same_way():
    log = "after resume from suspend:\nRuntimeError: CUDA error: unknown error\n"
    assert _ids(_first(log))[0] == "uvm-bad-state"
    ids = _ids(_first("RuntimeError: CUDA error: unspecified launch failure\n"))
    assert ids[0] != "uvm-bad-state" and "uvm-bad-state" in ids
    ids = _ids(
        _first(
            "It crashed right after the laptop came back from suspend.\nRuntimeError: CUDA error: unspecified launch failure\n"
        )
    )
    assert ids[0] == "uvm-bad-state"


# --- the status text decides over its number --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # CUDA before 10.1 numbered invalid device function 8; 10.1 renumbered it 98
        "RuntimeError: cuda runtime error (8) : invalid device function at /pytorch/torch/lib/THC/generic/THCTensorMath.cu:35",
        "RuntimeError: cuda runtime error (98) : invalid device function at /home/me/ext/kernel.cu:190",
    ],
)
def test_the_status_text_decides_over_a_number_the_cuda_release_renumbered(text):
    explanation = _first(text)
    assert explanation.variables.get("status_name") == "cudaErrorInvalidDeviceFunction"
    assert "custom-build-arch" in _ids(explanation)


def test_a_number_alone_still_names_its_status():
    assert _first("RuntimeError: CUDA error (2)").id == "cuda-out-of-memory"


# --- the framework says the GPU is too old -------------------------------------------------------------

THC_INVALID = "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1/work/aten/src/THC/generic/THCTensorMath.cu line=14 error=8 : invalid device function\n"


@pytest.mark.parametrize(
    "warning",
    [
        "Found GPU0 GeForce GT 710M which is of cuda capability 2.1.\nPyTorch no longer supports this GPU because it is too old.\n",
        "Found GPU0 Tesla K40c which is of cuda capability 3.5.\n    PyTorch no longer supports this GPU because it is too old.\n"
        "    The minimum cuda capability supported by this library is 3.7.\n",
    ],
)
def test_the_frameworks_too_old_warning_puts_the_capability_first(warning):
    assert read_context(warning + THC_INVALID).get("log_gpu_too_old")
    assert _ids(_first(warning + THC_INVALID))[0] == "compute-capability-too-low"


@pytest.mark.parametrize(
    "text",
    [
        "My laptop is too old to upgrade the driver.\n",
        "The minimum required CUDA version is 11.2.\n",
    ],
)
def test_other_too_old_words_are_no_capability_signal(text):
    assert "log_gpu_too_old" not in read_context(text)
    assert _ids(_first(text + THC_INVALID))[0] == "release-lacks-arch"
