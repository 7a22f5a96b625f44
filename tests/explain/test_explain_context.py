"""Advice from the machine's facts: the doctor's findings the pattern names (exact versions, files
and commands, from the same rules as `envcheck doctor`), and the comparisons of the message with
the machine; nothing when unknown.

Snapshots are built from the real Facts records (the same ones the probes fill and --facts reads);
the compatibility matrix is the bundled one.
"""

from __future__ import annotations

from typing import Optional

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.machine import MachineContext
from envcheck.facts import (
    MISSING,
    OK,
    Distribution,
    DriverFacts,
    EnvFacts,
    Facts,
    GpuProcess,
    LibrariesFacts,
    LibraryCopy,
    LibraryFacts,
    NvmlFacts,
    NvmlGpu,
    PackagesFacts,
    PciDevice,
    PciFacts,
    PlatformFacts,
    PythonFacts,
)

CATALOGUE = load_patterns()


def machine(
    os: str = "linux",
    python: str = "3.11.7",
    bits: int = 64,
    packages: dict[str, str] | None = None,
    gpus: tuple[str, ...] = (),
    driver: Optional[str] = None,
    env: dict[str, str] | None = None,
    cpu_flags: tuple[str, ...] = ("avx", "avx2", "fma"),
    pci_status: Optional[str] = None,
    nvml: Optional[NvmlFacts] = None,
    libraries: Optional[LibrariesFacts] = None,
    nouveau: bool = False,
) -> Facts:
    nvml_facts = nvml or (
        NvmlFacts(
            status=OK,
            driver_version=driver,
            gpus=tuple(
                NvmlGpu(index=i, name=name, memory_total_mb=8192, memory_used_mb=0) for i, name in enumerate(gpus)
            ),
        )
        if gpus and driver
        else NvmlFacts(status=MISSING, error_kind="driver_not_loaded", error="Driver Not Loaded")
    )
    return Facts(
        python=PythonFacts(version=python, bits=bits, executable="/envs/tf/bin/python", machine="x86_64"),
        platform=PlatformFacts(
            os=os,
            system={"windows": "Windows", "macos": "Darwin"}.get(os, "Linux"),
            cpu="Test CPU",
            cpu_flags=cpu_flags,
            machine="x86_64",
        ),
        env=EnvFacts(variables=env or {}),
        packages=PackagesFacts(
            distributions=tuple(Distribution(name=n, version=v) for n, v in (packages or {}).items())
        ),
        pci=PciFacts(
            status=pci_status or (OK if gpus else MISSING),  # the probe's "missing": bus read, no NVIDIA device
            devices=tuple(
                PciDevice(
                    address=f"0000:0{i + 1}:00.0",
                    vendor_id="0x10de",
                    device_id="0x1c03",
                    class_code="0x030000",
                    name=name,
                )
                for i, name in enumerate(gpus)
            ),
        ),
        driver=DriverFacts(status=OK, loaded=bool(driver), version=driver, nouveau_loaded=nouveau),
        nvml=nvml_facts,
        libraries=libraries or LibrariesFacts(status=MISSING),
    )


def explained(text: str, facts: Optional[Facts]):
    (explanation,) = explain(CATALOGUE.scan_text(text), MachineContext(facts, origin="the test machine"))
    return explanation


def notes(explanation) -> str:
    return "\n".join(n.text for n in explanation.machine)


def commands(explanation) -> list[str]:
    return [c.line for n in explanation.machine for c in n.commands]


def findings(explanation) -> list[str]:
    return [n.finding for n in explanation.machine if n.finding]


SETUP_POST = (
    "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a "
    "directory that is named in your %PATH% environment variable. Download and install CUDA 10.0 from this "
    "URL: https://developer.nvidia.com/cuda-toolkit-archive"
)


