"""The Linux library search over built trees, ldconfig transcripts, and real load tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import fakenvml
import pytest

from envcheck.probes import INTERPRETER_SCRIPT
from envcheck.probes.libraries import (
    find_cuda_toolkits,
    load_results,
    probe_libraries,
    read_ldconfig_cache,
    run_command,
    subprocess_load_tester,
)
from envcheck.probes.library_search import match_library, parse_ldconfig


def lib(directory: Path, real: str, *links: str) -> Path:
    """A library file with its symlinks, as a CUDA or cuDNN package lays them out."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / real).write_bytes(b"\x7fELF not really")
    for link in links:
        (directory / link).symlink_to(real)
    return directory / real


def replay(transcript: str):
    """A command runner that answers ``ldconfig -p`` with a recorded transcript."""
    calls = []

    def runner(argv, timeout):
        calls.append(list(argv))
        return 0, transcript

    runner.calls = calls
    return runner


def no_ldconfig(argv, timeout):
    raise FileNotFoundError(2, "No such file or directory", argv[0])


def family(facts, name):
    return next(f for f in facts.libraries if f.family == name)


def probe(tmp_path, environ=None, transcript="", **kwargs):
    return probe_libraries(environ or {}, root=tmp_path / "root", system="Linux", runner=replay(transcript), **kwargs)


def test_symlink_chain_is_one_copy_named_as_the_loader_asks(tmp_path):
    cuda = tmp_path / "cuda-11.8/lib64"
    lib(cuda, "libcudart.so.11.8.89", "libcudart.so.11.0", "libcudart.so")
    facts = probe(tmp_path, {"LD_LIBRARY_PATH": str(cuda)})
    (copy,) = family(facts, "cudart").copies
    assert copy.path == str(cuda / "libcudart.so.11.0")
    assert copy.file_version == "11.8.89"
    assert copy.names == ("libcudart.so", "libcudart.so.11.0", "libcudart.so.11.8.89")
    assert copy.realpath == str(cuda / "libcudart.so.11.8.89")
    assert (copy.origin, copy.on_loader_path) == ("LD_LIBRARY_PATH", True)
    assert family(facts, "cudart").winners == {"libcudart.so.11.0": str(cuda / "libcudart.so.11.0")}


def test_search_order_ld_library_path_then_pip_then_ldconfig_then_unreachable_places(tmp_path):
    mine = tmp_path / "home/me/cudnn/lib"
    pip = tmp_path / "venv/site-packages/nvidia/cudnn/lib"
    system = tmp_path / "usr/lib/x86_64-linux-gnu"
    conda = tmp_path / "conda/envs/tf"
    lib(mine, "libcudnn.so.8.1.0", "libcudnn.so.8")
    lib(pip, "libcudnn.so.9")
    lib(system, "libcudnn.so.8.9.7", "libcudnn.so.8")
    lib(conda / "lib", "libcudnn.so.8.2.1", "libcudnn.so.8")
    transcript = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        f"\tlibcudnn.so.8 (libc6,x86-64) => {system}/libcudnn.so.8\n"
        f"\tlibcudnn.so.8 (libc6) => /usr/lib/i386-linux-gnu/libcudnn.so.8\n"
        f"\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n"
    )
    facts = probe(
        tmp_path,
        {"LD_LIBRARY_PATH": f"{mine}::/does/not/exist"},
        transcript,
        pip_dirs=[str(pip)],
        conda_prefix=str(conda),
    )
    cudnn = family(facts, "cudnn")
    assert [(c.origin, c.file_version, c.on_loader_path) for c in cudnn.copies] == [
        ("LD_LIBRARY_PATH", "8.1.0", True),
        ("pip", "9", True),
        ("ldconfig", "8.9.7", True),
        ("conda", "8.2.1", False),
    ]
    assert cudnn.winners == {"libcudnn.so.8": str(mine / "libcudnn.so.8"), "libcudnn.so.9": str(pip / "libcudnn.so.9")}
    assert cudnn.winner == str(pip / "libcudnn.so.9")
    assert "/does/not/exist" not in facts.search_path
    assert facts.search_path[:3] == (str(mine), str(pip), str(system))


