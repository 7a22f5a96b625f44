"""A log's explanations come in the order of the causal chain (DESIGN.md): the first broken link
(the driver, before the CUDA libraries, before TensorFlow, before memory) is explained first,
whatever line it is on, so the cause a user reads first is the one that explains the rest."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.explanations import CAUSAL_CHAIN, causal_link

CATALOGUE = load_patterns()

# TensorFlow 2.4's start-up on a machine whose NVIDIA driver is not loaded, in the order it prints
# it: the CUDA runtime is looked for at import, cuInit runs when the first device is made.
NO_DRIVER_LOG = """\
2021-02-10 12:57:07.427237: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory
2021-02-10 12:57:07.427347: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.
2021-02-10 12:57:09.101982: I tensorflow/compiler/jit/xla_cpu_device.cc:41] Not creating XLA devices, tf_xla_enable_xla_devices not set
2021-02-10 12:57:09.102722: E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: UNKNOWN ERROR (303)
"""


def test_a_log_without_a_driver_is_explained_by_the_driver():
    first, *rest = explain(CATALOGUE.scan_text(NO_DRIVER_LOG))
    assert first.id == "cuinit-no-driver" and first.causes[0].id == "no-nvidia-gpu"
    cudart = next(e for e in rest if e.id == "cudart-not-loaded")
    assert cudart.harmless and cudart.causes[0].id == "no-nvidia-gpu"  # a consequence, read from the log


def test_the_driver_is_explained_before_the_library_that_failed_after_it():
    log = (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
        "Failed to initialize NVML: Driver/library version mismatch\n"
    )
    explanations = explain(CATALOGUE.scan_text(log))
    assert [e.id for e in explanations] == ["nvml-driver-library-mismatch", "cudnn-handle-failed"]
    assert explanations[0].first_line == 2  # later in the log, first in the chain


def test_messages_of_one_link_keep_the_order_of_the_log():
    log = (
        "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory\n"
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    )
    assert [e.id for e in explain(CATALOGUE.scan_text(log))][:2] == ["cudnn-not-loaded", "cudart-not-loaded"]


def test_memory_comes_after_the_library_that_failed_with_it():
    log = (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[256,64,160,160] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
    )
    ids = [e.id for e in explain(CATALOGUE.scan_text(log))]
    assert ids.index("cudnn-handle-failed") < ids.index("oom-allocating-tensor")


@pytest.mark.parametrize(
    ("rule_ids", "link"),
    [
        (("EC-DRV-002",), "DRV"),
        (("EC-ENV-005", "EC-LIB-008"), "LIB"),  # the earliest link its rules check
        (("EC-GPU-001", "EC-DRV-001"), "GPU"),
        (("EC-PY-001",), "PY"),
    ],
)
def test_a_message_sits_at_the_earliest_link_its_rules_check(rule_ids, link):
    assert causal_link(rule_ids) == CAUSAL_CHAIN.index(link)


def test_a_code_level_error_comes_after_every_link():
    assert causal_link(()) == len(CAUSAL_CHAIN) and causal_link(("not-a-rule",)) == len(CAUSAL_CHAIN)


# --- the versions the log prints decide between a pattern's causes ---------------------------------
_MISSING = (
    "Could not load dynamic library '{0}'; dlerror: {0}: cannot open shared object file: No such file or directory"
)


@pytest.mark.parametrize(
    ("nvcc", "library", "first"),
    [
        ("10.1", "libcudart.so.10.1", "cuda-lib-not-on-path"),  # that release is installed: the path
        ("10.0", "libcudart.so.10.1", "cuda-not-installed"),  # before CUDA 11 the soname is the release
        ("11.2", "libcudart.so.11.0", "cuda-lib-not-on-path"),  # every CUDA 11.x ships libcudart.so.11.0
        ("12.2", "libcudart.so.11.0", "cuda-not-installed"),
        ("11.8", "libcudart.so.12", "cuda-not-installed"),
    ],
)
def test_the_cuda_the_log_shows_installed_decides_path_or_release(nvcc, library, first):
    log = f"Cuda compilation tools, release {nvcc}, V{nvcc}.100\n" + _MISSING.format(library)
    (explanation,) = explain(CATALOGUE.scan_text(log))
    assert explanation.causes[0].id == first


def test_without_a_cuda_version_the_message_keeps_its_order():
    (plain,) = explain(CATALOGUE.scan_text(_MISSING.format("libcudart.so.11.0")))
    pattern = CATALOGUE.get("cudart-not-loaded")
    assert plain.causes[0].id == pattern.causes[0].id


def test_the_loaders_own_reason_outranks_the_versions():
    log = "Cuda compilation tools, release 11.2, V11.2.152\nCould not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: wrong ELF class: ELFCLASS32"
    (explanation,) = explain(CATALOGUE.scan_text(log))
    assert explanation.causes[0].id == "wrong-architecture"
