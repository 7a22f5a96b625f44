"""The bundled compatibility matrix: coverage, lookups across the whole range, and its own consistency."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.errors import UsageError
from envcheck.matrix import load_matrix


@pytest.fixture(scope="module")
def m():
    return load_matrix()


def test_covers_every_minor_release_from_1_0_to_2_21(m):
    assert m.tf_range() == (Version("1.0"), Version("2.21"))
    minors = [f"1.{i}" for i in range(16)] + [f"2.{i}" for i in range(22)]
    missing = [v for v in minors if m.tf_build(v, "linux") is None]
    assert missing == []
    assert [v for v in minors if Version(v) <= Version("2.10") and m.tf_build(v, "windows") is None] == []


def test_every_row_names_a_source(m):
    rows = [*m.tf_releases(), *m.cuda_releases(), *m.cudnn_releases(), *m.gpus(), m.platform]
    for row in rows:
        assert row.sources, row
        for source in row.sources:
            assert re.match(r"https?://\S+$", source), (row, source)


# --- TensorFlow lookups across the range ------------------------------------------------------


def test_tf_1_0_linux(m):
    build = m.tf_build("1.0", "linux")
    assert (str(build.cuda), str(build.cudnn), build.distribution) == ("8.0", "5.1", "tensorflow-gpu")
    assert "2.7" in build.python
    assert {"libcudart.so.8.0", "libcudnn.so.5"} <= set(build.libraries)


def test_tf_1_13_windows_is_the_setup_post_failure(m):
    build = m.tf_build("1.13.1", "windows")
    assert (str(build.cuda), str(build.cudnn)) == ("10.0", "7.4")
    # This wheel's build_info.py carries no DLL names, so a missing cudart is a bare "DLL load failed".
    assert any("DLL load failed" in note for note in build.notes)
    assert any("Could not find 'cudart64_100.dll'" in note for note in m.tf_build("1.14", "windows").notes)
    assert "cudart64_100.dll" in build.libraries
    assert "cudnn64_7.dll" in build.libraries
    assert build.python == ("3.5", "3.6", "3.7")
    assert build.distribution == "tensorflow-gpu"


def test_tf_1_13_linux_loads_sonames_not_dlls(m):
    build = m.tf_build("1.13", "linux")
    assert "libcudart.so.10.0" in build.libraries
    assert not any(name.endswith(".dll") for name in build.libraries)


def test_tf_2_0(m):
    build = m.tf_build("2.0", "linux")
    assert (str(build.cuda), str(build.cudnn), build.distribution) == ("10.0", "7.4", "tensorflow-gpu")


def test_tf_2_4_first_cuda_11(m):
    build = m.tf_build("2.4", "linux")
    assert (str(build.cuda), str(build.cudnn)) == ("11.0", "8.0")
    assert build.min_compute_capability == Version("3.5")
    assert "compute_80" in build.compute_capabilities


def test_tf_2_10_windows_last_native_gpu(m):
    build = m.tf_build("2.10", "windows")
    assert build.gpu and (str(build.cuda), str(build.cudnn)) == ("11.2", "8.1")
    # CUDA 11.x keeps the runtime at cudart64_110.dll although build_info names cudart64_112.dll.
    assert "cudart64_110.dll" in build.libraries and "cudart64_112.dll" not in build.libraries
    assert "cudnn64_8.dll" in build.libraries
    assert any("cudart64_112.dll" in text for text in (*build.notes, *(c.was for c in build.history)))
    assert m.platform.windows_native_gpu_last == Version("2.10")


def test_tf_2_11_windows_has_no_gpu(m):
    build = m.tf_build("2.11", "windows")
    assert build is not None and not build.gpu
    assert build.cuda is None and build.compute_capabilities == () and build.libraries == ()


def test_tf_2_15_pip_cuda(m):
    build = m.tf_build("2.15", "linux")
    assert (str(build.cuda), str(build.cudnn)) == ("12.2", "8.9")
    assert build.pip_cuda.extra == "and-cuda"
    assert build.pip_cuda.packages["nvidia-cudnn-cu12"] == "==8.9.4.25"
    assert "libcudart.so.12" in build.libraries and "libcudnn.so.8" in build.libraries


def test_tf_2_16_and_2_21(m):
    assert (str(m.tf_build("2.16", "linux").cuda), str(m.tf_build("2.16", "linux").cudnn)) == ("12.3", "8.9")
    build = m.tf_build("2.21", "linux")
    assert (str(build.cuda), str(build.cudnn)) == ("12.5", "9.3")
    assert build.python == ("3.10", "3.11", "3.12", "3.13")
    assert build.min_compute_capability == Version("6.0")
    assert "libcudnn.so.9" in build.libraries


def test_and_cuda_starts_at_2_14(m):
    assert m.platform.and_cuda_first == Version("2.14")
    assert m.tf_build("2.13", "linux").pip_cuda is None
    assert m.tf_build("2.14", "linux").pip_cuda is not None


def test_tensorflow_gpu_end_of_life(m):
    dummy = SpecifierSet(m.platform.tensorflow_gpu_dummy)
    assert "2.12.0" in dummy and "2.11.0" not in dummy
    assert m.platform.tensorflow_gpu_last_real == Version("2.11")
    assert m.platform.gpu_in_tensorflow_package_from == Version("2.1")
    assert m.tf_build("2.1", "linux").distribution == "tensorflow"


def test_macos_has_cuda_only_in_1_0_and_1_1(m):
    assert m.platform.macos_gpu is False
    assert m.tf_build("1.1", "macos").gpu
    assert not m.tf_build("1.2", "macos").gpu
    assert m.tf_build("2.20", "macos") is not None and not m.tf_build("2.20", "macos").gpu


def test_patch_release_resolves_to_its_minor(m):
    assert m.tf_build("2.15.1", "linux") is m.tf_build("2.15", "linux")
    assert m.tf_build(Version("2.16.2"), "linux") is m.tf_build("2.16", "linux")


def test_patch_row_covers_exactly_its_release(m):
    # 2.15.0's and-cuda extra pinned TensorRT; 2.15.0.post1 and 2.15.1 dropped it.
    exact = m.tf_build("2.15.0", "linux")
    assert exact.is_patch_row and "tensorrt" in exact.pip_cuda.packages
    for later in ("2.15.0.post1", "2.15.1", "2.15"):
        build = m.tf_build(later, "linux")
        assert not build.is_patch_row and "tensorrt" not in build.pip_cuda.packages, later
    assert m.tf_build("2.15.0", "windows") is m.tf_build("2.15", "windows")


def test_wsl_uses_the_linux_build(m):
    assert m.tf_build("2.15", "wsl") is m.tf_build("2.15", "linux")
    assert m.tf_releases("wsl") == m.tf_releases("linux")


def test_versions_outside_the_matrix_are_unknown(m):
    assert m.tf_build("3.0", "linux") is None
    assert m.tf_build("0.12", "linux") is None
    assert m.tf_build("2.22", "linux") is None


def test_bad_arguments_are_usage_errors(m):
    with pytest.raises(UsageError):
        m.tf_build("banana", "linux")
    with pytest.raises(UsageError):
        m.tf_build("2.15", "solaris")


def test_releases_are_ascending(m):
    versions = [b.tf for b in m.tf_releases("linux")]
    assert versions == sorted(versions)


# --- CUDA, cuDNN ------------------------------------------------------------------------------


def test_cuda_min_driver(m):
    assert str(m.min_driver("11.2", "linux")) == "460.27.03"
    assert str(m.min_driver("11.2", "windows")) == "460.82"
    assert str(m.min_driver("10.0", "windows")) == "411.31"
    assert m.cuda("12.2.1") is m.cuda("12.2")
    assert m.cuda("10") is None
    assert m.cuda("14.0") is None


def test_driver_versions_keep_their_spelling_and_compare_as_versions(m):
    driver = m.min_driver("12.2", "linux")
    assert str(driver) == "535.54.03"
    assert Version("535.104.05") > driver > Version("535.9")


def test_minor_version_compatibility_floors(m):
    assert str(m.minor_compat_floor(11, "linux")) == "450.80.02"
    assert str(m.minor_compat_floor("12", "linux")) == "525.60.13"
    assert m.minor_compat_floor(11, "windows") is not None
    assert m.minor_compat_floor(9, "linux") is None


def test_toolkits_drop_architectures(m):
    assert "3.0" in m.cuda("10.2").architectures and "3.0" not in m.cuda("11.0").architectures
    assert "3.5" in m.cuda("11.8").architectures and "3.5" not in m.cuda("12.0").architectures
    assert "7.0" in m.cuda("12.9").architectures and "7.0" not in m.cuda("13.0").architectures
    assert "12.0" in m.cuda("12.8").architectures and "12.0" not in m.cuda("12.6").architectures


def test_every_gpu_build_names_known_cuda_and_cudnn_that_fit_together(m):
    for build in m.tf_releases():
        if not build.gpu:
            continue
        cuda = m.cuda(build.cuda)
        cudnn = m.cudnn(build.cudnn)
        assert cuda is not None and cudnn is not None, build
        assert str(cuda.version) in cudnn.cuda, (
            f"TF {build.tf} {build.os}: cuDNN {cudnn.version} was not built for CUDA {cuda.version}"
        )
        assert str(build.min_compute_capability) in cuda.architectures, (
            f"TF {build.tf} {build.os}: CUDA {cuda.version} cannot build for {build.min_compute_capability}"
        )


def test_library_names_follow_the_platform(m):
    for build in m.tf_releases():
        suffix = {"windows": r"\.dll$", "linux": r"\.so\.[\d.]+$", "macos": r"\.dylib$"}[build.os]
        assert all(re.search(suffix, name) for name in build.libraries), (build.tf, build.os)
    assert "libcudart.so.11.0" in m.tf_build("2.10", "linux").libraries
    assert "libcudart.so.12" in m.tf_build("2.17", "linux").libraries


# --- GPUs and what runs on them ---------------------------------------------------------------


@pytest.mark.parametrize(
    "typed, name, capability",
    [
        ("GeForce GTX 1060", "GeForce GTX 1060", "6.1"),
        ("gtx1060", "GeForce GTX 1060", "6.1"),
        ("NVIDIA GeForce GTX 1060 6GB", "GeForce GTX 1060", "6.1"),
        ("TITAN X (Pascal)", "TITAN X (Pascal)", "6.1"),
        ("GeForce GTX TITAN X", "GeForce GTX TITAN X", "5.2"),
        ("Tesla K80", "Tesla K80", "3.7"),
        ("NVIDIA A100-SXM4-80GB", "A100", "8.0"),
        ("NVIDIA H100 80GB HBM3", "H100", "9.0"),
        ("H200", "H200", "9.0"),
        ("NVIDIA B200", "B200", "10.0"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "GeForce RTX 3060", "8.6"),
        ("rtx 5090", "GeForce RTX 5090", "12.0"),
    ],
)
def test_gpu_names_match_forgivingly(m, typed, name, capability):
    gpu = m.gpu(typed)
    assert gpu is not None, typed
    assert (gpu.name, str(gpu.compute_capability)) == (name, capability)


def test_close_names_do_not_match(m):
    assert m.gpu("GTX 1061") is None
    assert m.gpu("Titan X") is None  # ambiguous: Maxwell or Pascal
    suggested = {g.name for g in m.gpu_candidates("Titan X")}
    assert {"GeForce GTX TITAN X", "TITAN X (Pascal)"} <= suggested


def test_support_native_ptx_none(m):
    tf221 = m.tf_build("2.21", "linux")  # sm_60 sm_70 sm_80 sm_89 compute_90
    assert m.support(tf221, "8.6") == "native"  # sm_80 cubins load on 8.6
    assert m.support(tf221, "6.1") == "native"
    # Blackwell: compute_90 PTX would reach it, but 2.21 compiles its kernels for the card at run
    # time with CUDA 12.5's PTX ISA, which cannot target 12.0 (first in CUDA 12.8)
    assert m.support(tf221, "12.0") == "none"
    assert m.support(tf221, "5.2") == "none"
    assert m.support(m.tf_build("2.15", "linux"), "8.0") == "ptx"
    assert m.support(m.tf_build("2.15", "linux"), "12.0") == "ptx"  # before 2.16: the driver JIT-compiles it
    assert m.support(m.tf_build("2.11", "windows"), "8.6") == "none"


@pytest.mark.parametrize(
    "tf, cuda, capability, serves",
    [
        ("2.16", "12.3", "12.0", False),  # a Blackwell GeForce: first in CUDA 12.8
        ("2.21", "12.5", "10.0", False),  # B200: first in CUDA 12.8
        ("2.21", "12.5", "9.0", True),  # Hopper is in CUDA 12.5
        ("2.16", "12.3", "8.9", True),
        ("2.15", "12.2", "12.0", True),  # before 2.16 the driver JIT-compiles the build's PTX
        ("2.4", "11.0", "8.6", True),  # an RTX 30 card on TensorFlow 2.4
        (None, "12.5", "12.0", True),  # the release not known: as PTX always did
        ("2.21", None, "12.0", True),
    ],
)
def test_ptx_serves_a_newer_card_only_where_the_driver_compiles_it(m, tf, cuda, capability, serves):
    assert m.ptx_serves(tf, cuda, capability) is serves


# --- Against real parts of this machine -------------------------------------------------------


def _installed_tf_build_info() -> dict | None:
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "python" / "platform" / "build_info.py"
    if not path.exists():
        return None
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "build_info":
            return dict(ast.literal_eval(node.value.args[0]))
    return None


def test_matrix_agrees_with_the_installed_tensorflow_wheel(m):
    info = _installed_tf_build_info()
    if not info or not info.get("is_cuda_build"):
        pytest.skip("no CUDA build of TensorFlow installed")
    import importlib.metadata

    version = importlib.metadata.version("tensorflow")
    build = m.tf_build(version, "linux")
    assert build is not None, f"installed TensorFlow {version} is not in the matrix"
    assert build.compute_capabilities == tuple(info["cuda_compute_capabilities"])
    assert Version(info["cuda_version"]).release[:2] == build.cuda.release[:2]
    assert Version(info["cudnn_version"]).release[0] == build.cudnn.release[0]


def test_pip_cuda_runtime_wheel_ships_the_soname_the_matrix_names(m):
    spec = importlib.util.find_spec("nvidia.cuda_runtime")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("nvidia-cuda-runtime-cu12 is not installed")
    lib_dir = Path(list(spec.submodule_search_locations)[0]) / "lib"
    shipped = {p.name for p in lib_dir.glob("libcudart.so*")}
    expected = {n for n in m.tf_build("2.18", "linux").libraries if n.startswith("libcudart")}
    assert expected and expected <= shipped


def _nvcc() -> str | None:
    for candidate in (
        shutil.which("nvcc"),
        *(os.path.join(os.environ[k], "bin", "nvcc") for k in ("CUDA_HOME", "CUDA_PATH") if k in os.environ),
        "/usr/local/cuda/bin/nvcc",
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def test_local_cuda_toolkit_architectures_match_the_matrix(m):
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("no CUDA toolkit on this machine")
    version = re.search(
        r"release (\d+\.\d+)", subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    )
    release = m.cuda(version.group(1)) if version else None
    if release is None:
        pytest.skip("the local toolkit's release is not in the matrix")
    listed = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=30).stdout.split()
    local = sorted({f"{int(a[8:-1])}.{a[-1]}" for a in listed if re.fullmatch(r"compute_\d+", a)}, key=Version)
    assert local == sorted(release.architectures, key=Version)


def test_library_use_names_a_file_by_the_releases_that_load_it():
    matrix = load_matrix()
    runtime_11 = matrix.library_use("libcudart.so.11.0")
    assert runtime_11.generation() == "CUDA 11.x"  # every CUDA 11 minor ships libcudart.so.11.0
    assert runtime_11.releases().startswith("TensorFlow 2.4 (CUDA 11.0, cuDNN 8.0), 2.5-2.11 (CUDA 11.2, cuDNN 8.1)")
    assert runtime_11.releases().endswith(" and 2.14 (CUDA 11.8, cuDNN 8.7)")
    dll = matrix.library_use("cudart64_100.dll")
    assert (dll.generation(), dll.releases()) == ("CUDA 10.0", "TensorFlow 1.13-2.0 (CUDA 10.0, cuDNN 7.4)")
    unknown = matrix.library_use("cudart64_12.dll")  # native Windows GPU builds end with CUDA 11.2
    assert (unknown.known, unknown.generation(), unknown.releases()) == (False, "", "")