def test_a_file_not_in_the_ldconfig_cache_is_not_reachable_through_it(tmp_path):
    """cuDNN copied into /usr/local/cuda/lib64 without rerunning ldconfig."""
    cuda = tmp_path / "root/usr/local/cuda-11.2"
    lib(cuda / "lib64", "libcudart.so.11.2.152", "libcudart.so.11.0")
    lib(cuda / "lib64", "libcudnn.so.8.1.1", "libcudnn.so.8")
    (tmp_path / "root/usr/local/cuda").symlink_to("cuda-11.2")
    transcript = f"\tlibcudart.so.11.0 (libc6,x86-64) => {cuda}/lib64/libcudart.so.11.0\n"
    facts = probe(tmp_path, transcript=transcript)
    (cudart,) = family(facts, "cudart").copies
    assert (cudart.origin, cudart.on_loader_path) == ("ldconfig", True)
    (cudnn,) = family(facts, "cudnn").copies
    assert (cudnn.origin, cudnn.on_loader_path) == ("cuda-dir", False)
    assert family(facts, "cudnn").winners == {}


def test_the_same_file_reached_twice_is_one_copy_kept_where_the_loader_meets_it(tmp_path):
    cuda = tmp_path / "root/usr/local/cuda-12.4"
    lib(cuda / "lib", "libcublas.so.12.4.5.8", "libcublas.so.12")
    (cuda / "lib64").symlink_to("lib")
    (tmp_path / "root/usr/local/cuda").symlink_to("cuda-12.4")
    facts = probe(tmp_path, {"LD_LIBRARY_PATH": str(tmp_path / "root/usr/local/cuda/lib64"), "CUDA_HOME": str(cuda)})
    (copy,) = family(facts, "cublas").copies
    assert copy.origin == "LD_LIBRARY_PATH"


def test_library_name_patterns_do_not_catch_neighbours():
    assert match_library("libcudnn.so.9", "linux") == ("cudnn", "9")
    assert match_library("libcudnn_ops.so.9", "linux") is None
    assert match_library("libcufftw.so.11", "linux") is None
    assert match_library("libcublasLt.so.12", "linux") == ("cublaslt", "12")
    assert match_library("libcuda.so.550.54.15", "linux") == ("nvcuda", "550.54.15")
    assert match_library("libcudart.so", "linux") == ("cudart", None)
    assert match_library("libcudart_static.a", "linux") is None


def test_ldconfig_parsing_keeps_the_interpreters_word_size():
    text = (
        "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
        "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
        "\tlibcudart.so.12 (libc6,AArch64) => /usr/local/cuda/lib64/libcudart.so.12\n"
        "not a cache line\n"
    )
    assert parse_ldconfig(text) == [
        ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        ("libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so.12"),
    ]
    assert parse_ldconfig(text, want_64bit=False) == [("libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1")]


def test_missing_ldconfig_is_a_search_error_not_a_failure(tmp_path):
    pip = tmp_path / "nvidia/cuda_runtime/lib"
    lib(pip, "libcudart.so.12")
    facts = probe_libraries({}, root=tmp_path, system="Linux", pip_dirs=[str(pip)], runner=no_ldconfig)
    assert facts.status == "ok"
    assert any("ldconfig" in e for e in facts.search_errors)
    assert family(facts, "cudart").winner == str(pip / "libcudart.so.12")
    entries, error = read_ldconfig_cache(no_ldconfig)
    assert entries == [] and "ldconfig" in error


def test_failing_ldconfig_is_reported_with_its_status():
    entries, error = read_ldconfig_cache(lambda argv, timeout: (1, ""))
    assert entries == [] and error == "ldconfig -p exited with 1"


def test_this_machines_real_ldconfig_cache_reads():
    entries, error = read_ldconfig_cache(run_command)
    assert error is None and entries  # every glibc system has a cache with libc in it


# --- toolkits ------------------------------------------------------------------------------------


