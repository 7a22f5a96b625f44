"""The GPU a log names where a program prints its device is looked up in the matrix's GPU table:
its compute capability drives the ranking as a printed one does. A name in prose, a path or a
tensor's name is no device and is not read."""

from __future__ import annotations

import re

import pytest

from envcheck.explain import explain, gpu_names, load_patterns
from envcheck.explain.context import read_context
from envcheck.matrix import load_matrix

CATALOGUE = load_patterns()
MATRIX = load_matrix()


# every product name and alias the matrix holds, with the capability of its group; pci.ids'
# renderings with a comma ("GeForce GT 730 DDR3,128bit") are no name a program prints
PRODUCTS = sorted(
    {
        (name, str(gpu.compute_capability))
        for gpu in MATRIX.gpus()
        for name in (gpu.name, *gpu.aliases)
        if "," not in name
    }
)
# a name two products share (the GT 640 was made as Fermi and as Kepler, the TITAN X as Maxwell and
# Pascal; the matrix tells them apart in brackets) names no capability where no product has it alone
AMBIGUOUS = {name.split(" (")[0] for name, _cc in PRODUCTS if " (" in name} - {name for name, _cc in PRODUCTS}
AMBIGUOUS = {name for name in AMBIGUOUS if MATRIX.gpu(name) is None}
NAMED = [(name, cc) for name, cc in PRODUCTS if name not in AMBIGUOUS]


def _device_lines(name: str) -> dict[str, str]:
    """The lines programs print for a device of this name, none with its capability."""
    return {
        "tensorflow": f"(device: 0, name: {name}, pci bus id: 0000:01:00.0)",
        "tensorflow-1": f"Found device 0 with properties:\nname: NVIDIA {name}\n",
        "nvidia-smi": f"|   0  {name:<24}  Off  | 00000000:01:00.0  On |                  N/A |",
        "nvidia-smi -L": f"GPU 0: {name} (UUID: GPU-5f1d2c3b-0000-1111-2222-333344445555)",
        "pytorch": f"Found GPU0 {name} which requires CUDA_VERSION >= 9000 to work properly",
        "collect_env": f"GPU models and configuration: GPU 0: {name}",
        "nvidia-smi -q": f"    Product Name                          : {name}",
    }


def test_the_table_is_read_whole():
    assert len(NAMED) > 300 and AMBIGUOUS == {"GeForce GT 640", "TITAN X"}


@pytest.mark.parametrize("name, capability", NAMED)
def test_every_product_in_a_device_line_gives_its_capability(name, capability):
    for kind, line in _device_lines(name).items():
        assert read_context(line).get("log_gpu_cc") == capability, (kind, line)


# a GeForce RTX of a series ("RTX 3090") is read wherever the log names it (context.py's series
# rule, from before names were looked up): no other thing is called that
PROSE_SERIES = re.compile(r"\bRTX \d0[5-9]0\b")


@pytest.mark.parametrize("name, capability", [(n, c) for n, c in NAMED if not PROSE_SERIES.search(n)])
def test_no_product_is_read_outside_a_device_line(name, capability):
    for line in (
        f"Saved checkpoint to /data/runs/{name.replace(' ', '_')}/model.ckpt",
        f"Compared with the {name}, my card is slower.",
        f"tensor 'bert/{name}/kernel:0' has shape [768, 768]",
        f"name: {name.replace(' ', '_')}_block1",
        f"loading /models/{name}/weights.pt",
    ):
        assert "log_gpu_cc" not in read_context(line), line


@pytest.mark.parametrize("name", sorted(AMBIGUOUS))
def test_a_name_two_architectures_share_gives_none(name):
    assert "log_gpu_cc" not in read_context(_device_lines(name)["nvidia-smi"])


