"""How a run goes fast on the hardware it has: the precision, XLA and the steps per call, each
chosen automatically (and said in the run's header) unless a flag chose it.

The rules, and where each comes from:

- **Precision.** Mixed precision (float32 weights, a 16-bit compute type) pays only where the
  hardware multiplies 16-bit numbers faster than 32-bit ones. On NVIDIA GPUs that is tensor
  cores: compute capability 7.0 (Volta) and up run float16 on them, 8.0 (Ampere) and up also
  bfloat16 (NVIDIA's CUDA C Programming Guide, "Warp Matrix Functions"; TensorFlow's mixed
  precision guide names 7.0 as the floor). From 8.0 bfloat16 is chosen: the same tensor-core
  speed as float16 and float32's range, so no loss scaling. On CPUs it is bfloat16 where the
  CPU has bfloat16 instructions, AVX512_BF16 or AMX-BF16 (the kernel's ``avx512_bf16`` and
  ``amx_bf16`` flags in /proc/cpuinfo), which oneDNN uses for convolutions; without them
  bfloat16 is converted in software and is slower than float32. A multi-worker run never
  chooses float16 by itself: its loss scaling must be the same on every worker, so it is asked
  for on every worker (``--precision fp16``).
- **XLA.** Measured by ``benchmarks/train_throughput.py``: on a CPU XLA's own convolutions are
  slower than TensorFlow's own (54 against 140 images/s for MiniGoogLeNet on a 2-core EPYC), so it is
  off there. On GPUs it is off until ``benchmarks/run_all.sh`` measures it faster on one
  (``XLA_FASTER`` below); ``--jit`` turns it on. XLA cannot mirror over logical CPU devices.
- **oneDNN's kernels on x86 CPUs.** TensorFlow's Linux wheels carry oneDNN but turn it on by
  themselves only on CPUs with AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX
  (``DefaultOneDnnPolicy`` in tensorflow/core/util/port.cc); elsewhere convolutions run on Eigen,
  whose backward passes are slow: on an AVX2 EPYC a MiniGoogLeNet step took 1.75 times the CPU
  time it takes with oneDNN (``TF_ENABLE_ONEDNN_OPTS=1``), so the trainer turns it on for every
  x86-64 CPU before TensorFlow starts, unless ``TF_ENABLE_ONEDNN_OPTS`` is set already.
- **Steps per call.** ``fit()`` calls TensorFlow once per step unless told to run several steps
  in one call (Keras's ``steps_per_execution``); each call costs a fixed dispatch (about 0.45 ms
  on the 2-core EPYC) and a device-to-host copy of the metrics, which also keeps a GPU from
  running ahead. The callbacks run once per call (the NaN check, the progress bar), so a call is
  kept short enough for the bar to move: up to 16 steps on a CPU (about 7 s at 140 images/s),
  up to 64 on a GPU. It is a divisor of the steps per epoch, so that every epoch is exactly the
  protocol's steps. With several replicas it is one step a call: Keras 3's loop of several steps
  fails under MirroredStrategy (envcheck.train.prepare), and so does the multi-worker loop's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from envcheck.errors import UsageError

# --precision's values, and the Keras policy each one names.
POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
PRECISION_CHOICES = ("auto", *POLICIES)
MIXED = "mixed"  # the older --mixed-precision: the device's mixed policy (bfloat16 on a CPU, float16 on a GPU)

CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# What TensorFlow's own policy turns oneDNN on for (tensorflow/core/util/port.cc, DefaultOneDnnPolicy).
ONEDNN_BY_DEFAULT_FLAGS = frozenset({"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"})
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
FLOAT16_TENSOR_CORES = (7, 0)
BFLOAT16_TENSOR_CORES = (8, 0)

# Where XLA trained MiniGoogLeNet faster than TensorFlow's default kernels (benchmarks/README.md).
XLA_FASTER = {"cpu": False, "gpu": False}
MOST_STEPS_PER_CALL = {"cpu": 16, "gpu": 64}


@dataclass(frozen=True)
class Choice:
    value: object
    why: str  # "chosen: ..." or "asked for" or the reason it is forced


@dataclass(frozen=True)
class SpeedPlan:
    policy: Choice  # a Keras dtype policy name
    jit: Choice  # bool
    steps_per_call: Choice  # int
    onednn: Optional[Choice] = None  # bool, on a CPU run

    def header(self) -> str:
        """One line for the run's header: what was chosen and why."""
        steps = self.steps_per_call.value
        return (
            f"{describe_policy(self.policy.value)} ({self.policy.why}); "
            f"XLA {'on' if self.jit.value else 'off'} ({self.jit.why}); "
            f"{steps} step{'' if steps == 1 else 's'} per call ({self.steps_per_call.why})"
        )

    def describe(self) -> dict[str, object]:
        onednn = {"onednn": self.onednn.value, "onednn_why": self.onednn.why} if self.onednn else {}
        return {
            **onednn,
            "precision": self.policy.value,
            "precision_why": self.policy.why,
            "jit": self.jit.value,
            "jit_why": self.jit.why,
            "steps_per_execution": self.steps_per_call.value,
            "steps_per_execution_why": self.steps_per_call.why,
        }


