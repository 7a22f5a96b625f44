"""Every rule, with a snapshot that triggers it and a close one that does not.

``test_catalogue`` runs each pair and fails when a registered rule has no case here, so a new rule
cannot land without the two examples that show where its line is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from envcheck.facts import (
    ERROR,
    SKIPPED,
    CudaToolkit,
    Distribution,
    Facts,
    LibraryCopy,
    NvmlFacts,
    PlacementResult,
    TensorflowFacts,
)

from . import builders as b

V10 = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0\\bin"


def _toolkit_at(path: str) -> Facts:
    """The server without the nvidia-cuda-nvcc wheel, and a CUDA 12.2 toolkit at ``path``."""
    facts = b.with_distributions(b.server(), drop=("nvidia-cuda-nvcc-cu12",))
    return b.change(facts, {"libraries.toolkits": (CudaToolkit(path=path, version="12.2", origin="cuda-dir"),)})


def _rosetta(python_machine: str) -> Facts:
    """An Apple-silicon Mac whose Python is built for ``python_machine``."""
    facts = b.change(b.no_gpu(), {"platform.os": "macos", "platform.system": "Darwin", "platform.machine": "arm64"})
    return b.change(facts, {"python.machine": python_machine})


def _no_avx(facts: Facts) -> Facts:
    return b.change(facts, {"platform.cpu_flags": ("sse4_1", "sse4_2")})


def _sigill(facts: Facts) -> Facts:
    """TensorFlow's import killed by an illegal instruction (the probe's worker, signal 4)."""
    crashed = dataclasses.replace(
        facts.tensorflow, status=ERROR, error_kind="crashed", signal="SIGILL", returncode=-4, failed_stage="import"
    )
    return b.change(facts, {"tensorflow": crashed})


@dataclass(frozen=True)
class Case:
    rule: str
    trigger: Callable[[], Facts]
    clear: Callable[[], Facts]  # close to the trigger, and the rule must stay quiet
    about: str
    severity: Optional[str] = None  # the severity the triggering finding must have, when it varies

    @property
    def name(self) -> str:
        return f"{self.rule}: {self.about}"


def _tf_requiring(
    facts,
    numpy: str,
    requires=(
        "numpy<2.0.0,>=1.23.5",
        "protobuf>=3.20.3,<5.0.0dev",
        "nvidia-cudnn-cu12==8.9.4.25; extra == 'and-cuda'",
        "tensorflow-io-gcs-filesystem>=0.23.1; python_version < '3.12'",
        "colorama; sys_platform == 'win32'",
    ),
):
    """The server's TensorFlow with its own Requires-Dist, and a NumPy of ``numpy``."""
    dists = tuple(
        dataclasses.replace(d, requires=tuple(requires)) if d.name == "tensorflow" else d
        for d in facts.packages.distributions
        if d.name not in ("numpy", "protobuf", "tensorflow-io-gcs-filesystem")
    ) + (
        Distribution(name="numpy", version=numpy),
        Distribution(name="protobuf", version="4.25.3"),
        Distribution(name="tensorflow-io-gcs-filesystem", version="0.37.1"),
    )
    return b.change(facts, {"packages.distributions": tuple(sorted(dists, key=lambda d: d.name))})


def _pip_copy(
    name: str, reported: str, loads: bool = True, directory: str = "/venv/site-packages/nvidia/cudnn/lib"
) -> LibraryCopy:
    return LibraryCopy(
        path=f"{directory}/{name}",
        directory=directory,
        origin="pip",
        file_version=name.rsplit(".", 1)[-1],
        reported_version=reported,
        loads=loads,
        realpath=f"{directory}/{name}",
        names=(name,),
    )


def _system_copy(name: str, reported: str) -> LibraryCopy:
    d = "/usr/lib/x86_64-linux-gnu"
    return LibraryCopy(
        path=f"{d}/{name}",
        directory=d,
        origin="ldconfig",
        file_version=name.rsplit(".", 1)[-1],
        reported_version=reported,
        loads=True,
        realpath=f"{d}/{name}.{reported}",
        names=(name,),
    )


