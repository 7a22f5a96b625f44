"""Building CUDA code, what the toolchain rules left: the summaries a failed compile ends in
(setuptools' "command ... nvcc failed", PyTorch's "Error compiling objects for extension"), which
stand behind the line that names the reason; CMake's CUDA architectures (empty, or a special value
older CMake releases do not know); nvcc's check of its host compiler's target; and CUDA identifiers
a header of another release or another architecture does not declare. Each rule has a case that
decides and a close one that does not, with wordings beyond the corpus's."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _ids(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text))]


def _only(text: str, pattern: str):
    found = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern]
    assert len(found) == 1, _ids(text)
    return found[0]


def _causes(text: str, pattern: str) -> list[str]:
    return [c.id for c in _only(text, pattern).causes]


# --- the summaries of a failed compile -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "error: command '/usr/local/cuda-12.4/bin/nvcc' failed with exit code 1",
        "    error: command '/opt/cuda/bin/nvcc' failed with exit status 2",
        "error: command 'C:\\\\Program Files\\\\NVIDIA GPU Computing Toolkit\\\\CUDA\\\\v12.1\\\\bin\\\\nvcc.exe' failed with exit code 4294967295",
        "error: command 'D:\\CUDA\\v11.8\\bin\\nvcc' failed with exit code 1",
        "      RuntimeError: Error compiling objects for extension",
        "RuntimeError: Error building extension 'slstm_HS128BS8NH4NS4DBfDRbDWb'",
    ],
)
def test_a_summary_alone_says_to_look_at_the_first_error_above(text):
    assert _causes(text, "cuda-extension-build-failed")[0] == "extension-compile-error-above"


@pytest.mark.parametrize(
    "text",
    [
        "error: command '/usr/bin/gcc' failed with exit code 1",
        "error: command 'x86_64-linux-gnu-g++' failed with exit status 1",
        "error: command 'C:\\\\Program Files\\\\Microsoft Visual Studio\\\\2022\\\\BuildTools\\\\VC\\\\Tools\\\\MSVC\\\\14.38.33130\\\\bin\\\\HostX86\\\\x64\\\\cl.exe' failed with exit code 2",
        "Compiling objects for extension",
        "Building extension module fused_adam...",
    ],
)
def test_other_compilers_and_progress_lines_are_not_the_cuda_summary(text):
    assert "cuda-extension-build-failed" not in _ids(text)


def test_the_distributions_nvcc_puts_the_other_toolkit_first():
    assert (
        _causes("error: command '/usr/bin/nvcc' failed with exit code 1", "cuda-extension-build-failed")[0]
        == "older-cuda-toolkit-used"
    )


def test_a_log_with_two_toolkits_puts_the_other_toolkit_first():
    log = (
        "Cuda compilation tools, release 11.5, V11.5.119\n"
        "torch.__version__  = 2.1.0+cu121 (CUDA_HOME=/usr/local/cuda-12.1)\n"
        "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1\n"
    )
    assert _causes(log, "cuda-extension-build-failed")[0] == "older-cuda-toolkit-used"


@pytest.mark.parametrize(
    "reason, pattern",
    [
        ("nvcc fatal   : Unsupported gpu architecture 'compute_90'", "nvcc-unsupported-arch"),
        ("nvcc fatal   : Host compiler targets unsupported OS.", "nvcc-host-compiler-unsupported-os"),
        ('csrc/ops.cu(41): error: identifier "__nv_bfloat162" is undefined', "nvcc-cuda-identifier-undefined"),
        (
            "/usr/local/cuda-11.8/include/crt/host_config.h:132:2: error: #error -- unsupported GNU version! gcc versions later than 11 are not supported!",
            "cuda-host-compiler-unsupported",
        ),
    ],
)
def test_a_summary_stands_behind_the_line_that_names_its_reason(reason, pattern):
    for summary in (
        "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",
        "RuntimeError: Error compiling objects for extension",
    ):
        found = _ids(f"{reason}\nninja: build stopped: subcommand failed.\n{summary}\n")
        assert pattern in found and "cuda-extension-build-failed" not in found, found


# --- CMake's CUDA architectures --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, first",
    [
        ("  CMAKE_CUDA_ARCHITECTURES must be non-empty if set.", "cmake-cuda-architectures-empty"),
        ("CMake Error: CMAKE_HIP_ARCHITECTURES must be non-empty if set.", "cmake-cuda-architectures-empty"),
        ("nvcc fatal : Unsupported gpu architecture 'compute_native'", "cmake-cuda-architectures-native"),
        ("  nvcc fatal   : Unsupported gpu architecture 'compute_'", "cmake-cuda-architectures-native"),
        ("nvcc fatal   : Unsupported gpu architecture 'compute_all-major'", "cmake-cuda-architectures-native"),
    ],
)
def test_cmake_architectures_rank_by_what_the_value_was(text, first):
    assert _causes(text, "cmake-cuda-architectures-invalid")[0] == first


@pytest.mark.parametrize(
    "text",
    [
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
        "nvcc fatal   : Unsupported gpu architecture 'compute_89a'",
        'CUDA_ARCHITECTURES is empty for target "exputil".',
        "-- CMAKE_CUDA_ARCHITECTURES: 86",
    ],
)
def test_numeric_architectures_and_target_warnings_are_not_cmakes_values(text):
    assert "cmake-cuda-architectures-invalid" not in _ids(text)


def test_a_numeric_architecture_nvcc_lacks_stays_with_nvcc():
    assert _ids("nvcc fatal   : Unsupported gpu architecture 'compute_100'") == ["nvcc-unsupported-arch"]


# --- nvcc's host compiler target ----------------------------------------------------------------


def test_host_compiler_target_on_windows_gives_the_x64_generator():
    text = "tmpxft_00001a2c_00000000-1.cpp\r\nnvcc fatal   : Host compiler targets unsupported OS.\r\n"
    explanation = _only(text, "nvcc-host-compiler-unsupported-os")
    assert explanation.causes[0].id == "host-compiler-unsupported-target"


@pytest.mark.parametrize(
    "text",
    ["Host compiler targets x86_64-linux-gnu", "nvcc warning : The host compiler targets an OS that is deprecated"],
)
def test_other_target_lines_are_not_the_refusal(text):
    assert "nvcc-host-compiler-unsupported-os" not in _ids(text)


# --- CUDA identifiers a header does not declare -----------------------------------------------------


@pytest.mark.parametrize(
    "text, first",
    [
        # a type or library constant missing: the header of an older release
        (
            '/tmp/pip-req-build-1/csrc/gemm.cu(33): error: identifier "CUDA_R_16BF" is undefined',
            "cuda-toolkit-too-old-for-type",
        ),
        ('C:\\src\\ops.cuh(9): error: identifier "__nv_bfloat16" is undefined', "cuda-toolkit-too-old-for-type"),
        ('kernels/fp8.cu(120): error: identifier "__nv_fp8_e5m2" is undefined', "cuda-toolkit-too-old-for-type"),
        ('quant.cu(64): error: identifier "__nv_cvt_float2_to_fp8x2" is undefined', "cuda-toolkit-too-old-for-type"),
        ('gemm.cu(12): error: identifier "CUDA_R_8F_E4M3" is undefined', "cuda-toolkit-too-old-for-type"),
        # an intrinsic missing while its type exists: the architecture compiled for
        (
            'inline_ops_2bf16.cuh(153): error: identifier "__halves2bfloat162" is undefined',
            "cuda-intrinsic-arch-too-low",
        ),
        ('layout.cu(127): error: identifier "__float2bfloat16_rn" is undefined', "cuda-intrinsic-arch-too-low"),
        ('rotateKernel.cu(40): error: identifier "__hdiv" is undefined', "cuda-intrinsic-arch-too-low"),
        ('softmax.cu(88): error: identifier "__hmax2" is undefined', "cuda-intrinsic-arch-too-low"),
    ],
)
def test_an_undefined_cuda_identifier_ranks_by_what_it_is(text, first):
    assert _causes(text, "nvcc-cuda-identifier-undefined")[0] == first


@pytest.mark.parametrize(
    "text",
    [
        'src/kernel.cu(10): error: identifier "my_bf16_helper_t" is undefined',
        'src/kernel.cu(10): error: identifier "__launch_bounds_helper" is undefined',
        "undefined symbol: _Z16__float2bfloat16f",
        'error: identifier "__hash_table" is undefined',
        "warning: identifier __nv_bfloat16 is deprecated",
    ],
)
def test_other_identifiers_and_symbols_are_not_cuda_headers(text):
    assert "nvcc-cuda-identifier-undefined" not in _ids(text)
