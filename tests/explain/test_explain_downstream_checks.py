"""Projects further down the CUDA stack, by the checks they run themselves: the Stable Diffusion web
UI's start-up check, the "not compiled with GPU support" of detectron2 and OpenMMLab's ops,
mmcv._ext, FlashAttention's GPU check and vLLM's backend choice, PyTorch extensions built for
another torch, transformers' FlashAttention 2 check, DeepSpeed's op builder, llama.cpp's GPU
offload and Ollama's GPU discovery. Each message is written from the source that prints it (named
in the pattern's ``sources``) with parts a real run fills in chosen here (other versions, ops,
paths and systems, log prefixes, wrapped lines), and the rest of the log ranks the causes."""

from __future__ import annotations

import pytest

from envcheck.explain import explain
from envcheck.explain.context import read_context
from tests.explain.test_explain_source_families import CATALOGUE, assert_explained


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


def _one(text: str, pattern_id: str):
    found = [e for e in _explain(text) if e.id == pattern_id]
    assert found, [e.id for e in _explain(text)]
    return found[0]


_WEBUI = "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable this check"


@pytest.mark.parametrize(
    "before, first",
    [
        ("", "torch-cpu-wheel"),
        ("torch                     2.1.2+cpu\n", "torch-cpu-wheel"),
        ("$ docker compose up -d\nwebui-1  | Launching launch.py...\n", "container-without-gpu"),
        (" => ERROR [webui 7/9] RUN ./webui.sh -f --exit\n#12 48.31 ", "docker-build-no-gpu"),
        ("UserWarning: The NVIDIA driver on your system is too old (found version 11040).\n", "torch-driver-too-old"),
    ],
)
def test_the_web_uis_gpu_check_is_ranked_by_what_the_log_shows(before, first):
    explanation = _one(before + _WEBUI, "sd-webui-torch-gpu-check")
    assert explanation.causes[0].id == first
    assert explanation.harmless is False


def test_a_build_step_is_only_a_cause_in_a_container_log():
    causes = [c.id for c in _one(_WEBUI, "sd-webui-torch-gpu-check").causes]
    assert "docker-build-no-gpu" not in causes


def test_the_web_uis_check_from_launch_py_of_2022_and_its_arguments_line():
    assert_explained(
        "AssertionError: Torch is not able to use GPU", "sd-webui-torch-gpu-check", False, "torch-cpu-wheel"
    )
    assert not CATALOGUE.scan_text("Launching Web UI with arguments: --skip-torch-cuda-test --lowvram").ids


@pytest.mark.parametrize(
    "message, first",
    [
        ("RuntimeError: deform_conv is not compiled with GPU support", "mmcv-lite-installed"),
        ("RuntimeError: roi_align_rotated_forward is not compiled with GPU support", "mmcv-lite-installed"),
        (
            "RuntimeError: Not compiled with GPU support (nms_rotated at /tmp/pip-req-build/detectron2/layers/csrc/nms_rotated/nms_rotated.h:29)",
            "extension-built-without-cuda",
        ),
        (
            "torch-2.0.1+cpu-cp310-cp310-linux_x86_64.whl\nRuntimeError: Not compiled with GPU support",
            "torch-cpu-wheel",
        ),
    ],
)
def test_not_compiled_with_gpu_support_names_the_packages_own_build(message, first):
    assert _one(message, "extension-not-compiled-with-gpu").causes[0].id == first


@pytest.mark.parametrize(
    "line",
    ["Compiled with GPU support: True", "MMCV CUDA Compiler: 11.3", "WITH_CUDA: compiled with GPU support"],
)
def test_gpu_support_look_alikes_are_not_explained(line):
    assert "extension-not-compiled-with-gpu" not in CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "log, first",
    [
        (
            '  File "C:\\Users\\me\\anaconda3\\envs\\mm\\lib\\site-packages\\mmcv\\utils\\ext_loader.py", line 13, in load_ext\n'
            "    ext = importlib.import_module('mmcv.' + name)\n"
            "ModuleNotFoundError: No module named 'mmcv._ext'",
            "mmcv-lite-installed",
        ),
        (
            '  File "/Users/me/miniforge3/lib/python3.9/site-packages/mmcv/utils/ext_loader.py", line 13, in load_ext\n'
            "ModuleNotFoundError: No module named 'mmcv._ext'",
            "mmcv-built-without-ops",
        ),
    ],
)
def test_mmcvs_missing_ops_on_each_system(log, first):
    assert _one(log, "mmcv-ext-missing").causes[0].id == first