def _not_installed(facts: Facts) -> Facts:
    tf_names = ("tensorflow", "tensorflow-gpu", "tensorflow-cpu", "keras")
    facts = b.with_distributions(facts, drop=tf_names)
    return b.change(
        facts,
        {
            "tensorflow": TensorflowFacts(
                status="missing", error_kind="not_installed", error="No module named 'tensorflow'"
            )
        },
    )


def _windows_tf(version: str) -> Facts:
    """A Windows 10 machine with a GTX 1060 and the plain tensorflow wheel of ``version``."""
    facts = b.with_distributions(b.setup_post(), ("tensorflow", version), drop=("tensorflow-gpu",))
    facts = b.change(facts, {"python.version": "3.10.11", "tensorflow": TensorflowFacts(status=SKIPPED), "quick": True})
    return facts


def _gpu_build_without_cuda(distribution: str, version: str) -> Facts:
    """A machine without a GPU, a CUDA build of ``version`` and no CUDA libraries, not imported (--quick)."""
    wheels = tuple(d.name for d in b.no_gpu().packages.distributions if d.name.startswith("nvidia-"))
    facts = b.with_tf(b.with_distributions(b.quick(b.no_gpu()), drop=wheels), distribution, version)
    return b.change(
        facts, {"python.version": "3.7.9", "tensorflow": TensorflowFacts(status=SKIPPED), "libraries.libraries": ()}
    )


def _mixed_models() -> Facts:
    return b.server_gpus(b.server(), ("Tesla V100-SXM2-32GB", "7.0"), ("Tesla T4", "7.5"))


