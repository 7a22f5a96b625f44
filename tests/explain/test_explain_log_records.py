"""Log records read by their severity and the program that printed them, not by their wording.

TensorFlow's and XLA's C++ logging (tsl/platform/default/logging.cc; absl's log since 2.16) starts a
record with its severity's letter, I W E F, and the source file: an INFO record reports and goes
on, a FATAL one aborts. NCCL's debug.cc writes "host:pid:tid [dev] NCCL INFO|WARN". A line that a
specific pattern explains keeps that pattern (an INFO record may be the failure itself: a GPU
ignored for its compute capability)."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()


def _found(text: str) -> list[tuple[str, bool]]:
    return [(e.id, e.harmless) for e in explain(CATALOGUE.scan_text(text))]


@pytest.mark.parametrize(
    "line",
    [
        # TensorFlow 1.x / 2.x prefix, with and without the time before it
        "2019-01-01 10:00:00.123456: I tensorflow/core/common_runtime/process_util.cc:146] Creating new thread "
        "pool with default inter op setting: 2. Tune using inter_op_parallelism_threads for best performance.",
        "I tensorflow/core/grappler/clusters/single_machine.cc:356] Starting new session",
        # the XLA and TSL trees TensorFlow 2.15+ vendors, and jaxlib's
        "2024-05-01 10:00:00.1: I external/local_tsl/tsl/profiler/lib/profiler_session.cc:104] Profiler session "
        "initializing.",
        "2024-05-01 10:00:00.1: I external/local_xla/xla/service/some_pass.h:12] Running a pass nobody pasted yet",
        "I external/xla/xla/pjrt/pjrt_client.cc:400] Created a client",
        # absl's prefix (month and day 0000 before absl::InitializeLog), more than one blank before the thread id
        "I0000 00:00:1733200000.123456   4242 cpu_utils.cc:94] CPU Frequency: 2200000000 Hz",
        # absl's record names the file alone: a header's or a .cpp file's as well as a .cc file's
        "I0000 00:00:1733200000.123456   4242 rendezvous_cache.h:88] Rendezvous cache created for a step",
        "I1204 10:00:00.123456 4242 plugin_loader.cpp:31] Loaded a plugin nobody pasted yet",
        # a Windows build names its build tree
        r"2018-03-14 12:19:37.605256: I C:\tf_jenkins\workspace\rel-win\M\windows-gpu\PY\36\tensorflow\core"
        r"\common_runtime\direct_session.cc:299] Device mapping:",
        # another logging prefix before the record
        "[pod/trainer-0] 2024-05-01T10:00:00Z I tensorflow/core/common_runtime/placer.cc:54] a/b: (Mul): "
        "/job:localhost/replica:0/task:0/device:GPU:0",
    ],
)
def test_an_info_record_of_tensorflow_or_xla_is_a_notice(line):
    assert _found(line) == [("tf-info-record", True)]


@pytest.mark.parametrize(
    "line",
    [
        "2024-01-01 10:00:00.1: W tensorflow/core/framework/op_kernel.cc:1827] Some op warned about itself",
        "2024-01-01 10:00:00.1: E tensorflow/core/framework/op_kernel.cc:1827] Some op failed",
        "E0000 00:00:1733200000.123456 4242 some_file.cc:12] Some record at ERROR",
        # the severity letter must start the record, and a Python file is not TensorFlow's C++ logging
        "Saw I tensorflow/core/foo.cc:1] in a sentence? no: it reads Xi tensorflow/core/foo.cc:1] here",
        "I0622 08:41:09.212588 139998758545216 trt_convert.py:264] Linked TensorRT version: (6, 0, 1)",
        "I tensorflow/ said hello",
        # a header named after something that is no record's prefix
        "see util.h:12] for the definition",
        "W0000 00:00:1733200000.123456 4242 rendezvous_cache.h:88] A warning from a header",
    ],
)
def test_warning_error_and_other_lines_are_not_read_as_info_records(line):
    assert ("tf-info-record", True) not in _found(line)


def test_an_info_record_a_pattern_explains_keeps_that_pattern():
    line = (
        "2020-01-01 10:00:00.1: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1753] Ignoring visible gpu "
        "device (device: 0, name: GeForce GT 730, pci bus id: 0000:01:00.0, compute capability: 3.5) with Cuda "
        "compute capability 3.5. The minimum required Cuda capability is 3.7."
    )
    found = _found(line)
    assert "tf-info-record" not in [i for i, _ in found]
    assert found and not found[0][1]


def test_an_info_record_cut_over_two_lines_is_one_notice():
    text = (
        "2024-05-01 10:00:00.1: I tensorflow/core/kernels/data/tf_record_dataset_op.cc:376] The default buffer\n"
        "size is 262144, which is overridden by the user specified `buffer_size` of 8388608\n"
    )
    assert _found(text) == [("tf-info-record", True)]


@pytest.mark.parametrize(
    "fatal",
    [
        "2019-01-01 10:00:00.2: F tensorflow/core/kernels/some_op.cc:77] Non-OK-status: a status nobody pasted",
        "F0000 00:00:1712345678.2 12345 some_file.cc:99] Something fatal",
    ],
)
def test_info_records_before_a_fatal_record_are_not_all_is_well(fatal):
    # the records are the log's background: before a FATAL record nothing explains, they are not
    # listed at all (neither "harmless" nor a lead), and the input has no known message
    info = "I0000 00:00:1712345678.1 12345 profiler_session.cc:104] Profiler session initializing.\n"
    scan = CATALOGUE.scan_text(info + fatal + "\n")
    assert scan.context.get("log_crash", "").startswith("F")
    assert explain(scan) == ()


@pytest.mark.parametrize(
    "error",
    [
        "2023-05-01 10:00:02.000000: E tensorflow/core/framework/some_op.cc:12] Something went wrong in my op",
        "E tensorflow/core/kernels/data/iterator_ops.cc:40] an error nobody pasted yet",
        "2024-05-01 10:00:00.1: E external/local_xla/xla/service/some_pass.cc:12] a pass failed",
        "E0000 00:00:1733200000.123456   4242 some_file.cc:94] Something failed",
        # the prefixes a FATAL record is read with: a Windows build's tree, another logger's prefix, C++ files
        r"2018-03-14 12:19:37.605256: E C:\tf_jenkins\workspace\rel-win\M\windows-gpu\PY\36\tensorflow\core"
        r"\kernels\some_op.cc:99] an error nobody pasted yet",
        "[pod/trainer-0] 2024-05-01T10:00:00Z E tensorflow/core/kernels/some_op.cc:5] an error nobody pasted yet",
        "E external/local_xla/xla/pjrt/some_client.cpp:12] an error nobody pasted yet",
    ],
)
def test_info_records_beside_an_error_record_nothing_explains_are_not_all_is_well(error):
    info = "2023-05-01 10:00:00.1: I tensorflow/core/common_runtime/process_util.cc:146] Creating new thread pool\n"
    scan = CATALOGUE.scan_text(info + error + "\n")
    assert scan.context.get("log_error_record") == "yes"
    assert explain(scan) == ()
    # the same records with a warning, or alone, are the harmless background they are
    for other in ("W tensorflow/core/framework/op.cc:1] a warning nobody pasted", ""):
        scan = CATALOGUE.scan_text(info + other + "\n")
        assert "log_error_record" not in scan.context
        assert _found(info + other) == [("tf-info-record", True)]


def test_an_error_record_a_pattern_explains_is_explained_and_the_records_stay_out():
    text = (
        "2023-05-01 10:00:00.1: I tensorflow/core/common_runtime/process_util.cc:146] Creating new thread pool\n"
        "2023-05-01 10:00:01.1: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: "
        "CUDNN_STATUS_INTERNAL_ERROR\n"
    )
    found = _found(text)
    assert found and all(not harmless for _, harmless in found)
    assert "tf-info-record" not in [i for i, _ in found]


def test_info_records_before_a_python_traceback_leave_the_error_unexplained():
    from envcheck.explain.report import ExplainReport

    text = (
        "2019-01-01 10:00:00.1: I tensorflow/core/common_runtime/process_util.cc:146] Creating new thread pool\n"
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "ValueError: Shapes (None, 10) and (None, 1) are incompatible\n"
    )
    scan = CATALOGUE.scan_text(text)
    report = ExplainReport(source="the argument", scan=scan, explanations=explain(scan))
    assert report.unexplained_error.startswith("ValueError: Shapes")


@pytest.mark.parametrize(
    "line",
    [
        "node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "(GpuHost pid=6777) ip-172-31-0-108:6777:6777 [0] NCCL INFO NET/Socket : Using [0]ens3:172.31.0.108<0>",
        "gpu-dev006:25486:25486 [7] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
        "implementation",
    ],
)
def test_an_nccl_info_record_is_a_notice(line):
    assert _found(line) == [("nccl-info-record", True)]


@pytest.mark.parametrize(
    "line",
    [
        "ip-172-31-0-108:6777:6777 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "worker:1:1 [0] NCCL INFO",  # no record after the level
    ],
)
def test_an_nccl_warning_is_not_an_info_record(line):
    assert ("nccl-info-record", True) not in _found(line)


@pytest.mark.parametrize(
    "text",
    [
        "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/conv.py:456: UserWarning: Plan failed with a "
        "cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: "
        "CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at ../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)",
        r"C:\venv\Lib\site-packages\torch\autograd\graph.py:768: UserWarning: Plan failed with a cudnnException: "
        "CUDNN_BACKEND_OPERATION: cudnnFinalize Failed cudnn_status: CUDNN_STATUS_BAD_PARAM",
    ],
)
def test_a_skipped_cudnn_plan_is_a_notice(text):
    assert _found(text) == [("torch-cudnn-plan-skipped", True)]


def test_a_skipped_cudnn_plan_before_the_convolution_fails_is_not_all_is_well():
    text = (
        "conv.py:456: UserWarning: Plan failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: "
        "cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED\n"
        'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n'
        "RuntimeError: GET was unable to find an engine to execute this computation\n"
    )
    from envcheck.explain.report import ExplainReport

    scan = CATALOGUE.scan_text(text)
    report = ExplainReport(source="the argument", scan=scan, explanations=explain(scan))
    found = [(e.id, e.harmless) for e in report.explanations]
    assert ("torch-cudnn-plan-skipped", True) in found
    # the warning is not the failure: the error it ended in is explained as one (cuDNN found no
    # engine, aten/src/ATen/native/cudnn/Conv_v8.cpp), so the report is not all is well
    assert ("torch-cudnn-no-algorithm", False) in found


@pytest.mark.parametrize(
    "text, wanted",
    [
        ("|  No running processes found                                                 |", True),
        ("No running processes found", True),
        ("| No processes were found on this GPU |", False),
    ],
)
def test_an_empty_process_table_is_a_notice(text, wanted):
    assert (("nvidia-smi-no-processes", True) in _found(text)) is wanted


def test_a_status_in_the_half_of_a_cut_warning_is_part_of_the_warning():
    # a terminal cut the warning after "cudnnException: ": the status on the next line is its own
    text = (
        "UserWarning: Plan failed with a cudnnException: \n"
        "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: "
        "CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at \n"
        "../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)\n"
    )
    assert _found(text) == [("torch-cudnn-plan-skipped", True)]


def test_a_status_on_a_line_of_its_own_after_the_warning_stays_explained():
    text = (
        "UserWarning: Plan failed with a cudnnException: CUDNN_BACKEND_OPERATION: cudnnFinalize Failed\n"
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
    )
    found = _found(text)
    assert ("torch-cudnn-plan-skipped", True) in found
    assert any(not harmless for _, harmless in found)


SMI_TABLE = (
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |\n"
    "|-------------------------------+----------------------+----------------------+\n"
    "|   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0 Off |                  N/A |\n"
    "+-----------------------------------------------------------------------------+\n"
    "| Processes:                                                                  |\n"
    "|  No running processes found                                                 |\n"
    "+-----------------------------------------------------------------------------+\n"
)


def test_an_empty_process_table_beside_a_gpu_tensorflow_did_not_find_is_the_failure():
    # nvidia-smi lists the GPU, TensorFlow lists none: the program that should run on it does not
    text = SMI_TABLE + ">>> tf.config.list_physical_devices('GPU')\n[]\n"
    found = dict(_found(text))
    assert found.get("nvidia-smi-no-processes") is False
    # the same table where TensorFlow created its GPU device (a container hides the host's PIDs)
    created = (
        "2023-01-01 10:00:00.1: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1613] Created device "
        "/job:localhost/replica:0/task:0/device:GPU:0 with 9601 MB memory:  -> device: 0, name: NVIDIA GeForce "
        "RTX 3080, pci bus id: 0000:01:00.0, compute capability: 8.6\n"
    )
    assert dict(_found(created + SMI_TABLE)).get("nvidia-smi-no-processes") is True
