"""No snapshot, however odd, makes a rule crash: every field a probe may fill with unexpected text
is varied here, and the report must come back without an internal-error finding."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.facts import GpuProcess, LibraryCopy, NvmlGpu, PlacementResult, TfDevice
from envcheck.findings import VERDICT_STATUSES
from envcheck.verdict import judge

from . import builders as b

text = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.sampled_from(["", "1", "2.15", "12.2.140", "550.54.14", "3.7", "x.y", "-1", "2.99.0rc1", "1.13.1"]),
)
some_text = text.map(lambda v: v or "")
names = st.sampled_from(
    ["libcudart.so.12", "libcudnn.so.8", "cudart64_100.dll", "cudnn64_7.dll", "libcublas.so.12", "weird", ""]
)

copies = st.builds(
    LibraryCopy,
    path=names.map(lambda n: "/x/" + n),
    directory=st.just("/x"),
    origin=st.sampled_from(["pip", "ldconfig", "PATH", "CUDA_PATH"]),
    file_version=text,
    reported_version=text,
    loads=st.one_of(st.none(), st.booleans()),
    on_loader_path=st.booleans(),
)
gpus = st.builds(
    NvmlGpu,
    index=st.integers(0, 7),
    name=text,
    uuid=text,
    compute_capability=text,
    memory_total_mb=st.one_of(st.none(), st.integers(0, 100000)),
    memory_used_mb=st.one_of(st.none(), st.integers(0, 100000)),
    processes=st.lists(
        st.builds(
            GpuProcess, pid=st.integers(0, 99999), name=text, used_memory_mb=st.one_of(st.none(), st.integers(0, 99999))
        ),
        max_size=2,
    ).map(tuple),
    status=st.sampled_from(["ok", "error"]),
    error_kind=st.sampled_from([None, "gpu_lost", "no_permission", "unknown", "function_not_found"]),
)
placements = st.builds(
    PlacementResult,
    op=st.sampled_from(["matmul", "conv2d"]),
    requested=st.sampled_from(["/GPU:0", "/CPU:0", ""]),
    device=text,
    ok=st.booleans(),
    error=text,
)


def test_unicode_digits_in_variables_are_text_not_numbers():
    # "²".isdigit() is true but int("²") fails; CUDA reads ASCII digits only.
    report = judge(b.with_env(b.server(), TF_CPP_MIN_LOG_LEVEL="²", CUDA_VISIBLE_DEVICES="０"))
    assert not [f for f in report.findings if f.id == "EC-INT-001"]
    assert [f.id for f in report.findings] == ["EC-ENV-001"]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from([b.setup_post, b.server, b.no_gpu]),
    python_version=some_text,
    bits=st.sampled_from([0, 32, 64]),
    os_name=st.sampled_from(["linux", "windows", "macos", "wsl", ""]),
    tf_version=text,
    tf_kind=st.sampled_from(
        [None, "not_installed", "import_failed", "timeout", "crashed", "bad_output", "worker_failed"]
    ),
    driver=text,
    nvml_kind=st.sampled_from(
        [
            None,
            "library_not_found",
            "driver_not_loaded",
            "version_mismatch",
            "gpu_lost",
            "no_permission",
            "function_not_found",
            "unknown",
        ]
    ),
    nvml_gpus=st.lists(gpus, max_size=3).map(tuple),
    cudart=st.lists(copies, max_size=3).map(tuple),
    env=st.dictionaries(
        st.sampled_from(
            ["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_CPP_MIN_LOG_LEVEL"]
        ),
        st.one_of(st.text(max_size=8), st.text(alphabet="0123-,²٣０GPU ", max_size=6)),
    ),
    dist_version=some_text,
    placement=st.lists(placements, max_size=3).map(tuple),
    tf_caps=st.lists(st.sampled_from(["sm_35", "sm_70", "compute_80", "bogus"]), max_size=3).map(tuple),
)
def test_no_rule_crashes(
    base,
    python_version,
    bits,
    os_name,
    tf_version,
    tf_kind,
    driver,
    nvml_kind,
    nvml_gpus,
    cudart,
    env,
    dist_version,
    placement,
    tf_caps,
):
    facts = base()
    facts = b.change(
        facts,
        {
            "python.version": python_version,
            "python.bits": bits,
            "platform.os": os_name,
            "tensorflow": dataclasses.replace(
                facts.tensorflow,
                version=tf_version,
                error_kind=tf_kind,
                status="error" if tf_kind else facts.tensorflow.status,
                placement=placement,
                compute_capabilities=tf_caps,
                physical_devices=facts.tensorflow.physical_devices
                + (TfDevice(name="/physical_device:GPU:9", device_type="GPU"),),
            ),
            "nvml.driver_version": driver,
            "nvml.error_kind": nvml_kind,
            "nvml.gpus": nvml_gpus,
            "env.variables": env,
        },
    )
    facts = b.library_copies(facts, "cudart", *cudart)
    facts = b.with_distributions(facts, ("tensorflow-gpu", dist_version), ("nvidia-cudnn-cu12", dist_version))
    report = judge(facts)
    crashed = [f.title for f in report.findings if f.id == "EC-INT-001"]
    assert not crashed, crashed
    assert report.verdict.status in VERDICT_STATUSES and report.verdict.line


# Version fields as a snapshot may carry them: the reader takes any string there, so no rule may
# trip over one ("12..2" used to crash EC-LIB-002 and EC-LIB-008 through the matrix's parser).
odd_versions = st.one_of(
    st.sampled_from(
        [
            "12..2",
            "12.",
            ".2",
            "1..",
            "..",
            "12.2.",
            "v12.2",
            "12.2 ",
            " ",
            "٣.٢",
            "1!2.0",
            "2.15.0rc1+local",
            "9" * 5000,
            "1." * 50,
        ]
    ),
    st.text(alphabet="0123456789.", max_size=12),
    st.text(alphabet="0123456789.+-!_abcdelpostrv ", max_size=12),
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(
        ["setup_post_win10", "multi_gpu_server", "linux_cuda_build_no_gpu", "fake_nvml_2gpu", "this_machine"]
    ),
    fields=st.dictionaries(
        st.sampled_from(
            [
                "tensorflow.cuda_version",
                "tensorflow.cudnn_version",
                "tensorflow.version",
                "nvml.driver_version",
                "nvml.cuda_driver_version",
                "nvml.nvml_version",
                "driver.version",
                "driver.module_version",
                "driver.module_file_version",
                "python.version",
                "python.pip_version",
                "platform.glibc",
            ]
        ),
        odd_versions,
        min_size=1,
    ),
    gpu_cc=st.one_of(st.none(), odd_versions),
    library_version=st.one_of(st.none(), odd_versions),
    dist_version=odd_versions,
)
def test_no_rule_crashes_on_odd_version_strings(base, fields, gpu_cc, library_version, dist_version):
    facts = b.change(b.named(base), fields)
    if gpu_cc is not None and facts.nvml.gpus:
        facts = b.change(
            facts, {"nvml.gpus": tuple(dataclasses.replace(g, compute_capability=gpu_cc) for g in facts.nvml.gpus)}
        )
    if library_version is not None:
        facts = b.change(
            facts,
            {
                "libraries.libraries": tuple(
                    dataclasses.replace(
                        lib,
                        copies=tuple(
                            dataclasses.replace(c, reported_version=library_version, file_version=library_version)
                            for c in lib.copies
                        ),
                    )
                    for lib in facts.libraries.libraries
                ),
                "libraries.toolkits": tuple(
                    dataclasses.replace(t, version=library_version) for t in facts.libraries.toolkits
                ),
            },
        )
    installed = [d.name for d in facts.packages.distributions if d.name.startswith(("tensorflow", "nvidia-"))]
    facts = b.with_distributions(facts, *((name, dist_version) for name in installed))
    report = judge(facts)
    crashed = [f.title for f in report.findings if f.id == "EC-INT-001"]
    assert not crashed, crashed
    assert report.verdict.status in VERDICT_STATUSES and report.verdict.line


def test_a_malformed_cuda_version_from_tensorflow_is_unknown_not_a_crash():
    facts = b.change(b.named("fake_nvml_2gpu"), {"tensorflow.cuda_version": "12..2"})
    report = judge(facts)
    assert not [f.title for f in report.findings if f.id == "EC-INT-001"]
