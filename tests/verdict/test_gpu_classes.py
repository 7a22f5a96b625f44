"""The classes of machine whose verdict used to be decided by a special case, each handled by the
chain: every class on more than one machine (issue 19's list, 1 to 7)."""

from __future__ import annotations

import dataclasses
import json

import generated as g
import properties as p
import pytest
from rules import builders as b

from envcheck.facts import MISSING, SKIPPED, NvmlFacts, TensorflowFacts
from envcheck.findings import BROKEN, CPU_ONLY, DEGRADED, GPU_READY, NOT_INSTALLED
from envcheck.matrix import load_matrix
from envcheck.planner import make_plan
from envcheck.planner.target import target_from_facts
from envcheck.verdict import judge

MATRIX = load_matrix()


def by_id(report):
    return {f.id: f for f in report.findings}


def card(name: str) -> g.Card:
    return next(c for c in g.cards() if c.name == name) if any(c.name == name for c in g.cards()) else _card(name)


def _card(name: str) -> g.Card:
    gpu = MATRIX.gpu(name)
    return g.Card(gpu.name, str(gpu.compute_capability), "0x" + gpu.pci_ids[0])


def floor(os: str, tf: str) -> str:
    return g.drivers(os, tf)[-1]


# --- 1. GPUs that are there and fail are broken or degraded, never "CPU only, exit 0" -------------


@pytest.mark.parametrize(
    "facts",
    [
        b.failing_ops(b.server(), tuple(f"/GPU:{i}" for i in range(4)), "InternalError: Blas GEMM launch failed"),
        b.failing_ops(b.server(), tuple(f"/GPU:{i}" for i in range(4)), b.BUSY),
        g.snapshot(g.Spec("windows", "2.10", (card("GeForce RTX 3090"),), floor("windows", "2.10"), ops="fail_all")),
    ],
    ids=["matmul fails on all four", "all four busy (exclusive-process)", "Windows: the one GPU fails"],
)
def test_every_gpu_failing_is_broken_and_each_is_named(facts):
    report = judge(facts)
    assert report.verdict.status == BROKEN and report.exit_code == 1
    failing = by_id(report)["EC-PLC-005"]
    for gpu in report.gpus:
        assert not gpu.usable and gpu.finding == "EC-PLC-005"
        assert (gpu.pci_bus_id in failing.title) or str(gpu.index) in failing.title


@pytest.mark.parametrize("error", ["InternalError: Blas GEMM launch failed", b.BUSY])
@pytest.mark.parametrize("gpu", [0, 2])
def test_one_gpu_of_four_failing_is_degraded_and_named_by_index_name_and_bus(error, gpu):
    """The others are kept by their UUIDs, whatever CUDA's device order."""
    report = judge(b.failing_ops(b.server(), (f"/GPU:{gpu}",), error))
    assert report.verdict.status == DEGRADED and report.exit_code == 1 and report.verdict.gpus == 3
    failing = next(x for x in report.gpus if x.index == gpu)
    assert failing.label in report.verdict.line and failing.pci_bus_id in failing.label
    finding = by_id(report)[failing.finding]
    assert finding.id == "EC-PLC-005" and failing.label in finding.title and finding.gpus == (failing.key,)
    if error == b.BUSY:
        assert "busy or unavailable" in finding.title
        assert any("compute-apps" in c.line for c in finding.fix.commands)
    keep = [c.line for c in finding.fix.commands if "CUDA_VISIBLE_DEVICES" in c.line]
    assert keep and failing.uuid not in keep[0] and all(x.uuid in keep[0] for x in report.gpus if x.usable)


# --- 2. A GPU served only by PTX that this driver cannot JIT-compile ------------------------------


