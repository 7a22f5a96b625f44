"""Messages of the libraries around TensorFlow: op libraries built for another TensorFlow (the C++
namespace of the undefined symbol), the Coral Edge TPU delegate, and the older wordings of
TensorFlow's own loader and allocator messages (TensorFlow 1.x) that posts still quote."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.parts import cxx_namespace, read_parts

CATALOGUE = load_patterns()


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


def _causes(text: str, pattern_id: str) -> list[str]:
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert found, [e.id for e in _explained(text)]
    return [c.id for c in found[0].causes]


@pytest.mark.parametrize(
    "symbol, namespace",
    [
        ("_ZN10tensorflow12OpDefBuilder4AttrESs", "tensorflow"),
        ("_ZNK10tensorflow8OpKernel11TraceStringERKNS_15OpKernelContextEb", "tensorflow"),
        ("_ZN3tsl6StatusC1EN4absl12lts_2023080212StatusCodeESt17basic_string_viewIcSt11char_traitsIcEE", "tsl"),
        ("_ZNK3c1010TensorImpl4sizeEl", "c10"),
        ("_ZN15TracebackLoggerC1EPKc", "TracebackLogger"),
        ("cudnnCreate", ""),
        ("_Z9foo_checkv", ""),  # a free function: no namespace
    ],
)
def test_the_namespace_of_a_mangled_symbol(symbol, namespace):
    assert cxx_namespace(symbol) == namespace


def test_the_loaders_undefined_symbol_carries_its_namespace():
    parts = read_parts("NotFoundError: x/_activation_ops.so: undefined symbol: _ZN10tensorflow12OpDefBuilder4AttrESs")
    assert parts["symbol_namespace"] == "tensorflow"


def test_a_tensorflow_symbol_missing_from_an_op_library_names_the_tensorflow_release_first():
    text = (
        "tensorflow.python.framework.errors_impl.NotFoundError: /opt/venv/lib/python3.10/site-packages/"
        "tensorflow_text/python/ops/_regex_split_ops.so: undefined symbol: "
        "_ZNK10tensorflow8OpKernel11TraceStringERKNS_15OpKernelContextEb"
    )
    assert _causes(text, "loader-undefined-symbol") == [
        "custom-op-other-tensorflow",
        "custom-op-abi-mismatch",
        "mixed-library-versions",
    ]


def test_a_symbol_of_another_library_keeps_only_the_mixed_versions_cause():
    text = (
        "OSError: /usr/local/lib/python3.10/dist-packages/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: "
        "undefined symbol: _ZN15TracebackLoggerC1EPKc"
    )
    assert _causes(text, "loader-undefined-symbol") == ["mixed-library-versions"]


def test_the_edge_tpu_delegate_on_linux_puts_the_device_permission_first():
    assert _causes("ValueError: Failed to load delegate from libedgetpu.so.1", "edgetpu-delegate-failed")[0] == (
        "edgetpu-device-not-ready"
    )


def test_the_edge_tpu_delegate_on_windows_has_no_udev_cause():
    text = (
        'File "C:\\Users\\me\\venv\\Lib\\site-packages\\tflite_runtime\\interpreter.py", line 166, in load_delegate\n'
        "ValueError: Failed to load delegate from edgetpu.dll"
    )
    causes = _causes(text, "edgetpu-delegate-failed")
    assert "edgetpu-device-not-ready" not in causes
    assert causes[0] == "edgetpu-no-device"


def test_another_delegate_library_is_not_the_edge_tpus():
    assert not _explained("ValueError: Failed to load delegate from libvx_delegate.so")


@pytest.mark.parametrize(
    "text, pattern_id, library",
    [
        (
            "I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Could not dlopen library "
            "'libcudart.so.10.0'; dlerror: libcudart.so.10.0: cannot open shared object file: No such file or directory",
            "cudart-not-loaded",
            "libcudart.so.10.0",
        ),
        (
            "Could not dlopen library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file",
            "libcuda-not-loaded",
            "libcuda.so.1",
        ),
        (
            "Could not dlopen library 'libnvinfer.so.6'; dlerror: libnvinfer.so.6: cannot open shared object file",
            "tensorrt-not-found",
            "",
        ),
    ],
)
def test_tensorflow_1_14s_dlopen_wording_is_its_loaders_message(text, pattern_id, library):
    explanations = _explained(text)
    assert [e.id for e in explanations] == [pattern_id]  # the dlerror part is not a second message
    if library:
        assert explanations[0].variables["library"] == library


def test_node_loading_libtensorflow_1_reports_the_missing_cuda_library():
    explanations = _explained("Error: libcublas.so.9.0: cannot open shared object file: No such file or directory")
    assert [e.id for e in explanations] == ["tf1-cuda-library-missing"]
    assert explanations[0].causes[0].id == "cuda-not-installed"


def test_tensorflow_1_0s_allocator_failure_is_the_out_of_memory_error_and_its_retry_stays_harmless():
    failed = _explained(
        "W tensorflow/core/common_runtime/bfc_allocator.cc:275] Ran out of memory trying to allocate 392.00MiB.  "
        "See logs for memory state."
    )
    assert [e.id for e in failed] == ["bfc-allocator-out-of-memory"]
    assert failed[0].variables["size"] == "392.00MiB"
    retried = _explained(
        "W tensorflow/core/common_runtime/bfc_allocator.cc:217] Ran out of memory trying to allocate 1.18GiB. The "
        "caller indicates that this is not a failure, but may mean that there could be performance gains if more "
        "memory is available."
    )
    assert [e.id for e in retried] == ["allocator-not-a-failure"]
    assert retried[0].harmless


def test_the_cudnn_check_quoted_with_the_source_reads_the_same_versions():
    explanations = _explained("Loaded runtime CuDNN library: 7.0.5 but the source was compiled with: 7.1.4.")
    assert [e.id for e in explanations] == ["cudnn-version-mismatch"]
    assert explanations[0].causes[0].id == "cudnn-too-old"


def test_the_convolution_algorithm_failure_quoted_by_its_first_sentence():
    assert [e.id for e in _explained("UnknownError: Failed to get convolution algorithm")] == ["conv-algorithm-failed"]
    assert not _explained("Failed to get convolution algorithms list for this layer")


FATAL_NO_DEVICE = (
    "F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of handling error "
    "Internal: no supported devices found for platform CUDA"
)


def test_xla_without_a_usable_gpu_names_the_reason_the_log_shows():
    too_old = (
        "I tensorflow/compiler/xla/service/platform_util.cc:194] StreamExecutor cuda device (0) is of insufficient "
        "compute capability: 3.5 required, device is 3.0\n" + FATAL_NO_DEVICE
    )
    assert _causes(too_old, "xla-no-supported-devices")[0] == "compute-capability-too-low"
    assert [e.variables.get("cc") for e in _explained(too_old) if e.id == "compute-capability-too-low"] == ["3.0"]
    no_memory = (
        "E tensorflow/compiler/xla/service/platform_util.cc:256] unable to create StreamExecutor for CUDA:0: failed "
        "initializing StreamExecutor for CUDA device ordinal 0: Internal: failed call to cuDevicePrimaryCtxRetain: "
        "CUDA_ERROR_OUT_OF_MEMORY: out of memory; total memory reported: 25396838400\n" + FATAL_NO_DEVICE
    )
    assert _causes(no_memory, "xla-no-supported-devices")[0] == "other-process-holds-gpu"


def test_jaxs_backend_message_keeps_its_own_pattern():
    text = "Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform CUDA"
    assert [e.id for e in _explained(text)] == ["jax-cuda-backend-failed"]


def test_a_failed_check_on_a_cuda_driver_call_reads_the_curesult_it_printed():
    text = (
        "tensorflow/stream_executor/cuda/cuda_driver.cc:404] Check failed: CUDA_SUCCESS == "
        "cuDevicePrimaryCtxGetState(device, &former_primary_context_flags, &former_primary_context_is_active) "
        "(0 vs. 303)"
    )
    explanations = _explained(text)
    assert [e.id for e in explanations] == ["cuda-driver-status"]
    assert explanations[0].variables["status_name"] == "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"


def test_a_failed_check_on_a_cudnn_status_is_not_read_as_a_curesult():
    text = "F tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)"
    assert "cuda-driver-status" not in [e.id for e in _explained(text)]


def test_tfjs_node_gpu_on_windows_puts_the_cuda_dlls_first_and_the_cpu_package_does_not():
    gpu = (
        "Error: The specified module could not be found.\n"
        "\\\\?\\D:\\nodejs\\node_modules\\@tensorflow\\tfjs-node-gpu\\lib\\napi-v5\\tfjs_binding.node"
    )
    assert _causes(gpu, "tfjs-node-binding-failed")[0] == "cuda-dll-folder-not-on-path"
    cpu = gpu.replace("tfjs-node-gpu", "tfjs-node")
    causes = _causes(cpu, "tfjs-node-binding-failed")
    assert "cuda-dll-folder-not-on-path" not in causes
    assert causes[-1] == "tfjs-binding-not-built"


def test_tfjs_nodes_own_missing_addon_message_names_only_the_build():
    text = (
        "Error: The Node.js native addon module (tfjs_binding.node) can not be found at path: "
        "C:\\app\\node_modules\\@tensorflow\\tfjs-node\\lib\\napi-v7\\tfjs_binding.node."
    )
    assert _causes(text, "tfjs-node-binding-failed") == ["tfjs-binding-not-built"]


def test_a_copy_to_the_gpu_without_memory_blames_a_whole_array_only_for_an_eager_constant():
    eager = (
        "InternalError: Failed copying input tensor from /job:localhost/replica:0/task:0/device:CPU:0 to "
        "/job:localhost/replica:0/task:0/device:GPU:0 in order to run _EagerConst: Dst tensor is not initialized."
    )
    assert _causes(eager, "gpu-copy-destination-not-allocated")[0] == "whole-array-on-gpu"
    graph = "tensorflow.python.framework.errors_impl.InternalError: Dst tensor is not initialized."
    assert _causes(graph, "gpu-copy-destination-not-allocated")[0] == "batch-too-large"