def test_other_mmcv_modules_are_not_its_ops():
    for line in ("ModuleNotFoundError: No module named 'mmcv'", "No module named 'mmcv._ext_utils'"):
        assert "mmcv-ext-missing" not in CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "message, arch, capability",
    [
        ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "Ampere", "8.0"),
        ("RuntimeError: FlashAttention only supports Turing GPUs or newer.", "Turing", "7.5"),
        ("RuntimeError: FlashAttention only supports Hopper GPUs or newer.", "Hopper", "9.0"),
        (
            "(VllmWorkerProcess pid=26961) ERROR 01-11 13:09:40 engine.py:366] RuntimeError: Error in model execution "
            "(input dumped to /tmp/err_execute_model_input_20250111-130939.pkl): FlashAttention only supports Ampere GPUs or newer.",
            "Ampere",
            "8.0",
        ),
    ],
)
def test_flash_attentions_gpu_check_names_the_capability_it_needs(message, arch, capability):
    explanation = _one(message, "flash-attn-needs-newer-gpu")
    assert explanation.variables["min_capability"] == capability
    assert arch in explanation.title


def test_vllms_backend_choice_is_a_notice_and_its_use_is_nothing():
    assert_explained(
        "INFO 08-10 12:00:01 selector.py:170] Cannot use FlashAttention-2 backend for dtype other than torch.float16 or torch.bfloat16.",
        "vllm-attention-backend-fallback",
        True,
        None,
    )
    for line in ("INFO 08-10 12:00:01 selector.py:139] Using XFormers backend.", "Using FlashAttention-2 backend."):
        assert not CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "message, first",
    [
        (
            "ImportError: /home/u/.venv/lib/python3.11/site-packages/xformers/_C.so: undefined symbol: "
            "_ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEENS2_8optionalINS2_10ScalarTypeEEE",
            "torch-extension-other-torch",
        ),
        (
            "OSError: /opt/conda/lib/python3.10/site-packages/detectron2/_C.cpython-310-x86_64-linux-gnu.so: "
            "undefined symbol: _ZNK3c1017SymbolicShapeMeta18init_is_contiguousEv",
            "torch-extension-other-torch",
        ),
        (
            "ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
            "undefined symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
            "torch-extension-cxx11-abi",
        ),
    ],
)
def test_a_torch_symbol_missing_from_an_extension_is_the_extensions_build(message, first):
    result = CATALOGUE.scan_text(message)
    assert result.ids == ["torch-extension-built-for-other-torch"]  # not the generic loader message
    (explanation,) = explain(result)
    assert explanation.causes[0].id == first


def test_a_symbol_of_another_library_is_not_pytorchs():
    line = "ImportError: /usr/lib/x86_64-linux-gnu/libfoo.so.1: undefined symbol: _ZN3foo3barEv"
    assert "torch-extension-built-for-other-torch" not in CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "message, first, absent",
    [
        (
            "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: "
            "the package flash_attn seems to be not installed.",
            "flash-attn-not-installed",
            "flash-attn-too-old",
        ),
        (
            "ValueError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: "
            "Flash Attention 2 is not available on CPU. Please make sure torch can access a CUDA device.",
            "torch-cpu-wheel",
            "flash-attn-too-old",
        ),
        (
            "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: "
            "you need flash_attn package version to be greater or equal than 2.1.0. Detected version 2.0.9.",
            "flash-attn-too-old",
            None,
        ),
    ],
)
def test_transformers_flash_attention_check_is_ranked_by_its_reason(message, first, absent):
    causes = [c.id for c in _one(message, "transformers-flash-attn-unavailable").causes]
    assert causes[0] == first
    assert absent not in causes


def test_deepspeeds_missing_toolkit_with_a_cpu_torch_is_the_torch():
    log = "torch 2.2.1+cpu\ndeepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)"
    assert _one(log, "deepspeed-cuda-home-missing").causes[0].id == "torch-cpu-wheel"


