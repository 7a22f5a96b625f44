"""XLA's search for the CUDA tools it runs, read from its source
(xla/stream_executor/cuda/subprocess_compilation.cc, ptx_compiler_helpers.cc, parse_flags_from_env.cc,
tsl's subprocess.cc and command_line_flags.cc): each message is recognised in the wordings its
format strings give (other tools, other paths, other log prefixes, the status XLA wraps it in), its
causes ranked by what the rest of the log shows (the ptxas release it prints, a wait status, the flag
it names), and close lines of other programs are not explained."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _found(text: str) -> dict[str, object]:
    return {e.id: e for e in explain(CATALOGUE.scan_text(text))}


def _causes(text: str, pattern_id: str) -> list[str]:
    found = _found(text)
    assert pattern_id in found, (pattern_id, sorted(found))
    return [c.id for c in found[pattern_id].causes]


# --- the ptxas release the log shows -------------------------------------------------------------

PTXAS_VERSION_OUTPUT = """$ ptxas --version
ptxas: NVIDIA (R) Ptx optimizing assembler
Copyright (c) 2005-2022 NVIDIA Corporation
Built on Wed_Sep_21_10:30:10_PDT_2022
Cuda compilation tools, release {release}, V{version}
Build cuda_{release}.r{release}/compiler.31833905_0"""


@pytest.mark.parametrize(
    "text, version, state",
    [
        (PTXAS_VERSION_OUTPUT.format(release="11.5", version="11.5.119"), "11.5.119", "below-xla-minimum"),
        (PTXAS_VERSION_OUTPUT.format(release="12.3", version="12.3.103"), "12.3.103", "excluded-by-xla"),
        (PTXAS_VERSION_OUTPUT.format(release="12.8", version="12.8.93"), "12.8.93", "accepted"),
        (
            "W asm_compiler.cc:111] *** WARNING *** You are using ptxas 10.1.243, which is older than 11.1.",
            "10.1.243",
            "below-xla-minimum",
        ),
        (
            "E0103 ptx_compiler_helpers.cc:87] *** WARNING *** Invoking ptxas with version 12.1.66, which corresponds to a CUDA version <=12.6.2.",
            "12.1.66",
            "accepted",
        ),
        (
            "INTERNAL: ptxas 12.3.103 has a bug that we think can affect XLA. Please use a different version.",
            "12.3.103",
            "excluded-by-xla",
        ),
    ],
)
def test_the_ptxas_release_the_log_shows_and_how_xla_takes_it(text, version, state):
    facts = read_context(text)
    assert facts["log_ptxas"] == version
    assert facts["log_ptxas_state"] == state


def test_nvccs_version_is_not_read_as_ptxas():
    # nvcc prints the same release line, but under its own banner: the toolkit, not the ptxas XLA ran
    facts = read_context("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 11.5, V11.5.119")
    assert "log_ptxas" not in facts and "log_ptxas_state" not in facts


# --- no ptxas, nvlink ... that XLA accepts ---------------------------------------------------------

NO_SUITABLE = [
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Couldn't find a suitable version of ptxas. The following locations were considered: ./cuda_sdk_lib/bin/ptxas, /usr/local/cuda/bin/ptxas",
    "  - ptxas_path: Couldn't find a suitable version of ptxas. The following locations were considered: /workspace/venv/bin/ptxas, /usr/bin/ptxas",
    "E0000 00:00:1735000000.000000  4242 gpu_compiler.cc:2420] INTERNAL: Couldn't find a suitable version of nvlink. The following locations were considered: /opt/conda/bin/nvlink",
    "tensorflow.python.framework.errors_impl.NotFoundError: Couldn't find a suitable version of fatbinary. The following locations were considered: bin/fatbinary",
]


@pytest.mark.parametrize("line", NO_SUITABLE)
def test_no_suitable_tool_is_recognised_in_each_wording(line):
    found = _found(line)
    assert "xla-no-suitable-cuda-tool" in found
    assert not found["xla-no-suitable-cuda-tool"].harmless
    assert _causes(line, "xla-no-suitable-cuda-tool")[0] == "ptxas-not-installed"


def test_the_ptxas_release_in_the_log_ranks_why_none_was_accepted():
    line = NO_SUITABLE[0]
    old = PTXAS_VERSION_OUTPUT.format(release="11.5", version="11.5.119") + "\n" + line
    assert _causes(old, "xla-no-suitable-cuda-tool")[0] == "old-ptxas-on-path"
    excluded = PTXAS_VERSION_OUTPUT.format(release="12.3", version="12.3.103") + "\n" + line
    assert _causes(excluded, "xla-no-suitable-cuda-tool")[0] == "ptxas-release-excluded"
    accepted = PTXAS_VERSION_OUTPUT.format(release="12.8", version="12.8.93") + "\n" + line
    assert _causes(accepted, "xla-no-suitable-cuda-tool")[0] == "ptxas-not-installed"


def test_the_excluded_release_is_a_ptxas_cause_only():
    assert "ptxas-release-excluded" not in _causes(NO_SUITABLE[2], "xla-no-suitable-cuda-tool")
    assert "ptxas-release-excluded" in _causes(NO_SUITABLE[0], "xla-no-suitable-cuda-tool")


@pytest.mark.parametrize(
    "line",
    [
        "Couldn't find a suitable version of nvcc",
        "ERROR: Could not find a version that satisfies the requirement ptxas (from versions: none)",
        "Couldn't find a suitable version of cudnn, using the default",
    ],
)
def test_other_searches_are_not_xlas(line):
    assert "xla-no-suitable-cuda-tool" not in _found(line)


# --- `<tool> --version` that cannot be read -------------------------------------------------------


def test_a_wait_status_of_minus_one_puts_sigchld_first():
    line = "W external/org_tensorflow/tensorflow/stream_executor/gpu/asm_compiler.cc:80] Couldn't get ptxas version string: Internal: Running /usr/local/cuda-11.2/bin/ptxas --version returned -1"
    assert _causes(line, "xla-tool-version-unreadable")[0] == "sigchld-ignored"


@pytest.mark.parametrize(
    "line",
    [
        "FAILED_PRECONDITION: Couldn't get ptxas/nvlink version string: INTERNAL: Running /opt/cuda/bin/nvlink --version returned 256",
        "Running /home/me/.local/bin/ptxas --version returned 32512",
        "Couldn't parse ptxas/nvlink version in output of /usr/bin/ptxas --version:",
    ],
)
def test_another_failure_to_run_puts_the_file_first(line):
    causes = _causes(line, "xla-tool-version-unreadable")
    assert causes[0] == "cuda-tool-cannot-run"
    assert "sigchld-ignored" not in causes


def test_couldnt_invoke_stays_ptxas_not_found():
    # the older wording names the missing program: the more specific pattern explains it
    found = _found("W asm_compiler.cc:80] Couldn't get ptxas version string: INTERNAL: Couldn't invoke ptxas --version")
    assert "ptxas-not-found" in found and "xla-tool-version-unreadable" not in found


@pytest.mark.parametrize(
    "line", ["Running /usr/local/cuda/bin/nvcc --version returned 0", "Couldn't get cuDNN version string"]
)
def test_other_version_checks_are_not_explained(line):
    assert "xla-tool-version-unreadable" not in _found(line)


# --- the tool could not be started ----------------------------------------------------------------

LAUNCH = "F external/org_tensorflow/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:435] ptxas returned an error during compilation of ptx to sass: 'INTERNAL: Failed to launch ptxas'  If the error message indicates that a file could not be written, please verify that sufficient filesystem space is provided."


def test_failed_to_launch_is_explained_as_itself_not_as_a_ptxas_error():
    found = _found(LAUNCH)
    assert "xla-tool-launch-failed" in found and "ptxas-failed" not in found
    assert _causes(LAUNCH, "xla-tool-launch-failed")[0] == "ptxas-not-installed"
    assert _causes(
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to launch fatbinary.", "xla-tool-launch-failed"
    )


def test_a_refused_fork_explains_the_launch():
    log = (
        "E tensorflow/tsl/platform/default/subprocess.cc:304] Start cannot fork() child process: Cannot allocate memory\n"
        + LAUNCH
    )
    found = _found(log)
    assert "subprocess-fork-failed" in found and "xla-tool-launch-failed" not in found and "ptxas-failed" not in found
    assert _causes(log, "subprocess-fork-failed") == ["process-cannot-fork"]


@pytest.mark.parametrize(
    "line", ["Failed to launch kernel", "fork: Cannot allocate memory", "Failed to launch ptxas_helper.sh"]
)
def test_other_launch_failures_are_not_xlas(line):
    found = _found(line)
    assert "xla-tool-launch-failed" not in found and "subprocess-fork-failed" not in found


# --- CUDA 12.0-12.6.2's clamping miscompile --------------------------------------------------------


def test_the_clamping_warning_names_what_compiled():
    ptxas = "E0000 00:00:1758870517.195873 3168446 ptx_compiler_helpers.cc:88] *** WARNING *** Invoking ptxas with version 12.4.131, which corresponds to a CUDA version <=12.6.2. CUDA versions 12.x.y up to and including 12.6.2 miscompile certain edge cases around clamping."
    assert _causes(ptxas, "ptxas-clamping-miscompile")[:2] == ["old-ptxas-on-path", "cuda-nvcc-wheel-old"]
    library = ptxas.replace("Invoking ptxas with version 12.4.131", "Invoking nvJitLink with version 12.6.0")
    causes = _causes(library, "ptxas-clamping-miscompile")
    assert causes[0] == "nvjitlink-library-old" and causes[-1] == "old-ptxas-on-path"
    bundled = ptxas.replace("Invoking ptxas with version 12.4.131", "Invoking nvPTXCompiler with version 12.5.82")
    assert _causes(bundled, "ptxas-clamping-miscompile")[0] == "framework-bundled-ptx-compiler-old"
    assert not _found(ptxas)["ptxas-clamping-miscompile"].harmless


def test_the_clamping_warning_cut_by_a_terminal_is_read():
    text = "E0103 16:41:38.489316 2217885 ptx_compiler_helpers.cc:87] *** WARNING *** Invoking ptxas with version 12.2.140, which corresponds to a CUDA version <=12.6.2. CUDA version\ns 12.x.y up to and including 12.6.2 miscompile certain edge cases around clamping."
    assert "ptxas-clamping-miscompile" in _found(text)


@pytest.mark.parametrize(
    "line",
    [
        "Please upgrade to CUDA 12.6.3 or newer.",
        "Invoking ptxas with version 12.8.93",
        "W asm_compiler.cc:111] *** WARNING *** You are using ptxas 11.0.221, which is older than 11.1.",
    ],
)
def test_other_ptxas_warnings_are_not_the_clamping_one(line):
    assert "ptxas-clamping-miscompile" not in _found(line)


# --- XLA_FLAGS and TF_XLA_FLAGS -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, first",
    [
        (
            "F external/xla/xla/parse_flags_from_env.cc:226] Unknown flags in XLA_FLAGS: --xla_gpu_autotune_level=2 --tf_xla_auto_jit=2\nPerhaps you meant to specify these on the TF_XLA_FLAGS envvar?",
            "xla-flag-wrong-variable",
        ),
        (
            "F tensorflow/compiler/xla/parse_flags_from_env.cc:221] Unknown flag in TF_XLA_FLAGS: --xla_gpu_cuda_data_dir=/usr/local/cuda-11.8",
            "xla-flag-wrong-variable",
        ),
        ("Unknown flags in XLA_FLAGS: --xla_gpu_cuda_data_dir /usr/local/cuda-12.2", "xla-flag-space-not-equals"),
        (
            "tensorflow/compiler/xla/parse_flags_from_env.cc:221] Unknown flags in XLA_FLAGS: --xla_gpu_enable_triton_gemm=false Perhaps you meant to specify these on the TF_XLA_FLAGS envvar?",
            "xla-flag-not-in-this-release",
        ),
        (
            "F0000 00:00:1700000000.000000 1 parse_flags_from_env.cc:226] Unknown flag in XLA_FLAGS: --xla_gpu_graph_level=0",
            "xla-flag-not-in-this-release",
        ),
        (
            'Could not open file "xla_gpu_cuda_data_dir=/usr/lib/cuda" to read flags for environment variable "XLA_FLAGS".',
            "xla-flags-not-flags",
        ),
        (
            "E tensorflow/core/util/command_line_flags.cc:106] Couldn't interpret value =/opt/tf/compiler/xla for flag tf_xla_cpu_global_jit.",
            "xla-flag-bad-value",
        ),
        (
            "E external/local_tsl/tsl/util/command_line_flags.cc:116] Couldn't interpret value yes for flag xla_gpu_enable_fast_min_max.",
            "xla-flag-bad-value",
        ),
    ],
)
def test_the_flags_message_names_its_cause(text, first):
    causes = _causes(text, "xla-flags-invalid")
    assert causes[0] == first
    if first == "xla-flag-not-in-this-release":
        assert causes == ["xla-flag-not-in-this-release"]


@pytest.mark.parametrize(
    "line",
    [
        "error: unknown flag in --format",
        "Unknown flags in LIBTPU_INIT_ARGS_EXTRA: --foo",
        "Couldn't interpret value",
        "Could not open file config.yaml",
    ],
)
def test_other_programs_flags_are_not_xlas(line):
    assert "xla-flags-invalid" not in _found(line)


# --- the PTX version XLA asks its LLVM for ---------------------------------------------------------


def test_an_unknown_ptx_feature_is_a_notice_unless_the_compilation_then_fails():
    line = "'+ptx85' is not a recognized feature for this target (ignoring feature)"
    assert _found(line)["llvm-lacks-ptx-version"].harmless
    failed = line + "\nptxas /tmp/tempfile-x-1-2, line 5; fatal   : Unsupported .version 8.5; current version is '8.4'"
    assert not _found(failed)["llvm-lacks-ptx-version"].harmless


@pytest.mark.parametrize(
    "line",
    [
        "'+avx512f' is not a recognized feature for this target (ignoring feature)",
        "'sm_120' is not a recognized processor for this target (ignoring processor)",
    ],
)
def test_other_llvm_features_are_not_the_ptx_one(line):
    assert "llvm-lacks-ptx-version" not in _found(line)


# --- ptxas older than the GPU, raised to the program ----------------------------------------------


def test_ptxas_too_old_raised_is_an_error_and_logged_is_a_notice():
    raised = "jaxlib.xla_extension.XlaRuntimeError: UNIMPLEMENTED: /usr/local/cuda-12.6/bin/ptxas ptxas too old. Falling back to the driver to compile."
    found = _found(raised)
    assert "ptxas-too-old-error" in found and "ptxas-too-old-fallback" not in found
    assert not found["ptxas-too-old-error"].harmless
    logged = "W external/xla/xla/stream_executor/gpu/redzone_allocator.cc:322] UNIMPLEMENTED: ptxas ptxas too old. Falling back to the driver to compile."
    found = _found(logged)
    assert "ptxas-too-old-error" not in found and found["ptxas-too-old-fallback"].harmless


# --- ptxas' own words inside XLA's wrapper ---------------------------------------------------------


def test_ptxas_output_inside_the_wrapper_is_explained_by_what_it_says():
    line = "F external/xla/xla/service/gpu/nvptx_compiler.cc:619] ptxas returned an error during compilation of ptx to sass: 'INTERNAL: ptxas exited with non-zero error code 65280, output: ptxas /tmp/tempfile-host-1a2b-1234-5c6d, line 5; fatal   : Unsupported .version 8.3; current version is '8.1'"
    found = _found(line)
    assert "ptxas-unsupported-version" in found and "ptxas-failed" not in found
    plain = "F nvptx_compiler.cc:619] ptxas returned an error during compilation of ptx to sass: 'INTERNAL: ptxas exited with non-zero error code 65280, output: ptxas fatal   : Memory allocation failure'"
    assert "ptxas-failed" in _found(plain)


# --- libdevice: which CUDA folders the TensorFlow release searches ---------------------------------

LIBDEVICE = "W tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc:502] Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the program we try to run uses routines from libdevice."


def test_a_release_before_the_cuda_wheels_puts_the_wheel_cause_last():
    old = "tensorflow version: 2.9.1\n" + LIBDEVICE
    assert read_context(old)["log_tf_nvidia_wheels"] == "not-searched"
    assert _causes(old, "libdevice-not-found")[-1] == "cuda-nvcc-wheel-missing"
    new = "tensorflow version: 2.15.0\n" + LIBDEVICE
    assert read_context(new)["log_tf_nvidia_wheels"] == "searched"
    assert _causes(new, "libdevice-not-found")[0] == "cuda-nvcc-wheel-missing"


def test_a_conda_environment_of_a_release_before_the_wheels_puts_its_cudatoolkit_first():
    # the 2.11-2.13 install guide's route: CUDA from conda's cudatoolkit, which has no nvvm folder
    env = '(tf) user@host:~$ python train.py\n  File "/home/user/miniconda3/envs/tf/lib/python3.9/site-packages/keras/engine/training.py", line 1\n'
    log = "tensorflow version: 2.12.0\n" + env + LIBDEVICE
    assert read_context(log).get("log_conda")
    assert _causes(log, "libdevice-not-found")[0] == "conda-cudatoolkit-without-nvvm"
    # from 2.14 the pip wheels are searched: in a conda environment too the missing wheel stays first
    assert (
        _causes("tensorflow version: 2.16.1\n" + env + LIBDEVICE, "libdevice-not-found")[0] == "cuda-nvcc-wheel-missing"
    )


# --- ptxas' exit as XLA prints it (a wait status) ---------------------------------------------------


@pytest.mark.parametrize(
    "line, first",
    [
        (
            "W nvptx_compiler.cc:448] Failed to compile ptx to cubin.  Will attempt to let GPU driver compile the ptx. Internal: ptxas exited with non-zero error code -1, output:",
            "sigchld-ignored",
        ),
        (
            "F nvptx_compiler.cc:478] ptxas returned an error during compilation of ptx to sass: 'Internal: ptxas exited with non-zero error code 256, output: '  If the error message indicates that a file could not be written, please verify that sufficient filesystem space is provided.",
            "cuda-tool-cannot-run",
        ),
        ("INTERNAL: ptxas exited with non-zero error code 256, output:", "cuda-tool-cannot-run"),
        (
            "ptxas returned an error during compilation of ptx to sass: 'INTERNAL: ptxas exited with non-zero error code 65280, output: ptxas fatal   : Could not open output file '/tmp/tempfile-a-1-2.cubin'",
            "tmp-disk-full",
        ),
        (
            "E0000 subprocess_compilation.cc:350] INTERNAL: ptxas 12.3.103 has a bug that we think can affect XLA. Please use a different version.",
            "ptxas-release-excluded",
        ),
        (
            "ptxas exited with non-zero error code 65280, output: ptxas fatal   : Memory allocation failure",
            "ptxas-version-mismatch",
        ),
    ],
)
def test_ptxas_exit_status_and_output_rank_the_cause(line, first):
    causes = _causes(line, "ptxas-failed")
    assert causes[0] == first
    assert causes[-1] == "ptxas-version-mismatch"


def test_a_status_with_output_is_ptxas_own_error_not_a_failed_start():
    # nvlink and ptxas print why they stopped: output after the status is not an exec failure
    line = "INTERNAL: ptxas exited with non-zero error code 256, output: ptxas fatal   : Input file 'x.ptx' could not be opened"
    assert "cuda-tool-cannot-run" not in _causes(line, "ptxas-failed")


# --- the PTX compiler library (nvJitLink, nvPTXCompiler) older than the GPU --------------------------


def test_the_ptx_library_too_old_for_the_gpu_names_the_libraries():
    line = "jaxlib.xla_extension.XlaRuntimeError: UNIMPLEMENTED: Loaded PTX assembler is too old for sm_100a."
    found = _found(line)
    assert "ptx-library-too-old-for-gpu" in found and not found["ptx-library-too-old-for-gpu"].harmless
    assert _causes(line, "ptx-library-too-old-for-gpu") == [
        "nvjitlink-library-old",
        "framework-bundled-ptx-compiler-old",
    ]
    assert "ptx-library-too-old-for-gpu" not in _found("The loaded PTX assembler is from CUDA 12.8")
