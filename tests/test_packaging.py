"""The built wheel carries the data files, so a plain (non-editable) install finds them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import REPO

DATA_FILES = ("compat_matrix.yaml", "explain_patterns.yaml")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # Built from a copy: setuptools writes build/ and *.egg-info into the source tree it builds.
    source = build / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache", ".ruff_cache"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        cwd=str(build),
        capture_output=True,
    )
    (path,) = out.glob("envcheck_tf-*.whl")  # the distribution's name, normalized
    return path


@pytest.mark.slow
def test_wheel_contains_data_files_and_entry_point(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for name in DATA_FILES:
        assert f"envcheck/{name}" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "envcheck = envcheck.cli:main" in text
    assert not any(n.startswith("tests/") for n in names)


@pytest.mark.slow
def test_installed_wheel_finds_its_matrix(wheel, tmp_path):
    """Unpacked alone (no checkout next to it), the package still finds the matrix it ships."""
    zipfile.ZipFile(wheel).extractall(tmp_path)
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
        "from envcheck.resources import data_file; p = data_file('compat_matrix.yaml'); print(p, p.exists())"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=str(tmp_path), check=True
    )
    path, exists = out.stdout.split()
    assert exists == "True"
    assert path.startswith(str(tmp_path))