@pytest.mark.parametrize(
    "line, product, capability",
    [
        # (lines cut before the capability a program prints after the name)
        # nvidia-smi's table in its older and newer layouts, Windows' driver model column, a cut name
        ("|   0  Tesla K80           On   | 0000:00:1E.0     Off |                    0 |", "Tesla K80", "3.7"),
        ("|   0  NVIDIA A100-SXM4-40GB          On  |   00000000:07:00.0 Off |                    0 |", "A100", "8.0"),
        (
            "|   0  NVIDIA GeForce GTX 1650  WDDM  | 00000000:01:00.0 Off |                  N/A |",
            "GeForce GTX 1650",
            "7.5",
        ),
        ("|   0  NVIDIA A100-PCI...  Off  | 00000000:AF:00.0 Off |                    0 |", "A100", "8.0"),
        ("|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    0 |", "Tesla V100", "7.0"),
        (
            "|   0  GeForce RTX 208...  Off  | 00000000:01:00.0  On |                  N/A |",
            "GeForce RTX 208...",
            "7.5",
        ),
        # laptop parts, Max-Q, boards, the kernel module, lspci by name and by PCI id
        (
            "(device: 0, name: NVIDIA GeForce RTX 3050 Ti Laptop GPU, pci bus id: 0000:01:00.0",
            "GeForce RTX 3050 Ti Laptop GPU",
            "8.6",
        ),
        ("GPU 0: NVIDIA GeForce GTX 1060 with Max-Q Design (UUID: GPU-1)", "GeForce GTX 1060", "6.1"),
        ("NVIDIA Jetson Nano Developer Kit", "Jetson Nano", "5.3"),
        ("  - Model: NVIDIA Jetson AGX Orin Developer Kit - Jetpack 5.1.1", "Jetson AGX Orin", "8.7"),
        ("[   20.40] NVRM: The NVIDIA GeForce GT 730 GPU installed in this system is", "GeForce GT 730", "3.5"),
        ("01:00.0 3D controller: NVIDIA Corporation GK210GL [Tesla K80] (rev a1)", "Tesla K80", "3.7"),
        (
            "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation Device [10de:1c03] (rev a1)",
            "GeForce GTX 1060",
            "6.1",
        ),
        # what a program or the bug form prints about its device
        (">>> torch.cuda.get_device_name(0)\n'Tesla K40c'", "Tesla K40", "3.5"),
        ("In [3]: torch.cuda.get_device_name(0)\nOut[3]: 'NVIDIA A10G'", "A10G", "8.6"),
        ("{'device_name': 'NVIDIA GeForce RTX 3060', 'x': 1}", "GeForce RTX 3060", "8.6"),
        ("- GPU model and memory: Tesla K80, 12 GB", "Tesla K80", "3.7"),
        ("[INFO] Device: Tesla V100-SXM3-32GB ", "Tesla V100", "7.0"),
        ("GPU: NVIDIA TITAN X (Pascal)", "TITAN X (Pascal)", "6.1"),
        ("The active GPU is [0]: Tesla K80\tfree:11270M, used:170M, total:11441M", "Tesla K80", "3.7"),
        (
            "I xla/service/service.cc:176]   StreamExecutor device (0): Quadro M1200, Compute Capability",
            "Quadro M1200",
            "5.0",
        ),
    ],
)
def test_device_lines_of_each_program(line, product, capability):
    context = read_context(line)
    assert (context.get("log_gpu_name"), context.get("log_gpu_cc")) == (product, capability)


@pytest.mark.parametrize(
    "line",
    [
        "|   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0  On |                  N/A |",  # cut too short
        "name: A10",  # a config's key, not TensorFlow's device line
        "Device: cuda:0",
        "GPU 0: out of memory",
        "The GPU T4 in our cluster is busy",
        "model_name: A100-finetune",
        "| 0 | T4 | 7.5 |",
    ],
)
def test_lines_that_name_no_device_give_none(line):
    assert "log_gpu_cc" not in read_context(line)


@pytest.mark.parametrize(
    "line, capability",
    [
        ("Found GPU0 Quadro K2200 which is of cuda capability 3.0.", "3.0"),  # PyTorch's figure, not the table's
        ("NVIDIA A100-SXM4-40GB with CUDA capability sm_80 is not compatible", "8.0"),
        ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible", "12.0"),
        ("_CudaDeviceProperties(name='GeForce GT 740', major=3, minor=0, total_memory=1991MB)", "3.0"),
        ("{'compute_capability': (8, 6), 'device_name': 'NVIDIA GeForce RTX 3060'}", "8.6"),
    ],
)
def test_a_printed_capability_wins_over_the_name(line, capability):
    context = read_context(line)
    assert context["log_gpu_cc"] == capability and "log_gpu_name" not in context


def test_the_last_device_named_counts():
    log = "GPU models and configuration:\nGPU 0: Quadro P400\nGPU 1: Quadro RTX 5000\n"
    assert read_context(log)["log_gpu_cc"] == "7.5"


