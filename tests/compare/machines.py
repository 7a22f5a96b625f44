"""The machines the comparison tests replay, built from the rule tests' snapshots."""

from __future__ import annotations

import dataclasses
import json

from rules import builders as b

from envcheck.facts import (
    Facts,
    LibraryCopy,
    PlacementResult,
    TfDevice,
    facts_from_dict,
    to_dict,
)

V9 = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v9.0"
V10 = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0"


def setup_guide_before() -> Facts:
    """The setup guide's Windows 10 machine: tensorflow-gpu 1.13.1 with CUDA 9.0 installed."""
    return b.setup_post()


def setup_guide_after() -> Facts:
    """The same machine after the guide's fix: CUDA 10.0 and cuDNN 7.4 installed and on PATH, and
    TensorFlow then imports and runs on the GTX 1060."""
    before = b.setup_post()
    facts = b.cuda_10_installed(before)
    path = ";".join([f"{V10}\\bin", f"{V10}\\libnvvp", before.env.variables["PATH"]])
    facts = b.with_env(facts, PATH=path, CUDA_PATH=V10, CUDA_PATH_V10_0=V10)
    tf = dataclasses.replace(
        before.tensorflow,
        status="ok",
        error=None,
        error_kind=None,
        failed_stage=None,
        returncode=0,
        version="1.13.1",
        is_cuda_build=True,
        cuda_version="10.0",
        cudnn_version="7",
        import_seconds=4.2,
        physical_devices=(
            TfDevice(name="/physical_device:CPU:0", device_type="CPU"),
            TfDevice(name="/physical_device:GPU:0", device_type="GPU"),
        ),
        placement=tuple(
            PlacementResult(
                op=op, requested="/GPU:0", device="/job:localhost/replica:0/task:0/device:GPU:0", ok=True, seconds=0.4
            )
            for op in ("matmul", "conv2d")
        ),
    )
    return b.change(facts, {"quick": False, "tensorflow": tf, "created": "2019-03-02T09:00:00+00:00"})


OLD_CUDNN = "/usr/local/cuda-11.0/lib64"


def linux_clean() -> Facts:
    """The 4x V100 server with its pip CUDA wheels (--quick), nothing on LD_LIBRARY_PATH."""
    return b.quick(b.server())


def linux_with_ld_library_path() -> Facts:
    """The same server, but LD_LIBRARY_PATH names an old CUDA 11.0 folder whose cuDNN 8.0.5 comes
    before the pip wheel's 8.9.4: the only difference between the two machines."""
    facts = b.with_env(linux_clean(), LD_LIBRARY_PATH=OLD_CUDNN)
    libraries = []
    for lib in facts.libraries.libraries:
        if lib.family == "cudnn":
            stale = LibraryCopy(
                path=f"{OLD_CUDNN}/libcudnn.so.8",
                directory=OLD_CUDNN,
                origin="LD_LIBRARY_PATH",
                file_version="8",
                reported_version="8.0.5",
                loads=True,
                realpath=f"{OLD_CUDNN}/libcudnn.so.8.0.5",
                names=("libcudnn.so.8",),
            )
            lib = dataclasses.replace(
                lib, copies=(stale, *lib.copies), winner=stale.path, winners={"libcudnn.so.8": stale.path}
            )
        libraries.append(lib)
    search = (OLD_CUDNN, *facts.libraries.search_path)
    return b.change(facts, {"libraries.libraries": tuple(libraries), "libraries.search_path": search})


def elsewhere(
    facts: Facts, host: str, user: str = "ml", created: str = "2026-11-30T12:00:00+00:00", seed: int = 1
) -> Facts:
    """The same machine under another name: host, user (and so home), GPU UUIDs and serials, when it
    was taken and how long each probe took; everything a comparison must not count."""
    home = f"/home/{user}"
    old_home = facts.platform.home or "/home/ml"
    data = json.loads(json.dumps(to_dict(facts)).replace(old_home, home))
    data["created"] = created
    data["platform"]["hostname"], data["platform"]["user"] = host, user
    for i, gpu in enumerate(data["nvml"]["gpus"]):
        gpu["uuid"] = f"GPU-{seed:08x}-{i:04x}-0000-0000-{seed * 7 + i:012x}"
        gpu["serial"] = f"03230{seed:05d}{i}"
    for name in ("python", "platform", "pci", "driver", "nvml", "libraries", "tensorflow"):
        data[name]["seconds"] = 0.01 * seed
    return facts_from_dict(data)


def old_driver_node(facts: Facts) -> Facts:
    """A node left on driver 470 after the others moved to 535: TensorFlow's CUDA 12 cannot start."""
    facts = b.change(
        facts,
        {
            "nvml.driver_version": "470.57.02",
            "nvml.cuda_driver_version": "11.4",
            "driver.version": "470.57.02",
            "driver.module_version": "470.57.02",
        },
    )
    return b.tf_sees_no_gpu(
        facts,
        "W tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:266] failed call to cuInit: "
        "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
    )


def lost_gpu_node(facts: Facts) -> Facts:
    """A node where one of the four GPUs is gone (fallen off the bus): three left, all working."""
    return b.server_gpus(facts, *[("Tesla V100-SXM2-32GB", "7.0")] * 3)


def stale_cudnn_node(facts: Facts) -> Facts:
    """A node whose LD_LIBRARY_PATH names an old CUDA 11.0 folder: its cuDNN 8.0.5 loads before the
    pip wheel's 8.9.4, and the convolution fails."""
    shadowed = linux_with_ld_library_path()
    placement = tuple(
        dataclasses.replace(p, ok=False, error="UnimplementedError: DNN library is not found.")
        if p.op == "conv2d"
        else p
        for p in facts.tensorflow.placement
    )
    line = (
        "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.0.5 but source was compiled "
        "with: 8.9.4.  CuDNN library needs to have matching major version and equal or higher minor version."
    )
    tf = dataclasses.replace(facts.tensorflow, placement=placement, log_lines=(line,))
    return b.change(facts, {"env": shadowed.env, "libraries": shadowed.libraries, "tensorflow": tf})


CLUSTER_ODD = {7: old_driver_node, 12: lost_gpu_node, 21: old_driver_node, 33: stale_cudnn_node}


def cluster_node(number: int) -> Facts:
    """Node ``number`` of the README's 40-node cluster of 4x V100 servers (full doctor runs)."""
    facts = b.server()
    facts = CLUSTER_ODD.get(number, lambda f: f)(facts)
    return elsewhere(facts, f"gpu-node-{number:02d}", seed=number, created=f"2026-11-30T10:00:{number:02d}+00:00")