@pytest.mark.parametrize(
    "os, tf, name, driver",
    [
        ("linux", "2.15", "GeForce RTX 3090", "530.30.02"),  # compute_80 PTX; CUDA 12.2 asks 535.54.03
        ("linux", "2.21", "H100", "550.54.14"),  # compute_90 PTX; CUDA 12.5 asks 555.42.02
        ("wsl", "2.21", "H100", "551.61"),  # the Windows driver's numbers under WSL2 (12.5 asks 555.85)
    ],
)
def test_ptx_only_with_a_driver_older_than_the_builds_cuda_is_an_error_on_that_gpu(os, tf, name, driver):
    spec = g.Spec(os, tf, (card(name),), driver)
    report = judge(g.snapshot(spec))
    finding = by_id(report)["EC-CC-004"]
    assert finding.severity.value == "error" and report.verdict.status == BROKEN
    gpu = report.gpus[0]
    assert not gpu.usable and gpu.finding == "EC-CC-004" and gpu.link("code").status == "broken"
    assert "JIT" in gpu.reason or "PTX" in gpu.reason


def test_ptx_only_beside_a_gpu_with_native_code_is_degraded():
    spec = g.Spec("linux", "2.21", (card("A100"), card("H100")), "550.54.14")
    report = judge(g.snapshot(spec))
    assert report.verdict.status == DEGRADED and report.verdict.gpus == 1
    h100 = next(x for x in report.gpus if "H100" in x.name)
    assert h100.finding == "EC-CC-004" and h100.label in report.verdict.line


def test_ptx_only_with_a_new_enough_driver_runs_with_a_warning():
    report = judge(g.snapshot(g.Spec("linux", "2.21", (card("H100"),), "555.42.02")))
    assert report.verdict.status == GPU_READY and by_id(report)["EC-CC-002"].severity.value == "warning"


# --- 3. An old GPU no release beside the others serves does not decide the plan -------------------


@pytest.mark.parametrize(
    "old, driver, hidden",
    [
        ("GeForce GTX 980", "550.54.14", True),  # Maxwell: driven by 550, no code in 2.21: hidden by its UUID
        ("GeForce GTX 1050", "550.54.14", False),  # Pascal: 2.21 has sm_60, so nothing is left out
        ("GeForce GTX 680", "470.256.02", False),  # Kepler: the 525 driver 2.21 needs does not drive it at all
        ("Tesla K80", "470.256.02", False),
    ],
)
def test_the_plan_is_for_the_gpus_worth_using_and_hides_the_old_one(old, driver, hidden):
    spec = g.Spec("linux", "2.21", (card(old), card("GeForce RTX 3090")), driver, installed=False)
    facts = g.snapshot(spec)
    plan = make_plan(MATRIX, target_from_facts(facts, MATRIX))
    assert plan.option.kind == "gpu" and plan.option.tf == "2.21"
    worth_hiding = MATRIX.support(plan.option.build, MATRIX.gpu(old).compute_capability) == "none"
    assert [x.name for x in plan.choice.left_out] == ([MATRIX.gpu(old).name] if worth_hiding else [])
    leave = [s for s in plan.steps if s.title.startswith("Leave out")]
    if hidden:
        # By UUID: CUDA reads it whatever the device order (CUDA's own would put the RTX 3090 first).
        uuid = next(x.uuid for x in facts.nvml.gpus if "3090" in x.name)
        assert [x.line for x in leave[0].lines] == [f"export CUDA_VISIBLE_DEVICES={uuid}"]
    elif worth_hiding:
        assert leave[0].lines == () and "does not drive it at all" in leave[0].detail
    # The doctor, before TensorFlow is installed, recommends the same and leaves the same GPU out.
    report = judge(facts)
    assert report.verdict.status == NOT_INSTALLED and report.verdict.plan["tensorflow"] == plan.option.tf
    assert any("Leave out" in s.text for s in report.verdict.gpu_path) == worth_hiding


def test_every_gpu_is_an_alternative_where_one_release_serves_them_all():
    spec = g.Spec("linux", "2.21", (card("GeForce GTX 980"), card("GeForce RTX 3090")), "550.54.14", installed=False)
    plan = make_plan(MATRIX, target_from_facts(g.snapshot(spec), MATRIX))
    every = next(a for a in plan.choice.alternatives if a.key == "every-gpu")
    assert every.option is not None and every.option.build.tf < plan.option.build.tf
    assert MATRIX.support(every.option.build, "5.2") != "none" and MATRIX.support(every.option.build, "8.6") != "none"


