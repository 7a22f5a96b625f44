"""The Windows DLL search, as pure functions over Windows-shaped PATHs and directory listings."""

from __future__ import annotations

import pytest

from envcheck.probes.library_search import match_library, search_windows, windows_file_version, windows_toolkits

TOOLKIT = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"
SYSTEM32 = r"C:\Windows\System32"


class Listing:
    """A fake filesystem: directory -> file names; Windows paths ignore case."""

    def __init__(self, dirs: dict[str, list[str]]):
        self.dirs = {k.lower().rstrip("\\"): v for k, v in dirs.items()}
        self.listed: list[str] = []

    def __call__(self, directory: str) -> list[str]:
        self.listed.append(directory)
        key = directory.lower().rstrip("\\")
        if key not in self.dirs:
            raise FileNotFoundError(directory)
        return self.dirs[key]


def family(result, name):
    return next(f for f in result.libraries if f.family == name)


ENV = {"SystemRoot": r"C:\Windows"}


def test_setup_post_failure_cuda_90_installed_where_tf_113_wants_100():
    """TF 1.13 asks for cudart64_100.dll; the machine has CUDA 9.0 on PATH, so only cudart64_90."""
    v90 = rf"{TOOLKIT}\v9.0\bin"
    listing = Listing(
        {
            SYSTEM32: ["nvcuda.dll", "msvcp140.dll", "kernel32.dll"],
            v90: [
                "cudart64_90.dll",
                "cublas64_90.dll",
                "cufft64_90.dll",
                "curand64_90.dll",
                "cusolver64_90.dll",
                "cusparse64_90.dll",
                "cudnn64_7.dll",
                "nvcc.exe",
            ],
        }
    )
    env = dict(ENV, CUDA_PATH=rf"{TOOLKIT}\v9.0", CUDA_PATH_V9_0=rf"{TOOLKIT}\v9.0")
    result = search_windows([SYSTEM32, v90, r"C:\Python36"], env, listing)
    cudart = family(result, "cudart")
    assert [(c.path, c.file_version, c.origin) for c in cudart.copies] == [(rf"{v90}\cudart64_90.dll", "9.0", "PATH")]
    assert cudart.winners == {"cudart64_90.dll": rf"{v90}\cudart64_90.dll"}
    assert "cudart64_100.dll" not in cudart.winners
    assert family(result, "cudnn").copies[0].file_version == "7"
    assert family(result, "nvcuda").winner == rf"{SYSTEM32}\nvcuda.dll"
    assert family(result, "msvcp140").copies[0].origin == "system"
    assert all(c.loads is None for f in result.libraries for c in f.copies)  # nothing is loaded on Windows inputs
    assert result.toolkits[0].version == "9.0" and result.toolkits[0].version_source == "CUDA_PATH_V9_0"
    assert r"C:\Python36" in result.search_path  # a PATH entry that does not exist is searched, harmlessly


def test_two_toolkits_on_path_each_name_has_its_own_winner():
    v90, v100 = rf"{TOOLKIT}\v9.0\bin", rf"{TOOLKIT}\v10.0\bin"
    listing = Listing({v90: ["cudart64_90.dll"], v100: ["cudart64_100.dll", "cudnn64_7.dll"], SYSTEM32: []})
    result = search_windows([v90, v100], ENV, listing)
    cudart = family(result, "cudart")
    assert [c.file_version for c in cudart.copies] == ["9.0", "10.0"]
    assert cudart.winners == {
        "cudart64_90.dll": rf"{v90}\cudart64_90.dll",
        "cudart64_100.dll": rf"{v100}\cudart64_100.dll",
    }
    assert cudart.winner == rf"{v100}\cudart64_100.dll"  # the newest name


def test_shadowing_copy_earlier_on_path_wins():
    old_copy = r"C:\tools\old-cuda"
    v100 = rf"{TOOLKIT}\v10.0\bin"
    listing = Listing({old_copy: ["cudart64_100.dll"], v100: ["cudart64_100.dll"], SYSTEM32: []})
    cudart = family(search_windows([old_copy, v100], ENV, listing), "cudart")
    assert [c.path for c in cudart.copies] == [rf"{old_copy}\cudart64_100.dll", rf"{v100}\cudart64_100.dll"]
    assert cudart.winners["cudart64_100.dll"] == rf"{old_copy}\cudart64_100.dll"


def test_installed_but_not_on_path_is_found_and_marked_unreachable():
    """The installer set CUDA_PATH_V10_0, yet nothing put v10.0\\bin on PATH."""
    v100 = rf"{TOOLKIT}\v10.0"
    listing = Listing({rf"{v100}\bin": ["cudart64_100.dll", "cublas64_100.dll"], SYSTEM32: ["nvcuda.dll"]})
    result = search_windows([SYSTEM32], dict(ENV, CUDA_PATH_V10_0=v100), listing)
    cudart = family(result, "cudart")
    (copy,) = cudart.copies
    assert copy.origin == "CUDA_PATH" and copy.on_loader_path is False
    assert cudart.winners == {} and cudart.winner is None
    assert result.search_path[-1] == rf"{v100}\bin"


