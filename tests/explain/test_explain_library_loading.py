"""Library loading and platform causes named from what prints them: cuDNN 8's own loader ("Could
not load library X. Error: <dlerror>" on Linux, "Error code N" on Windows), glibc's dynamic loader
(elf/dl-lookup.c), Windows' system error codes and NTSTATUS values as Python's import machinery
reports them, and the shells' SIGILL lines. As in test_explain_source_families_more.py, each
message is written from the format string of the source (named beside it), with the parts a run
fills in chosen here; each must be explained by its own pattern with the cause that the source's
condition implies first, and a look-alike must stay quiet or get another cause."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from envcheck.explain.parts import read_parts
from tests.explain.test_explain_source_families import CATALOGUE, assert_explained

WSL_KERNEL = "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@1c602f52c2e4)\n"

# (message, pattern id, first cause id)
MESSAGES = [
    (  # cuDNN 8 loader, Linux: the sub-library was found, the driver library it opens by its unversioned name was not
        "Could not load library libcudnn_ops_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory",
        "cudnn-sublibrary-not-loaded",
        "libcuda-dev-link-missing",
    ),
    (  # the same under WSL2, where only /usr/lib/wsl/lib has libcuda.so
        WSL_KERNEL
        + "Could not load library libcudnn_ops_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory",
        "cudnn-sublibrary-not-loaded",
        "wsl-libcuda-path",
    ),
    (  # the sub-library itself is not there: no WSL or libcuda cause comes first
        "Could not load library libcudnn_adv_infer.so.8. Error: libcudnn_adv_infer.so.8: cannot open shared object file: No such file or directory",
        "cudnn-sublibrary-not-loaded",
        "cudnn-not-installed",
    ),
    (  # glibc elf/dl-lookup.c: a versioned symbol the sibling that loaded does not define
        "Could not load library libcudnn_adv_train.so.8. Error: /opt/cudnn/lib/libcudnn_ops_train.so.8: symbol "
        "cudnnSetTensorNdDescriptor version libcudnn_ops_infer.so.8 not defined in file libcudnn_ops_infer.so.8 with link time reference",
        "cudnn-sublibrary-not-loaded",
        "cudnn-copies-mixed",
    ),
    (  # cuDNN 8 loader, Windows: LoadLibrary's 126 for a DLL that depends on zlibwapi.dll (cuDNN 8.3-8.9)
        "Could not load library cudnn_cnn_infer64_8.dll. Error code 126",
        "cudnn-sublibrary-not-loaded",
        "cudnn-zlib-missing",
    ),
    (  # Python's import machinery on Windows: error 127, a function missing from the DLL that loaded
        "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The specified procedure could not be found.",
        "win-dll-load-failed",
        "dependency-dll-too-old",
    ),
    (  # the NTSTATUS 0xC000001D (STATUS_ILLEGAL_INSTRUCTION) as an unsigned number
        "ImportError: DLL load failed with error code 3221225501",
        "win-dll-load-failed",
        "cpu-without-avx",
    ),
    (  # the same status as a signed 32-bit number
        "ImportError: DLL load failed with error code -1073741795",
        "win-dll-load-failed",
        "cpu-without-avx",
    ),
    (  # bash's SIGILL line, quoted in a sentence
        "python3 -c 'import tensorflow' gives 'Illegal instruction (core dumped)'",
        "illegal-instruction",
        "illegal-instruction",
    ),
]

# Lines like the ones above that are not them: (text, pattern id, a cause id it must not give)
NOT_THESE = [
    # a cuDNN DLL that does not link zlibwapi.dll: no zlib cause
    (
        "Could not load library cudnn_adv_infer64_8.dll. Error code 126",
        "cudnn-sublibrary-not-loaded",
        "cudnn-zlib-missing",
    ),
    # a missing module, not a missing procedure
    (
        "ImportError: DLL load failed while importing _message: The specified module could not be found.",
        "win-dll-load-failed",
        "dependency-dll-too-old",
    ),
    # not an illegal instruction's status
    ("ImportError: DLL load failed with error code 1114", "win-dll-load-failed", "cpu-without-avx"),
    # a sub-library missing is no mix of two copies
    (
        "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory",
        "cudnn-sublibrary-not-loaded",
        "cudnn-copies-mixed",
    ),
]


@pytest.mark.parametrize("message, pattern_id, first", MESSAGES, ids=[f"{m[1]}-{m[2]}" for m in MESSAGES])
def test_source_message_is_explained_with_its_cause_first(message, pattern_id, first):
    result = CATALOGUE.scan_text(message)
    if "\n" not in message:
        assert_explained(message, pattern_id, False, first)
        return
    explanations = [e for e in explain(result) if e.id == pattern_id]
    assert explanations and explanations[0].causes[0].id == first


@pytest.mark.parametrize("text, pattern_id, cause_id", NOT_THESE, ids=[f"{n[1]}-not-{n[2]}" for n in NOT_THESE])
def test_a_look_alike_does_not_get_the_cause(text, pattern_id, cause_id):
    explanations = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    assert all(cause_id not in {c.id for c in e.causes} for e in explanations)


def test_the_status_1114_is_not_read_as_the_dll_load_failure():
    assert "win-dll-load-failed" not in CATALOGUE.scan_text("ImportError: DLL load failed with error code 1114").ids


def test_glibc_versioned_symbol_is_an_undefined_symbol_with_or_without_the_comma():
    for sep in (",", ""):
        parts = read_parts(
            f"libfoo.so.1: symbol bar{sep} version LIBBAZ_1 not defined in file libbaz.so.1 with link time reference"
        )
        assert parts["dlerror_reason"] == "undefined-symbol"
        assert parts["symbol"] == "bar"
    assert "dlerror_reason" not in read_parts("the symbol bar is not defined in the file, see the manual")


def test_cudnn_loader_passes_on_the_dependency_it_could_not_open():
    parts = read_parts(
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file",
        library="libcudnn_cnn_infer.so.8",
    )
    assert parts["dlerror_reason"] == "other-file"
    assert parts["dependency"] == "libcuda.so"


def test_the_generic_dependency_cause_follows_the_one_the_message_points_at():
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory"
        )
    )
    ids = [c.id for c in explanation.causes]
    assert ids.index("libcuda-dev-link-missing") < ids.index("dependency-missing")


def test_an_illegal_instruction_from_an_unknown_system_gets_commands_for_linux_and_macos():
    (explanation,) = explain(CATALOGUE.scan_text("illegal hardware instruction  python3"))
    lines = [c.line for c in explanation.fix.commands]
    assert any("sysctl.proc_translated" in line for line in lines)
    assert not any("/proc/cpuinfo" in line for line in lines)
    (linux,) = explain(CATALOGUE.scan_text("/home/u/venv/bin/python: Illegal instruction (core dumped)"))
    assert any("/proc/cpuinfo" in c.line for c in linux.fix.commands)


@pytest.mark.parametrize(
    "message",
    [
        "RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH",  # cudnnGetErrorString's text
        "E cuda_dnn.cc:377] Could not create cudnn handle: CUDNN_STATUS_ARCH_MISMATCH",
    ],
)
def test_a_cudnn_arch_mismatch_is_a_gpu_too_old_for_cudnn(message):
    explanations = explain(CATALOGUE.scan_text(message))
    assert explanations[0].id == "cudnn-arch-mismatch"
    assert explanations[0].causes[0].id == "compute-capability-too-low"


def test_cublas_arch_mismatch_is_not_cudnns():
    assert "cudnn-arch-mismatch" not in CATALOGUE.scan_text("CUBLAS_STATUS_ARCH_MISMATCH").ids


def test_a_packages_own_dll_failing_with_126_points_at_the_cpp_runtime():
    # Python's ctypes/torch loader on Windows: "[WinError 126] ... Error loading "PATH" or one of its dependencies."
    own = 'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Python312\\Lib\\site-packages\\torch\\lib\\shm.dll" or one of its dependencies.'
    (explanation,) = explain(CATALOGUE.scan_text(own))
    assert explanation.id == "windows-dll-load-error"
    assert explanation.causes[0].id == "msvc-runtime-missing"
    cuda = own.replace("shm.dll", "cublas64_12.dll")
    (explanation,) = explain(CATALOGUE.scan_text(cuda))
    assert "msvc-runtime-missing" not in {c.id for c in explanation.causes}


def test_library_stack_tells_the_cuda_stacks_files_from_the_others():
    assert read_parts("Error loading cudnn_ops_infer64_8.dll")["library_stack"] == "cuda"
    assert read_parts("libcublasLt.so.12: cannot open shared object file")["library_stack"] == "cuda"
    assert read_parts("Error loading fbgemm.dll")["library_stack"] == "other"
    assert "library_stack" not in read_parts("no file named here")


def test_cuffts_internal_error_asks_first_whether_the_cuda_release_knows_the_gpu():
    # aten/src/ATen/native/cuda/CuFFTUtils.h: "cuFFT error: " followed by the cufftResult's name
    (explanation,) = explain(CATALOGUE.scan_text("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR"))
    assert explanation.id == "cuda-math-cufft-internal-error"
    assert [c.id for c in explanation.causes] == ["release-lacks-arch", "gpu-memory-exhausted-cufft"]
    (other,) = explain(CATALOGUE.scan_text("RuntimeError: cuFFT error: CUFFT_INVALID_SIZE"))
    assert other.id == "cuda-math-library-status"


def test_a_missing_library_named_with_the_drivers_version_is_a_half_upgraded_driver():
    # ld.so's "NAME: cannot open shared object file"; the driver installs libnvidia-*.so.<its version>
    (explanation,) = explain(
        CATALOGUE.scan_text(
            "ImportError: libnvidia-fatbinaryloader.so.418.87.01: cannot open shared object file: No such file or directory"
        )
    )
    assert explanation.id == "loader-driver-library-version-missing"
    assert explanation.variables["driver_version"] == "418.87.01"
    assert explanation.causes[0].id == "driver-packages-mixed"
    # the version-less soname is another story (NVML not installed), not a mixed driver
    assert (
        "loader-driver-library-version-missing"
        not in CATALOGUE.scan_text(
            "ImportError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory"
        ).ids
    )


def test_core_dumped_is_the_linux_shells_wording():
    from envcheck.explain.context import platform_of

    assert platform_of("Segmentation fault (core dumped)") == "linux"
    # macOS's signal descriptions end in the number ("Illegal instruction: 4"), glibc's do not
    assert platform_of("Illegal instruction: 4") == "macos"


# dlerror()'s reason alone on its line: what a user copies out of an exception or a wrapped loader
# line. Alone it is the missing library; under the loader line it belongs to, that line explains it.
@pytest.mark.parametrize(
    "library", ["libcudnn.so.8", "libcudart.so.11.0", "libcublasLt.so.12", "libcudnn_ops_infer.so.8", "libnccl.so.2"]
)
def test_the_loaders_reason_alone_names_the_missing_library(library):
    scan = CATALOGUE.scan_text(f"{library}: cannot open shared object file: No such file or directory\n")
    (explanation,) = explain(scan)
    assert explanation.id == "cuda-library-import-missing"
    assert explanation.variables["library"] == library


@pytest.mark.parametrize(
    ("text", "owner"),
    [
        (
            "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
            "'libcudnn.so.8'; dlerror:\nlibcudnn.so.8: cannot open shared object file: No such file or directory\n",
            "cudnn-not-loaded",
        ),
        (
            "./train: error while loading shared libraries:\nlibcudart.so.12: cannot open shared object file: "
            "No such file or directory\n",
            "program-cuda-library-not-found",
        ),
    ],
)
def test_the_reason_under_its_loader_line_is_that_lines(text, owner):
    assert [e.id for e in explain(CATALOGUE.scan_text(text))] == [owner]


@pytest.mark.parametrize(
    "line",
    [
        "libGL.so.1: cannot open shared object file: No such file or directory",
        "libcudnn.so.8: cannot open shared object file: No such file or directory, so I copied it over",
    ],
)
def test_the_reason_for_another_library_or_inside_a_sentence_is_not_read(line):
    assert "cuda-library-import-missing" not in CATALOGUE.scan_text(line + "\n").ids
