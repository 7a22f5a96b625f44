"""envcheck.runtime on a machine without a GPU: the CPU fallback, error mode, called too late,
the logical CPU split, and argument checks.

TensorFlow fixes its devices once per process, so each scenario runs in its own interpreter; the
scenarios start together to share the cost of importing TensorFlow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envcheck import runtime
from envcheck.facts import NvmlGpu

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[1]

# Each scenario prints one JSON line as its last output.
PRELUDE = """
import json, warnings
from envcheck import runtime
warnings.simplefilter("always")
def report(**kw):
    print("RESULT " + json.dumps(kw))
"""

SCENARIOS = {
    "fallback": """
        import os
        with warnings.catch_warnings(record=True) as caught:
            first = runtime.configure(cpu_replicas=2)
            again = runtime.configure(cpu_replicas=2)
        fallback = [w for w in caught if issubclass(w.category, runtime.GpuFallbackWarning)]
        try:
            runtime.configure(cpu_replicas=3)
            late = None
        except runtime.ConfigureTooLateError as exc:
            late = str(exc)
        report(first=[d.name for d in first], again=[d.name for d in again], warnings=[str(w.message) for w in fallback],
               order=os.environ.get("CUDA_DEVICE_ORDER"), late=late)
    """,
    "cpu_on_purpose": """
        with warnings.catch_warnings(record=True) as caught:
            devices = runtime.configure(gpus=[], soft_placement=True, log_placement=False)
        import tensorflow as tf
        report(devices=[d.name for d in devices], warnings=len(caught), soft=tf.config.get_soft_device_placement())
    """,
    "error": """
        try:
            runtime.configure(fallback="error")
            report(raised=None)
        except runtime.GpuUnavailableError as exc:
            report(raised=type(exc).__name__, runtime_error=isinstance(exc, RuntimeError), message=str(exc))
    """,
    "too_late": """
        import tensorflow as tf
        tf.config.list_logical_devices()
        try:
            runtime.configure(cpu_replicas=2)
            report(raised=None)
        except runtime.ConfigureTooLateError as exc:
            report(raised=type(exc).__name__, message=str(exc))
    """,
    "split": """
        import tensorflow as tf
        devices = runtime.split_cpu(3)
        strategy = tf.distribute.MirroredStrategy([d.name for d in devices])
        with strategy.scope():
            total = strategy.reduce("SUM", strategy.run(lambda: tf.constant(1.0)), axis=None)
        report(devices=[d.name for d in devices], replicas=strategy.num_replicas_in_sync, total=float(total))
    """,
}


@pytest.fixture(scope="module")
def scenarios():
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("CUDA_DEVICE_ORDER", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(REPO),
        )
        for name, body in SCENARIOS.items()
    }
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, f"{name} failed:\n{err[-3000:]}"
        results[name] = json.loads(lines[-1][len("RESULT ") :])
    return results


@pytest.mark.slow
def test_no_gpu_falls_back_to_the_cpu_with_one_warning_and_the_doctors_reason(scenarios):
    result = scenarios["fallback"]
    assert result["first"] == ["/device:CPU:0", "/device:CPU:1"]
    assert result["again"] == result["first"]  # same arguments: same devices, no second warning
    assert len(result["warnings"]) == 1
    assert result["warnings"][0] == "no GPU usable, running on the CPU: no NVIDIA GPU on this machine"
    assert result["order"] == "PCI_BUS_ID"
    assert result["late"] and "before any TensorFlow op" in result["late"]


@pytest.mark.slow
def test_gpus_empty_means_the_cpu_on_purpose(scenarios):
    result = scenarios["cpu_on_purpose"]
    assert result == {"devices": ["/device:CPU:0"], "warnings": 0, "soft": True}


@pytest.mark.slow
def test_error_mode_raises_with_the_reason(scenarios):
    result = scenarios["error"]
    assert result["raised"] == "GpuUnavailableError" and result["runtime_error"]
    # No NVIDIA GPU at all: nothing for the doctor to fix, the CPU is the way.
    assert (
        result["message"]
        == "no GPU usable by TensorFlow: no NVIDIA GPU on this machine. Pass fallback='cpu' to run on the CPU."
    )


@pytest.mark.slow
def test_called_after_tensorflow_initialised_says_so(scenarios):
    result = scenarios["too_late"]
    assert result["raised"] == "ConfigureTooLateError"
    assert "after TensorFlow initialised its devices" in result["message"]
    assert "top of the script" in result["message"]


@pytest.mark.slow
def test_split_cpu_gives_replicas_a_strategy_can_use(scenarios):
    result = scenarios["split"]
    assert result["devices"] == ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"]
    assert result["replicas"] == 3 and result["total"] == 3.0


# --- checks that need no TensorFlow --------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"memory_fraction": 0}, ValueError, "(0, 1]"),
        ({"memory_fraction": 1.5}, ValueError, "(0, 1]"),
        ({"memory_fraction": -0.4}, ValueError, "(0, 1]"),
        ({"memory_fraction": "0.4"}, TypeError, "number"),
        ({"memory_limit_mb": -1}, ValueError, "positive"),
        ({"memory_limit_mb": 0}, ValueError, "positive"),
        ({"memory_limit_mb": 1024, "memory_fraction": 0.5}, ValueError, "not both"),
        ({"memory_growth": True, "memory_limit_mb": 1024}, ValueError, "memory_growth"),
        ({"gpus": -1}, ValueError, "negative"),
        ({"gpus": [0, 0]}, ValueError, "twice"),
        ({"gpus": "0"}, TypeError, "index"),
        ({"gpus": True}, TypeError, "index"),
        ({"gpus": [0, 1.0]}, TypeError, "1.0"),
        ({"fallback": "gpu"}, ValueError, "fallback"),
        ({"cpu_replicas": 0}, ValueError, "cpu_replicas"),
        ({"memory_growth": "yes"}, TypeError, "memory_growth"),
    ],
)
def test_bad_arguments_are_refused_before_tensorflow_is_touched(kwargs, error, words):
    with pytest.raises(error, match=None) as info:
        runtime.configure(**kwargs)
    assert words in str(info.value)


def test_good_arguments_are_normalised():
    settings = runtime.validate(
        gpus=1,
        memory_growth=None,
        memory_limit_mb=2048.0,
        memory_fraction=None,
        soft_placement=True,
        log_placement=None,
        fallback="error",
        cpu_replicas=2,
    )
    assert settings.gpus == (1,) and settings.memory_limit_mb == 2048 and settings.cpu_replicas == 2


def test_fraction_becomes_a_limit_from_the_total_memory():
    assert runtime.memory_limit_from_fraction(0.4, 11264) == 4505  # the setup post's 0.4 on an 11 GB card
    assert runtime.memory_limit_from_fraction(1.0, 8192) == 8192
    with pytest.raises(ValueError):
        runtime.memory_limit_from_fraction(0.0, 8192)


def test_gpu_selection_checks_the_index():
    physical = ["gpu-a", "gpu-b"]
    assert runtime.select_gpus(physical, (1,)) == ["gpu-b"]
    assert runtime.select_gpus(physical, None) == physical
    with pytest.raises(ValueError, match="no GPU 2; TensorFlow sees 2 GPUs"):
        runtime.select_gpus(physical, (0, 2))


def test_total_memory_follows_cuda_visible_devices(monkeypatch, tmp_path):
    from rules import builders

    facts = builders.change(
        builders.server(),
        {
            "nvml.gpus": (
                NvmlGpu(index=0, name="A", uuid="GPU-aaaa", memory_total_mb=16000),
                NvmlGpu(index=1, name="B", uuid="GPU-bbbb", memory_total_mb=24000),
            )
        },
    )
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert runtime._total_memory_mb(facts) == {0: 16000, 1: 24000}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert runtime._total_memory_mb(facts) == {0: 24000}  # TF's GPU 0 is NVML's GPU 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb,GPU-aaaa")
    assert runtime._total_memory_mb(facts) == {0: 24000, 1: 16000}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb,0")  # CUDA takes no ordinal after a UUID
    assert runtime._total_memory_mb(facts) == {0: 24000}


@pytest.mark.parametrize(
    "limit, words", [(float("inf"), "positive"), (float("nan"), "positive"), (0.5, "at least 1 MiB")]
)
def test_a_memory_limit_must_be_a_finite_whole_mib(limit, words):
    # inf used to escape as an OverflowError, and 0.5 became a limit of 0 MiB.
    with pytest.raises(ValueError) as info:
        runtime.configure(memory_limit_mb=limit)
    assert words in str(info.value)


@pytest.mark.slow
def test_configure_keeps_tensorflows_start_up_noise_out_unless_asked(tmp_path):
    """TensorFlow's start-up lines (CPU features, cuInit) go to the terminal unless captured; quiet is the default."""
    import subprocess
    import sys as _sys

    repo = Path(__file__).resolve().parents[1]
    code = "from envcheck import runtime; runtime.configure(fallback='cpu', quiet={quiet}); print('configured')"
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    quiet = subprocess.run(
        [_sys.executable, "-c", code.format(quiet=True)], capture_output=True, text=True, env=env, timeout=300
    )
    loud = subprocess.run(
        [_sys.executable, "-c", code.format(quiet=False)], capture_output=True, text=True, env=env, timeout=300
    )
    assert quiet.returncode == 0 and "configured" in quiet.stdout
    for line in ("oneDNN", "cpu_feature_guard", "cuInit"):
        assert line not in quiet.stderr
    # the same start, not captured: TensorFlow's C++ log reaches the terminal (oneDNN's line only
    # where its custom operations are on by default, so the CPU-feature and cuInit lines are the check)
    assert "cpu_feature_guard" in loud.stderr or "cuInit" in loud.stderr
