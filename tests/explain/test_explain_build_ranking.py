"""A message's causes ranked by what the rest of the log shows about the build: the TensorFlow
release it prints, through the compatibility matrix (its CUDA and cuDNN, its GPU architectures,
native Windows' last GPU release), against the CUDA, cuDNN, GPU, system, files and environment the
same log shows. Each rule has a case where it decides the order and a close one where it does not."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.build_facts import build_facts, same_cuda_files
from envcheck.explain.context import read_context
from envcheck.matrix import load_matrix

CATALOGUE = load_patterns()


def _ranked(text: str, pattern: str) -> list[str]:
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern]
    assert found, [e.id for e in explain(CATALOGUE.scan_text(text))]
    return [c.id for c in found[0].causes]


def _dropped(text: str, pattern: str) -> list[str]:
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern]
    return [cause for cause, _ in found[0].dropped]


# --- what the log says, read ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, facts",
    [
        # TensorFlow's bug-report form: the answers under its headings
        (
            "### TensorFlow version\n\n2.18.0\n\n### OS platform and distribution\n\nWindows 11 24h2\n\n"
            "### CUDA/cuDNN version\n\n11.8/8.6\n",
            {"log_tf": "2.18.0", "log_os": "windows", "log_cuda": "11.8", "log_cudnn": "8.6"},
        ),
        ("### Tensorflow Version\n\nv2.11.0-rc2-15-g6290819256d 2.11.0\n", {"log_tf": "2.11.0"}),
        # its older form's lines
        (
            "- OS Platform and Distribution: Windows 10\n- TensorFlow version (use command below): 2.1.0\n"
            "- CUDA/cuDNN version: 10.2.89\n",
            {"log_tf": "2.1.0", "log_os": "windows", "log_cuda": "10.2"},
        ),
        ("- TensorFlow: tensorflow-gpu-1.5.0\n- CUDA: 8.0\n", {"log_tf": "1.5.0", "log_cuda": "8.0"}),
        ("My system is Windows 11. My tensorflow version is 2.12.0.", {"log_tf": "2.12.0", "log_os": "windows"}),
        ("win10\nRTX3070ti\ncuda11.2\n", {"log_os": "windows", "log_cuda": "11.2"}),
    ],
)
def test_the_bug_report_forms_versions_and_system_are_read(text, facts):
    context = read_context(text)
    assert {name: context.get(name) for name in facts} == facts


def test_the_form_s_cuda_cudnn_line_is_not_read_as_a_cudnn_version():
    context = read_context("- CUDA/cuDNN version: 10.2.89\n")
    assert context["log_cuda"] == "10.2" and "log_cudnn" not in context
    # nor is a Windows release named in prose about something else a platform
    assert "log_os" not in read_context("Windows 10 was mentioned here\nEpoch 1/10")


def test_library_files_shown_on_disk_are_collected_but_not_those_a_loader_failed_to_open():
    context = read_context(
        "/usr/local/cuda-11.0/targets/x86_64-linux/lib/libcudart.so.11.0\n"
        "Could not load dynamic library 'libcudnn.so.8'; dlerror: /opt/x/libcudnn.so.8: cannot open shared object file\n"
    )
    assert context["log_library_files"] == "libcudart.so.11.0"


@pytest.mark.parametrize(
    "text, value",
    [
        ("export CUDA_VISIBLE_DEVICES=1", "1"),
        ("os.environ['CUDA_VISIBLE_DEVICES'] = '-1'", "-1"),
        ('CUDA_VISIBLE_DEVICES="" python train.py', "empty"),
        ("CUDA_VISIBLE_DEVICES=0,1 python train.py", "0,1"),
    ],
)
def test_the_cuda_visible_devices_value_the_log_sets_is_read(text, value):
    assert read_context(text)["log_cvd"] == value


def test_the_microsoft_store_python_is_recognised_by_its_folder():
    store = (
        r'File "C:\Users\ada\AppData\Local\Packages\PythonSoftwareFoundation.Python.3.7_qbz5n2kfra8p0\LocalCache\x.py"'
    )
    plain = r'File "C:\Users\ada\AppData\Local\Programs\Python\Python37\lib\site-packages\x.py"'
    assert read_context(store).get("log_python_store") == "yes"
    assert "log_python_store" not in read_context(plain)


# --- what the matrix says of that build --------------------------------------------------------


@pytest.mark.parametrize(
    "installed, built, same",
    [
        ("11.8", "11.2", True),
        ("12.1", "11.8", False),
        ("10.2", "10.1", False),
        ("10.1", "10.1", True),
        ("x", "11.2", None),
    ],
)
def test_cuda_file_names_are_shared_within_a_major_from_cuda_11_only(installed, built, same):
    assert same_cuda_files(installed, built) is same


def test_build_facts_come_from_the_matrix_row_of_the_logs_release_and_system():
    matrix = load_matrix()
    assert build_facts({"log_tf": "2.12.0", "log_os": "windows"}, matrix) == {"log_tf_no_gpu_build": "windows"}
    facts = build_facts({"log_tf": "2.4.1", "log_cuda": "10.1", "log_cudnn": "7.6"}, matrix)
    assert facts["log_tf_cuda"] == "11.0" and facts["log_cuda_for_tf"] == "other"
    assert facts["log_cudnn_for_tf"] == "other-major"
    assert build_facts({"log_tf": "2.10.0", "log_os": "windows"}, matrix)["log_tf_cuda"] == "11.2"
    assert build_facts({"log_cuda": "11.2"}, matrix) == {} and build_facts({"log_tf": "2.4"}, None) == {}


# --- the rules ---------------------------------------------------------------------------------

NO_GPU = "Num GPUs Available:  0\n"


def test_tensorflow_after_2_10_on_native_windows_ranks_no_gpu_build_first():
    # TensorFlow's pip page: 2.10 was the last release with a GPU build for native Windows
    log = "### TensorFlow version\n\n2.12.0\n\n### OS platform and distribution\n\nWindows 11\n\n" + NO_GPU
    assert _ranked(log, "tf-lists-no-gpu")[0] == "tf-windows-gpu-ended"


@pytest.mark.parametrize(
    "log",
    [
        "TensorFlow version: 2.12.0\n/home/ada/train.py\n" + NO_GPU,  # Linux: the cause does not apply
        "TensorFlow version: 2.10.0\nC:\\Users\\ada\\train.py\n" + NO_GPU,  # the last release that had one
    ],
)
def test_the_no_windows_gpu_build_cause_is_ruled_out_elsewhere_and_before_2_11(log):
    assert "tf-windows-gpu-ended" not in _ranked(log, "tf-lists-no-gpu")
    assert "tf-windows-gpu-ended" in _dropped(log, "tf-lists-no-gpu")


def test_a_cuda_other_than_the_builds_ranks_the_wrong_cuda_first_and_the_same_the_search_path():
    # TensorFlow 2.4 is built with CUDA 11.0 (the tested build configurations)
    other = "TensorFlow version: 2.4.1\nCUDA version: 10.1\n" + NO_GPU
    same = "TensorFlow version: 2.4.1\nCUDA version: 11.0\n" + NO_GPU
    assert _ranked(other, "tf-lists-no-gpu")[0] == "cuda-not-installed"
    assert _ranked(same, "tf-lists-no-gpu")[0] == "cuda-lib-not-on-path"


def test_the_builds_cuda_does_not_decide_for_a_math_library_with_its_own_numbering():
    # CUDA 11.1 ships libcusolver.so.11; TensorFlow 2.4 (CUDA 11.0) asks for libcusolver.so.10
    log = (
        "TensorFlow version: 2.4.0\nCUDA version: 11.1\n"
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library "
        "'libcusolver.so.10'; dlerror: libcusolver.so.10: cannot open shared object file: No such file or directory\n"
    )
    assert _ranked(log, "cuda-math-library-not-loaded")[0] == "cuda-minor-release-differs"


CUDNN_FAILED = (
    "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
)


@pytest.mark.parametrize(
    "gpu, first",
    [
        ("GeForce 940MX computeCapability: 5.0", "release-lacks-arch"),  # TF 2.3's wheels: sm_52, no sm_50
        ("GeForce RTX 3090 computeCapability: 8.6", "release-lacks-arch"),  # CUDA 10.1 predates sm_86
        ("GeForce GTX 1080 computeCapability: 6.1", "gpu-memory-preallocated"),  # in the build's list
    ],
)
def test_a_gpu_the_build_has_no_code_for_ranks_the_missing_architecture_first(gpu, first):
    log = f"TensorFlow version: 2.3.0\npciBusID: 0000:01:00.0 name: {gpu}\n{CUDNN_FAILED}"
    assert _ranked(log, "cudnn-handle-failed")[0] == first


def test_the_asked_for_file_shown_on_disk_ranks_the_search_path_first():
    failed = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
        "'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory\n"
    )
    assert (
        _ranked(failed + "$ ls /usr/local/cuda-11.2/lib64/libcudnn.so.8\n", "cudnn-not-loaded")[0]
        == "cudnn-lib-not-on-path"
    )
    # another major's file on disk is not the one asked for
    assert (
        _ranked(failed + "$ ls /usr/local/cuda-11.2/lib64/libcudnn.so.7\n", "cudnn-not-loaded")[0]
        == "cudnn-not-installed"
    )


NO_DEVICE = "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_NO_DEVICE\n"


@pytest.mark.parametrize(
    "setting, first",
    [
        ("export CUDA_VISIBLE_DEVICES=1\n", "cvd-out-of-range"),  # an index above 0 on a smaller machine
        ("os.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n", "cvd-hides-all"),
        ("export CUDA_VISIBLE_DEVICES=\n", "cvd-hides-all"),
        ("export CUDA_VISIBLE_DEVICES=0\n", "cvd-hides-all"),  # GPU 0 exists wherever any does: no lead
    ],
)
def test_the_cuda_visible_devices_the_log_sets_ranks_its_cause(setting, first):
    assert _ranked(setting + NO_DEVICE, "cuinit-no-device")[0] == first


def test_the_microsoft_store_python_ranks_its_dll_search_first():
    missing = (
        "2020 W tensorflow/stream_executor/platform/default/dso_loader.cc:55] Could not load dynamic library "
        "'cudart64_101.dll'; dlerror: cudart64_101.dll not found\n"
    )
    store = r'  File "C:\Users\ada\AppData\Local\Packages\PythonSoftwareFoundation.Python.3.7_qbz5n2kfra8p0\LocalCache\a.py"'
    plain = r'  File "C:\Users\ada\AppData\Local\Programs\Python\Python37\lib\site-packages\a.py"'
    assert _ranked(store + "\n" + missing, "cudart-not-loaded")[0] == "msstore-python"
    assert _ranked(plain + "\n" + missing, "cudart-not-loaded")[0] == "cuda-not-installed"


@pytest.mark.parametrize(
    "text, found",
    [
        ("Num GPUs Available:  0", True),
        ("[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]", True),
        ("`[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]`", True),
        ("Is GPU Available: []", True),
        ("Num GPUs Available:  1", False),
        (
            "[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU'), PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')]",
            False,
        ),
    ],
)
def test_tensorflows_device_list_without_a_gpu_is_recognised(text, found):
    assert any(e.id == "tf-lists-no-gpu" for e in explain(CATALOGUE.scan_text(text))) is found


def test_an_invalid_kernel_image_names_the_missing_architecture():
    # TensorFlow 2.3 on compute capability 5.0 (its PTX is compute_70, its cubins sm_35 .. sm_70 without sm_50)
    log = "InternalError: CUDA runtime implicit initialization on GPU:0 failed. Status: device kernel image is invalid"
    ids = [c.id for e in explain(CATALOGUE.scan_text(log)) for c in e.causes]
    assert ids[0] == "release-lacks-arch"