def test_deepspeeds_missing_toolkit_on_windows_gets_powershell():
    log = (
        '  File "C:\\Users\\me\\AppData\\Local\\Temp\\pip-install-1x\\deepspeed\\op_builder\\builder.py", line 50\n'
        "op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)"
    )
    explanation = _one(log, "deepspeed-cuda-home-missing")
    shells = {c.shell for c in explanation.causes[0].tell.commands}
    assert "powershell" in shells and "bash" not in shells


def test_deepspeeds_cuda_check_refuses_another_major_and_accepts_a_minor():
    refused = _one(
        "Exception: >- DeepSpeed Op Builder: Installed CUDA version 12.4 does not match the version torch was "
        "compiled with 11.8, unable to compile cuda/cpp extensions without a matching cuda version.",
        "deepspeed-cuda-mismatch",
    )
    assert (refused.variables["installed"], refused.variables["built"]) == ("12.4", "11.8")
    assert refused.harmless is False
    accepted = "Installed CUDA version 12.6 does not match the version torch was compiled with 12.4 but since the APIs are compatible, accepting this combination"
    assert_explained(accepted, "deepspeed-cuda-minor-mismatch-accepted", True, None)


def test_deepspeeds_libaio_warning_is_a_notice():
    assert_explained(
        " [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.",
        "deepspeed-async-io-no-libaio",
        True,
        None,
    )
    assert not CATALOGUE.scan_text("async_io ............... [NO] ....... [OKAY]").ids


@pytest.mark.parametrize(
    "message, first",
    [
        ("warning: not compiled with GPU offload support, --gpu-layers option will be ignored", "ggml-cpu-only-build"),
        (
            "warning: not compiled with GPU offload support, --n-gpu-layers option will be ignored",
            "ggml-cpu-only-build",
        ),
        ("warning: no usable GPU found, --gpu-layers option will be ignored", "ggml-gpu-backend-not-loaded"),
    ],
)
def test_llama_cpps_offload_warning_names_the_build_or_its_back_end(message, first):
    assert_explained(message, "ggml-no-gpu-offload", False, first)


def test_llama_cpps_other_start_up_lines_are_not_explained():
    for line in (
        "warning: see main README.md for information on enabling GPU BLAS support",
        "llm_load_tensors: offloaded 33/33 layers to GPU",
    ):
        assert not CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "log, first",
    [
        (
            'level=INFO source=gpu.go:612 msg="Unable to load cudart library /usr/lib/libcuda.so.550.54.14: cuda driver library init failure: 100"',
            "no-nvidia-gpu",
        ),
        (
            'level=DEBUG source=gpu.go:517 msg="Unable to load nvcuda" library=/usr/lib/x86_64-linux-gnu/libcuda.so.560.35.03 error="nvcuda init failure: 46"',
            "gpu-in-exclusive-use",
        ),
        (
            "$ docker logs ollama\n"
            'time=2025-01-29T10:00:00Z level=INFO source=gpu.go:612 msg="Unable to load cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.535.216.03: cuda driver library init failure: 3"',
            "container-without-gpu",
        ),
        (
            'msg="Unable to load CUDA management library /usr/lib/wsl/lib/libnvidia-ml.so.1: nvml vram init failure: 999"',
            "uvm-bad-state",
        ),
    ],
)
def test_ollamas_gpu_discovery_is_ranked_by_cuinits_code_and_the_log(log, first):
    explanation = _one(log, "ollama-gpu-init-failure")
    assert explanation.causes[0].id == first


def test_ollamas_exclusive_mode_cause_needs_its_code():
    causes = [c.id for c in _one('error="nvcuda init failure: 999"', "ollama-gpu-init-failure").causes]
    assert "gpu-in-exclusive-use" not in causes
    assert "ollama-gpu-init-failure" not in CATALOGUE.scan_text("mysql init failure: 2").ids


@pytest.mark.parametrize(
    "log, where",
    [
        (
            'failed to solve: process "/bin/sh -c pip install -r requirements.txt" did not complete successfully: exit code: 1',
            "docker-build",
        ),
        ("$ docker build -t webui .", "docker-build"),
        ("$ docker compose build webui", "docker-build"),
        ("$ docker run --gpus all -it webui", "docker"),
    ],
)
def test_an_image_build_is_told_from_a_running_container(log, where):
    assert read_context(log).get("log_container") == where


