"""How a run goes fast on the hardware it has: precision, XLA and steps per call, chosen and said."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.errors import UsageError
from envcheck.train import speed

# First lines of real /proc/cpuinfo entries (flags cut to what matters plus neighbours).
ZEN2_AVX2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx fma avx2 sha_ni\n"
ZEN4_BF16 = "processor\t: 0\nflags\t\t: avx2 avx512f avx512_vnni avx512_bf16 avx512vl\n"
SAPPHIRE_RAPIDS = "flags\t\t: avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n"
GRAVITON3 = "processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd sve bf16 i8mm\n"


def policy(requested="auto", **kwargs):
    return speed.choose_policy(requested, **kwargs).value


def test_cpu_flags_are_read_from_the_first_entry_on_x86_and_arm():
    assert "avx2" in speed.cpu_flags(ZEN2_AVX2) and "avx512_bf16" not in speed.cpu_flags(ZEN2_AVX2)
    assert {"amx_bf16", "avx512_bf16"} <= speed.cpu_flags(SAPPHIRE_RAPIDS)
    assert "bf16" in speed.cpu_flags(GRAVITON3)
    assert speed.cpu_flags("") == frozenset()


def test_a_cpu_gets_bfloat16_only_where_it_has_bfloat16_instructions():
    assert policy(uses_gpu=False, cpu=speed.cpu_flags(ZEN4_BF16)) == "mixed_bfloat16"
    assert policy(uses_gpu=False, cpu=speed.cpu_flags(SAPPHIRE_RAPIDS)) == "mixed_bfloat16"
    assert policy(uses_gpu=False, cpu=speed.cpu_flags(ZEN2_AVX2)) == "float32"
    assert policy(uses_gpu=False, cpu=frozenset()) == "float32"  # /proc/cpuinfo unreadable: no guess
    # An Arm CPU's bf16 is not what oneDNN's x86 kernels use, and it was not measured: float32.
    assert policy(uses_gpu=False, cpu=speed.cpu_flags(GRAVITON3)) == "float32"
    why = speed.choose_policy("auto", uses_gpu=False, cpu=speed.cpu_flags(SAPPHIRE_RAPIDS)).why
    assert "AMX_BF16" in why and "AVX512_BF16" in why


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [
        ([(6, 1)], "float32"),  # Pascal (the post's Titan X): no tensor cores
        ([(7, 0)], "mixed_float16"),  # V100
        ([(7, 5)], "mixed_float16"),  # T4
        ([(8, 0)], "mixed_bfloat16"),  # A100
        ([(9, 0), (9, 0)], "mixed_bfloat16"),  # H100/H200
        ([(9, 0), (7, 0)], "mixed_float16"),  # mixed GPUs: the lowest decides
        ([(8, 6), (6, 1)], "float32"),
        ([None], "float32"),  # unknown: no guess
        ([], "float32"),
    ],
)
def test_a_gpu_gets_the_mixed_precision_its_tensor_cores_run(capabilities, expected):
    assert policy(uses_gpu=True, gpu_capabilities=capabilities) == expected


def test_a_multi_worker_run_never_picks_float16_by_itself():
    assert policy(uses_gpu=True, gpu_capabilities=[(7, 0)], multi_worker=True) == "float32"
    assert policy(uses_gpu=True, gpu_capabilities=[(8, 0)], multi_worker=True) == "mixed_bfloat16"
    assert policy("fp16", uses_gpu=True, gpu_capabilities=[(7, 0)], multi_worker=True) == "mixed_float16"


@pytest.mark.parametrize(
    ("flag", "expected"), [("fp32", "float32"), ("bf16", "mixed_bfloat16"), ("fp16", "mixed_float16")]
)
def test_an_explicit_precision_wins_on_any_hardware(flag, expected):
    for kwargs in ({"uses_gpu": False, "cpu": speed.cpu_flags(SAPPHIRE_RAPIDS)}, {"uses_gpu": True}):
        choice = speed.choose_policy(flag, **kwargs)
        assert choice.value == expected and choice.why == "asked for"


def test_mixed_precision_flag_means_the_devices_mixed_type():
    assert policy(speed.MIXED, uses_gpu=True) == "mixed_float16"
    assert policy(speed.MIXED, uses_gpu=False) == "mixed_bfloat16"


def test_xla_is_off_where_it_was_measured_slower_and_on_when_asked():
    assert speed.choose_jit(None, uses_gpu=False).value is False
    assert speed.choose_jit(None, uses_gpu=False, cpu_replicas=2).value is False
    assert speed.choose_jit(True, uses_gpu=False).value is True
    assert speed.choose_jit(False, uses_gpu=True).value is False
    assert speed.choose_jit(None, uses_gpu=True).value is speed.XLA_FASTER["gpu"]


@given(steps=st.integers(1, 5000), gpu=st.booleans())
def test_steps_per_call_divide_the_epoch_and_stay_within_the_devices_most(steps, gpu):
    chosen = speed.choose_steps_per_call(None, steps_per_epoch=steps, uses_gpu=gpu).value
    most = speed.MOST_STEPS_PER_CALL["gpu" if gpu else "cpu"]
    assert 1 <= chosen <= most and steps % chosen == 0
    assert not any(steps % d == 0 for d in range(chosen + 1, most + 1))  # the largest such divisor


def test_the_posts_epochs_get_calls_that_divide_them():
    assert speed.choose_steps_per_call(None, steps_per_epoch=781, uses_gpu=False).value == 11  # 50,000 // 64
    assert speed.choose_steps_per_call(None, steps_per_epoch=195, uses_gpu=True).value == 39  # 50,000 // 256


def test_asked_steps_per_call_must_divide_the_epoch():
    assert speed.choose_steps_per_call(5, steps_per_epoch=20, uses_gpu=False).value == 5
    with pytest.raises(UsageError, match=r"--steps-per-execution 16: an epoch of 20 steps .* \(10, 5, 4, 2, 1\)"):
        speed.choose_steps_per_call(16, steps_per_epoch=20, uses_gpu=False)
    with pytest.raises(UsageError, match="an epoch of 4 steps"):
        speed.choose_steps_per_call(8, steps_per_epoch=4, uses_gpu=False)


def test_the_header_says_every_choice_and_why():
    plan = speed.SpeedPlan(
        speed.choose_policy("auto", uses_gpu=False, cpu=speed.cpu_flags(ZEN2_AVX2)),
        speed.choose_jit(None, uses_gpu=False),
        speed.choose_steps_per_call(None, steps_per_epoch=20, uses_gpu=False),
    )
    header = plan.header()
    assert header.startswith("float32 (chosen: this CPU has no AVX512_BF16 or AMX")
    assert "XLA off (chosen: slower than TensorFlow's own kernels on a CPU)" in header
    assert "10 steps per call" in header
    assert plan.describe()["steps_per_execution"] == 10 and plan.describe()["precision"] == "float32"


def test_onednn_is_turned_on_for_x86_cpus_that_tensorflow_leaves_on_eigen():
    environ: dict[str, str] = {}
    choice = speed.turn_on_onednn(environ, "x86_64", speed.cpu_flags(ZEN2_AVX2))
    assert choice.value is True and environ == {"TF_ENABLE_ONEDNN_OPTS": "1"} and "turned on" in choice.why


def test_onednn_is_left_as_tensorflow_or_the_user_has_it():
    environ = {"TF_ENABLE_ONEDNN_OPTS": "0"}
    assert speed.turn_on_onednn(environ, "x86_64", frozenset()).value is False  # the user's setting wins
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    environ = {}
    assert speed.turn_on_onednn(environ, "x86_64", speed.cpu_flags(SAPPHIRE_RAPIDS)).value is True
    assert environ == {}  # TensorFlow turns it on by itself there
    assert speed.turn_on_onednn(environ, "aarch64", speed.cpu_flags(GRAVITON3)).value is False
    assert environ == {}  # not measured on Arm: TensorFlow's default stays
    assert speed.turn_on_onednn(environ, "x86_64", frozenset(), tensorflow_started=True).value is False
    assert environ == {}  # too late once TensorFlow has started


def test_a_resumed_run_keeps_the_precision_it_started_with(tmp_path):
    from types import SimpleNamespace

    from envcheck.train.config import TrainConfig, same_settings
    from envcheck.train.outputs import OutputFolder
    from envcheck.train.prepare import _as_interrupted_run

    cpu = SimpleNamespace(uses_gpu=False)
    chosen = speed.Choice("float32", "chosen: ...")
    output = OutputFolder(tmp_path)
    key = TrainConfig(output=tmp_path).resume_key()
    state = {"settings": {**key, "policy": "mixed_bfloat16"}}
    assert same_settings(state["settings"], key)  # the precision is compared on its own, once known
    kept = _as_interrupted_run(chosen, TrainConfig(output=tmp_path), cpu, state, output)
    assert kept == speed.Choice("mixed_bfloat16", "as the interrupted run trained")
    with pytest.raises(UsageError, match=r"trained in mixed bfloat16: resume it with --precision bf16"):
        _as_interrupted_run(chosen, TrainConfig(output=tmp_path, precision="fp32"), cpu, state, output)
    # A resume point written before --precision existed: mixed_precision False was float32.
    old = {"settings": {**key, "mixed_precision": False}}
    assert same_settings(old["settings"], key)
    assert _as_interrupted_run(chosen, TrainConfig(output=tmp_path), cpu, old, output) is chosen
    assert _as_interrupted_run(chosen, TrainConfig(output=tmp_path), cpu, None, output) is chosen
    assert not same_settings({**key, "seed": 5}, key)