CASES: tuple[Case, ...] = (
    # --- python
    Case("EC-PY-001", lambda: b.change(b.server(), {"python.bits": 32}), b.server, "32-bit interpreter"),
    Case(
        "EC-PY-002",
        lambda: b.change(b.server(), {"python.version": "3.12.1"}),
        b.server,
        "TF 2.15 has no Python 3.12 wheels",
    ),
    Case(
        "EC-PY-002",
        lambda: b.change(_not_installed(b.no_gpu()), {"python.version": "3.14.0"}),
        lambda: b.change(_not_installed(b.no_gpu()), {"python.version": "3.13.1"}),
        "no release at all for Python 3.14",
    ),
    # --- GPU present
    Case(
        "EC-PY-003",
        lambda: b.change(b.no_gpu(), {"python.version": "2.7.18"}),
        lambda: b.change(b.no_gpu(), {"python.version": "3.6.15"}),
        "Python 2.7",
    ),
    Case("EC-GPU-001", b.no_gpu, b.server, "no NVIDIA device on the PCI bus"),
    Case(
        "EC-GPU-001",
        b.no_gpu,
        lambda: b.change(b.no_gpu(), {"pci.status": SKIPPED, "pci.error": "not Linux"}),
        "without a PCI probe absence is not established",
    ),
    Case(
        "EC-GPU-002",
        lambda: b.no_driver_linux(b.server()),
        lambda: b.no_driver_linux(b.server(), pci_driver="nvidia"),
        "card on the bus, no driver bound",
    ),
    Case(
        "EC-GPU-003",
        lambda: b.no_driver_linux(b.server(), pci_driver="nouveau"),
        lambda: b.no_driver_linux(b.server(), pci_driver="nvidia"),
        "nouveau holds the card",
    ),
    Case(
        "EC-GPU-003", lambda: b.no_driver_linux(b.server(), pci_driver="vfio-pci"), b.server, "vfio-pci holds the card"
    ),
    Case(
        "EC-GPU-004",
        lambda: b.unbound_card(b.server(), "0x1004"),  # a GeForce GTX 780 (Kepler) beside the V100s on driver 535
        lambda: b.unbound_card(b.no_driver_linux(b.server()), "0x1004"),
        "a Kepler card the loaded 535 driver does not drive (no driver loaded at all: not this rule)",
    ),
    Case(
        "EC-GPU-004",
        lambda: b.unbound_card(b.server(), "0x2b85"),  # a GeForce RTX 5090 (Blackwell, 12.0) beside the V100s on 535
        lambda: b.unbound_card(b.no_driver_linux(b.server()), "0x2b85"),
        "a card newer than the loaded 535 driver (its first CUDA, 12.8, came with 570)",
    ),
    Case(
        "EC-DRV-009",
        lambda: b.server_gpus(b.server(), ("NVIDIA GeForce RTX 5090", "12.0")),
        lambda: b.change(
            b.server_gpus(b.server(), ("NVIDIA GeForce RTX 5090", "12.0")),
            {"nvml.driver_version": "570.124.04", "driver.version": "570.124.04"},
        ),
        "an RTX 5090 listed with driver 535 (compute capability 12.0 came with CUDA 12.8 and driver 570.26)",
    ),
    Case(
        "EC-DRV-009",
        lambda: b.change(
            b.server_gpus(b.server(), ("NVIDIA GeForce RTX 5090", "12.0")),
            {"nvml.driver_version": "560.35.03", "driver.version": "560.35.03"},
        ),
        lambda: b.change(
            b.server_gpus(b.server(), ("NVIDIA GeForce RTX 4090", "8.9")),
            {"nvml.driver_version": "560.35.03", "driver.version": "560.35.03"},
        ),
        "driver 560 runs CUDA 12.2 but predates the RTX 5090 (570.26); it drives an RTX 4090 (8.9: 520.61.05)",
    ),
    # --- driver
    Case(
        "EC-DRV-001",
        lambda: b.change(b.server(), {"nvml.driver_version": "450.80.02", "driver.version": "450.80.02"}),
        b.server,
        "below the CUDA 12 floor",
        "error",
    ),
    Case(
        "EC-DRV-001",
        lambda: b.change(b.server(), {"nvml.driver_version": "530.30.02", "driver.version": "530.30.02"}),
        lambda: b.change(b.server(), {"nvml.driver_version": "535.54.03", "driver.version": "535.54.03"}),
        "above the floor, below what CUDA 12.2 asks for",
        "warning",
    ),
    Case(
        "EC-DRV-001",
        lambda: b.cuda_10_installed(b.change(b.setup_post(), {"nvml.driver_version": "399.24"})),
        lambda: b.cuda_10_installed(b.change(b.setup_post(), {"nvml.driver_version": "411.31"})),
        "CUDA 10.0 on Windows needs 411.31",
        "error",
    ),
    Case(
        "EC-DRV-002",
        lambda: b.nvml_failure(b.server(), "version_mismatch", "Driver/library version mismatch"),
        b.server,
        "driver upgraded without reboot",
    ),
    Case(
        "EC-DRV-002",
        lambda: b.change(b.server(), {"driver.version": "535.104.05"}),
        b.server,
        "kernel module and NVML report different versions",
    ),
    Case(
        "EC-DRV-002",
        lambda: b.change(b.server(), {"driver.version": "535.104.05", "driver.module_file_version": "535.104.05"}),
        lambda: b.change(b.server(), {"driver.module_file_version": "535.129.03"}),
        "installed at different versions: no reboot helps",
    ),
    Case(
        "EC-DRV-003",
        lambda: b.change(
            b.server(),
            {
                "nvml": NvmlFacts(
                    status="missing", error_kind="library_not_found", error="NVML Shared Library Not Found"
                )
            },
        ),
        b.no_gpu,
        "kernel module loaded, user-space library missing (no GPU: nothing to say)",
    ),
    Case(
        "EC-DRV-004",
        lambda: b.nvml_failure(b.server(), "driver_not_loaded", "Driver Not Loaded"),
        b.server,
        "module not loaded",
    ),
    Case(
        "EC-DRV-004",
        lambda: b.change(
            b.no_driver_linux(b.server()),
            {"driver.module_files": ("/lib/modules/6.5.0-21-generic/updates/dkms/nvidia.ko",)},
        ),
        lambda: b.no_driver_linux(b.server()),
        "module on disk, not loaded, no NVML library",
    ),
    Case(
        "EC-DRV-004",
        lambda: b.change(
            b.no_driver_linux(b.server()),
            {"driver.kernel_release": "6.8.0-31-generic", "driver.dkms": ("550.54.14/6.5.0-21-generic",)},
        ),
        lambda: b.no_driver_linux(b.server()),
        "built by DKMS for the old kernel only",
    ),
    Case(
        "EC-DRV-005",
        lambda: b.gpu_failure(b.server(), 1, "no_permission", "Insufficient Permissions"),
        b.server,
        "one GPU not accessible",
    ),
    Case(
        "EC-DRV-006",
        lambda: b.gpu_failure(b.server(), 2, "gpu_lost", "GPU is lost"),
        b.server,
        "a GPU fell off the bus",
    ),
    Case(
        "EC-DRV-007",
        lambda: b.gpu_failure(b.server(), 0, "function_not_found", "Function Not Found"),
        lambda: b.gpu_failure(b.server(), 0, "gpu_lost", "GPU is lost"),
        "old driver lacks an NVML call",
    ),
    Case(
        "EC-DRV-008",
        lambda: b.nvml_failure(b.server(), "unknown", "Unknown Error"),
        lambda: b.nvml_failure(b.server(), "driver_not_loaded", "Driver Not Loaded"),
        "unknown NVML error",
    ),
    # --- compute capability
    Case(
        "EC-CC-001",
        lambda: b.server_gpus(b.server(), ("GeForce GTX 780", "3.5")),
        lambda: b.server_gpus(b.server(), ("GeForce GTX 980", "5.2")),
        "Kepler card, TF 2.15 starts at sm_50",
    ),
    Case(
        "EC-CC-003",
        lambda: b.change(
            b.server_gpus(b.server(), ("Tesla K40m", "3.5")),
            {"nvml.driver_version": "470.256.02", "driver.version": "470.256.02"},
        ),
        lambda: b.change(
            b.server_gpus(b.server(), ("Tesla T4", "7.5")),
            {"nvml.driver_version": "470.256.02", "driver.version": "470.256.02"},
        ),
        "Kepler past its last branch; a Turing card can get a newer driver",
    ),
    Case(
        "EC-CC-002",
        lambda: b.server_gpus(b.server(), ("NVIDIA GeForce RTX 3090", "8.6")),
        lambda: b.server_gpus(b.server(), ("NVIDIA GeForce RTX 2080 Ti", "7.5")),
        "Ampere card, TF 2.15 has only compute_80 PTX",
    ),
    Case(
        "EC-CC-004",
        lambda: b.change(
            b.server_gpus(b.server(), ("NVIDIA GeForce RTX 3090", "8.6")),
            {"nvml.driver_version": "530.30.02", "driver.version": "530.30.02"},
        ),
        lambda: b.server_gpus(b.server(), ("NVIDIA GeForce RTX 3090", "8.6")),
        "compute_80 PTX only, driver 530 above CUDA 12's floor but below 12.2's own 535.54.03",
    ),
    # --- libraries
    Case("EC-LIB-001", b.setup_post, lambda: b.cuda_10_installed(b.setup_post()), "cudart64_100.dll missing"),
    Case(
        "EC-LIB-001",
        lambda: b.with_distributions(
            b.library_copies(b.quick(b.server()), "cudart"), drop=("nvidia-cuda-runtime-cu12",)
        ),
        lambda: b.quick(b.server()),
        "libcudart.so.12 not found on Linux (and no wheel that should carry it)",
    ),
    Case(
        "EC-LIB-002",
        lambda: b.library_copies(b.cuda_10_installed(b.setup_post()), "cudnn"),
        lambda: b.cuda_10_installed(b.setup_post()),
        "cudnn64_7.dll missing",
    ),
    Case(
        "EC-LIB-002",
        lambda: b.library_copies(b.quick(b.server()), "cudnn", _pip_copy("libcudnn.so.8", "8.6.0")),
        lambda: b.library_copies(b.quick(b.server()), "cudnn", _pip_copy("libcudnn.so.8", "8.9.4")),
        "cuDNN 8.6 older than the build's 8.9",
    ),
    Case(
        "EC-LIB-002",
        b.setup_post,
        lambda: b.cuda_10_installed(b.setup_post()),
        "cudnn64_7.dll only in the CUDA 9.0 folder",
    ),
    Case(
        "EC-LIB-003",
        b.setup_post,
        lambda: b.library_copies(b.setup_post(), "cudart"),
        "CUDA 9.0 runtime instead of 10.0",
    ),
    Case(
        "EC-LIB-004",
        lambda: b.library_copies(
            b.quick(b.server()), "cudnn", _system_copy("libcudnn.so.8", "8.0.5"), _pip_copy("libcudnn.so.8", "8.9.4")
        ),
        lambda: b.library_copies(
            b.quick(b.server()), "cudnn", _pip_copy("libcudnn.so.8", "8.9.4"), _system_copy("libcudnn.so.8", "8.0.5")
        ),
        "old system cuDNN earlier on the path than the pip one",
        "error",
    ),
    Case(
        "EC-LIB-005",
        b.no_gpu,
        lambda: b.change(
            b.no_gpu(), {"libraries.toolkits": (dataclasses.replace(b.no_gpu().libraries.toolkits[0], version="12.4"),)}
        ),
        "CUDA 13 toolkit, TF built for 12.5",
        "info",
    ),
    Case(
        "EC-LIB-005",
        b.setup_post,
        lambda: b.change(
            b.setup_post(),
            {"libraries.toolkits": (dataclasses.replace(b.setup_post().libraries.toolkits[0], version="10.0"),)},
        ),
        "CUDA 9.0 toolkit, TF 1.13 wants 10.0",
        "warning",
    ),
    Case(
        "EC-LIB-006",
        lambda: b.library_copies(b.quick(b.server()), "cudnn", _pip_copy("libcudnn.so.8", "8.9.4", loads=False)),
        lambda: b.library_copies(b.quick(b.server()), "cudnn", _pip_copy("libcudnn.so.8", "8.9.4")),
        "the cuDNN wheel's library fails to load",
        "error",
    ),
    Case(
        "EC-LIB-006",
        lambda: b.library_copies(b.quick(b.server()), "cudart"),
        lambda: b.with_distributions(
            b.library_copies(b.quick(b.server()), "cudart"), drop=("nvidia-cuda-runtime-cu12",)
        ),
        "the runtime wheel is installed but its library is not found",
        "error",
    ),
    Case(
        "EC-LIB-007",
        lambda: b.with_distributions(b.server(), ("nvidia-cudnn-cu12", "9.1.0.70")),
        b.server,
        "cuDNN wheel outside TF 2.15.1's pin",
    ),
    Case(
        "EC-LIB-009",
        lambda: _toolkit_at("/opt/cuda-12.2"),
        lambda: _toolkit_at("/usr/local/cuda-12.2"),
        "toolkit outside /usr/local/cuda, no nvcc wheel",
    ),
    Case(
        "EC-LIB-009",
        lambda: b.with_tf(b.server(), "tensorflow", "2.12.0"),
        lambda: b.with_env(
            b.with_tf(b.server(), "tensorflow", "2.12.0"),
            XLA_FLAGS="--xla_gpu_cuda_data_dir=/home/ml/venvs/train/lib/python3.11/site-packages/nvidia/cuda_nvcc",
        ),
        "nvcc wheel under a TensorFlow before [and-cuda]",
    ),
    Case(
        "EC-LIB-008",
        lambda: b.cuda_10_installed(b.setup_post(), without=("cublas64_100.dll",)),
        lambda: b.cuda_10_installed(b.setup_post()),
        "cublas64_100.dll missing",
    ),
    # --- TensorFlow
    Case(
        "EC-TF-010",
        lambda: _tf_requiring(b.server(), "2.1.3"),
        lambda: _tf_requiring(b.server(), "1.26.4"),
        "NumPy 2 under a TensorFlow built for NumPy 1",
    ),
    Case("EC-TF-001", lambda: _not_installed(b.no_gpu()), b.no_gpu, "nothing installed"),
    Case(
        "EC-TF-002",
        lambda: b.with_distributions(b.server(), ("tensorflow-cpu", "2.15.1")),
        b.server,
        "tensorflow and tensorflow-cpu together",
    ),
    Case(
        "EC-TF-002",
        lambda: b.with_distributions(_windows_tf("2.10.1"), ("tensorflow-gpu", "2.10.1")),
        lambda: b.change(
            b.with_distributions(_windows_tf("2.15.1"), ("tensorflow-intel", "2.15.1")),
            {
                "packages.distributions": tuple(
                    dataclasses.replace(d, requires=('tensorflow-intel==2.15.1; platform_system == "Windows"',))
                    if d.name == "tensorflow"
                    else d
                    for d in b.with_distributions(
                        _windows_tf("2.15.1"), ("tensorflow-intel", "2.15.1")
                    ).packages.distributions
                )
            },
        ),
        "tensorflow-intel is a dependency of tensorflow, not a second install",
    ),
    Case(
        "EC-TF-002",
        lambda: b.with_distributions(_windows_tf("2.15.1"), ("tensorflow-intel", "2.14.0")),
        lambda: b.with_distributions(_windows_tf("2.15.1"), ("tensorflow-intel", "2.15.1")),
        "a snapshot without the requirements: tensorflow-intel of another release is a second install, of the "
        "same release the stub's own",
    ),
    Case(
        "EC-TF-003",
        lambda: b.with_distributions(b.no_gpu(), ("tensorflow-gpu", "2.12.0")),
        lambda: b.with_distributions(b.no_gpu(), ("tensorflow-gpu", "2.11.0")),
        "tensorflow-gpu 2.12 placeholder",
    ),
    Case("EC-TF-004", lambda: _windows_tf("2.15.1"), lambda: _windows_tf("2.10.1"), "native Windows after 2.10"),
    Case(
        "EC-TF-005",
        lambda: b.with_tf(b.server(), "tensorflow-cpu", "2.15.1", is_cuda_build=False),
        lambda: b.with_tf(b.no_gpu(), "tensorflow-cpu", "2.21.0", is_cuda_build=False),
        "CPU-only build with four GPUs (without a GPU it is the right build)",
    ),
    Case(
        "EC-TF-005",
        lambda: b.with_distributions(
            b.cuda_10_installed(b.setup_post()), ("tensorflow", "1.13.1"), drop=("tensorflow-gpu",)
        ),
        lambda: b.cuda_10_installed(b.setup_post()),
        "1.x tensorflow (CPU) instead of tensorflow-gpu",
    ),
    Case(
        "EC-TF-006",
        b.setup_post,
        lambda: b.change(b.setup_post(), {"tensorflow": TensorflowFacts(status=SKIPPED)}),
        "import fails",
    ),
    Case(
        "EC-TF-007",
        lambda: b.change(
            b.server(),
            {
                "tensorflow": TensorflowFacts(
                    status=ERROR,
                    error_kind="crashed",
                    signal="SIGSEGV",
                    returncode=-11,
                    failed_stage="devices",
                    error="worker killed by SIGSEGV",
                )
            },
        ),
        lambda: b.change(
            b.server(),
            {"tensorflow": TensorflowFacts(status=ERROR, error_kind="import_failed", error="ImportError: boom")},
        ),
        "worker crashed",
    ),
    Case(
        "EC-TF-007",
        lambda: b.change(
            b.server(),
            {
                "tensorflow": TensorflowFacts(
                    status=ERROR, error_kind="timeout", failed_stage="placement", error="no answer within 60 s"
                )
            },
        ),
        b.server,
        "worker timed out",
    ),
    Case("EC-TF-008", lambda: b.with_tf(b.server(), "tensorflow", "2.99.0"), b.server, "release newer than the matrix"),
    Case(
        "EC-TF-012",
        lambda: _sigill(_no_avx(b.server())),
        lambda: _sigill(b.server()),
        "a CPU without AVX, the import killed by SIGILL",
    ),
    Case(
        "EC-TF-012",
        lambda: _no_avx(_not_installed(b.no_gpu())),
        lambda: _no_avx(b.no_gpu()),  # TensorFlow imported and ran on it: a build without AVX
        "a CPU without AVX before TensorFlow is installed",
    ),
    Case(
        "EC-TF-012",
        lambda: _sigill(_no_avx(b.with_tf(b.server(), "tensorflow-gpu", "1.6.0"))),
        lambda: _sigill(_no_avx(b.with_tf(b.server(), "tensorflow-gpu", "1.5.1"))),  # built without AVX
        "the first release whose wheels need AVX",
    ),
    Case(
        "EC-TF-012",
        lambda: _not_installed(_rosetta("x86_64")),
        lambda: _not_installed(_rosetta("arm64")),
        "x86_64 Python under Rosetta",
    ),
    Case(
        "EC-TF-009",
        lambda: b.change(b.no_gpu(), {"platform.os": "macos", "platform.system": "Darwin"}),
        b.no_gpu,
        "macOS",
    ),
    # --- placement
    Case(
        "EC-PLC-001",
        lambda: b.tf_sees_no_gpu(
            b.server(),
            "W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'",
            "W gpu_device.cc:2211] Cannot dlopen some GPU libraries.",
        ),
        lambda: b.tf_sees_no_gpu(b.no_gpu(), "E cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)"),
        "GPU, driver and libraries there, TF lists no GPU (no GPU at all: not this rule)",
    ),
    Case(
        "EC-PLC-002",
        lambda: b.change(
            b.server(),
            {
                "tensorflow.placement": (
                    PlacementResult(
                        op="matmul", requested="/GPU:0", device="/job:localhost/replica:0/task:0/device:CPU:0", ok=True
                    ),
                )
            },
        ),
        lambda: b.change(
            b.no_gpu(),
            {
                "tensorflow.placement": (
                    PlacementResult(
                        op="matmul", requested="/CPU:0", device="/job:localhost/replica:0/task:0/device:CPU:0", ok=True
                    ),
                )
            },
        ),
        "asked for GPU:0, ran on the CPU",
    ),
    Case(
        "EC-PLC-003",
        lambda: b.change(
            b.server(),
            {
                "tensorflow.placement": (
                    PlacementResult(
                        op="matmul", requested="/GPU:0", device="/job:localhost/replica:0/task:0/device:GPU:0", ok=True
                    ),
                    PlacementResult(
                        op="conv2d",
                        requested="/GPU:0",
                        device=None,
                        ok=False,
                        error="UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize",
                    ),
                )
            },
        ),
        lambda: b.change(
            b.server(),
            {
                "tensorflow.placement": (
                    PlacementResult(
                        op="matmul",
                        requested="/GPU:0",
                        device=None,
                        ok=False,
                        error="InternalError: CUDA runtime implicit initialization failed",
                    ),
                    PlacementResult(
                        op="conv2d",
                        requested="/GPU:0",
                        device=None,
                        ok=False,
                        error="InternalError: CUDA runtime implicit initialization failed",
                    ),
                )
            },
        ),
        "convolution fails where the matmul passed",
    ),
    Case(
        "EC-PLC-004",
        lambda: b.change(b.server(), {"tensorflow.physical_devices": b.server().tensorflow.physical_devices[:4]}),
        lambda: b.with_env(
            b.change(b.server(), {"tensorflow.physical_devices": b.server().tensorflow.physical_devices[:3]}),
            CUDA_VISIBLE_DEVICES="0,1",
        ),
        "3 of 4 GPUs listed (2 of 2 visible is fine)",
    ),
    Case(
        "EC-TF-011",
        lambda: _gpu_build_without_cuda("tensorflow-gpu", "1.13.1"),
        lambda: _gpu_build_without_cuda("tensorflow", "2.4.4"),
        "tensorflow-gpu 1.13 links CUDA 10.0 at import; 2.4 loads CUDA only for a GPU",
    ),
    Case(
        "EC-PLC-005",
        lambda: b.failing_ops(b.server(), ("/GPU:2",), b.BUSY),
        lambda: b.failing_ops(b.server(), ("/GPU:2",), "CUDNN_STATUS_EXECUTION_FAILED", ops=("conv2d",)),
        "GPU 2 busy (exclusive-process); only its convolution failing is EC-PLC-003",
    ),
    Case(
        "EC-PLC-005",
        lambda: b.failing_ops(
            b.server(), tuple(f"/GPU:{i}" for i in range(4)), "InternalError: Blas GEMM launch failed"
        ),
        b.server,
        "the matmul fails on every GPU",
    ),
    # --- environment
    Case(
        "EC-ENV-001",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0;1"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,1"),
        "semicolon instead of comma: CUDA reads '0;1' as GPU 0",
        "warning",
    ),
    Case(
        "EC-ENV-001",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,1,-1,3"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,1,3"),
        "a negative entry hides the GPUs after it",
        "warning",
    ),
    Case(
        "EC-ENV-001",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="gpu0"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0"),
        "not a number first: no GPU",
        "error",
    ),
    Case(
        "EC-ENV-001",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,1,gpu2"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES=" 0, 1"),
        "bad entry after good ones",
        "warning",
    ),
    Case(
        "EC-ENV-002",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="4"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="3"),
        "index 4 on a 4-GPU machine",
        "error",
    ),
    Case(
        "EC-ENV-002",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="GPU-deadbeef"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="GPU-0c1f8a1e"),
        "unknown UUID",
    ),
    Case(
        "EC-ENV-003",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES=""),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0"),
        "empty: every GPU hidden, on purpose (CPU only, said as such)",
        "warning",
    ),
    Case(
        "EC-ENV-003",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="-1"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,-1"),
        "-1 first hides all; after an index it only ends the list",
    ),
    Case(
        "EC-ENV-008",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,1,2,1"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="0,1,2"),
        "GPU 1 named twice: CUDA shows none",
        "error",
    ),
    Case(
        "EC-ENV-008",
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="GPU-0c1f8a1e,GPU-0c1f8a1"),
        lambda: b.with_env(b.server(), CUDA_VISIBLE_DEVICES="GPU-0c1f8a1e"),
        "one GPU by two UUID prefixes",
    ),
    Case(
        "EC-ENV-004",
        _mixed_models,
        lambda: b.with_env(_mixed_models(), CUDA_DEVICE_ORDER="PCI_BUS_ID"),
        "V100 and T4, default fastest-first order",
    ),
    Case(
        "EC-ENV-005",
        lambda: b.busy_gpu(b.server(), 30000),
        lambda: b.busy_gpu(b.server(), 12000),
        "30 of 32 GB taken by another process",
    ),
    Case(
        "EC-ENV-009",
        lambda: b.busy_gpu(b.server(), 2000),
        lambda: b.with_env(b.busy_gpu(b.server(), 2000), TF_FORCE_GPU_ALLOW_GROWTH="true"),
        "another process on GPU 0, growth unset",
    ),
    Case(
        "EC-ENV-009",
        lambda: b.busy_gpu(b.server(), 2000),
        lambda: b.busy_gpu(b.server(), 30000),
        "most of the memory taken is EC-ENV-005's",
    ),
    Case(
        "EC-ENV-009",
        lambda: b.busy_gpu(b.server(), 2000),
        lambda: b.change(b.busy_gpu(b.server(), 2000), {"tensorflow.is_cuda_build": False}),
        "a CPU-only TensorFlow reserves no GPU memory",
    ),
    Case(
        "EC-ENV-006",
        lambda: b.with_env(b.server(), TF_FORCE_GPU_ALLOW_GROWTH="1"),
        lambda: b.with_env(b.server(), TF_FORCE_GPU_ALLOW_GROWTH="true"),
        "1 is not true",
    ),
    Case(
        "EC-ENV-007",
        lambda: b.with_env(b.server(), TF_CPP_MIN_LOG_LEVEL="3"),
        lambda: b.with_env(b.server(), TF_CPP_MIN_LOG_LEVEL="1"),
        "level 3 hides errors",
    ),
)

# The Multi-GPU rules' cases live beside their own tests.
from .speed_cases import speed_cases  # noqa: E402

CASES += speed_cases(Case)
