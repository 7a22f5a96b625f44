"""Two OpenMP runtimes in one process: the LLVM/Intel OpenMP runtime (libomp, libiomp5) stops a
process where another copy of it has started already, with the DuplicateLibrary message of
openmp/runtime/src/i18n/en_US.txt ("OMP: Error #15: Initializing X, but found Y already
initialized."). The names are the two copies' files on whatever system printed it, and the
commands follow the system those names belong to. XGBoost's "library could not be loaded" is most
often the OpenMP runtime it links that is missing, named by the system of the library's file."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()
PATTERN = "openmp-runtime-loaded-twice"


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


@pytest.mark.parametrize(
    "text, library, other",
    [
        # Intel's runtime on Windows, macOS and Linux, LLVM's beside Intel's and GNU's, a wheel's
        # renamed copy (auditwheel's hash), Microsoft's LLVM build
        (
            "OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.",
            "libiomp5md.dll",
            "libiomp5md.dll",
        ),
        (
            "OMP: Error #15: Initializing libomp.dylib, but found libiomp5.dylib already initialized.",
            "libomp.dylib",
            "libiomp5.dylib",
        ),
        (
            "OMP: Error #15: Initializing libiomp5.so, but found libomp.so already initialized.",
            "libiomp5.so",
            "libomp.so",
        ),
        (
            "OMP: Error #15: Initializing libomp-a34b3233.so.1, but found libomp.so.5 already initialized.",
            "libomp-a34b3233.so.1",
            "libomp.so.5",
        ),
        (
            "OMP: Error #15: Initializing libomp140.x86_64.dll, but found libiomp5md.dll already initialized.",
            "libomp140.x86_64.dll",
            "libiomp5md.dll",
        ),
        # another catalogue number, no "OMP:" prefix (a sentence quoting it), a log viewer's columns
        (
            "OMP: Error #13: Initializing libiomp5.so, but found libiomp5.so already initialized.",
            "libiomp5.so",
            "libiomp5.so",
        ),
        (
            'I get "Initializing libiomp5md.dll, but found libiomp5md.dll already initialized." when I import torch',
            "libiomp5md.dll",
            "libiomp5md.dll",
        ),
        (
            "2024-03-01 10:22:01 ERROR  OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.",
            "libiomp5.dylib",
            "libomp.dylib",
        ),
    ],
)
def test_the_duplicate_runtime_is_named(text, library, other):
    explanations = _explain(text)
    assert [e.id for e in explanations] == [PATTERN]
    (explanation,) = explanations
    assert not explanation.harmless
    assert library in explanation.title and other in explanation.title
    assert [c.id for c in explanation.causes] == ["duplicate-openmp-runtime"]
    assert "KMP_DUPLICATE_LIB_OK" in explanation.fix.text


def _commands(text: str) -> list[tuple[str, str]]:
    (explanation,) = _explain(text)
    return [(c.shell, c.line) for c in explanation.fix.commands]


def test_a_windows_runtime_gets_powershell_and_a_unix_one_bash():
    windows = _commands("OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.")
    assert windows and all(shell == "powershell" for shell, _ in windows)
    for text in (
        "OMP: Error #15: Initializing libiomp5.dylib, but found libiomp5.dylib already initialized.",
        "OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.",
    ):
        unix = _commands(text)
        assert unix and all(shell == "bash" for shell, _ in unix)
        assert all("nomkl" not in line for _, line in unix)  # no conda in this log


def test_a_conda_environment_gets_nomkl():
    log = (
        '  File "/home/u/miniconda3/envs/ml/lib/python3.10/site-packages/torch/__init__.py", line 229, in <module>\n'
        "OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.\n"
    )
    assert ("any", "conda install nomkl") in _commands(log)


@pytest.mark.parametrize(
    "text",
    [
        "OMP: Info #276: omp_set_nested routine deprecated, please use omp_set_max_active_levels instead.",
        "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program.",
        "RuntimeError: Session already initialized",
        "Initializing the model, but found a checkpoint already initialized",
        "Initializing libiomp5, but found it already initialized",  # no library file named
        "KMP_DUPLICATE_LIB_OK=TRUE python train.py",
    ],
)
def test_close_lines_are_not_this_message(text):
    assert PATTERN not in [e.id for e in _explain(text)]


# XGBoost's _load_lib (python-package/xgboost/core.py): its library could not be loaded, most often
# for want of the OpenMP runtime it links, whose file and fix depend on the system the library's
# name belongs to.
@pytest.mark.parametrize(
    "text, shell, fix_word",
    [
        (
            "xgboost.core.XGBoostError: XGBoost Library (libxgboost.dylib) could not be loaded.",
            "bash",
            "brew install libomp",
        ),
        ("XGBoostError: XGBoost Library (xgboost.dll) could not be loaded.", "powershell", "vcomp140.dll"),
        ("xgboost.core.XGBoostError: XGBoost Library (libxgboost.so) could not be loaded.", "bash", "libgomp"),
        ("    XGBoost Library (libxgboost.dylib) could not be loaded.", "bash", "brew install libomp"),
    ],
)
def test_xgboosts_library_not_loaded_names_the_openmp_runtime(text, shell, fix_word):
    explanations = _explain(text)
    assert [e.id for e in explanations] == ["xgboost-library-not-loaded"]
    (explanation,) = explanations
    assert [c.id for c in explanation.causes][0] == "openmp-runtime-not-installed"
    commands = explanation.fix.commands
    assert commands and all(c.shell == shell for c in commands)
    assert fix_word in explanation.fix.text + " ".join(c.line for c in commands)


@pytest.mark.parametrize(
    "text",
    [
        "XGBoost Library (libxgboost.dylib) loaded",
        "ModuleNotFoundError: No module named 'xgboost'",
        "LightGBM Library (lib_lightgbm.so) could not be loaded",
    ],
)
def test_close_lines_are_not_xgboosts_message(text):
    assert "xgboost-library-not-loaded" not in [e.id for e in _explain(text)]


def test_dylds_line_that_names_the_missing_file_explains_xgboosts_error():
    log = (
        "xgboost.core.XGBoostError: XGBoost Library (libxgboost.dylib) could not be loaded.\n"
        "Error message(s): ['dlopen(/Users/u/venv/lib/python3.11/site-packages/xgboost/lib/libxgboost.dylib, 0x0006): "
        "Library not loaded: @rpath/libomp.dylib\\n  Referenced from: <7A2F> /Users/u/venv/lib/python3.11/site-packages/xgboost/lib/libxgboost.dylib\\n  Reason: tried: ...']\n"
    )
    explanations = _explain(log)
    assert [e.id for e in explanations] == ["macos-library-not-loaded"]
    assert explanations[0].causes[0].id == "dylib-not-installed"
    # the Linux loader's line names no CUDA library: XGBoost's own explanation stays
    linux = "xgboost.core.XGBoostError: XGBoost Library (libxgboost.so) could not be loaded.\nError message(s): ['libgomp.so.1: cannot open shared object file: No such file or directory']"
    assert [e.id for e in _explain(linux)] == ["xgboost-library-not-loaded"]