def test_setup_post_on_its_own_windows_machine():
    """Windows, Python 3.7, tensorflow-gpu 1.13.1, GTX 1060, driver 417.35: install CUDA 10.0 and cuDNN 7.4."""
    facts = machine(
        os="windows", python="3.7.9", packages={"tensorflow-gpu": "1.13.1"}, gpus=("GeForce GTX 1060",), driver="417.35"
    )
    explanation = explained(SETUP_POST, facts)
    text = notes(explanation)
    # The doctor's own finding, with its fix for this machine: CUDA 10.0 and its bin folder on PATH.
    assert findings(explanation) == ["EC-LIB-001"]
    assert "cudart64_100.dll (CUDA 10.0 runtime) is missing: TensorFlow 1.13.1 loads it" in text
    assert r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v10.0\bin" in text
    assert explanation.machine[0].url == "https://developer.nvidia.com/cuda-10.0-download-archive"
    assert "where.exe cudart64_100.dll" in commands(explanation)
    assert all(c.shell == "powershell" for n in explanation.machine for c in n.commands)
    assert not any("ldconfig" in c or "LD_LIBRARY_PATH" in c for c in commands(explanation))


def test_windows_message_from_another_tensorflow_is_called_out():
    """TF 2.10 asks for cudart64_110.dll, so a cudart64_100.dll message came from another install."""
    facts = machine(
        os="windows", python="3.9.13", packages={"tensorflow": "2.10.1"}, gpus=("GeForce GTX 1060",), driver="472.12"
    )
    text = notes(explained(SETUP_POST, facts))
    assert "built for CUDA 11.2 and cuDNN 8.1" in text
    assert (
        "asks for cudart64_110.dll, not cudart64_100.dll (TensorFlow 1.13-2.0 (CUDA 10.0, cuDNN 7.4) load it)" in text
    )


def test_windows_tensorflow_past_native_gpu_support_never_loads_cuda():
    facts = machine(os="windows", python="3.10.11", packages={"tensorflow": "2.15.0"})
    text = notes(explained(SETUP_POST, facts))
    assert "tensorflow 2.15.0 on windows is a CPU-only build and never loads cudart64_100.dll" in text


def test_windows_message_explained_on_linux_says_so():
    text = notes(explained(SETUP_POST, machine(os="linux", packages={"tensorflow": "2.15.0"})))
    assert "This message is printed on windows, but the test machine runs linux" in text


def test_linux_release_with_pip_cuda_gets_the_and_cuda_command():
    facts = machine(
        os="linux", packages={"tensorflow": "2.15.1"}, gpus=("NVIDIA GeForce RTX 4090",), driver="550.54.14"
    )
    explanation = explained(
        "Could not load dynamic library 'libcudart.so.12'; dlerror: libcudart.so.12: cannot open", facts
    )
    assert "/envs/tf/bin/python -m pip install 'tensorflow[and-cuda]==2.15.1'" in commands(explanation)
    (command,) = [c for n in explanation.machine for c in n.commands]
    assert command.pip_args == ("install", "tensorflow[and-cuda]==2.15.1")


def test_linux_release_without_pip_cuda_gets_the_toolkit_and_library_path():
    facts = machine(
        os="linux", python="3.8.10", packages={"tensorflow": "2.4.1"}, gpus=("GeForce GTX 1080 Ti",), driver="460.32.03"
    )
    explanation = explained(
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open", facts
    )
    assert "Install CUDA 11.0" in notes(explanation)
    assert "export LD_LIBRARY_PATH=/usr/local/cuda-11.0/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" in commands(
        explanation
    )
    assert explanation.machine[0].url == "https://developer.nvidia.com/cuda-11.0-download-archive"


def test_linux_message_for_another_cuda_major():
    facts = machine(os="linux", packages={"tensorflow": "2.15.0"})
    text = notes(explained("Could not load dynamic library 'libcudart.so.11.0'; dlerror: x", facts))
    assert "asks for libcudart.so.12, not libcudart.so.11.0" in text


def test_wsl_gets_the_pip_wheels():
    facts = machine(os="wsl", packages={"tensorflow": "2.16.1"}, gpus=("GeForce RTX 3060",), driver="551.23")
    explanation = explained("Could not load dynamic library 'libcudnn.so.8'; dlerror: x", facts)
    assert findings(explanation) == ["EC-LIB-002"]
    assert any("'tensorflow[and-cuda]==2.16.1'" in c for c in commands(explanation))


