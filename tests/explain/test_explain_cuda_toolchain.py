"""Building CUDA code: the host compiler nvcc runs (CUDA's host_config.h and nvcc's own version
check, PyTorch's extension builder's table of bounds, cl.exe off PATH), CMake's CUDA language (no
nvcc, no Visual Studio integration) and nvcc's unknown options (an nvcc older than the build, a host
compiler's flag given to nvcc). Each rule has a case where it decides and a close one where it does
not, with wordings beyond the corpus's (other releases, compilers, paths and wrappers)."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _explained(text: str) -> list:
    return explain(CATALOGUE.scan_text(text))


def _only(text: str, pattern: str):
    found = [e for e in _explained(text) if e.id == pattern]
    assert len(found) == 1, [e.id for e in _explained(text)]
    return found[0]


def _causes(text: str, pattern: str) -> list[str]:
    return [c.id for c in _only(text, pattern).causes]


def _commands(explanation) -> list[str]:
    lines = [c.line for c in explanation.fix.commands]
    for cause in explanation.causes:
        for part in (cause.tell, cause.fix):
            if part is not None:
                lines += [c.line for c in part.commands]
    return lines


# --- the host compiler's version: host_config.h and nvcc ---------------------------------------


@pytest.mark.parametrize(
    "text, compiler",
    [
        # other releases, other install folders, the note newer releases add, a CMake try-compile
        (
            "/usr/local/cuda-12.3/include/crt/host_config.h:143:2: error: #error -- unsupported GNU version! gcc versions later than 12 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check",
            "GNU",
        ),
        (
            "/opt/conda/envs/build/targets/x86_64-linux/include/crt/host_config.h:132:2: error: #error -- unsupported GNU version! gcc versions later than 11 are not supported!",
            "GNU",
        ),
        (
            "  /usr/include/crt/host_config.h:129:2: error: #error -- unsupported GNU version! gcc versions later than 10 are not supported!",
            "GNU",
        ),
        (
            "/usr/local/cuda/include/crt/host_config.h:151:2: error: -- unsupported clang version! clang version must be less than 17 and greater than 3.2 .",
            "clang",
        ),
        # CMake's output wraps the line after the bound
        (
            "[cmake]   error: -- unsupported clang version! clang version must be less than 16 and\n[cmake]   greater than 3.2 .",
            "clang",
        ),
        (
            "C:\\CUDA\\v12.1\\include\\crt/host_config.h(157): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions between 2017 and 2022 (inclusive) are supported!",
            "Microsoft Visual Studio",
        ),
        (
            "c:\\program files\\nvidia gpu computing toolkit\\cuda\\v11.2\\include\\crt/host_config.h(160): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions between 2017 and 2019 (inclusive) are supported!",
            "Microsoft Visual Studio",
        ),
        ("nvcc fatal   : The version ('110000') of the host compiler ('Apple clang') is not supported", "Apple clang"),
        ("nvcc fatal : The version ('40000') of the host compiler ('clang') is not supported", "clang"),
    ],
)
def test_a_host_compiler_outside_the_release_is_recognised(text, compiler):
    explanation = _only(text, "cuda-host-compiler-unsupported")
    assert explanation.variables["compiler"] == compiler
    assert [c.id for c in explanation.causes][0] == "host-compiler-unsupported"
    assert "older-cuda-toolkit-used" in [c.id for c in explanation.causes]


@pytest.mark.parametrize(
    "text",
    [
        "gcc versions later than 12 are supported by this release",
        "warning: unsupported GNU version of the assembler, falling back",
        '#error "unsupported compiler version, use gcc 9 or newer"',
        "nvcc fatal   : Unsupported gpu architecture 'compute_90'",
        "The version of the host compiler is 12.2",
    ],
)
def test_close_lines_are_not_the_host_compiler_check(text):
    assert "cuda-host-compiler-unsupported" not in [e.id for e in _explained(text)]


def test_gccs_bound_names_the_gcc_to_install_on_linux():
    text = "/usr/local/cuda-11.8/include/crt/host_config.h:132:2: error: #error -- unsupported GNU version! gcc versions later than 11 are not supported!"
    commands = _commands(_only(text, "cuda-host-compiler-unsupported"))
    assert any("gcc-11 g++-11" in line for line in commands), commands


def test_a_clang_or_msvc_bound_names_no_gcc_to_install():
    for text in (
        "host_config.h:151:2: error: -- unsupported clang version! clang version must be less than 16 and greater than 3.2 .",
        "host_config.h(153): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions between 2017 and 2022 (inclusive) are supported!",
    ):
        commands = _commands(_only(text, "cuda-host-compiler-unsupported"))
        assert not any("apt install gcc" in line for line in commands), commands


# --- several toolkits in the log rank the older one first ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "/usr/local/cuda-10.2/bin/nvcc -c a.cu\nexport PATH=/usr/local/cuda-11.4/bin:$PATH",
        "Cuda compilation tools, release 11.4, V11.4.152\nIn file included from /usr/local/cuda-10.2/include/cuda_runtime.h:83,",
        "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.2\\include\\crt/host_config.h(160)\nCUDA_PATH_V12_1=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1",
        "ls /opt/cuda-12.1/lib64 /opt/cuda-12.4/lib64",
    ],
)
def test_toolkits_of_two_releases_in_the_log_are_read(text):
    assert read_context(text).get("log_cuda_toolkits") == "several"


@pytest.mark.parametrize(
    "text",
    [
        # one release, however often it is named
        "/usr/local/cuda-9.0/include/crt/host_config.h:119:2: error\nexport PATH=/usr/local/cuda-9.0/bin:$PATH\nCuda compilation tools, release 9.0, V9.0.176",
        # package names and a conda channel's label are not toolkit folders
        "pip install nvidia-cuda-runtime-cu12 cuda-python==12.1.0\nconda install -c nvidia/label/cuda-11.8.0 cuda-toolkit",
        "/usr/local/cuda/include/cuda_runtime.h and CUDA 12.4 with CUDA 11.8",
    ],
)
def test_one_toolkit_or_none_in_the_log_is_not_several(text):
    assert "log_cuda_toolkits" not in read_context(text)


def test_a_log_with_two_toolkits_ranks_the_older_toolkit_first():
    error = "/usr/local/cuda-10.2/include/crt/host_config.h:138:2: error: #error -- unsupported GNU version! gcc versions later than 8 are not supported!"
    assert _causes(error, "cuda-host-compiler-unsupported")[0] == "host-compiler-unsupported"
    text = error + "\n$ nvcc -V\nCuda compilation tools, release 11.4, V11.4.152"
    assert _causes(text, "cuda-host-compiler-unsupported") == ["older-cuda-toolkit-used", "host-compiler-unsupported"]
    torch = "RuntimeError: The current installed version of g++ (11.3.0) is greater than the maximum required version by CUDA 10.2 (8.0.0)."
    assert _causes(torch, "torch-extension-host-compiler-version")[0] == "host-compiler-unsupported"
    assert (
        _causes(torch + "\nls /usr/local/cuda-11.3/bin", "torch-extension-host-compiler-version")[0]
        == "older-cuda-toolkit-used"
    )


# --- PyTorch's extension builder: its table of host compilers per CUDA release -------------------


@pytest.mark.parametrize(
    "text, compiler, cuda",
    [
        (
            "RuntimeError: The current installed version of g++ (14.2.1) is greater than the maximum required version by CUDA 12.4. Please make sure to use an adequate version of g++ (>=6.0.0, <14.0).",
            "g++",
            "12.4",
        ),
        (
            "      RuntimeError: The current installed version of /home/u/miniforge3/envs/fa/bin/x86_64-conda-linux-gnu-c++ (13.3.0) is greater than the maximum required version by CUDA 11.8 (11.5.0). Please make sure to use an adequate version of /home/u/miniforge3/envs/fa/bin/x86_64-conda-linux-gnu-c++ (>=6.0.0, <=11.5.0).",
            "/home/u/miniforge3/envs/fa/bin/x86_64-conda-linux-gnu-c++",
            "11.8",
        ),
        (
            "RuntimeError: The current installed version of clang++ (18.1.8) is greater than the maximum required version by CUDA 12.1. Please make sure to use an adequate version of clang++ (>=3.3, <16.0).",
            "clang++",
            "12.1",
        ),
    ],
)
def test_a_compiler_above_pytorchs_bounds_ranks_it_first(text, compiler, cuda):
    explanation = _only(text, "torch-extension-host-compiler-version")
    assert (explanation.variables["compiler"], explanation.variables["cuda"]) == (compiler, cuda)
    assert [c.id for c in explanation.causes] == ["host-compiler-unsupported", "older-cuda-toolkit-used"]


def test_a_compiler_below_pytorchs_bounds_ranks_the_old_compiler_first():
    text = "RuntimeError: The current installed version of g++ (4.8.5) is less than the minimum required version by CUDA 12.1 (6.0.0). Please make sure to use an adequate version of g++ (>=6.0.0, <13.0)."
    assert _causes(text, "torch-extension-host-compiler-version") == [
        "host-compiler-too-old",
        "host-compiler-unsupported",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "UserWarning: There are no g++ version bounds defined for CUDA version 12.4",
        "The current installed version of g++ (13.2.0) is fine",
        "the maximum required version by CUDA 12.1 is listed in NVIDIA's table",
    ],
)
def test_close_lines_are_not_pytorchs_compiler_check(text):
    assert "torch-extension-host-compiler-version" not in [e.id for e in _explained(text)]


# --- CMake's CUDA language -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "CMake Error at C:/Program Files/CMake/share/cmake-3.21/Modules/CMakeDetermineCompilerId.cmake:460 (message):\n  No CUDA toolset found.\nCall Stack (most recent call first):",
        "CMake Error at D:/tools/cmake/share/cmake-3.30/Modules/CMakeDetermineCompilerId.cmake:563 (message): No CUDA toolset found.",
    ],
)
def test_no_cuda_toolset_ranks_the_visual_studio_integration_first(text):
    explanation = _only(text, "cmake-no-cuda-toolset")
    assert [c.id for c in explanation.causes] == ["cuda-vs-integration-missing", "cuda-not-installed"]
    assert all(c.shell == "powershell" for c in explanation.fix.commands)


@pytest.mark.parametrize(
    "text",
    [
        "-- CUDA toolset found: v12.4",
        "-- Looking for a CUDA toolset in Visual Studio 17 2022",
        "-- The CUDA compiler identification is NVIDIA 12.4.131",
    ],
)
def test_close_lines_are_not_the_missing_toolset(text):
    assert "cmake-no-cuda-toolset" not in [e.id for e in _explained(text)]


@pytest.mark.parametrize(
    "text",
    [
        "CMake Error at /usr/share/cmake-3.28/Modules/CMakeDetermineCUDACompiler.cmake:180 (message):\n  Failed to find nvcc.\n\n  Compiler requires the CUDA toolkit.  Please set the CUDAToolkit_ROOT\n  variable.",
        "CMake Error at CMakeLists.txt:12 (enable_language):\n  No CMAKE_CUDA_COMPILER could be found.",
        "CMake Error at /opt/cmake/share/cmake-3.27/Modules/FindCUDAToolkit.cmake:965 (message):\n  Could not find `nvcc` executable in any searched paths, please set\n  CUDAToolkit_ROOT",
        "Could not find `nvcc` executable in any searched paths, please set CUDAToolkit_ROOT",
        '-- Could NOT find CUDA (missing: CUDA_NVCC_EXECUTABLE CUDA_CUDART_LIBRARY) (found version "11.5")',
        "Could NOT find CUDAToolkit (missing: CUDAToolkit_BIN_DIR CUDAToolkit_INCLUDE_DIR)",
    ],
)
def test_cmake_finding_no_nvcc_ranks_the_missing_toolkit_first(text):
    assert _causes(text, "cmake-cuda-compiler-not-found") == ["nvcc-not-found", "cuda-feature-on-without-toolkit"]


@pytest.mark.parametrize(
    "text",
    [
        '-- Found CUDAToolkit: /usr/local/cuda/include (found version "12.2.140")',
        "Could NOT find CUDNN (missing: CUDNN_LIBRARY CUDNN_INCLUDE_DIR)",
        "Could NOT find OpenMP_CUDA (missing: OpenMP_CUDA_FLAGS)",
        '-- Found CUDA: /usr/local/cuda (found version "11.8")',
        "Failed to find nvcc_wrapper in the install tree, using the default",
    ],
)
def test_close_lines_are_not_cmake_missing_nvcc(text):
    assert "cmake-cuda-compiler-not-found" not in [e.id for e in _explained(text)]


# --- nvcc's host compiler on PATH ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "nvcc fatal   : Cannot find compiler 'cl.exe' in PATH",
        "checkinfo: @programdir\\core\\sandbox\\modules\\os.lua:261: nvcc fatal   : Cannot find compiler 'cl.exe' in PATH",
        "  stderr: nvcc fatal : Cannot find compiler 'cl.exe' in PATH\r",
    ],
)
def test_cl_exe_off_path_ranks_the_developer_prompt_first(text):
    assert _causes(text, "nvcc-host-compiler-not-on-path") == [
        "msvc-not-on-path",
        "msvc-build-tools-missing",
        "host-compiler-not-installed",
    ]


@pytest.mark.parametrize("compiler", ["gcc", "g++-12", "clang++"])
def test_another_compiler_off_path_gives_no_visual_studio_cause(compiler):
    text = f"nvcc fatal   : Cannot find compiler '{compiler}' in PATH"
    explanation = _only(text, "nvcc-host-compiler-not-on-path")
    assert [c.id for c in explanation.causes] == ["host-compiler-not-installed"]
    assert explanation.variables["compiler"] == compiler


def test_close_lines_are_not_the_compiler_off_path():
    for text in (
        "Cannot find compiler 'cl.exe' in the registry",
        "nvcc fatal   : Could not set up the environment for Microsoft Visual Studio",
    ):
        assert "nvcc-host-compiler-not-on-path" not in [e.id for e in _explained(text)]


# --- nvcc's unknown options ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "option",
    [
        "-generate-dependencies-with-compile",
        "--dependency-output",
        "-forward-unknown-to-host-compiler",  # nvcc's own, from CUDA 10.2
        "-Werror=all-warnings",  # nvcc's own -Werror kinds
        "-fmad=false",
        "--threads",
    ],
)
def test_an_option_of_nvccs_own_ranks_the_old_nvcc_first(option):
    text = f"nvcc fatal   : Unknown option '{option}'"
    assert _causes(text, "nvcc-unknown-option") == ["nvcc-too-old", "host-flag-passed-to-nvcc"]


@pytest.mark.parametrize("option", ["-Wall", "-Wno-sign-compare", "-fPIC", "-fopenmp", "-march=native", "-pthread"])
def test_a_host_compilers_flag_ranks_the_missing_xcompiler_first(option):
    text = f"nvcc fatal   : Unknown option '{option}'\nninja: build stopped: subcommand failed."
    explanation = _only(text, "nvcc-unknown-option")
    assert [c.id for c in explanation.causes] == ["host-flag-passed-to-nvcc", "nvcc-too-old"]
    assert explanation.variables["option"] == option


@pytest.mark.parametrize(
    "text",
    [
        "gcc: error: unrecognized command-line option '-generate-dependencies-with-compile'",
        "Unknown option '-x'",
        "cmake: Unknown option '-Wall'",
    ],
)
def test_close_lines_are_not_nvccs_unknown_option(text):
    assert "nvcc-unknown-option" not in [e.id for e in _explained(text)]


# --- PyTorch's extension builder: its notes, and ninja --------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "/home/u/env/lib/python3.10/site-packages/torch/utils/cpp_extension.py:398: UserWarning: Your compiler (/usr/bin/c++) is not compatible with the compiler Pytorch was built with for this platform, which is g++ on linux. Please use g++ to to compile your extension.",
        "UserWarning: Your compiler (clang++) is not compatible with the compiler Pytorch was built with for this platform, which is clang++ on darwin.",
        "  UserWarning: Attempted to use ninja as the BuildExtension backend but we could not find ninja.. Falling back to using the slow distutils backend.",
        "UserWarning: The detected CUDA version (11.5) has a minor version mismatch with the version that was used to compile PyTorch (11.8). Most likely this shouldn't be a problem.",
    ],
)
def test_the_extension_builders_notes_are_harmless(text):
    assert _only(text, "torch-extension-builder-notices").harmless


def test_a_note_beside_a_failure_leaves_the_failure_to_act_on():
    text = (
        "UserWarning: Your compiler (c++) is not compatible with the compiler Pytorch was built with for this platform, which is g++ on linux.\n"
        "nvcc fatal   : Unknown option '-generate-dependencies-with-compile'"
    )
    explanations = _explained(text)
    assert explanations[0].id == "nvcc-unknown-option" and not explanations[0].harmless


@pytest.mark.parametrize(
    "text",
    [
        # the major version mismatch is an error of its own
        "RuntimeError: The detected CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions.",
        "Your compiler is compatible with the compiler PyTorch was built with",
        "-- Could not find ninja, using make",
    ],
)
def test_close_lines_are_not_the_builders_notes(text):
    assert "torch-extension-builder-notices" not in [e.id for e in _explained(text)]


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Ninja is required to load C++ extensions",
        '    raise RuntimeError("Ninja is required to load C++ extensions (pip install ninja to get it)")\nRuntimeError: Ninja is required to load C++ extensions (pip install ninja to get it)',
    ],
)
def test_ninja_missing_ranks_the_missing_package_first(text):
    assert _causes(text, "torch-extension-ninja-missing") == ["ninja-not-installed", "ninja-not-on-path"]


def test_close_lines_are_not_ninja_missing():
    for text in (
        "ninja: build stopped: subcommand failed.",
        "Ninja is required for this generator",
        "ninja: error: loading 'build.ninja'",
    ):
        assert "torch-extension-ninja-missing" not in [e.id for e in _explained(text)]


# --- nvcc's -arch value the release does not list --------------------------------------------------


@pytest.mark.parametrize(
    "text, arch",
    [
        ("nvcc fatal   : Value 'sm_90a' is not defined for option 'gpu-architecture'", "sm_90a"),
        (
            "nvcc fatal : Value 'sm_120' is not defined for option 'gpu-architecture'\nninja: build stopped: subcommand failed.",
            "sm_120",
        ),
        ("nvcc fatal   : Unsupported gpu architecture 'compute_100'", "compute_100"),
    ],
)
def test_an_architecture_nvcc_does_not_list_is_recognised_in_both_wordings(text, arch):
    assert _only(text, "nvcc-unsupported-arch").variables["arch"] == arch


@pytest.mark.parametrize(
    "text",
    [
        "nvcc fatal   : Value 'c++20' is not defined for option 'std'",
        "ptxas fatal   : Value 'sm_90a' is not defined for option 'gpu-name'",
        "nvlink fatal   : Value 'sm_80' is not defined for option 'arch'",
    ],
)
def test_other_options_are_not_nvccs_architecture(text):
    assert "nvcc-unsupported-arch" not in [e.id for e in _explained(text)]