@pytest.mark.parametrize("old", ["GeForce GTX 680", "Tesla K40"])
def test_an_installed_release_that_runs_on_the_good_gpu_leaves_the_old_one_out(old):
    report = judge(
        b.server_gpus(b.server(), ("Tesla V100-SXM2-32GB", "7.0"), (old, str(MATRIX.gpu(old).compute_capability)))
    )
    assert report.verdict.status == DEGRADED
    fix = by_id(report)["EC-CC-001"].fix
    v100 = next(x for x in report.gpus if "V100" in x.name)
    assert [c.line for c in fix.commands] == [f"export CUDA_VISIBLE_DEVICES={v100.uuid}"]
    assert not any("tensorflow" in c.line and "install" in c.line for c in fix.commands)  # no move to an old release


# --- 4. A path has one target release, and every step is computed for it --------------------------


def test_kepler_on_470_with_a_new_release_moves_to_one_release_and_only_that():
    facts = b.server_gpus(
        b.with_tf(
            b.server(),
            "tensorflow",
            "2.21.0",
            cuda_version="12.5.1",
            compute_capabilities=("sm_60", "sm_70", "sm_80", "sm_89", "compute_90"),
        ),
        ("Tesla K40m", "3.5"),
    )
    facts = b.tf_sees_no_gpu(
        b.change(
            facts, {"nvml.driver_version": "470.256.02", "driver.version": "470.256.02", "python.version": "3.12.3"}
        )
    )
    path = judge(facts).verdict.gpu_path
    assert {s.release for s in path} == {"2.14"}
    lines = " ".join(c.line for s in path for c in s.commands)
    assert (
        "2.14" in lines and "2.21" not in lines and "9.3" not in lines
    )  # no cuDNN 9.3 wheel for the release left behind


def test_no_code_for_the_gpu_and_an_old_driver_take_the_plans_driver_for_the_new_release():
    spec = g.Spec("linux", "2.20", (card("Tesla M60"),), "390.157")
    report = judge(g.snapshot(spec))
    path = report.verdict.gpu_path
    assert report.verdict.finding_id == "EC-CC-001"  # no driver makes code appear: the move is the cause
    assert {s.release for s in path} == {"2.16"}
    assert path[0].text.startswith("Upgrade the NVIDIA driver from 390.157 to 525.60.13")
    assert not any("CUDA 12.5" in s.text for s in path)  # the installed 2.20's needs are gone


def test_a_cudnn_step_is_not_dropped_because_the_cuda_step_clears_its_rule():
    """Without pip wheels (Windows, a system CUDA) cuDNN is a download of its own: both steps stay."""
    report = judge(b.setup_post())
    assert [s.text.split(":")[0] for s in report.verdict.gpu_path] == ["EC-LIB-001", "EC-LIB-002"]
    facts = g.snapshot(g.Spec("linux", "2.10", (card("GeForce RTX 3090"),), floor("linux", "2.10"), quick=True))
    facts = b.change(facts, {"libraries.libraries": ()})  # nothing of CUDA 11.2 on the loader path
    steps = [s.text.split(":")[0] for s in judge(facts).verdict.gpu_path]
    assert "EC-LIB-001" in steps and "EC-LIB-002" in steps


# --- 5. Driver states beyond loaded / not loaded ---------------------------------------------------


def _module_without_libraries(loaded: bool):
    facts = b.no_driver_linux(b.server(), pci_driver="nvidia" if loaded else None)
    return b.change(
        facts,
        {
            "driver.loaded": loaded,
            "driver.version": "550.54.14" if loaded else None,
            "driver.module_files": ("/lib/modules/6.8.0-31-generic/updates/dkms/nvidia.ko.zst",),
            "driver.module_file_version": "550.54.14",
        },
    )


@pytest.mark.parametrize("loaded", [True, False])
def test_a_kernel_module_without_its_user_space_library_is_not_no_driver_installed(loaded):
    report = judge(_module_without_libraries(loaded))
    finding = by_id(report)["EC-DRV-003"]
    assert "no NVIDIA driver is installed" not in finding.title and "user-space library" in finding.title
    assert ("is loaded" if loaded else "installed but not loaded") in finding.title
    assert "EC-GPU-002" not in by_id(report)
    assert all("user-space" in x.reason for x in report.gpus) and report.verdict.status == BROKEN