def test_library_on_disk_but_not_on_the_loader_path():
    copy = LibraryCopy(
        path="/opt/cuda-11.0/lib64/libcudart.so.11.0",
        directory="/opt/cuda-11.0/lib64",
        origin="CUDA_HOME",
        on_loader_path=False,
    )
    facts = machine(
        packages={"tensorflow": "2.4.1"},
        python="3.8.10",
        gpus=("GeForce GTX 1080 Ti",),
        driver="460.32.03",
        libraries=LibrariesFacts(status=OK, libraries=(LibraryFacts(family="cudart", copies=(copy,)),)),
    )
    explanation = explained("Could not load dynamic library 'libcudart.so.11.0'; dlerror: x", facts)
    assert "libcudart.so.11.0 is in /opt/cuda-11.0/lib64, where the loader does not look" in notes(explanation)
    assert "export LD_LIBRARY_PATH=/opt/cuda-11.0/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" in commands(explanation)


def test_library_the_loader_finds_now_points_at_another_process():
    copy = LibraryCopy(
        path="/usr/local/cuda-11.0/lib64/libcudart.so.11.0",
        directory="/usr/local/cuda-11.0/lib64",
        origin="ldconfig",
        loads=True,
    )
    facts = machine(
        packages={"tensorflow": "2.4.1"},
        python="3.8.10",
        gpus=("GeForce GTX 1080 Ti",),
        driver="460.32.03",
        libraries=LibrariesFacts(status=OK, libraries=(LibraryFacts(family="cudart", copies=(copy,)),)),
    )
    explanation = explained("Could not load dynamic library 'libcudart.so.11.0'; dlerror: x", facts)
    assert "finds libcudart.so.11.0 at /usr/local/cuda-11.0/lib64/libcudart.so.11.0" in notes(explanation)
    assert "EC-LIB-001" not in findings(explanation)


def test_tensorflow_missing_from_the_probed_interpreter():
    text = notes(explained("Could not load dynamic library 'libcudart.so.12'; dlerror: x", machine(packages={})))
    assert "TensorFlow is not installed in /envs/tf/bin/python" in text


def test_release_outside_the_matrix_is_unknown_not_guessed():
    text = notes(
        explained(
            "Could not load dynamic library 'libcudart.so.12'; dlerror: x", machine(packages={"tensorflow": "0.9.0"})
        )
    )
    assert "not in envcheck's compatibility matrix" in text


CUINIT_303 = "failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)"


def test_no_driver_error_is_harmless_on_a_machine_without_nvidia_gpu():
    explanation = explained(CUINIT_303, machine(gpus=()))
    assert explanation.harmless
    assert "no NVIDIA GPU" in notes(explanation)


def test_no_driver_error_is_not_harmless_when_a_gpu_has_no_driver():
    facts = machine(gpus=("GeForce GTX 1060",), driver=None, nouveau=True)
    facts = type(facts)(
        **{
            **facts.__dict__,
            "pci": PciFacts(
                status=OK,
                devices=(
                    PciDevice(
                        address="0000:01:00.0",
                        vendor_id="0x10de",
                        device_id="0x1c03",
                        class_code="0x030000",
                        name="GP106 [GeForce GTX 1060 6GB]",
                        driver="nouveau",
                    ),
                ),
            ),
        }
    )
    explanation = explained(CUINIT_303, facts)
    assert not explanation.harmless
    assert "GeForce GTX 1060 6GB but no working NVIDIA driver" in notes(explanation)
    assert "EC-GPU-003" in findings(explanation) and "nouveau" in notes(explanation)


def test_harmless_notice_becomes_an_error_when_the_gpu_is_there():
    explanation = explained(
        "Could not find cuda drivers on your machine, GPU will not be used.", machine(gpus=("Tesla T4",), driver=None)
    )
    assert not explanation.harmless


def test_driver_works_here_so_the_process_could_not_reach_it():
    explanation = explained(CUINIT_303, machine(gpus=("Tesla T4",), driver="535.104.05"))
    assert "docker --gpus all" in notes(explanation)
    assert not explanation.harmless


def test_unknown_pci_makes_no_claim_about_the_gpu():
    explanation = explained(CUINIT_303, machine(gpus=(), pci_status="skipped"))
    # Only the doctor's reading of NVML's answer; no "no GPU here, harmless" guess.
    assert findings(explanation) == ["EC-DRV-004"] and len(explanation.machine) == 1
    assert not explanation.harmless


def test_macos_has_no_cuda():
    explanation = explained("Could not find cuda drivers on your machine, GPU will not be used.", machine(os="macos"))
    assert explanation.harmless and "macOS has no CUDA" in notes(explanation)


NO_DEVICE = "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"


