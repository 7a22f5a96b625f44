"""The one record per OS (envcheck/platform.py) and the questions that must go through it: WSL2
asks the Windows driver's table and installs the Linux wheels, everywhere."""

from __future__ import annotations

import pytest

from envcheck.errors import UsageError
from envcheck.matrix import load_matrix
from envcheck.planner import make_plan
from envcheck.planner.target import OS_TITLES, apply_overrides
from envcheck.platform import OSES, PLATFORMS, WHEEL_OSES, platform_named


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def test_every_platform_points_at_platforms_that_exist():
    for p in PLATFORMS.values():
        assert p.driver_os is None or p.driver_os in PLATFORMS
        assert p.wheels_os in WHEEL_OSES and PLATFORMS[p.wheels_os].wheels_os == p.wheels_os
        assert p.shell in p.shells
        assert OS_TITLES[p.name] == p.title


def test_wsl_is_linux_wheels_on_the_windows_driver():
    wsl = platform_named("WSL")
    assert (wsl.driver_os, wsl.wheels_os, wsl.windows_driver, wsl.linux_wheels) == ("windows", "linux", True, True)
    assert not wsl.windows_libraries  # inside WSL2 the loader takes sonames
    assert platform_named("windows").windows_libraries and not platform_named("windows").linux_wheels


def test_an_unknown_os_is_a_usage_error():
    with pytest.raises(UsageError, match="expected one of: " + ", ".join(OSES)):
        platform_named("solaris")


@pytest.mark.parametrize("name", OSES)
def test_cuda_home_is_where_nvidias_installer_puts_it(name):
    p = platform_named(name)
    home = p.cuda_home("12.4.1")
    if p.cuda_root is None:
        assert home is None and p.cuda_libraries("12.4") is None
    elif p.shell == "powershell":
        assert home == r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4"
        assert p.cuda_libraries("12.4") == home + r"\bin"
    else:
        assert home == "/usr/local/cuda-12.4" and p.cuda_libraries("12.4") == "/usr/local/cuda-12.4/lib64"


def test_the_matrix_asks_the_windows_table_for_wsl(matrix):
    differs = 0
    for release in matrix.cuda_releases():
        cuda = str(release.version)
        assert matrix.min_driver(cuda, "wsl") == matrix.min_driver(cuda, "windows")
        differs += matrix.min_driver(cuda, "wsl") != matrix.min_driver(cuda, "linux")
        for support in (None, "ptx"):
            wsl, windows = (
                matrix.driver_requirement(cuda, "wsl", support),
                matrix.driver_requirement(cuda, "windows", support),
            )
            assert (wsl is None) == (windows is None)
            if wsl is not None:
                assert (wsl.minimum, wsl.full) == (windows.minimum, windows.full)
        assert matrix.min_driver(cuda, "macos") is None
    assert differs > 10  # the two tables really differ, so the test can tell them apart
    for major in (11, 12, 13):
        assert matrix.minor_compat_floor(major, "wsl") == matrix.minor_compat_floor(major, "windows")
    for major in (11, 12):  # 450.80.02 / 452.39 and 525.60.13 / 527.41; CUDA 13 asks 580 of both
        assert matrix.minor_compat_floor(major, "wsl") != matrix.minor_compat_floor(major, "linux")


def test_wsl_installs_the_linux_rows(matrix):
    assert [b.tf for b in matrix.tf_releases("wsl")] == [b.tf for b in matrix.tf_releases("linux")]
    newest = matrix.tf_releases("wsl")[-1]
    assert matrix.cuda_extra(newest, "wsl") == matrix.cuda_extra(newest, "linux") is not None
    assert matrix.cuda_extra(newest, "windows") is None


def test_native_windows_gpu_builds_stop_where_the_matrix_says(matrix):
    last = matrix.platform.windows_native_gpu_last
    windows = matrix.gpu_builds("windows")
    assert windows and max(b.tf for b in windows) <= last
    assert max(b.tf for b in matrix.gpu_builds("wsl")) > last  # later releases reach the GPU through WSL2
    assert matrix.gpu_builds("macos") == [] or matrix.platform.macos_gpu


@pytest.mark.parametrize("name", ["linux", "windows", "wsl"])
def test_a_plan_is_written_for_the_platforms_shells(matrix, name):
    from envcheck.render.plan import render_script

    p = platform_named(name)
    plan = make_plan(matrix, apply_overrides(None, matrix, os=name, python="3.10", gpu="RTX 3090", driver="550.54"))
    for shell in ("bash", "powershell"):
        if shell in p.shells:
            assert render_script(plan, shell)
        else:
            with pytest.raises(UsageError, match=f"--format {p.shell}"):
                render_script(plan, shell)