def test_libraries_and_module_of_another_version_break_the_driver_link():
    facts = b.change(
        b.no_driver_linux(b.server(), pci_driver="nvidia"),
        {
            "driver.loaded": True,
            "driver.version": "535.104.05",
            "nvml": NvmlFacts(status="error", error_kind="version_mismatch", error="Driver/library version mismatch"),
        },
    )
    report = judge(facts)
    assert "EC-DRV-002" in by_id(report)
    assert all(x.link("driver").status == "broken" and x.finding == "EC-DRV-002" for x in report.gpus)


@pytest.mark.parametrize(
    "device", ["0x1004", "0x0fc9"]
)  # a GeForce GTX 780, a GT 730 (Kepler): 470 is their last branch
def test_a_card_the_loaded_driver_does_not_drive_is_named_beside_the_ones_it_does(device):
    report = judge(b.unbound_card(b.server(), device))
    assert report.verdict.status == DEGRADED and report.verdict.gpus == 4
    card_view = next(x for x in report.gpus if x.source == "pci")
    assert card_view.finding == "EC-GPU-004" and "Kepler" in by_id(report)["EC-GPU-004"].title
    assert card_view.name == MATRIX.gpu_by_pci_id(device).name


# --- 6. doctor and plan read the GPU the same way --------------------------------------------------


def _wsl_without_nvml():
    facts = g.snapshot(g.Spec("wsl", "2.15", (card("GeForce RTX 3090"),), "536.25"))
    return b.change(
        facts,
        {
            "nvml": NvmlFacts(status=MISSING, error_kind="library_not_found", error="NVML Shared Library Not Found"),
            "tensorflow.physical_devices": facts.tensorflow.physical_devices[:1],
            "tensorflow.placement": (),
        },
    )


@pytest.mark.parametrize(
    "facts, presence",
    [
        (_wsl_without_nvml(), "unknown"),
        (b.change(b.setup_post(), {"nvml": NvmlFacts(status=MISSING, error_kind="library_not_found")}), "unknown"),
        (b.no_driver_linux(b.server()), "present"),
        (b.no_gpu(), "absent"),
    ],
    ids=["WSL2 without NVML", "Windows without a driver", "Linux, no driver", "no GPU"],
)
def test_doctor_and_plan_read_the_gpu_the_same_way(cli, tmp_path, facts, presence):
    from envcheck.facts import to_json

    path = tmp_path / "facts.json"
    path.write_text(to_json(facts))
    doctor = cli("doctor", "--facts", str(path), "--json").json()
    plan = cli("plan", "--facts", str(path), "--json").json()
    assert doctor["gpu_presence"] == presence
    assert plan["target"]["has_gpu"] == {"present": True, "absent": False, "unknown": None}[presence]
    assert plan["kind"] == ("cpu" if presence == "absent" else "gpu")  # an unknown GPU is not "no GPU"
    assert plan["target"]["gpus"] == [x["name"] for x in doctor["gpus"]]


# --- 7. Names, and --quick agreeing with the full doctor -------------------------------------------


@pytest.mark.parametrize(
    "typed, product, cc",
    [
        ("1080 Ti", "GeForce GTX 1080 Ti", "6.1"),
        ("GT 710", "GeForce GT 710", "3.5"),
        ("MX450", "GeForce MX450", "7.5"),
        ("MX150", "GeForce MX150", "6.1"),
        ("3090", "GeForce RTX 3090", "8.6"),
    ],
)
def test_short_names_are_found_by_plan_and_matrix(cli, typed, product, cc):
    answer = cli("matrix", "gpu", typed, "--json").json()
    assert (answer["name"], answer["compute_capability"]) == (product, cc)
    plan = cli("plan", "--os", "linux", "--python", "3.11", "--gpu", typed, "--json").json()
    assert plan["target"]["gpus"] == [product] and plan["target"]["compute_capability"] == cc


def test_an_ambiguous_model_number_is_not_guessed(cli):
    result = cli("matrix", "gpu", "450")
    assert result.code == 1 and "GeForce GTS 450" in result.err and "GeForce MX450" in result.err