@pytest.mark.parametrize("value", ["", "-1"])
def test_cuda_visible_devices_hiding_every_gpu(value):
    explanation = explained(
        NO_DEVICE, machine(gpus=("Tesla T4",), driver="535.104.05", env={"CUDA_VISIBLE_DEVICES": value})
    )
    assert findings(explanation) == ["EC-ENV-003"]
    assert f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU" in notes(explanation)
    assert "unset CUDA_VISIBLE_DEVICES" in commands(explanation)


def test_cuda_visible_devices_out_of_range():
    facts = machine(gpus=("Tesla T4", "Tesla T4"), driver="535.104.05", env={"CUDA_VISIBLE_DEVICES": "2,3"})
    explanation = explained(NO_DEVICE, facts)
    assert findings(explanation) == ["EC-ENV-002"]
    assert "names 2, but there are only 2 GPUs (0-1): no GPU is visible at all" in notes(explanation)


def test_pinned_gpu_beyond_the_visible_ones():
    text = (
        "Could not satisfy explicit device specification '/device:GPU:1' because no devices matching that "
        "specification are registered in this process"
    )
    facts = machine(gpus=("Tesla T4", "Tesla T4"), driver="535.104.05", env={"CUDA_VISIBLE_DEVICES": "0"})
    assert "here 1 is visible, so /device:GPU:1 does not exist" in notes(explained(text, facts))


def test_illegal_instruction_on_a_cpu_without_avx():
    explanation = explained("Illegal instruction (core dumped)", machine(cpu_flags=("sse4_1", "sse4_2")))
    assert findings(explanation) == ["EC-TF-012"]  # the doctor's CPU finding, attached by id
    assert "Test CPU has no AVX instructions" in notes(explanation)


def test_illegal_instruction_on_a_cpu_with_avx_rules_the_cpu_out():
    from envcheck.explain.machine import assess_causes

    facts = machine()
    ctx = MachineContext(facts, origin="the test machine")
    (explanation,) = explain(CATALOGUE.scan_text("Illegal instruction (core dumped)"), ctx)
    assert "EC-TF-012" not in findings(explanation) and "AVX" not in notes(explanation)
    assert [c.status for c in assess_causes(None, explanation.causes, ctx)] == ["ruled-out"]


def test_pip_finds_nothing_for_32_bit_python():
    facts = machine(os="windows", python="3.7.9", bits=32)
    explanation = explained("ERROR: No matching distribution found for tensorflow", facts)
    assert "EC-PY-001" in findings(explanation)
    assert "Python 3.7.9 is 32-bit; TensorFlow needs a 64-bit Python" in notes(explanation)


def test_pip_finds_nothing_for_a_python_no_release_supports():
    explanation = explained("ERROR: No matching distribution found for tensorflow", machine(python="3.19.0"))
    assert "EC-PY-002" in findings(explanation)
    assert "Python 3.19 is not supported by any TensorFlow release" in notes(explanation)


def test_pip_error_on_a_supported_python_names_the_newest_release():
    from envcheck.matrix import load_matrix

    newest = [b for b in load_matrix().tf_releases("linux") if b.supports_python("3.11")][-1]
    explanation = explained("ERROR: No matching distribution found for tensorflow", machine(python="3.11.7"))
    assert findings(explanation) == ["EC-TF-001"]  # the doctor's install step for this machine
    assert f"/envs/tf/bin/python -m pip install 'tensorflow-cpu=={newest.tf}.*'" in commands(explanation)


def test_compute_capability_advice_needs_only_the_matrix():
    text = (
        "Ignoring visible gpu device (device: 0, name: GeForce GT 730, pci bus id: 0000:01:00.0, compute "
        "capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda capability is 3.7."
    )
    explanation = explained(text, None)
    matrix_note = notes(explanation)
    assert "still runs on compute capability 3.5" in matrix_note
    from envcheck.matrix import load_matrix

    matrix = load_matrix()
    newest = [b for b in matrix.tf_releases("linux") if b.gpu and matrix.support(b, "3.5") != "none"][-1]
    assert f"is {newest.tf} " in matrix_note


def test_driver_older_than_the_cuda_of_the_installed_tensorflow():
    facts = machine(
        os="windows", python="3.9.13", packages={"tensorflow": "2.10.0"}, gpus=("GeForce GTX 1060",), driver="417.35"
    )
    explanation = explained("CUDA driver version is insufficient for CUDA runtime version", facts)
    assert findings(explanation) == ["EC-DRV-001"]
    assert "Driver 417.35 is too old for CUDA 11.2" in notes(explanation) and "452.39 or newer" in notes(explanation)