def describe_policy(policy: str) -> str:
    return {"float32": "float32", "mixed_bfloat16": "mixed bfloat16", "mixed_float16": "mixed float16"}[policy]


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags of the first CPU in a /proc/cpuinfo text ("flags" on x86, "Features" on Arm)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def read_cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return cpu_flags(handle.read(1 << 20))  # one CPU's entry comes first; 1 MiB holds hundreds
    except OSError:
        return frozenset()


def choose_policy(
    requested: str,
    *,
    uses_gpu: bool,
    gpu_capabilities: Iterable[Optional[tuple[int, int]]] = (),
    cpu: frozenset[str] = frozenset(),
    multi_worker: bool = False,
) -> Choice:
    """The Keras dtype policy for --precision `requested` on these devices."""
    if requested in POLICIES:
        return Choice(POLICIES[requested], "asked for")
    if requested == MIXED:
        return Choice("mixed_float16" if uses_gpu else "mixed_bfloat16", "asked for with --mixed-precision")
    if requested != "auto":
        raise ValueError(f"unknown precision {requested!r}")
    if uses_gpu:
        return _gpu_policy(list(gpu_capabilities), multi_worker)
    has = sorted(CPU_BF16_FLAGS & cpu)
    if has:
        return Choice("mixed_bfloat16", f"chosen: this CPU has {' and '.join(f.upper() for f in has)}")
    return Choice("float32", "chosen: this CPU has no AVX512_BF16 or AMX, where bfloat16 would be slower")


def _gpu_policy(capabilities: list[Optional[tuple[int, int]]], multi_worker: bool) -> Choice:
    if not capabilities or any(c is None for c in capabilities):
        return Choice("float32", "chosen: the GPUs' compute capability is unknown")
    lowest = min(capabilities)
    shown = f"compute capability {lowest[0]}.{lowest[1]}"
    if lowest >= BFLOAT16_TENSOR_CORES:
        return Choice("mixed_bfloat16", f"chosen: tensor cores with bfloat16 ({shown})")
    if lowest >= FLOAT16_TENSOR_CORES:
        if multi_worker:
            return Choice("float32", f"chosen: float16 needs --precision fp16 on every worker ({shown})")
        return Choice("mixed_float16", f"chosen: tensor cores with float16 ({shown})")
    return Choice("float32", f"chosen: no tensor cores ({shown})")


def choose_jit(requested: Optional[bool], *, uses_gpu: bool, cpu_replicas: int = 1) -> Choice:
    """XLA on or off: as asked, else where the benchmark measured it faster."""
    if requested is not None:
        return Choice(requested, "asked for")
    kind = "gpu" if uses_gpu else "cpu"
    if not uses_gpu and cpu_replicas > 1:
        return Choice(False, "chosen: XLA cannot mirror over logical CPU devices")
    if XLA_FASTER[kind]:
        return Choice(True, f"chosen: measured faster on a {kind.upper()}")
    if kind == "cpu":
        return Choice(False, "chosen: slower than TensorFlow's own kernels on a CPU")
    return Choice(False, "chosen: not yet measured faster on a GPU; --jit turns it on")


def choose_steps_per_call(requested: Optional[int], *, steps_per_epoch: int, uses_gpu: bool) -> Choice:
    """Steps per call: as asked, else the largest divisor of the epoch's steps up to the device's most."""
    if requested is not None:
        if steps_per_epoch % requested:
            divisors = [d for d in range(min(requested, steps_per_epoch), 0, -1) if steps_per_epoch % d == 0]
            raise UsageError(
                f"--steps-per-execution {requested}: an epoch of {steps_per_epoch} steps cannot be split into calls "
                f"of {requested} steps; use a divisor of {steps_per_epoch} ({', '.join(map(str, divisors[:6]))})"
            )
        return Choice(requested, "asked for")
    most = MOST_STEPS_PER_CALL["gpu" if uses_gpu else "cpu"]
    best = largest_divisor_up_to(steps_per_epoch, most)
    return Choice(best, f"chosen: the largest divisor of the epoch's {steps_per_epoch} steps up to {most}")


def turn_on_onednn(environ, machine: str, cpu: frozenset[str], tensorflow_started: bool = False) -> Choice:
    """Turn oneDNN on for this process unless the user set TF_ENABLE_ONEDNN_OPTS (or TensorFlow
    has started, when it is too late); call before TensorFlow is imported. Whether it is on, and why."""
    given = environ.get(ONEDNN_VARIABLE)
    if given is not None:
        on = given.strip().lower() in ("1", "true")
        return Choice(on, f"{ONEDNN_VARIABLE}={given} was set")
    if ONEDNN_BY_DEFAULT_FLAGS & cpu:
        return Choice(True, "TensorFlow's default on this CPU")
    if tensorflow_started:
        return Choice(False, "TensorFlow's default on this CPU; it had started before the trainer")
    if machine.lower() in ("x86_64", "amd64"):
        environ[ONEDNN_VARIABLE] = "1"
        return Choice(
            True, "turned on: TensorFlow leaves it off on CPUs without AVX512_VNNI or AMX, where Eigen is slower"
        )
    return Choice(False, "TensorFlow's default on this CPU")


def largest_divisor_up_to(number: int, most: int) -> int:
    """The largest d <= most that divides number (1 at least)."""
    for d in range(min(number, most), 0, -1):
        if number % d == 0:
            return d
    return 1
