"""Which cause comes first, from what the message and the rest of the input show.

- Windows' bare "DLL load failed" from TensorFlow's import: the Visual C++ runtime, which every
  release needs (2.1 and newer its msvcp140_1.dll), before the CUDA and cuDNN DLLs, which only
  releases before 2.1 link at import; a log that shows such a release puts CUDA first. A missing
  procedure (error 127) means the DLLs were found, so no DLL search rule is at fault.
- A cause the message's parts name is put first only when the parts name it outright: Windows'
  error 127 does, an undefined symbol does not (the plug-in or op library that needs the symbol
  says more).
- A generic summary is not explained beside the line that names its reason: NCCL's
  "unhandled system error" beside its WARN about the call that failed, the driver's failed probe
  beside the open kernel module's refusal of a GPU without a GSP.
- The poster's words that the program ran in a container.
- One cause, one id: Windows' code 1455 is the paging file whichever message names it.

Each rule has inputs it acts on and close ones it does not; the inputs vary real messages (other
languages, paths, releases, symbols, wrapped lines)."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _explained(text: str):
    return list(explain(CATALOGUE.scan_text(text)))


def _causes(text: str, pattern_id: str) -> list[str]:
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert found, (pattern_id, [e.id for e in _explained(text)])
    return [c.id for c in found[0].causes]


# --- TensorFlow's failed import on Windows --------------------------------------------------------

_TRACEBACK_37 = (
    'File "D:\\Tools\\Python37\\lib\\site-packages\\tensorflow_core\\python\\pywrap_tensorflow_internal.py", '
    "line 24, in swig_import_helper\n"
    "    _mod = imp.load_module('_pywrap_tensorflow_internal', fp, pathname, description)\n"
    '  File "D:\\Tools\\Python37\\lib\\imp.py", line 242, in load_module\n'
    "    return load_dynamic(name, filename, file)\n"
)


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: DLL load failed: The specified module could not be found.",
        "ImportError: DLL load failed: Das angegebene Modul wurde nicht gefunden.",
        "ImportError: DLL load failed: Le module spécifié est introuvable.",
        "ImportError: DLL load failed: 找不到指定的模块。",
        _TRACEBACK_37 + "ImportError: DLL load failed: The specified module could not be found.",
        "Traceback (most recent call last):\n  import tensorflow as tf\nImportError: DLL load failed: The specified module could not be found.",
    ],
)
def test_a_failed_import_without_a_release_puts_the_visual_cxx_runtime_first(text):
    causes = _causes(text, "win-dll-load-failed")
    assert causes[0] == "msvc-runtime-missing"
    assert "cuda-not-installed" in causes  # still given: a TensorFlow 1.x may have printed it


@pytest.mark.parametrize(
    "release_line",
    [
        "Successfully installed tensorflow-gpu-1.13.1",
        "TensorFlow version: 1.15.0",
        "tensorflow-gpu==2.0.0",
        "Successfully installed absl-py-0.9.0 tensorflow-gpu-1.5.0 protobuf-3.11.2",
    ],
)
def test_a_release_that_links_cuda_at_import_puts_cuda_first(release_line):
    causes = _causes(release_line + "\n" + _TRACEBACK_37 + "ImportError: DLL load failed: x", "win-dll-load-failed")
    assert causes[:2] == ["cuda-not-installed", "cudnn-not-on-path"]
    assert causes.index("msvc-runtime-missing") > 1


@pytest.mark.parametrize("release_line", ["tensorflow-gpu==2.1.0", "TensorFlow version: 2.3.1", "tensorflow==2.10.0"])
def test_a_release_that_opens_cuda_later_keeps_the_runtime_first_and_cuda_last(release_line):
    causes = _causes(
        release_line + "\nImportError: DLL load failed: The specified module could not be found.", "win-dll-load-failed"
    )
    assert causes[0] == "msvc-runtime-missing"
    assert causes[-2:] == ["cuda-not-installed", "cudnn-not-on-path"]


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: DLL load failed while importing _C: The specified procedure could not be found.",
        "ImportError: DLL load failed while importing _message: Die angegebene Prozedur wurde nicht gefunden.",
        "ImportError: DLL load failed while importing cv2: Не найдена указанная процедура.",
    ],
)
def test_a_missing_procedure_is_no_dll_search_problem(text):
    causes = _causes(text, "win-dll-load-failed")
    assert "python38-dll-search" not in causes
    assert causes[0] == "dependency-dll-too-old"


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: DLL load failed while importing _C: The specified module could not be found.",
        "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: Das angegebene Modul wurde nicht gefunden.",
    ],
)
def test_a_missing_module_named_by_python_3_8_keeps_its_dll_search_cause(text):
    assert "python38-dll-search" in _causes(text, "win-dll-load-failed")


# --- the cause a message's parts name, outright or as a lead ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "tensorflow.python.framework.errors_impl.NotFoundError: dlopen(/Users/me/miniforge3/envs/tf/lib/python3.9/"
        "site-packages/tensorflow-plugins/libmetal_plugin.dylib, 6): Symbol not found: _TF_AssignUpdateVariable",
        "NotFoundError: dlopen(/opt/homebrew/Caskroom/miniforge/base/envs/ml/lib/python3.8/site-packages/"
        "tensorflow-plugins/libmetal_plugin.dylib, 6): Symbol not found: _TF_GetInputPropertiesList\n"
        "  Referenced from: /opt/homebrew/Caskroom/miniforge/base/envs/ml/lib/python3.8/site-packages/"
        "tensorflow-plugins/libmetal_plugin.dylib",
    ],
)
def test_an_undefined_symbol_leaves_the_plugin_s_own_cause_first(text):
    causes = _causes(text, "metal-plugin-mismatch")
    assert causes[0] == "metal-plugin-tf-mismatch"
    # the plug-in built for another TensorFlow is the precise case of "two releases mixed"
    # (its cause says it refines that reason), so the generic lead is not listed beside it
    assert "mixed-library-versions" not in causes


@pytest.mark.parametrize(
    ("text", "pattern_id", "first"),
    [
        # Windows' error 127: the DLL loaded and lacks the function, which no missing file gives
        (
            "OSError: [WinError 127] The specified procedure could not be found. Error loading "
            '"C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\lib\\caffe2_nvrtc.dll" or one of its dependencies.',
            "windows-dll-load-error",
            "msvc-runtime-missing",
        ),
        # the loader names another file than the one asked for: a dependency is missing
        (
            "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcublasLt.so.11: cannot open shared "
            "object file: No such file or directory",
            "cudnn-not-loaded",
            "dependency-missing",
        ),
        # an undefined symbol with no pattern cause that explains it better: the lead is the answer
        (
            "ImportError: /venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
            "nccl-symbol-missing",
            "mixed-library-versions",
        ),
    ],
)
def test_what_the_parts_say_outright_still_ranks(text, pattern_id, first):
    assert _causes(text, pattern_id)[0] == first


# --- a summary beside the line that names its reason ----------------------------------------------

_NCCL_SUMMARY = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.10.3"


@pytest.mark.parametrize(
    ("warn", "named_by"),
    [
        (
            "host:81:93 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:2b/../../0000:2b:00.0",
            "nccl-gpu-pci-path-missing",
        ),
        (
            "node3:4711:4790 [1] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
            "/dev/shm/nccl-Yq3jAS (size 9637888)",
            "nccl-shm-segment-failed",
        ),
    ],
)
def test_nccl_s_system_error_is_explained_by_its_warn_line(warn, named_by):
    ids = [e.id for e in _explained(warn + "\n" + _NCCL_SUMMARY)]
    assert named_by in ids
    assert "nccl-system-error" not in ids


def test_nccl_s_system_error_alone_or_beside_other_lines_is_explained():
    assert [e.id for e in _explained(_NCCL_SUMMARY)] == ["nccl-system-error"]
    ids = [e.id for e in _explained("NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n" + _NCCL_SUMMARY)]
    assert "nccl-system-error" in ids


_OPEN_MODULE = (
    "kernel: NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c03)\n"
    "             NVRM: installed in this system is not supported by open\n"
    "             NVRM: nvidia.ko because it does not include the required GPU\n"
    "             NVRM: System Processor (GSP).\n"
)
_PROBE_FAILED = (
    "kernel: nvidia 0000:01:00.0: probe with driver nvidia failed with error -1\n"
    "kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    "kernel: NVRM: None of the NVIDIA devices were initialized.\n"
)


def test_the_open_module_s_refusal_explains_the_failed_probe():
    ids = [e.id for e in _explained(_OPEN_MODULE + _PROBE_FAILED)]
    assert ids[0] == "open-module-unsupported-gpu"
    assert "nvrm-no-devices-probed" not in ids


def test_a_failed_probe_without_the_refusal_is_explained():
    assert [e.id for e in _explained(_PROBE_FAILED)][0] == "nvrm-no-devices-probed"
    legacy = "NVRM: The NVIDIA GeForce GT 630 GPU installed in this system is\nNVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please\n"
    assert "nvrm-no-devices-probed" in [e.id for e in _explained(legacy + _PROBE_FAILED)]


# --- the poster's words: it ran in a container ------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "CUDA_ERROR_NO_DEVICE inside docker with GTX Titan X",
        "I get this when I run the script in a Docker container:",
        "It works on the host but fails within the container.",
        "Running it inside my docker image gives",
    ],
)
def test_the_poster_says_it_ran_in_a_container(text):
    assert read_context(text).get("log_container") == "docker"


@pytest.mark.parametrize(
    "text",
    [
        "I ran it on the host, not in a container",
        "not inside docker, plain Ubuntu",
        "the docker container runtime is installed",
        "failed call to cuInit: CUDA_ERROR_NO_DEVICE",
        "I put the weights in the container folder of the project",
    ],
)
def test_other_words_about_containers_say_nothing(text):
    assert "log_container" not in read_context(text)


def test_a_container_the_poster_names_ranks_the_container_s_gpu_access_first():
    said = "failed call to cuInit: CUDA_ERROR_NO_DEVICE\n(this is inside a docker container on a GTX 1080)"
    assert _causes(said, "cuinit-no-device")[0] == "container-without-gpu"
    assert _causes("failed call to cuInit: CUDA_ERROR_NO_DEVICE", "cuinit-no-device")[0] != "container-without-gpu"


# --- one cause, one id: Windows' code 1455 ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "OSError: The paging file is too small for this operation to complete. (os error 1455)",
        "[WinError 1455] 页面文件太小，无法完成操作",
        'OSError: [WinError 1455] Die Auslagerungsdatei ist zu klein, um diesen Vorgang durchzuführen. Error loading "C:\\a\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.',
    ],
)
def test_the_paging_file_is_one_cause_whatever_the_wording(text):
    assert _causes(text, "windows-paging-file-too-small") == ["paging-file-too-small"]


def test_another_windows_code_is_not_the_paging_file():
    ids = [
        e.id
        for e in _explained(
            "OSError: [WinError 1450] Insufficient system resources exist to complete the requested service"
        )
    ]
    assert "windows-paging-file-too-small" not in ids