def test_driver_new_enough_points_at_another_runtime():
    facts = machine(os="linux", packages={"tensorflow": "2.15.0"}, gpus=("Tesla T4",), driver="550.54.14")
    assert "is new enough for CUDA 12.2" in notes(
        explained("CUDA driver version is insufficient for CUDA runtime version", facts)
    )


def test_memory_held_by_other_processes():
    gpu = NvmlGpu(
        index=0,
        name="Tesla T4",
        memory_total_mb=15360,
        memory_used_mb=14000,
        processes=(GpuProcess(pid=4242, name="python", used_memory_mb=13900),),
    )
    facts = machine(
        nvml=NvmlFacts(status=OK, driver_version="535.104.05", gpus=(gpu,)), gpus=("Tesla T4",), driver="535.104.05"
    )
    explanation = explained("Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR", facts)
    assert "EC-ENV-005" in findings(explanation)
    assert "GPU 0 (Tesla T4): 14000 of 15360 MiB already in use by python (pid 4242, 13900 MiB)" in notes(explanation)
    assert "export TF_FORCE_GPU_ALLOW_GROWTH=true" in commands(explanation)


def test_a_broken_specializer_does_not_hide_the_explanation(monkeypatch):
    from envcheck.explain import machine as explain_context

    def broken(occurrence, ctx):
        raise KeyError("boom")

    monkeypatch.setitem(explain_context.SPECIALIZERS, "gpu_memory", broken)
    explanation = explained("OOM when allocating tensor with shape[64,3,3,3]", machine())
    assert explanation.title.startswith("Out of GPU memory")
    assert "this is a bug" in notes(explanation)


def test_cublas_of_another_cuda_major():
    facts = machine(os="linux", packages={"tensorflow": "2.15.0"})
    text = notes(explained("Could not load dynamic library 'libcublas.so.11'; dlerror: x", facts))
    assert "asks for libcublas.so.12, not libcublas.so.11" in text


def test_cufft_numbering_is_not_taken_for_cuda():
    """cuFFT 10 ships with CUDA 11: its number says nothing about CUDA, so no mismatch is claimed."""
    facts = machine(os="linux", python="3.8.10", packages={"tensorflow": "2.4.1"})
    text = notes(explained("Could not load dynamic library 'libcufft.so.10'; dlerror: x", facts))
    assert "different TensorFlow" not in text


def test_unknown_os_gives_no_version_claims():
    facts = machine(packages={"tensorflow": "2.15.0"})
    facts = type(facts)(**{**facts.__dict__, "platform": PlatformFacts(status="error", error="boom")})
    explanation = explained("Could not load dynamic library 'libcudart.so.12'; dlerror: x", facts)
    assert "compatibility matrix" not in notes(explanation) and "CUDA 12" not in notes(explanation)


def test_release_before_the_pip_extra_in_a_conda_environment_gets_conda():
    """TF 2.4 finds CUDA on the library path: in a conda env the conda packages, else apt."""
    facts = machine(
        os="linux", python="3.8.10", packages={"tensorflow": "2.4.1"}, gpus=("GeForce GTX 1080 Ti",), driver="460.32.03"
    )
    conda = type(facts)(
        **{
            **facts.__dict__,
            "python": PythonFacts(version="3.8.10", bits=64, executable="/envs/tf/bin/python", in_conda=True),
        }
    )
    message = "Could not load dynamic library 'libcudart.so.11.0'; dlerror: x"
    assert "conda install -c conda-forge cudatoolkit=11.0 cudnn=8.0" in commands(explained(message, conda))
    assert 'export LD_LIBRARY_PATH="$CONDA_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"' in commands(
        explained(message, conda)
    )
    assert not any("conda" in c for c in commands(explained(message, facts)))


def test_compute_capability_advice_installs_cuda_like_the_plan():
    text = (
        "Ignoring visible gpu device (device: 0, name: Tesla K40c, pci bus id: 0000:03:00.0, compute "
        "capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda capability is 3.7."
    )
    from envcheck.matrix import load_matrix
    from envcheck.planner import apply_overrides, make_plan
    from envcheck.planner.steps import requirement

    matrix = load_matrix()
    newest = [b for b in matrix.tf_releases("linux") if b.gpu and matrix.support(b, "3.5") != "none"][-1]
    plan = make_plan(matrix, apply_overrides(None, matrix, os="linux", compute_capability="3.5", tf=str(newest.tf)))
    assert commands(explained(text, machine(os="linux"))) == [
        f"/envs/tf/bin/python -m pip install '{requirement(plan.option)}'"
    ]


