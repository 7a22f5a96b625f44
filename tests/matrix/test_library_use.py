"""Library file names through the matrix: the family a name belongs to and the releases that load it."""

from __future__ import annotations

import pytest

from envcheck.matrix import load_matrix
from envcheck.matrix.libraries import basename, library_family, library_os, name_version, same_library


@pytest.mark.parametrize(
    "name, family",
    [
        ("cudart64_100.dll", "cudart"),
        ("libcudnn.so.9", "cudnn"),
        ("cublasLt64_12.dll", "cublaslt"),
        ("libcudnn_ops_infer.so.8", "cudnn"),
        (r"C:\CUDA\v11.2\bin\cufft64_10.dll", "cufft"),
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "cuda"),
    ],
)
def test_library_family(name, family):
    assert library_family(name) == family


def test_name_parts():
    assert basename(r"C:\a\b\cudnn64_7.dll") == "cudnn64_7.dll"
    assert library_os("cudnn64_7.dll") == "windows"
    assert library_os("libcudart.10.0.dylib") == "macos"
    assert library_os("libcudart.so.10.0") == "linux"
    assert name_version("cudart64_110.dll") == "110"
    assert name_version("libcudart.so.11.0") == "11.0"
    assert name_version("libcudart.10.0.dylib") == "10.0"
    assert name_version("nvcuda.dll") == ""


def test_same_library():
    assert same_library("CUDART64_110.DLL", "cudart64_110.dll", windows=True)
    assert not same_library("CUDART64_110.DLL", "cudart64_110.dll", windows=False)
    assert same_library("libcudart.so.12.4.127", "libcudart.so.12", windows=False)
    assert not same_library("libcudart.so.120", "libcudart.so.12", windows=False)


def test_cudart64_110_is_every_cuda_11_release_on_windows():
    use = load_matrix().library_use("cudart64_110.dll")
    assert use.os == "windows" and use.known
    assert {b.cuda.release[0] for b in use.builds} == {11}
    assert [str(b.tf) for b in use.builds][0] == "2.4" and str(use.builds[-1].tf) == "2.10"
    assert (
        use.generation() == "CUDA 11.x"
        and use.releases() == "TensorFlow 2.4 (CUDA 11.0, cuDNN 8.0) and 2.5-2.10 (CUDA 11.2, cuDNN 8.1)"
    )


def test_a_name_no_release_loads_is_unknown():
    # No TensorFlow release has a native Windows GPU build for CUDA 12.
    use = load_matrix().library_use("cudart64_12.dll")
    assert not use.known and use.generation() == ""


def test_the_setup_guides_dll_is_cuda_10_0():
    use = load_matrix().library_use("cudart64_100.dll")
    assert use.generation() == "CUDA 10.0"
    assert "1.13" in [str(b.tf) for b in use.builds]


def test_cufft_digits_are_not_the_cuda_version():
    use = load_matrix().library_use("cufft64_10.dll")
    assert all(v.release[0] in (10, 11) for v in use.cuda) and any(v.release[0] == 11 for v in use.cuda)


def test_linux_sonames_and_case():
    m = load_matrix()
    assert m.library_use("libcudnn.so.8").generation() == "cuDNN 8"
    assert m.library_use("CUDNN64_8.DLL").known  # Windows names are matched without case
    assert not m.library_use("LIBCUDNN.SO.8").known  # Linux names are not