def test_vllms_free_memory_check_names_the_other_processes_first():
    message = (
        "ValueError: Free memory on device cuda:1 (7.34/15.49 GiB) on startup is less than desired GPU memory "
        "utilization (0.8, 12.39 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    )
    explanation = _one(message, "vllm-free-memory-below-utilization")
    assert explanation.causes[0].id == "other-process-holds-gpu"
    assert (explanation.variables["free"], explanation.variables["utilization"]) == ("7.34", "0.8")


def test_vllms_memory_profile_lines_and_its_kv_cache_sizing_are_not_explained():
    # the model's context against its KV cache is the model's configuration, not the GPU's setup
    for line in (
        "ValueError: The model's max seq len (40960) is larger than the maximum number of tokens that can be stored in KV cache (9008).",
        "INFO 10-01 12:00:00 gpu_executor.py:122] # GPU blocks: 1675, # CPU blocks: 2048",
        "INFO 10-01 12:00:00 worker.py:232] the current vLLM instance can use total_gpu_memory (23.64GiB) x gpu_memory_utilization (0.90) = 21.28GiB",
    ):
        assert not CATALOGUE.scan_text(line).ids


@pytest.mark.parametrize(
    "before, first",
    [("", "model-larger-than-gpu-memory"), ("torch==2.3.0+cpu\n", "torch-cpu-wheel")],
)
def test_a_quantized_model_sent_to_the_cpu_is_the_gpus_memory_or_a_torch_without_one(before, first):
    log = before + (
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit "
        "the quantized model."
    )
    assert _one(log, "transformers-quantized-modules-on-cpu").causes[0].id == first


def test_bitsandbytes_missing_binary_is_explained_for_any_cuda_and_system_and_covers_its_follow_up():
    for line in (
        "Could not find the bitsandbytes CUDA binary at PosixPath('/opt/venv/lib/python3.12/site-packages/bitsandbytes/libbitsandbytes_cuda129.so')",
        "Could not find the bitsandbytes CUDA binary at WindowsPath('D:/ai/venv/Lib/site-packages/bitsandbytes/libbitsandbytes_cuda118.dll')",
    ):
        assert_explained(line, "bitsandbytes-cuda-binary-missing", False, "bnb-release-lacks-cuda")
    log = (
        "Could not find the bitsandbytes CUDA binary at PosixPath('/x/bitsandbytes/libbitsandbytes_cuda128.so')\n"
        "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit "
        "multiplication, and GPU quantization are unavailable."
    )
    assert [e.id for e in _explain(log)] == ["bitsandbytes-cuda-binary-missing"]


@pytest.mark.parametrize("name, cc", [("Tesla P40", "6.1"), ("Quadro M4000", "5.2")])
def test_tritons_device_check_names_the_capabilities(name, cc):
    message = (
        f"torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Found {name} which is too "
        "old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports devices of "
        f"CUDA Capability >= 7.0, but your device is of CUDA capability {cc}"
    )
    explanation = _one(message, "triton-gpu-too-old")
    assert (explanation.variables["min_cc"], explanation.variables["cc"]) == ("7.0", cc)


@pytest.mark.parametrize(
    "before, first",
    [("", "no-nvidia-gpu"), ("$ docker compose logs ollama\n", "container-without-gpu")],
)
def test_ollamas_discovery_summary_is_ranked_by_where_it_ran(before, first):
    log = before + 'time=2025-04-29T20:11:09.132Z level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"'
    assert _one(log, "ollama-no-compatible-gpu").causes[0].id == first


def test_ollamas_summary_is_left_out_beside_the_init_failure_that_explains_it():
    log = (
        'level=DEBUG source=gpu.go:517 msg="Unable to load nvcuda" library=/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07 error="nvcuda init failure: 999"\n'
        'level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"'
    )
    assert [e.id for e in _explain(log)] == ["ollama-gpu-init-failure"]
    assert not CATALOGUE.scan_text('level=INFO source=gpu.go:217 msg="looking for compatible GPUs"').ids