def test_cudnn_9_in_its_own_folder_and_cuda_12_names():
    cudnn = r"C:\Program Files\NVIDIA\CUDNN\v9.3\bin\12.6"
    v126 = rf"{TOOLKIT}\v12.6\bin"
    listing = Listing(
        {
            SYSTEM32: ["nvcuda.dll"],
            cudnn: ["cudnn64_9.dll", "cudnn_ops64_9.dll", "cudnn_graph64_9.dll"],
            v126: [
                "cudart64_12.dll",
                "cublas64_12.dll",
                "cublasLt64_12.dll",
                "cufft64_11.dll",
                "cusparse64_12.dll",
                "nvJitLink_120_0.dll",
            ],
        }
    )
    result = search_windows([v126, cudnn], ENV, listing)
    assert [c.path for c in family(result, "cudnn").copies] == [rf"{cudnn}\cudnn64_9.dll"]  # not the sub-libraries
    assert family(result, "cudart").copies[0].file_version == "12"
    assert family(result, "cufft").copies[0].file_version == "11"
    assert family(result, "cublaslt").copies[0].file_version == "12"
    assert family(result, "nvjitlink").copies[0].file_version == "12.0"


def test_path_entries_differing_in_case_or_quotes_are_one_directory():
    v100 = rf"{TOOLKIT}\v10.0\bin"
    listing = Listing({v100: ["CUDART64_100.DLL"], SYSTEM32: []})
    result = search_windows([v100, v100.upper() + "\\", f'"{v100}"', ""], ENV, listing)
    assert len([d for d in result.search_path if d.lower().rstrip("\\") == v100.lower()]) == 1
    (copy,) = family(result, "cudart").copies
    assert copy.file_version == "10.0"
    assert family(result, "cudart").winners == {"cudart64_100.dll": rf"{v100}\CUDART64_100.DLL"}


def test_zlibwapi_for_cudnn_8_on_windows():
    listing = Listing({SYSTEM32: [], r"C:\zlib\dll_x64": ["zlibwapi.dll"]})
    assert family(search_windows([r"C:\zlib\dll_x64"], ENV, listing), "zlibwapi").copies


def test_variable_names_ignore_case_and_cuda_path_takes_the_matching_version():
    env = {
        "systemroot": r"C:\Windows",
        "cuda_path": rf"{TOOLKIT}\v11.2",
        "CUDA_PATH_V11_2": rf"{TOOLKIT}\v11.2",
        "CUDA_PATH_V10_1": rf"{TOOLKIT}\v10.1",
    }
    toolkits = windows_toolkits(env)
    assert [(t.path, t.version, t.version_source) for t in toolkits] == [
        (rf"{TOOLKIT}\v11.2", "11.2", "CUDA_PATH_V11_2"),
        (rf"{TOOLKIT}\v10.1", "10.1", "CUDA_PATH_V10_1"),
    ]
    listing = Listing({SYSTEM32: ["nvcuda.dll"]})
    assert family(search_windows([], env, listing), "nvcuda").copies  # SystemRoot found despite its case


def test_cuda_path_version_from_the_folder_name_when_no_versioned_variable():
    (toolkit,) = windows_toolkits({"CUDA_PATH": r"D:\CUDA\v11.8"})
    assert (toolkit.version, toolkit.version_source) == ("11.8", "directory name")


@pytest.mark.parametrize(
    "digits, version",
    [
        ("100", "10.0"),
        ("101", "10.1"),
        ("110", "11.0"),
        ("12", "12"),
        ("65", "6.5"),
        ("80", "8.0"),
        ("90", "9.0"),
        ("92", "9.2"),
        ("10", "10"),
        ("11", "11"),
        ("7", "7"),
        ("9", "9"),
    ],
)
def test_dll_name_versions(digits, version):
    assert windows_file_version(digits) == version


@pytest.mark.parametrize(
    "name, expected",
    [
        ("cudart64_100.dll", ("cudart", "10.0")),
        ("cudnn64_7.dll", ("cudnn", "7")),
        ("cudnn64_9.dll", ("cudnn", "9")),
        ("nvcuda.dll", ("nvcuda", None)),
        ("cudart32_100.dll", None),  # 32-bit runtime: not what a 64-bit TF loads
        ("cudnn_ops64_9.dll", None),
        ("cudart64_100.dll.bak", None),
    ],
)
def test_windows_names(name, expected):
    assert match_library(name, "windows") == expected


def test_windows_probe_reads_path_whatever_its_case(tmp_path):
    from envcheck.probes.libraries import probe_libraries

    (tmp_path / "cudart64_110.dll").write_bytes(b"MZ")
    facts = probe_libraries({"Path": str(tmp_path)}, system="Windows")
    (copy,) = family(facts, "cudart").copies
    assert (copy.file_version, copy.origin, copy.loads) == ("11.0", "PATH", None)