def test_toolkit_versions_from_each_source(tmp_path):
    root = tmp_path / "root"
    (root / "usr/local/cuda-12.4").mkdir(parents=True)
    (root / "usr/local/cuda-12.4/version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    (root / "usr/local/cuda-10.0").mkdir(parents=True)
    (root / "usr/local/cuda-10.0/version.txt").write_text("CUDA Version 10.0.130\n")
    (root / "usr/local/cuda-13.0/include").mkdir(parents=True)
    (root / "usr/local/cuda-13.0/include/cuda.h").write_text("#pragma once\n#define CUDA_VERSION 13000\n")
    (root / "usr/local/cuda-11.8").mkdir(parents=True)
    (root / "usr/local/cuda").symlink_to("cuda-12.4")
    home = tmp_path / "opt/my-cuda"
    home.mkdir(parents=True)
    toolkits = find_cuda_toolkits({"CUDA_HOME": str(home)}, root)
    assert [(Path(t.path).name, t.version, t.origin, t.version_source) for t in toolkits] == [
        ("my-cuda", None, "CUDA_HOME", None),
        ("cuda", "12.4.1", "cuda-dir", "version.json"),
        ("cuda-13.0", "13.0", "cuda-dir", "cuda.h"),
        ("cuda-11.8", "11.8", "cuda-dir", "directory name"),
        ("cuda-10.0", "10.0.130", "cuda-dir", "version.txt"),
    ]


def test_conda_env_cuda_packages(tmp_path):
    prefix = tmp_path / "envs/tf"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta/cudatoolkit-11.2.2-hbe64b41_10.json").write_text("{}")
    (prefix / "conda-meta/cudnn-8.1.0.77-h90431f1_0.json").write_text("{}")
    toolkits = find_cuda_toolkits({}, tmp_path / "root", str(prefix))
    assert [(t.version, t.origin, t.version_source) for t in toolkits] == [
        ("11.2.2", "conda", "conda package cudatoolkit")
    ]


# --- loading, in the probed interpreter ------------------------------------------------------


def _tester():
    return subprocess_load_tester(sys.executable, str(INTERPRETER_SCRIPT), dict(os.environ))


def _wheel_cudart() -> Path:
    import nvidia.cuda_runtime  # the nvidia-cuda-runtime-cu12 wheel: a real libcudart.so.12

    return Path(list(nvidia.cuda_runtime.__path__)[0]) / "lib" / "libcudart.so.12"


def test_real_cudart_loads_and_reports_its_version(tmp_path):
    cudart = _wheel_cudart()
    facts = probe(tmp_path, pip_dirs=[str(cudart.parent)], load_tester=_tester())
    (copy,) = family(facts, "cudart").copies
    assert copy.loads is True and copy.load_error is None
    major, minor = copy.reported_version.split(".")
    assert major == "12" and minor.isdigit()


def test_a_broken_file_does_not_load_and_says_why(tmp_path):
    junk = tmp_path / "junk"
    lib(junk, "libcudnn.so.9")
    facts = probe(tmp_path, {"LD_LIBRARY_PATH": str(junk)}, load_tester=_tester())
    (copy,) = family(facts, "cudnn").copies
    assert copy.loads is False
    assert "libcudnn.so.9" in copy.load_error
    assert copy.reported_version is None


def test_without_a_load_tester_nothing_is_loaded(tmp_path):
    facts = probe(tmp_path, pip_dirs=[str(_wheel_cudart().parent)])
    assert family(facts, "cudart").copies[0].loads is None


def test_a_library_that_crashes_on_load_is_named_and_the_probe_survives(tmp_path):
    cc = fakenvml.compiler()
    if cc is None:
        pytest.skip("no C compiler to build a library that crashes on load")
    bad = tmp_path / "bad"
    bad.mkdir()
    source = tmp_path / "boom.c"
    source.write_text("#include <signal.h>\n__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(bad / "libcublas.so.12"), str(source)], check=True)
    cudart = _wheel_cudart()
    facts = probe(tmp_path, {"LD_LIBRARY_PATH": str(bad)}, pip_dirs=[str(cudart.parent)], load_tester=_tester())
    (cublas,) = family(facts, "cublas").copies
    assert cublas.loads is False and "signal 11" in cublas.load_error
    assert facts.status == "ok"


def test_load_results_attribute_a_crash_and_ignore_noise():
    requests = [{"path": "/a/libcudart.so.12", "family": "cudart"}, {"path": "/b/libcudnn.so.9", "family": "cudnn"}]
    output = (
        '{"index": 0, "trying": true}\n'
        '{"index": 0, "loads": true, "reported_version": "12.4"}\n'
        "some library printed this\n"
        '{"index": 1, "trying": true}\n'
    )
    first, second = load_results(requests, output, -6)
    assert first == {"loads": True, "load_error": None, "reported_version": "12.4"}
    assert second == {"loads": False, "load_error": "loading this library killed the process (signal 6)"}
    assert load_results(requests, '{"index": 1, "trying": true}\n', None)[1]["load_error"].endswith(
        "did not finish in time"
    )


def test_load_tester_failure_is_recorded_not_raised(tmp_path):
    def broken(requests):
        raise RuntimeError("interpreter vanished")

    facts = probe(tmp_path, pip_dirs=[str(_wheel_cudart().parent)], load_tester=broken)
    assert facts.status == "ok"
    assert any("interpreter vanished" in e for e in facts.search_errors)


def test_wheel_folders_come_from_the_interpreter_even_when_run_isolated(tmp_path):
    """The interpreter probe runs with -I, yet the user's PYTHONPATH wheels are where TF looks too."""
    site = tmp_path / "site"
    (site / "nvidia/cudnn/lib").mkdir(parents=True)
    (site / "nvidia/__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run(
        [sys.executable, "-I", str(INTERPRETER_SCRIPT)], capture_output=True, text=True, env=env, check=True
    )
    assert str(site / "nvidia/cudnn/lib") in json.loads(proc.stdout)["library_dirs"]["pip"]
