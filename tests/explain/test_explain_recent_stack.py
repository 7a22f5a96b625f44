"""Messages of the newest stack: JAX's CUDA plugins (jax/_src/xla_bridge.py discover_pjrt_plugins
logs a plugin whose import or initialize() raised; a PJRT API version mismatch or a library the
plugin's version check could not load ends the CUDA backend), cuDNN 9's front library opening its
sub-libraries by file name ("Unable to load any of {...}", "Invalid handle. Cannot load symbol"),
and PyTorch's own check of a GPU's compute capability against its wheel's architectures."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _explained(text: str):
    return list(explain(CATALOGUE.scan_text(text)))


def _ids(text: str) -> list[str]:
    return [e.id for e in _explained(text)]


def _one(text: str, pattern_id: str):
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert found, (pattern_id, _ids(text))
    return found[0]


def _causes(text: str, pattern_id: str) -> list[str]:
    return [c.id for c in _one(text, pattern_id).causes]


def _command_lines(explanation) -> list[str]:
    lines = [c.line for c in (explanation.fix.commands if explanation.fix else ())]
    for cause in explanation.causes:
        for node in (cause.tell, cause.fix):
            lines += [c.line for c in (node.commands if node else ())]
    return lines


# --- JAX: a CUDA plugin that fails while jax imports it -------------------------------------------


@pytest.mark.parametrize(
    "line, plugin",
    [
        (
            "ERROR:2025-09-14 08:02:11,907:jax._src.xla_bridge:477: Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()",
            "jax_plugins.xla_cuda12",
        ),
        (
            "E0914 08:02:11.907000 140211 xla_bridge.py:477] Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda13.initialize()",
            "jax_plugins.xla_cuda13",
        ),
        (
            "Jax plugin configuration error: Plugin module jax_plugins.xla_cuda12 could not be loaded",
            "jax_plugins.xla_cuda12",
        ),
        # some jax releases log the format string without its argument
        ("Jax plugin configuration error: Plugin module %s could not be loaded", "%s"),
    ],
)
def test_a_failing_cuda_plugin_is_a_release_mismatch_first(line, plugin):
    explanation = _one(line, "jax-cuda-plugin-init-failed")
    assert not explanation.harmless
    assert plugin in explanation.title
    assert [c.id for c in explanation.causes][0] == "jax-cuda-extra-missing"


def test_the_plugin_fix_installs_the_plugin_of_the_installed_jax_for_its_cuda():
    cuda13 = _one(
        "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda13.initialize()",
        "jax-cuda-plugin-init-failed",
    )
    cuda12 = _one(
        "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()",
        "jax-cuda-plugin-init-failed",
    )
    assert any('"jax[cuda13]==' in line for line in _command_lines(cuda13))
    assert not any('"jax[cuda12]==' in line for line in _command_lines(cuda13))
    assert any('"jax[cuda12]==' in line for line in _command_lines(cuda12))


def test_a_plugin_that_finds_no_gpu_says_so_first():
    log = (
        "ERROR:2026-02-10 11:00:00,000:jax._src.xla_bridge:477: Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: CUDA_ERROR_NO_DEVICE\n"
    )
    assert _causes(log, "jax-cuda-plugin-init-failed")[0] == "no-nvidia-gpu"


def test_a_plugin_whose_cuda_runtime_does_not_load_points_at_the_wheels():
    log = (
        "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()\n"
        "RuntimeError: jaxlib/cuda/versions_helpers.cc:81: operation cusparseGetProperty(MAJOR_VERSION, &major) failed: The cuSPARSE library was not found.\n"
    )
    assert _causes(log, "jax-cuda-plugin-init-failed")[0] == "cuda-pip-wheel-missing"


@pytest.mark.parametrize(
    "line",
    [
        "Jax plugin configuration error",
        "jax_plugins.xla_cuda12.initialize() finished in 0.41 s",
        "Successfully installed jax-0.7.2 jax-cuda12-pjrt-0.7.2 jax-cuda12-plugin-0.7.2 jaxlib-0.7.2",
        "INFO: Jax plugin jax_plugins.xla_cuda12 configured",
    ],
)
def test_close_lines_are_not_a_failing_plugin(line):
    assert "jax-cuda-plugin-init-failed" not in _ids(line)


# --- JAX: the reasons its CUDA backend gives ------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version (0.54) and framework PJRT API version 0.51).",
        "WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: Unable to load CUDA. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
        "CUDA backend failed to initialize: Unable to load cuDNN. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
        "RuntimeError: Backend 'cuda' failed to initialize: Unable to load cuSPARSE. Is it installed?. Available backends are ['cpu']",
    ],
)
def test_reasons_that_name_the_plugin_or_its_wheels_rank_the_missing_extra_first(line):
    assert _causes(line, "jax-cuda-backend-failed")[0] == "jax-cuda-extra-missing"


def test_other_reasons_keep_the_usual_order():
    line = "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices."
    causes = _causes(line, "jax-cuda-backend-failed")
    assert causes[0] != "jax-cuda-extra-missing"
    # "unable to load" of something that is no CUDA library is no reason of the plugin's wheels
    other = "CUDA backend failed to initialize: Unable to load the module foo (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)"
    assert _causes(other, "jax-cuda-backend-failed")[0] != "jax-cuda-extra-missing"


def test_the_pjrt_mismatch_alone_is_no_backend_failure():
    assert "jax-cuda-backend-failed" not in _ids(
        "Mismatched PJRT plugin PJRT API version (0.54) and framework PJRT API version 0.51)."
    )


# --- cuDNN 9: sub-libraries opened by file name ---------------------------------------------------


@pytest.mark.parametrize(
    "line, library, version",
    [
        (
            "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
            "libcudnn_ops",
            "9.1.0",
        ),
        (
            "Unable to load any of {libcudnn_engines_precompiled.so.9.5.1, libcudnn_engines_precompiled.so.9.5, libcudnn_engines_precompiled.so.9, libcudnn_engines_precompiled.so}",
            "libcudnn_engines_precompiled",
            "9.5.1",
        ),
        (
            "worker-1  | Unable to load any of {libcudnn_graph.so.9.10.2, libcudnn_graph.so.9.10, libcudnn_graph.so.9, libcudnn_graph.so}",
            "libcudnn_graph",
            "9.10.2",
        ),
    ],
)
def test_cudnn_9_names_the_sub_library_it_could_not_open(line, library, version):
    explanation = _one(line, "cudnn9-sublibrary-not-found")
    assert library in explanation.title and version in explanation.title
    assert [c.id for c in explanation.causes] == ["cudnn-not-on-path", "cudnn-copies-mixed", "cudnn-incomplete"]
    # the first cause's fix puts the wheel's folder on the loader's path, pasteable as it stands
    (export,) = {line for line in _command_lines(explanation) if line.startswith("export LD_LIBRARY_PATH=")}
    assert "nvidia.cudnn" in export and "{" not in export.replace("${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}", "")


@pytest.mark.parametrize(
    "line",
    [
        "Unable to load any of {libcublasLt.so.12, libcublasLt.so}",
        "Unable to load any of {libcudnn_ops_infer.so.8.9.7, libcudnn_ops_infer.so.8, libcudnn_ops_infer.so}",
        "Unable to load any of the requested plugins",
        "Successfully opened dynamic library libcudnn_ops.so.9.1.0",
    ],
)
def test_close_lines_are_not_a_cudnn_9_sub_library(line):
    assert "cudnn9-sublibrary-not-found" not in _ids(line)


def test_the_failed_call_alone_is_explained_and_after_its_cause_left_to_it():
    call = "Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor"
    alone = _one(call, "cudnn9-symbol-not-loaded")
    assert "cudnnCreateConvolutionDescriptor" in alone.title
    assert [c.id for c in alone.causes][0] == "cudnn-not-on-path"
    linux = (
        "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, libcudnn_cnn.so}\n"
        + call
    )
    assert _ids(linux) == ["cudnn9-sublibrary-not-found"]
    windows = "Could not locate cudnn_cnn64_9.dll. Please make sure it is in your library path!\n" + call
    assert _ids(windows) == ["cudnn-sublibrary-not-loaded"]
    assert "cudnn9-symbol-not-loaded" not in _ids("Invalid handle.\nCannot load symbol glXCreateContext")


def test_a_cudnn_9_dll_is_not_called_a_missing_cudnn_8():
    nine = "Could not locate cudnn_engines_tensor_ir64_9.dll. Please make sure it is in your library path!"
    causes = _causes(nine, "cudnn-sublibrary-not-loaded")
    assert "cudnn-not-installed" not in causes and causes[0] == "cudnn-not-on-path"
    eight = "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!"
    assert _causes(eight, "cudnn-sublibrary-not-loaded")[0] == "cudnn-not-installed"
    linux_eight = "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory"
    assert "cudnn-not-installed" in _causes(linux_eight, "cudnn-sublibrary-not-loaded")


# --- PyTorch: a GPU outside its wheel's architectures ---------------------------------------------


@pytest.mark.parametrize(
    "text, first, index_url",
    [
        (
            "\n    Found GPU0 NVIDIA GeForce RTX 5070 Ti which is of cuda capability 12.0.\n"
            "    Minimum and Maximum cuda capability supported by this version of PyTorch is\n    (5.0) - (9.0)\n",
            "release-lacks-arch",
            "whl/cu128",
        ),
        ("Found GPU1 NVIDIA B200 which is of cuda capability 10.0.", "release-lacks-arch", "whl/cu128"),
        (
            "Found GPU0 NVIDIA GeForce GTX 1080 which is of cuda capability 6.1.\n"
            "Minimum and Maximum cuda capability supported by this version of PyTorch is\n(7.0) - (12.0)",
            "compute-capability-too-low",
            "whl/cu126",
        ),
        (
            "Found GPU0 Tesla K80 which is of cuda capability 3.7.\n"
            "PyTorch no longer supports this GPU because it is too old.\n"
            "The minimum cuda capability supported by this library is 5.0.",
            "compute-capability-too-low",
            "whl/cu126",
        ),
    ],
)
def test_pytorchs_capability_check_says_which_side_of_the_range(text, first, index_url):
    explanation = _one(text, "torch-gpu-capability-unsupported")
    causes = explanation.causes
    assert causes[0].id == first
    assert any(index_url in c.line for c in causes[0].fix.commands)


def test_a_capability_inside_both_ranges_keeps_the_order_of_the_file():
    text = "Found GPU0 NVIDIA GeForce RTX 3090 which is of cuda capability 8.6."
    assert _causes(text, "torch-gpu-capability-unsupported") == ["release-lacks-arch", "compute-capability-too-low"]


@pytest.mark.parametrize(
    "line",
    [
        "Found GPU0 NVIDIA GeForce RTX 4090 which requires CUDA_VERSION >= 11080 to",
        "Found device 0 with properties: name: NVIDIA GeForce RTX 5090 computeCapability: 12.0",
        "which is of cuda capability",
        "The GPU which is of CUDA capability 8.9 runs fine",
    ],
)
def test_close_lines_are_not_pytorchs_capability_check(line):
    assert "torch-gpu-capability-unsupported" not in _ids(line)


def test_pytorchs_sentence_is_recognised_as_people_retype_it():
    retyped = (
        "nvidia geforce rtx 5090 with cuda capabilities sm_120 is not compatible with the current Pytorch installation."
    )
    assert _causes(retyped, "no-kernel-image-for-device")[0] == "release-lacks-arch"
    assert "no-kernel-image-for-device" not in _ids(
        "sm_120 is not compatible with the current installation of this tool"
    )


def test_the_new_passes_are_cheap_to_look_for():
    gates = CATALOGUE.gates
    for needle in (
        "jax plugin configuration error ",
        "unable to load any of {libcudnn",
        "invalid handle. cannot load symbol cudnn",
        "which is of cuda capability ",
    ):
        assert gates.get(needle), needle


# --- TensorFlow: the PTX JIT notice, alone and before the JIT fails -------------------------------

JIT_NOTICE = (
    "W0000 00:00:1753232013.685876   24341 gpu_device.cc:2431] TensorFlow was not built with CUDA kernel binaries"
    " compatible with compute capability 12.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer."
)


def test_the_jit_notice_alone_stays_a_harmless_wait():
    (explanation,) = _explained(JIT_NOTICE)
    assert explanation.id == "compute-capability-ptx-jit" and explanation.harmless
    assert [c.id for c in explanation.causes] == ["compute-capability-ptx-jit"]


@pytest.mark.parametrize(
    "failure",
    [
        "W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_PTX'",
        "'cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, 0, reinterpret_cast<CUstream>(stream), params, nullptr)' failed with 'CUDA_ERROR_INVALID_HANDLE'",
        "LLVM ERROR: PTX version 8.5 does not support target 'sm_120'. Minimum required PTX version is 8.7",
    ],
)
def test_a_failed_jit_makes_the_notice_a_build_without_the_architecture(failure):
    notice = _one(JIT_NOTICE + "\n" + failure, "compute-capability-ptx-jit")
    assert not notice.harmless
    assert [c.id for c in notice.causes][0] == "release-lacks-arch"
    # a failure of something else does not
    other = JIT_NOTICE + "\nResourceExhaustedError: OOM when allocating tensor with shape[8192,8192]"
    assert "release-lacks-arch" not in _causes(other, "compute-capability-ptx-jit")


def test_the_plugins_own_report_names_the_library_it_could_not_load():
    report = (
        "RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\n"
        "Unable to load cuDNN. Is it installed?\n"
        "Traceback (most recent call last):\n"
    )
    (explanation,) = [e for e in _explained(report) if e.id == "jax-cuda-backend-failed"]
    assert "cuDNN" in explanation.title
    assert explanation.causes[0].id == "jax-cuda-extra-missing"
    # its "Outdated ... installation found" lines are the older-library message's
    outdated = (
        "E   RuntimeError: Backend 'cuda' failed to initialize: Unable to use CUDA because of the following issues with CUDA components:\n"
        "E   Outdated cuDNN installation found.\n"
    )
    assert _ids(outdated) == ["jax-cuda-library-too-old"]
    for other in ("Unable to load libGL. Is it installed?", "ffmpeg: Unable to load CUDA kernels. Is it installed?"):
        assert _ids(other) == [], other