@pytest.mark.parametrize(
    "device, name",
    [
        ("0x128b", "GeForce GT 710"),
        ("0x25a2", "GeForce RTX 3050"),
        ("0x2204", "GeForce RTX 3090"),
        ("0x1f97", "GeForce MX450"),
    ],
)
def test_a_gpu_without_a_driver_is_named_by_its_pci_id(device, name):
    facts = b.no_driver_linux(b.server())
    facts = b.change(
        facts, {"pci.devices": tuple(dataclasses.replace(d, device_id=device, name=None) for d in facts.pci.devices)}
    )
    report = judge(facts)
    assert name in report.verdict.line and device not in report.verdict.line
    assert all(x.name == name for x in report.gpus)


def _tf_113_venv(gpu: bool):
    """A Linux venv with tensorflow-gpu 1.13.1 (CUDA 10.0) and no CUDA 10.0 on the loader path."""
    base = b.server() if gpu else b.no_gpu()
    wheels = tuple(d.name for d in base.packages.distributions if d.name.startswith("nvidia-"))
    facts = b.with_tf(b.with_distributions(b.quick(base), drop=wheels), "tensorflow-gpu", "1.13.1")
    return b.change(
        facts, {"python.version": "3.7.9", "tensorflow": TensorflowFacts(status=SKIPPED), "libraries.libraries": ()}
    )


def _full(facts):
    return b.change(
        facts,
        {
            "quick": False,
            "tensorflow": TensorflowFacts(
                status="error",
                error_kind="import_failed",
                error="ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory",
                distribution="tensorflow-gpu",
                distributions=("tensorflow-gpu",),
            ),
        },
    )


@pytest.mark.parametrize("gpu", [True, False], ids=["with a GPU", "without a GPU"])
def test_quick_agrees_with_the_full_doctor_on_a_tensorflow_gpu_1_13_venv(gpu):
    quick, full = judge(_tf_113_venv(gpu)), judge(_full(_tf_113_venv(gpu)))
    assert quick.verdict.status == full.verdict.status == BROKEN
    assert quick.verdict.finding_id == full.verdict.finding_id
    assert "nothing to fix" not in quick.verdict.line and quick.exit_code == full.exit_code == 1
    assert [s.text for s in quick.verdict.cpu_path] == [s.text for s in full.verdict.cpu_path]


# --- the JSON gpus entries carry their chain ------------------------------------------------------


def test_json_gpus_carry_their_links_and_finding(cli, tmp_path):
    from envcheck.facts import to_json

    path = tmp_path / "facts.json"
    path.write_text(to_json(b.failing_ops(b.server(), ("/GPU:1",), b.BUSY)))
    data = json.loads(cli("doctor", "--facts", str(path), "--json").out)
    assert data["verdict"]["status"] == "degraded" and data["exit_code"] == 1
    gpu1 = data["gpus"][1]
    assert [link["name"] for link in gpu1["links"]] == [
        "bus",
        "driver",
        "nvml",
        "cuda",
        "code",
        "libraries",
        "listed",
        "ops",
    ]
    assert gpu1["links"][-1]["status"] == "broken" and gpu1["finding"] == "EC-PLC-005" and not gpu1["usable"]
    assert all(link["status"] == "ok" for link in data["gpus"][0]["links"])


def test_cpu_only_is_finished_only_without_a_gpu_or_with_all_hidden_on_purpose():
    hidden = judge(b.with_env(b.server(), CUDA_VISIBLE_DEVICES=""))
    assert hidden.verdict.status == CPU_ONLY and hidden.exit_code == 0 and hidden.verdict.finished
    assert "CUDA_VISIBLE_DEVICES=''" in hidden.verdict.line
    none = judge(b.no_gpu())
    assert none.verdict.status == CPU_ONLY and none.exit_code == 0 and none.verdict.finished
    mistyped = judge(b.with_env(b.server(), CUDA_VISIBLE_DEVICES="abc"))
    assert mistyped.verdict.status == BROKEN and mistyped.exit_code == 1  # a mistyped list is no choice
    p.no_finished_cpu_only_with_a_gpu_that_is_not_hidden(None, None, mistyped)
