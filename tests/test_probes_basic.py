"""The first probes: the interpreter (this one or another), the platform, the environment allow-list."""

from __future__ import annotations

import struct
import subprocess
import sys
import venv

import pytest

from envcheck.probes import ProbeOptions, collect, probe_interpreter
from envcheck.probes.interpreter import distributions
from envcheck.probes.system import allowed_variable, detect_wsl, probe_environment, probe_platform


def test_this_interpreter():
    facts = collect(ProbeOptions(quick=True))
    assert facts.python.executable == sys.executable
    assert facts.python.bits == struct.calcsize("P") * 8
    assert facts.python.version == ".".join(map(str, sys.version_info[:3]))
    assert facts.python.in_virtualenv == (sys.prefix != sys.base_prefix)
    assert facts.quick is True
    assert facts.tensorflow.status == "skipped"


def test_every_distribution_is_listed_with_requirements_only_where_asked():
    dists = {d["name"]: d for d in distributions(requires_of=("tensorflow",))}
    # The test environment installs TensorFlow and the CUDA runtime wheel.
    assert "tensorflow" in dists and "pytest" in dists and "numpy" in dists
    assert any(n.startswith("nvidia-") for n in dists)
    assert any(r.startswith("numpy") for r in dists["tensorflow"]["requires"])
    assert dists["pytest"]["requires"] == []  # requirement strings only for TensorFlow's distributions


def test_metadata_headers_are_read_directly(tmp_path, monkeypatch):
    """The probe reads .dist-info / .egg-info headers itself (Python 3.6 and 3.7 have no
    importlib.metadata, and parsing every long description is slow): the header only."""
    import envcheck.probes.interpreter as interpreter

    info = tmp_path / "Fake_Pkg-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: Fake_Pkg\nVersion: 1.2\nRequires-Dist: numpy>=1.16\n\nRequires-Dist: not-a-header\n"
    )
    egg = tmp_path / "old.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Name: old\nVersion: 0.9\n")
    monkeypatch.setattr(interpreter, "_FOUND", [])
    monkeypatch.setattr(interpreter, "_site_dirs", lambda: [str(tmp_path)])
    found = {d["name"]: d for d in interpreter.distributions(requires_of=("fake-pkg",))}
    assert found["fake-pkg"]["version"] == "1.2" and found["fake-pkg"]["requires"] == ["numpy>=1.16"]
    assert found["old"]["version"] == "0.9"


def test_the_direct_reader_agrees_with_importlib_metadata(monkeypatch):
    from importlib import metadata

    import envcheck.probes.interpreter as interpreter

    monkeypatch.setattr(interpreter, "_FOUND", [])
    ours = {d["name"]: d["version"] for d in interpreter.distributions()}
    theirs = {}
    for dist in metadata.distributions():
        name = interpreter._normalize(dist.metadata["Name"])
        theirs.setdefault(name, dist.version)
    assert ours == theirs


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """Another interpreter: a fresh virtual environment without TensorFlow."""
    target = tmp_path_factory.mktemp("other-env")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(target)
    return target / "bin" / "python"


def test_another_interpreter_is_probed_in_its_own_process(bare_venv):
    data = probe_interpreter(str(bare_venv), environ={})
    assert data["python"]["executable"].startswith(str(bare_venv.parent.parent))
    assert data["python"]["in_virtualenv"] is True
    assert [d["name"] for d in data["packages"]["distributions"]] == []


def test_doctor_python_flag_reports_that_interpreter(cli, bare_venv):
    report = cli("doctor", "--quick", "--json", "--python", str(bare_venv)).json()
    assert report["facts"]["python"]["executable"].startswith(str(bare_venv.parent.parent))
    assert report["facts"]["packages"]["distributions"] == []


def test_a_venv_folder_is_accepted_as_python(cli, bare_venv):
    report = cli("doctor", "--quick", "--json", "--python", str(bare_venv.parent.parent)).json()
    assert report["facts"]["python"]["in_virtualenv"] is True


def test_environment_allow_list_never_records_other_values():
    env = {
        "CUDA_VISIBLE_DEVICES": "1",
        "CUDA_PATH_V10_0": r"C:\CUDA\v10.0",
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
        "AWS_SECRET_ACCESS_KEY": "hunter2",
        "GITHUB_TOKEN": "ghp_x",
        "TF_VAR_db_password": "s3cret",
        "TF_TOKEN_app_terraform_io": "tok",
        "TF_CLI_CONFIG_FILE": "/home/x/.terraformrc",
        "HOME": "/home/x",
    }
    recorded = probe_environment(env).variables
    assert recorded == {
        "CUDA_VISIBLE_DEVICES": "1",
        "CUDA_PATH_V10_0": r"C:\CUDA\v10.0",
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
    }
    assert not allowed_variable("MY_TF_VAR")
    assert allowed_variable("LD_LIBRARY_PATH")


def test_platform_probe_reads_the_given_root(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("model name\t: Test CPU\nflags\t\t: fpu sse4_2 avx avx2 fma\n")
    facts = probe_platform({"USER": "tester"}, root=tmp_path)
    if facts.system == "Linux":
        assert facts.distro == "Ubuntu 22.04.4 LTS"
        assert facts.cpu == "Test CPU"
        assert facts.cpu_flags == ("avx", "avx2", "fma", "sse4_2")
    assert facts.user == "tester"


@pytest.mark.parametrize(
    "release, proc_version, expected",
    [
        ("5.15.153.1-microsoft-standard-WSL2", "", 2),
        ("4.4.0-19041-Microsoft", "Linux version 4.4.0-19041-Microsoft", 1),
        ("6.8.0-45-generic", "Linux version 6.8.0-45-generic (buildd@ubuntu)", None),
    ],
)
def test_wsl_detection(tmp_path, release, proc_version, expected):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/version").write_text(proc_version)
    assert detect_wsl(release, tmp_path) == expected


def test_interpreter_script_runs_standalone_without_envcheck(bare_venv):
    from envcheck.probes import INTERPRETER_SCRIPT

    out = subprocess.run([str(bare_venv), "-I", str(INTERPRETER_SCRIPT)], capture_output=True, text=True, check=True)
    assert '"bits": ' in out.stdout