def test_the_matrix_is_looked_up_only_for_a_named_device(monkeypatch):
    def fail():
        raise AssertionError("the matrix was loaded")

    monkeypatch.setattr(gpu_names, "_matrix", fail)
    gpu_names._lookup.cache_clear()
    try:
        read_context("Epoch 1/10\nloss: 0.25\n|   0  |\nname: resnet\n")
        read_context("(device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5)")
    finally:
        gpu_names._lookup.cache_clear()


def test_a_named_gpu_newer_than_the_logs_cuda_ranks_the_missing_architecture_first():
    log = (
        "CUDA used to build PyTorch: 10.2\n"
        "GPU models and configuration: GPU 0: A100-SXM4-40GB\n"
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\n"
    )
    context = read_context(log)
    assert context["log_cuda"] == "10.2" and context["log_gpu_newer_than_cuda"] == "yes"
    (found,) = explain(CATALOGUE.scan_text(log))
    assert found.causes[0].id == "release-lacks-arch"
    # the same GPU with a CUDA that builds for it: the usual order stays
    (other,) = explain(CATALOGUE.scan_text(log.replace("10.2", "11.1")))
    assert other.causes[0].id != "release-lacks-arch"


def test_a_named_gpu_of_compute_capability_5_or_more_puts_an_old_gpu_last_for_cublas_arch_mismatch():
    error = "RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx( handle, opa, opb)`"
    (newer,) = explain(CATALOGUE.scan_text("|   0  Tesla T4            Off  | 00000000:00:04.0 Off |   0 |\n" + error))
    (older,) = explain(CATALOGUE.scan_text("|   0  Tesla K80           Off  | 00000000:00:04.0 Off |   0 |\n" + error))
    assert newer.causes[0].id == "dtype-needs-newer-gpu" and older.causes[0].id == "compute-capability-too-low"


HF_BF16 = "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0"


@pytest.mark.parametrize(
    "log, first",
    [
        # the GPU the log names decides: below 8.0 it has no bfloat16, at 8.0 or above the torch build is the cause
        (HF_BF16, "dtype-needs-newer-gpu"),
        ("GPU 0: Tesla T4 (UUID: GPU-1)\n" + HF_BF16, "dtype-needs-newer-gpu"),
        ("|   0  NVIDIA A100-SXM4-40GB          On  | 00000000:07:00.0 Off |   0 |\n" + HF_BF16, "torch-cpu-wheel"),
        ("GPU 0: NVIDIA A10G (UUID: GPU-1)\nCUDA used to build PyTorch: 10.2\n" + HF_BF16, "torch-cuda-build-too-old"),
        ("torch 2.1.0+cpu\n" + HF_BF16, "torch-cpu-wheel"),
        (
            HF_BF16.replace("You need torch>=1.10, using Ampere GPU with cuda>=11.0", "You need to assign use_cpu"),
            "torch-cpu-wheel",
        ),
    ],
)
def test_transformers_bf16_check_is_ranked_by_the_gpu_and_torch_the_log_shows(log, first):
    (found,) = explain(CATALOGUE.scan_text(log))
    assert found.id == "bf16-needs-ampere" and found.causes[0].id == first


@pytest.mark.parametrize(
    "name, capability", [("Tesla T4", "7.5"), ("Tesla V100-SXM2-32GB", "7.0"), ("Quadro RTX 6000", "7.5")]
)
def test_vllm_bf16_check_names_the_gpu_and_its_capability(name, capability):
    line = (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
        f"Your {name} GPU has compute capability {capability}."
    )
    (found,) = explain(CATALOGUE.scan_text(line))
    assert [c.id for c in found.causes] == ["dtype-needs-newer-gpu"]
    assert found.variables["log_gpu_cc"] == capability


def test_pytorch_autocast_bf16_check_ran_on_cuda_so_a_cpu_build_is_no_cause():
    line = "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16."
    (found,) = explain(CATALOGUE.scan_text(line))
    assert found.causes[0].id == "dtype-needs-newer-gpu"
    assert "torch-cpu-wheel" not in [c.id for c in found.causes]
    (on_ampere,) = explain(CATALOGUE.scan_text("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n" + line))
    assert on_ampere.causes[0].id == "torch-cuda-build-too-old"
