"""Windows messages read from the Windows loader and TensorFlow's Windows builds: Windows' own
wording of the loader's codes in several languages, the package that owns a DLL, PyTorch's and
PaddlePaddle's loader messages, TensorFlow's import check, and the release a log shows (a failed
import of TensorFlow 2.1+ is not about CUDA; 2.11+ has no GPU build for native Windows). Each rule
has a message it fires on and a close one it does not; the messages vary real ones (other paths,
versions, languages)."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context
from envcheck.explain.parts import read_parts

CATALOGUE = load_patterns()
TORCH_LIB = r"C:\Users\me\AppData\Local\Programs\Python\Python311\Lib\site-packages\torch\lib"


def _explained(text: str):
    return list(explain(CATALOGUE.scan_text(text)))


def _causes(text: str, pattern_id: str) -> list[str]:
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert found, (pattern_id, [e.id for e in _explained(text)])
    return [c.id for c in found[0].causes]


# --- Windows' wording of the codes, read from a loader's line of the CUDA stack -----------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (
            f'Das angegebene Modul wurde nicht gefunden. Error loading "{TORCH_LIB}\\fbgemm.dll" or one of its dependencies.',
            "126",
        ),
        (
            f'Le module spécifié est introuvable. Error loading "{TORCH_LIB}\\c10.dll" or one of its dependencies.',
            "126",
        ),
        (
            f'Não foi possível encontrar o módulo especificado. Error loading "{TORCH_LIB}\\shm.dll" or one of its dependencies.',
            "126",
        ),
        (
            f'指定されたモジュールが見つかりません。 Error loading "{TORCH_LIB}\\cudnn64_9.dll" or one of its dependencies.',
            "126",
        ),
        (
            "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: Не найден указанный модуль.",
            "126",
        ),
        (
            f'La procédure spécifiée est introuvable. Error loading "{TORCH_LIB}\\cudnn_adv_infer64_8.dll" or one of its dependencies.',
            "127",
        ),
        ("ImportError: DLL load failed while importing _pywrap_tensorflow_internal: 找不到指定的程序。", "127"),
        (
            f'%1 不是有效的 Win32 应用程序。 Error loading "{TORCH_LIB}\\cublas64_12.dll" or one of its dependencies.',
            "193",
        ),
        (
            "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: 动态链接库(DLL)初始化例程失败。",
            "1114",
        ),
        (
            f'页面文件太小，无法完成操作。 Error loading "{TORCH_LIB}\\cudnn_cnn_infer64_8.dll" or one of its dependencies.',
            "1455",
        ),
        ("fbgemm.dll - The specified module could not be found", "126"),
    ],
)
def test_windows_text_names_the_code(text, code):
    assert read_parts(text).get("windows_code") == code


@pytest.mark.parametrize(
    "text",
    [
        # Python's own extension module and a game's DLL are other software's errors
        "ImportError: DLL load failed while importing _ssl: Das angegebene Modul wurde nicht gefunden.",
        'Error loading "C:\\Games\\Foo\\bin\\fmod.dll": 找不到指定的模块。',
        # the wording alone, on a line that is no loader's
        "Le module spécifié est introuvable",
    ],
)
def test_windows_text_of_other_software_names_no_code(text):
    assert "windows_code" not in read_parts(text)


def test_a_dll_in_a_package_folder_is_that_package_s_copy():
    parts = read_parts(
        f'[WinError 126] The specified module could not be found. Error loading "{TORCH_LIB}\\cudnn64_8.dll"'
    )
    assert parts["library_owner"] == "torch"
    system = read_parts(r'[WinError 126] Error loading "C:\Program Files\NVIDIA\CUDNN\v9.1\bin\cudnn64_9.dll"')
    assert "library_owner" not in system


# --- the release the log shows -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "imports_cuda", "windows_gpu"),
    [
        ("TensorFlow version: 2.12.0", "no", "ended"),
        ("tensorflow==2.10.1", "no", "built"),
        ("tensorflow-gpu==2.1.0", "no", "built"),
        ("tensorflow-gpu==2.0.0", "yes", "built"),
        ("TensorFlow version: 1.13.1", "yes", "built"),
        # Python 3.8 names the module, and TensorFlow supports 3.8 from 2.2: which 2.x is not known
        ("ImportError: DLL load failed while importing _pywrap_tensorflow_internal: x", "no", None),
        ("    from tensorflow.python._pywrap_tensorflow_internal import *", "no", None),
        ("ImportError: DLL load failed: The specified module could not be found.", None, None),
    ],
)
def test_the_tensorflow_release_of_the_log(text, imports_cuda, windows_gpu):
    facts = read_context(text)
    assert facts.get("log_tf_imports_cuda") == imports_cuda
    assert facts.get("log_tf_windows_gpu") == windows_gpu


_IMPORT_FAILED = (
    'File "C:\\Python37\\lib\\imp.py", line 342, in load_dynamic\n'
    "    return _load(spec)\n"
    "ImportError: DLL load failed: The specified module could not be found.\n"
)


def test_a_failed_import_of_tensorflow_2_is_not_about_cuda():
    causes = _causes("Successfully installed tensorflow-2.3.1\n" + _IMPORT_FAILED, "win-dll-load-failed")
    assert causes[0] == "msvc-runtime-missing"
    assert causes.index("cuda-not-installed") > causes.index("python38-dll-search")


def test_a_failed_import_of_tensorflow_1_keeps_cuda_among_the_first():
    causes = _causes("Successfully installed tensorflow-gpu-1.13.1\n" + _IMPORT_FAILED, "win-dll-load-failed")
    assert causes[0] != "msvc-runtime-missing"
    assert causes.index("cuda-not-installed") < causes.index("msvc-runtime-missing")


# --- Python's "DLL load failed" and DLL initialisation, in other languages -----------------------


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: DLL load failed while importing _C: Die angegebene Prozedur wurde nicht gefunden.",
        "ImportError: DLL load failed: Не найдена указанная процедура.",
    ],
)
def test_procedure_not_found_in_any_language_is_an_older_or_mixed_dll(text):
    causes = _causes(text, "win-dll-load-failed")
    assert causes[0] == "dependency-dll-too-old"


def test_an_extension_module_s_procedure_not_found_can_be_a_framework_mismatch():
    named = _causes(
        "ImportError: DLL load failed while importing _C: The specified procedure could not be found.",
        "win-dll-load-failed",
    )
    assert "mixed-library-versions" in named
    unnamed = _causes(
        "ImportError: DLL load failed: The specified procedure could not be found.", "win-dll-load-failed"
    )
    assert "mixed-library-versions" not in unnamed  # Python before 3.8 does not say which module


def test_module_not_found_in_another_language_is_no_procedure_error():
    causes = _causes("ImportError: DLL load failed: Das angegebene Modul wurde nicht gefunden.", "win-dll-load-failed")
    assert "dependency-dll-too-old" not in causes


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: 动态链接库(DLL)初始化例程失败。",
        "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: Eine DLL-Initialisierungsroutine ist fehlgeschlagen.",
    ],
)
def test_dll_initialisation_failed_in_any_language(text):
    assert [e.id for e in _explained(text)] == ["win-dll-init-failed"]


# --- PyTorch's "Error loading X or one of its dependencies" --------------------------------------


def test_a_package_s_own_dll_without_the_code_points_at_the_runtimes():
    text = 'The specified module could not be found. Error loading "torch\\lib\\caffe2_detectron_ops.dll" or one of its dependencies.'
    assert _causes(text, "windows-dll-load-error")[0] == "msvc-runtime-missing"


def test_a_package_s_copy_of_cudnn_points_at_the_package_install():
    text = f'OSError: [WinError 126] The specified module could not be found. Error loading "{TORCH_LIB}\\cudnn_cnn_infer64_8.dll" or one of its dependencies.'
    causes = _causes(text, "windows-dll-load-error")
    assert causes.index("package-missing-dll") < causes.index("dll-dependency-folder-not-on-path")
    system = r'OSError: [WinError 126] The specified module could not be found. Error loading "C:\CUDA\v11.8\bin\cudnn_cnn_infer64_8.dll" or one of its dependencies.'
    assert "package-missing-dll" not in _causes(system, "windows-dll-load-error")


def test_not_a_valid_image_is_the_architecture_or_a_damaged_file():
    text = f'OSError: [WinError 193] %1 is not a valid Win32 application. Error loading "{TORCH_LIB}\\caffe2_detectron_ops_gpu.dll" or one of its dependencies.'
    causes = _causes(text, "windows-dll-load-error")
    assert causes[0] == "wrong-architecture"
    assert "dll-dependency-folder-not-on-path" not in causes


def test_another_program_s_dll_is_not_explained():
    assert _explained('Error loading "C:\\Games\\Foo\\bin\\fmod.dll" or one of its dependencies.') == []
    assert _explained("steam_api64.dll - The specified module could not be found") == []


# --- the paging file, PaddlePaddle, TensorFlow's import check ------------------------------------


def test_winerror_1455_in_another_language_is_the_paging_file():
    assert [e.id for e in _explained("OSError: [WinError 1455] 页面文件太小，无法完成操作。")] == [
        "windows-paging-file-too-small"
    ]
    assert [e.id for e in _explained("OSError: [WinError 1450] Insufficient system resources exist")] != [
        "windows-paging-file-too-small"
    ]


def test_paddle_names_the_library_and_the_code():
    cudnn = _causes(
        "RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is not configured correctly. (error code is 126)",
        "paddle-dynload-failed",
    )
    assert cudnn[0] == "cudnn-not-installed"
    cublas = _causes(
        "The third-party dynamic library (cublas64_11.dll;cublas64_110.dll) that Paddle depends on is not configured correctly. (error code is 126)",
        "paddle-dynload-failed",
    )
    assert "cudnn-not-installed" not in cublas and "cuda-not-installed" in cublas
    assert _explained("The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is installed.") == []


@pytest.mark.parametrize(
    ("which", "cause"),
    [
        ("cudnn", "cudnn-not-installed"),
        ("cudart", "cuda-not-installed"),
        ("nvcuda", "driver-not-installed"),
        ("msvcp", "msvc-runtime-missing"),
    ],
)
def test_tensorflow_s_import_check_names_the_dll_it_loads(which, cause):
    assert _causes(f"    ctypes.WinDLL(build_info.{which}_dll_name)", "tf-self-check-dll-missing")[0] == cause


def test_another_ctypes_load_is_not_tensorflow_s_import_check():
    assert "tf-self-check-dll-missing" not in [e.id for e in _explained("    ctypes.WinDLL(build_info.dll_path)")]


# --- TensorFlow 2.11 and later on native Windows -------------------------------------------------

_CUDART = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found"


def test_a_release_without_a_windows_gpu_build_asking_for_cuda_dlls():
    causes = _causes("Successfully installed tensorflow-2.13.0\n" + _CUDART, "cudart-not-loaded")
    assert causes[0] == "tf-windows-gpu-ended"


def test_a_release_with_a_windows_gpu_build_keeps_the_cuda_causes():
    causes = _causes("Successfully installed tensorflow-2.10.1\n" + _CUDART, "cudart-not-loaded")
    assert "tf-windows-gpu-ended" not in causes


def test_the_linux_library_of_a_new_release_is_no_windows_matter():
    text = "tensorflow==2.13.0\nCould not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file"
    assert "tf-windows-gpu-ended" not in _causes(text, "cudart-not-loaded")


def test_the_windows_gpu_archive_of_a_release_after_2_10_does_not_exist():
    missing = "<Details>No such object: tensorflow/libtensorflow/libtensorflow-gpu-windows-x86_64-2.12.0.zip</Details>"
    assert [e.id for e in _explained(missing)] == ["tf-windows-gpu-ended"]
    assert (
        _explained(
            "<Details>No such object: tensorflow/libtensorflow/libtensorflow-gpu-windows-x86_64-2.10.0.zip</Details>"
        )
        == []
    )


# --- CUDA libraries -----------------------------------------------------------------------------


def test_the_dlerror_part_alone_names_the_cuda_library():
    assert _causes("cusolver64_10.dll not found", "cuda-math-library-not-loaded")[0] == "cuda-minor-release-differs"
    assert "cuda-math-library-not-loaded" not in [e.id for e in _explained("msvcp140.dll not found")]


def test_cupti_on_windows_can_be_the_store_python():
    assert "msstore-python" in _causes(
        "Could not load dynamic library 'cupti64_112.dll'; dlerror: cupti64_112.dll not found", "cupti-not-loaded"
    )
    linux = (
        "Could not load dynamic library 'libcupti.so.11.2'; dlerror: libcupti.so.11.2: cannot open shared object file"
    )
    assert "msstore-python" not in _causes(linux, "cupti-not-loaded")


def test_cudnn_9_located_nowhere_on_windows_is_a_folder_off_path():
    assert "cudnn-not-on-path" in _causes(
        "Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!",
        "cudnn-sublibrary-not-loaded",
    )
    linux = "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory"
    assert "cudnn-not-on-path" not in _causes(linux, "cudnn-sublibrary-not-loaded")


def test_windows_commands_only_for_windows_logs():
    paddle_linux = (
        "PreconditionNotMetError: The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured"
        " correctly. (error code is libcudnn.so: cannot open shared object file: No such file or directory)\n"
        "user@host:~$ "
    )
    for explanation in _explained(paddle_linux):
        for cause in explanation.causes:
            shells = {c.shell for c in (cause.tell.commands if cause.tell else ())}
            assert "powershell" not in shells, cause.id


def test_the_title_names_the_code_or_says_it_is_not_in_the_text():
    coded = _explained(
        f'OSError: [WinError 126] The specified module could not be found. Error loading "{TORCH_LIB}\\c10.dll"'
    )
    assert coded[0].title == "Windows could not load a DLL (ERROR_MOD_NOT_FOUND, WinError 126)"
    cut = _explained(f'Error loading "{TORCH_LIB}\\fbgemm.dll" or one of its dependencies.')
    assert cut[0].title == "Windows could not load a DLL (the text ends before Windows' code)"