def test_driver_advice_on_a_machine_without_any_nvidia_gpu():
    facts = machine(os="linux", packages={"tensorflow": "2.15.0"})
    text = notes(explained("CUDA driver version is insufficient for CUDA runtime version", facts))
    assert "no NVIDIA GPU" in text and "could not read" not in text


def test_gpu_memory_advice_on_a_machine_without_any_nvidia_gpu():
    text = notes(
        explained(
            "OOM when allocating tensor with shape[64,3,3,3]", machine(os="linux", packages={"tensorflow": "2.15.0"})
        )
    )
    assert "no NVIDIA GPU" in text and "TF_FORCE_GPU_ALLOW_GROWTH" not in text
    alone = machine(os="linux", packages={"tensorflow": "2.15.0"}, gpus=("Tesla T4",), driver="550.54.14")
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in notes(explained("OOM when allocating tensor with shape[64,3,3,3]", alone))
    # A GPU shared with another process: the doctor's EC-ENV-009, with the fix for this shell.
    gpu = NvmlGpu(
        index=0,
        name="Tesla T4",
        memory_total_mb=15360,
        memory_used_mb=2000,
        processes=(GpuProcess(pid=4242, name="python", used_memory_mb=1900),),
    )
    shared = machine(
        os="linux",
        packages={"tensorflow": "2.15.0"},
        nvml=NvmlFacts(status=OK, driver_version="550.54.14", gpus=(gpu,)),
        gpus=("Tesla T4",),
        driver="550.54.14",
    )
    explanation = explained("OOM when allocating tensor with shape[64,3,3,3]", shared)
    assert findings(explanation) == ["EC-ENV-009"]
    assert "TF_FORCE_GPU_ALLOW_GROWTH is not set" in notes(explanation)
    assert "export TF_FORCE_GPU_ALLOW_GROWTH=true" in commands(explanation)


def test_xla_advice_is_the_doctors_finding_for_where_ptxas_is():
    from envcheck.facts import CudaToolkit

    def with_toolkit(path: str) -> Facts:
        toolkit = CudaToolkit(path=path, version="12.2", origin="cuda-dir")
        return machine(
            packages={"tensorflow": "2.15.0"},
            gpus=("Tesla T4",),
            driver="550.54.14",
            libraries=LibrariesFacts(status=OK, toolkits=(toolkit,)),
        )

    message = "ptxas fatal   : Unsupported .version 7.1; current version is '7.0'"
    explanation = explained(message, with_toolkit("/opt/cuda-12.2"))
    assert "EC-LIB-009" in findings(explanation)
    assert "export XLA_FLAGS=--xla_gpu_cuda_data_dir=/opt/cuda-12.2" in commands(explanation)
    assert "EC-LIB-009" not in findings(explained(message, with_toolkit("/usr/local/cuda-12.2")))


def test_no_module_named_tensorflow_is_the_doctors_finding_or_another_interpreter():
    message = "ModuleNotFoundError: No module named 'tensorflow'"
    missing = explained(message, machine())
    assert findings(missing) == ["EC-TF-001"]
    assert "TensorFlow is not installed in /envs/tf/bin/python" in notes(missing)
    present = explained(message, machine(packages={"tensorflow": "2.15.0"}))
    assert findings(present) == [] and "came from a different interpreter" in notes(present)


def test_a_message_of_an_os_can_come_from_one_that_runs_the_same_wheels():
    """Read from the platforms, not a list: WSL2 runs the Linux wheels, so a Linux-only message
    can come from WSL2 and a WSL2 one from Linux; neither from Windows or macOS."""
    from envcheck.explain.machine import _compatible_oses

    assert _compatible_oses(("linux",)) == {"linux", "wsl"}
    assert _compatible_oses(("wsl",)) == {"linux", "wsl"}
    assert _compatible_oses(("windows",)) == {"windows"}
    assert _compatible_oses(("macos", "windows")) == {"macos", "windows"}
