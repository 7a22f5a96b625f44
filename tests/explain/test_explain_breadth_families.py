"""The families of round 7's breadth work: TF-TRT and TensorRT, the TensorFlow Lite GPU delegate,
DirectML, tf.distribute, NVIDIA's NGC images and TensorFlow Serving, cuInit's -1 and the pip CUDA
wheels. Each rule is held to variations of its message that its source prints (other versions,
sizes, paths, symbol and library names, Windows and WSL spellings, a banner wrapped as the image
prints it) with the cause the message implies first, and to a close text it must not explain."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()

# (message or log, pattern id, harmless, first cause id or None)
VARIATIONS = [
    # TF-TRT: TensorFlow 1.x's warning and TensorFlow 2.x's error, other versions
    (
        "WARNING:tensorflow:TensorRT mismatch. Compiled against version 4.0.1, but loaded 5.0.2. Things may not work",
        "tensorrt-version-mismatch",
        False,
        None,
    ),
    (
        "ERROR:tensorflow:Loaded TensorRT 8.6.1 but linked TensorFlow against TensorRT 8.4.3. A few requirements must be met:",
        "tensorrt-version-mismatch",
        False,
        None,
    ),
    # the stub loader, other symbols of libnvinfer and libnvinfer_plugin
    (
        "F tensorflow/compiler/tf2tensorrt/stub/nvinfer_stub.cc:50] createInferBuilder_INTERNAL symbol not found.",
        "tensorrt-stub-symbol-missing",
        False,
        None,
    ),
    (
        "F0101 10:00:00.000000 77 nvinfer_plugin_stub.cc:49] initLibNvInferPlugins symbol not found.",
        "tensorrt-stub-symbol-missing",
        False,
        None,
    ),
    # TensorRT's engine files of another version: TensorRT 8 and 10 tags, the plan header check
    (
        "[TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReaderInitCommon::46] Error Code 1: Serialization (Serialization assertion stdVersionRead == serializationVersion failed.Version tag does not match. Note: Current Version: 239, Serialized Engine Version: 236)",
        "tensorrt-engine-version-mismatch",
        False,
        None,
    ),
    (
        "[TensorRT] ERROR: INVALID_CONFIG: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.2.1.8 got 8.4.1.5, please rebuild.",
        "tensorrt-engine-version-mismatch",
        False,
        None,
    ),
    # an attribute the op does not declare: TF-TRT's op, and any other op from a newer TensorFlow
    (
        "ValueError: NodeDef mentions attr '_allow_build_at_runtime' not in Op<name=TRTEngineOp; signature=in_tensor: -> out_tensor:>; NodeDef: {{node TRTEngineOp_1}}",
        "graph-attr-not-in-op",
        False,
        "trt-converter-attr-name",
    ),
    (
        "NodeDef mentions attr 'validate_shape' not in Op<name=AssignVariableOp; signature=resource:resource, value:dtype; attr=dtype:type>; NodeDef: {{node AssignVariableOp}}",
        "graph-attr-not-in-op",
        False,
        "graph-from-newer-tensorflow",
    ),
    # TF-TRT engines built at run time (harmless), other engine names
    (
        "INFO:tensorflow:Could not find TRTEngineOp_000_001 in TF-TRT cache. This can happen if build() is not called, which means TensorRT engines will be built and cached at runtime.",
        "tf-trt-engines-built-at-runtime",
        True,
        None,
    ),
    # a build without TensorRT, in each generation's words, and a graph with TF-TRT ops loaded elsewhere
    ("RuntimeError: Tensorflow has not been built with TensorRT support.", "tf-built-without-tensorrt", False, None),
    (
        "Op type not registered 'CreateTRTResourceHandle' in binary running on worker-7. Make sure the Op and Kernel are registered in the binary running in this process.",
        "tf-built-without-tensorrt",
        False,
        None,
    ),
    # contrib.tensorrt: TensorFlow 2 first, a Windows log puts the build without TF-TRT first
    (
        "ModuleNotFoundError: No module named 'tensorflow.contrib.tensorrt'",
        "tf-contrib-tensorrt-missing",
        False,
        "tf-contrib-removed",
    ),
    (
        'File "C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Python36\\lib\\site-packages\\tensorflow\\__init__.py", line 24\n'
        "ModuleNotFoundError: No module named 'tensorflow.contrib.tensorrt'",
        "tf-contrib-tensorrt-missing",
        False,
        "tf-trt-not-on-windows",
    ),
    # TensorRT's libraries: the plugin and the ONNX parser, the builder resource of TensorRT 10
    (
        "ImportError: libnvinfer_plugin.so.7: cannot open shared object file: No such file or directory",
        "tensorrt-library-not-found",
        False,
        "tensorrt-lib-not-on-path",
    ),
    (
        "ImportError: libnvonnxparser.so.10: cannot open shared object file: No such file or directory",
        "tensorrt-library-not-found",
        False,
        "tensorrt-lib-not-on-path",
    ),
    (
        "[TRT] [E] 6: [libLoader.cpp::DynamicLibrary::54] Error Code 6: Internal Error (Unable to load library: libnvinfer_builder_resource.so.10.3.0)",
        "tensorrt-library-not-found",
        False,
        None,
    ),
    # TensorFlow Lite's GPU delegate: bionic's wording (Android 12+), the vendors' file names
    (
        'java.lang.IllegalArgumentException: Internal error: Failed to apply delegate: Can not open OpenCL library on this device - dlopen failed: library "libOpenCL-car.so" not found',
        "tflite-opencl-not-declared",
        False,
        None,
    ),
    # glibc's wording (a Linux board): a notice, not harmless next to a failed delegate
    (
        "ERROR: Can not open OpenCL library on this device - libOpenCL.so.1: cannot open shared object file: No such file or directory\nERROR: Falling back to OpenGL\nINFO: Initialized OpenGL-based API.",
        "tflite-opencl-fallback-gl",
        True,
        None,
    ),
    (
        "E/tflite: TfLiteGpuDelegate Invoke: GpuDelegate must run on the same thread where it was initialized.",
        "tflite-gpu-delegate-other-thread",
        False,
        None,
    ),
    (
        "TfLiteGpuDelegate Prepare: OpenGL ES 3.1 or above is required to use OpenGL inference.",
        "tflite-gpu-delegate-failed",
        False,
        None,
    ),
    # DirectML: both generations' enumeration line, the plugin's file on Windows and under WSL
    (
        "2020-11-02 21:19:05.139698: I tensorflow/core/common_runtime/dml/dml_device_factory.cc:132] DirectML device enumeration: found 0 compatible adapters.",
        "directml-no-adapter",
        False,
        "directml-adapter-unsupported",
    ),
    (
        "tensorflow.python.framework.errors_impl.NotFoundError: D:\\venv\\tfdml\\Lib\\site-packages\\tensorflow-plugins\\tfdml_plugin.dll not found",
        "directml-plugin-tf-too-new",
        False,
        None,
    ),
    (
        "tensorflow.python.framework.errors_impl.NotFoundError: /home/u/miniconda3/envs/dml/lib/python3.10/site-packages/tensorflow-plugins/libtfdml_plugin.so not found",
        "directml-plugin-tf-too-new",
        False,
        None,
    ),
    (
        "The DirectML device has encountered an unrecoverable error (DXGI_ERROR_DEVICE_HUNG). This is most often caused by a timeout occurring on the GPU.",
        "directml-device-removed",
        False,
        None,
    ),
    (
        "F tensorflow/core/common_runtime/dml/dml_adapter_impl.cc:305] HRESULT failed with 0xd0000001: DXCoreCreateAdapterFactory(IID_PPV_ARGS(&adapter_factory))",
        "directml-wsl-gpu-missing",
        False,
        "wsl-kernel-without-dxg",
    ),
    # tf.distribute: other group sizes, a shape mismatch, a peer's failure
    (
        "Collective ops is aborted by: Device /job:worker/replica:0/task:1/device:GPU:0 is joining a group with size 8, but that group has size 4 (group_key=2)",
        "collective-ops-aborted",
        False,
        "collective-group-reused",
    ),
    (
        "Collective ops is aborted by: Shape mismatch in the collective instance 7. Op at device /job:localhost/replica:0/task:0/device:GPU:0 expected shape [1024] but another member in the group expected shape [512].",
        "collective-ops-aborted",
        False,
        "collective-shape-mismatch",
    ),
    (
        "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by: failed to connect to all addresses",
        "collective-ops-aborted",
        False,
        "collective-peer-failed",
    ),
    (
        "RuntimeError: Collective ops must be configured at program startup",
        "collective-ops-configured-late",
        False,
        None,
    ),
    # TF_CONFIG: each of the estimator's checks ranks its own cause first
    (
        'ValueError: If "cluster" is not set in TF_CONFIG, task type must be WORKER.',
        "tf-config-invalid",
        False,
        "tf-config-no-cluster",
    ),
    (
        "ValueError: evaluator is not a valid task_type in the cluster_spec:",
        "tf-config-invalid",
        False,
        "tf-config-task-not-in-cluster",
    ),
    (
        'ValueError: If "cluster" is set in TF_CONFIG, it must have one "chief" node.',
        "tf-config-invalid",
        False,
        "tf-config-no-chief",
    ),
    # NGC images: the banner as the entrypoint prints it (wrapped, the second line indented) and joined
    (
        "ERROR: This container was built for NVIDIA Driver Release 470.57 or later, but\n       version 460.91.03 was detected and compatibility mode is UNAVAILABLE.\n\n       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]",
        "ngc-container-driver-too-old",
        False,
        None,
    ),
    (
        "This container was built for NVIDIA Driver Release 560.35 or later, but version 550.54.15 was detected and compatibility mode is UNAVAILABLE.",
        "ngc-container-driver-too-old",
        False,
        None,
    ),
    # TensorFlow Serving's GPU binary without the driver library: the image started without GPUs first
    (
        "tensorflow_model_server: error while loading shared libraries: libcuda.so.1: cannot open shared object file: No such file or directory",
        "model-server-libcuda-missing",
        False,
        "container-without-gpu",
    ),
    # cuInit's -1 in both generations' spelling: a stub or foreign libcuda first
    (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:397] failed call to cuInit: CUresult(-1)",
        "cuinit-not-a-curesult",
        False,
        "stub-shadows-driver",
    ),
    (
        "2020-07-26 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:313] failed call to cuInit: UNKNOWN ERROR (-1)",
        "cuinit-not-a-curesult",
        False,
        "stub-shadows-driver",
    ),
    # the pip wheels: a log that shows NVIDIA's wheels ranks "their libraries were not found" first
    (
        "Successfully installed nvidia-cudnn-cu12-8.9.7.29 nvidia-cublas-cu12-12.3.4.1\n"
        "W0000 00:00:1737317404.258825 10111 gpu_device.cc:2344] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU.",
        "cannot-dlopen-gpu-libraries",
        False,
        "pip-cuda-wheels-not-found",
    ),
]

# close texts that must not be explained by the pattern named
NEAR = [
    ("INFO:tensorflow:Loaded TensorRT version: (8, 4, 3)", "tensorrt-version-mismatch"),
    (
        "[TRT] [I] [MemUsageChange] Init CUDA: CPU +14, GPU +0, now: CPU 19, GPU 1023 (MiB)",
        "tensorrt-engine-version-mismatch",
    ),
    ("NodeDef missing attr 'dtype' from Op<name=Placeholder; signature= -> output:dtype>", "graph-attr-not-in-op"),
    ("Op type not registered 'DecodeProtoSparse' in binary running on host", "tf-built-without-tensorrt"),
    ("ModuleNotFoundError: No module named 'tensorflow.contrib.slim'", "tf-contrib-tensorrt-missing"),
    (
        "ImportError: libnvrtc.so.11.2: cannot open shared object file: No such file or directory",
        "tensorrt-library-not-found",
    ),
    ("I/tflite: Initialized OpenCL-based API.", "tflite-opencl-not-declared"),
    ("INFO: Created TensorFlow Lite delegate for GPU.", "tflite-gpu-delegate-failed"),
    ("I tensorflow/c/logging.cc:34] DirectML device enumeration: found 2 compatible adapters.", "directml-no-adapter"),
    (
        "I tensorflow/c/logging.cc:34] Successfully opened dynamic library D:\\venv\\Lib\\site-packages\\tensorflow-plugins/directml/directml.dll",
        "directml-plugin-tf-too-new",
    ),
    (
        "I tensorflow/c/logging.cc:34] DirectML: creating device on adapter 0 (AMD Radeon RX 6800)",
        "directml-device-removed",
    ),
    (
        "Successfully opened dynamic library libdirectml.adbd007a01a52364381a1c71ebb6fa1b2389c88d.so",
        "directml-wsl-gpu-missing",
    ),
    (
        "INFO:tensorflow:Collective all_reduce tensors: 3 all_reduces, num_devices = 2, group_size = 2, implementation = RING",
        "collective-ops-aborted",
    ),
    (
        "INFO:tensorflow:TF_CONFIG environment variable: {'cluster': {'chief': ['host0:2222'], 'worker': ['host1:2222']}, 'task': {'type': 'chief', 'index': 0}}",
        "tf-config-invalid",
    ),
    (
        "NOTE: CUDA Forward Compatibility mode ENABLED. Using CUDA 12.2 driver version 535.86.10 with kernel driver version 470.199.02.",
        "ngc-container-driver-too-old",
    ),
    (
        "tensorflow_model_server: error while loading shared libraries: libssl.so.1.1: cannot open shared object file: No such file or directory",
        "model-server-libcuda-missing",
    ),
    ("failed call to cuInit: CUresult(999)", "cuinit-not-a-curesult"),
]


@pytest.mark.parametrize(
    "message, pattern_id, harmless, first", VARIATIONS, ids=[f"{v[1]}-{i}" for i, v in enumerate(VARIATIONS)]
)
def test_variation_is_explained_with_its_cause_first(message, pattern_id, harmless, first):
    result = CATALOGUE.scan_text(message)
    assert pattern_id in result.ids, result.ids
    explanation = next(e for e in explain(result) if e.id == pattern_id)
    assert explanation.harmless is harmless
    if first is not None:
        assert explanation.causes[0].id == first


@pytest.mark.parametrize("text, pattern_id", NEAR, ids=[n[1] for n in NEAR])
def test_close_text_is_not_explained_by_the_pattern(text, pattern_id):
    assert pattern_id not in CATALOGUE.scan_text(text).ids


def test_the_opencl_fallback_is_part_of_a_failure_when_the_delegate_then_fails():
    log = (
        "ERROR: Can not open OpenCL library on this device - libOpenCL.so: cannot open shared object file: No such file or directory\n"
        "ERROR: Falling back to OpenGL\n"
        "TfLiteGpuDelegate Init: OpenGL ES 3.1 or above is required to use OpenGL inference.\n"
    )
    result = CATALOGUE.scan_text(log)
    fallback = next(e for e in explain(result) if e.id == "tflite-opencl-fallback-gl")
    assert fallback.harmless is False


def test_tensorrt_not_found_is_part_of_the_stub_abort():
    log = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvrtc.so.11.1: cannot open shared object file: No such file or directory\n"
        "F tensorflow/compiler/tf2tensorrt/stub/nvinfer_stub.cc:49] getInferLibVersion symbol not found.\n"
    )
    result = CATALOGUE.scan_text(log)
    assert {"tensorrt-not-found", "tensorrt-stub-symbol-missing"} <= set(result.ids)
    notice = next(e for e in explain(result) if e.id == "tensorrt-not-found")
    assert notice.harmless is False


def test_contrib_tensorrt_is_one_explanation_not_two():
    assert CATALOGUE.scan_text("ModuleNotFoundError: No module named 'tensorflow.contrib.tensorrt'").ids == [
        "tf-contrib-tensorrt-missing"
    ]


def test_pip_names_the_directml_plugin_it_did_not_find():
    (explanation,) = explain(
        CATALOGUE.scan_text("ERROR: No matching distribution found for tensorflow-directml-plugin")
    )
    assert explanation.variables["requirement"] == "tensorflow-directml-plugin"
    assert explanation.causes[0].id == "python-version-unsupported"
