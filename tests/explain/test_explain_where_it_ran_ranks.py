"""Where the program ran moves causes (issue: log_ide, log_pip_cuda and log_venv were read but
ranked nothing). A program started from an IDE or a notebook keeps the PATH the IDE started with,
so a CUDA installed since is not on it: "not on PATH" goes first. NVIDIA's pip wheels in the log
(site-packages/nvidia/...) mean the libraries are there, in a folder TensorFlow before 2.14 does
not search (its 2.11-2.13 install steps put them on LD_LIBRARY_PATH): "not on the loader's path"
goes first, as for a conda environment. A virtual environment leaves the system's and the user's
site-packages off sys.path and is its user's own folder: the causes that need those go last.
Conditions may now name alternatives: ``first_if: {any: [{vars: ...}, {vars: ...}]}``."""

from __future__ import annotations

import pytest

from envcheck.explain import PatternsError, explain, load_patterns
from envcheck.explain.scanner import parse_patterns

CATALOGUE = load_patterns()


def _causes(text: str, pattern_id: str) -> list[str]:
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    return [c.id for c in found.causes]


WIN_DLL = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found"
WIN_TF1 = "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your %PATH% environment variable."
IDES = [
    "Process finished with exit code 1",  # PyCharm's run window
    "Cell In[3], line 1",  # a Jupyter kernel's traceback
    r"C:\Users\ada\.vscode\extensions\ms-python.debugpy-2024.0.0\bundled\libs\debugpy\launcher.py",
]


@pytest.mark.parametrize("ide", IDES)
@pytest.mark.parametrize("message, pattern_id", [(WIN_DLL, "cudart-not-loaded"), (WIN_TF1, "win-cudart-dll-not-found")])
def test_in_an_ide_not_on_path_goes_first(ide, message, pattern_id):
    assert _causes(message + "\n" + ide, pattern_id)[0] == "cuda-bin-not-on-path"


@pytest.mark.parametrize("message, pattern_id", [(WIN_DLL, "cudart-not-loaded"), (WIN_TF1, "win-cudart-dll-not-found")])
def test_from_a_terminal_not_installed_stays_first(message, pattern_id):
    close = message + "\nPS C:\\Users\\ada\\project> python -m pip install jupyter ipykernel"
    assert _causes(close, pattern_id)[0] == "cuda-not-installed"


LINUX_CUDART = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory"
LINUX_CUDNN = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory"
WHEELS = "Successfully installed nvidia-cudnn-cu11-8.6.0.163 nvidia-cuda-runtime-cu11-11.8.89"
WHEEL_PATH = "/home/ada/.venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_ops_infer.so.8"
CONDA = "(base) ada@box:~$ conda activate tf"


@pytest.mark.parametrize("where", [WHEELS, WHEEL_PATH, CONDA])
@pytest.mark.parametrize(
    "message, pattern_id, cause",
    [
        (LINUX_CUDART, "cudart-not-loaded", "cuda-lib-not-on-path"),
        (LINUX_CUDNN, "cudnn-not-loaded", "cudnn-lib-not-on-path"),
    ],
)
def test_pip_wheels_or_conda_put_the_loaders_path_first(where, message, pattern_id, cause):
    assert _causes(where + "\n" + message, pattern_id)[0] == cause


@pytest.mark.parametrize(
    "message, pattern_id, cause",
    [
        (LINUX_CUDART, "cudart-not-loaded", "cuda-lib-not-on-path"),
        (LINUX_CUDNN, "cudnn-not-loaded", "cudnn-lib-not-on-path"),
    ],
)
def test_without_them_the_loaders_path_is_not_first(message, pattern_id, cause):
    # the driver's own library in the log is no pip wheel
    close = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n" + message
    assert _causes(close, pattern_id)[0] != cause


def test_a_venv_puts_the_system_and_user_site_causes_last():
    venv = '  File "/home/ada/.venv/lib/python3.11/site-packages/tensorflow/__init__.py", line 3\n'
    message = "RuntimeError: module compiled against API version 0xc but this version of numpy is 0xb"
    assert _causes(venv + message, "numpy-too-old")[-1] == "numpy-shadowed"
    pip = "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: '/home/ada/.venv/lib/python3.11/site-packages/numpy'"
    assert _causes(pip, "pip-install-access-denied")[-1] == "system-environment-not-writable"


# --- the condition's alternatives ----------------------------------------------------------------

PATTERN = """\
schema_version: 1
patterns:
  - id: sample-message
    title: Sample failed
    needles: ["sample "]
    regex: ['Sample (?P<thing>\\w{{1,20}}) failed']
    harmless: false
    meaning: It failed.
    causes:
      - id: first-cause
        text: One.
        tell:
          text: Look.
      - id: second-cause
        text: Two.
        tell:
          text: Look again.
        first_if: {condition}
    fix:
      text: Fix it.
    rule_ids: []
    sources: [https://example.org/doc]
    examples: ["Sample build failed"]
    near_misses: ["Sample build worked"]
"""


def _load(condition: str, tmp_path):
    path = tmp_path / "patterns.yaml"
    return parse_patterns(PATTERN.format(condition=condition), path)


def test_any_holds_when_one_alternative_does(tmp_path):
    catalogue = _load("{any: [{vars: {thing: [build]}}, {vars: {thing: [test]}}]}", tmp_path)
    for thing, first in (("build", "second-cause"), ("test", "second-cause"), ("deploy", "first-cause")):
        (found,) = explain(catalogue.scan_text(f"Sample {thing} failed"))
        assert found.causes[0].id == first, thing


@pytest.mark.parametrize(
    "condition, problem",
    [
        ("{any: [{vars: {thing: [build]}}]}", "two or more"),
        ("{any: [{vars: {thing: [build]}}, {vars: {thing: [test]}}], vars: {thing: [x]}}", "alone"),
        ("{any: [{vars: {thing: [build]}}, {any: [{vars: {thing: [a]}}, {vars: {thing: [b]}}]}]}", "each condition"),
        ("{any: [{vars: {nothing: [build]}}, {vars: {thing: [test]}}]}", "not captured"),
        ("{any: [{seen: [no-such-pattern]}, {vars: {thing: [test]}}]}", "not a pattern id"),
    ],
)
def test_any_is_checked_when_the_catalogue_loads(condition, problem, tmp_path):
    with pytest.raises(PatternsError, match=problem):
        _load(condition, tmp_path)
