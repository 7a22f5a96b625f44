"""envcheck validate: does TensorFlow really compute, agree and train on this machine's devices?

  level 1  a matmul and a convolution on every visible GPU (or the CPU), checked against the CPU, timed
  level 2  a cross-replica all-reduce under the distribution strategy gives the right sum, timed
  level 3  the reference trainer: quick (the loss falls, on the devices the doctor finds usable,
           images/s per replica) or --full (the post's 70 epochs, accuracy compared with the post's)

Each level includes the ones below it. On a machine without a GPU the CPU is split into logical
devices (two by default) so that level 2 and 3 exercise the same multi-replica code as GPUs do.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from envcheck.errors import EnvcheckError
from envcheck.validation.checks import Check, ValidationReport

DEFAULT_CPU_REPLICAS = 2


def plan_for_validation(gpus: Optional[int], cpu_replicas: Optional[int]):
    """Every visible GPU; or, with none (or --gpus 0 / --cpu-replicas), the CPU split into replicas."""
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    # lazy for start-up: keeps train.strategy out of every import of validation
    from envcheck.train.strategy import plan_devices

    # --gpus N on a machine without GPUs is refused by plan_devices, as envcheck train refuses it.
    on_cpu = gpus == 0 or bool(cpu_replicas) or (not gpus and not tf.config.list_physical_devices("GPU"))
    if on_cpu:
        return plan_devices(gpus=0, cpu_replicas=cpu_replicas or DEFAULT_CPU_REPLICAS)
    return plan_devices(gpus=gpus)


def doctor_verdict() -> Optional[dict]:
    """The doctor's quick verdict on this machine (no TensorFlow subprocess: validate is one)."""
    try:
        # lazy for start-up: keeps probes, verdict out of every import of validation
        from envcheck.probes import ProbeOptions, collect
        from envcheck.verdict import judge

        report = judge(collect(ProbeOptions(quick=True)))
    except Exception:  # noqa: BLE001 - validate still runs its checks when the doctor's cannot
        return None
    verdict = report.verdict
    return {"status": verdict.status, "line": verdict.line, "gpus": verdict.gpus, "exit_code": report.exit_code}


def _guarded(level: int, name: str, run) -> list[Check]:
    """A crash inside one level is that level's failed check; the report still comes out."""
    started = time.perf_counter()
    try:
        return run()
    except EnvcheckError:
        raise
    except Exception as exc:  # noqa: BLE001
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return [
            Check(
                level,
                name,
                False,
                f"crashed: {type(exc).__name__}: {first_line}",
                seconds=time.perf_counter() - started,
            )
        ]


def run_validation(
    level: int = 2,
    *,
    full: bool = False,
    data: Optional[Path] = None,
    output: Optional[Path] = None,
    gpus: Optional[int] = None,
    cpu_replicas: Optional[int] = None,
    progress: bool = True,
    require_gpu: bool = False,
    announce=None,
    console=None,
) -> ValidationReport:
    """Run the levels up to ``level``; ``announce(text)`` is told what runs next (the live line);
    ``console`` is where the training run of level 3 draws its own progress."""
    say = announce or (lambda text: None)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # lazy for start-up: keeps machine, validation.compute, validation.replicas out of every import of validation
    from envcheck.machine import short_device
    from envcheck.validation.compute import run_level1
    from envcheck.validation.replicas import run_level2

    say("starting TensorFlow")
    plan = plan_for_validation(gpus, cpu_replicas)
    if full and level >= 3:
        # lazy for start-up: keeps validation.training out of every import of validation
        from envcheck.validation.training import require_gpu_for_full

        require_gpu_for_full(plan)  # before levels 1 and 2, not after them
    report = ValidationReport(level=level, devices=[short_device(d) for d in plan.devices], require_gpu=require_gpu)
    say("the doctor's quick checks")
    report.doctor = doctor_verdict()
    if not plan.uses_gpu:
        later = {1: "", 2: f", level 2 on {plan.replicas} logical CPU devices"}.get(
            level, f", levels 2 and 3 on {plan.replicas} logical CPU devices"
        )
        report.notes.append(f"no GPU in use: level 1 ran on the CPU{later}")
    # Level 1 runs where single ops would: each GPU, or the first CPU device.
    level1_devices = list(plan.devices) if plan.uses_gpu else list(plan.devices[:1])
    say(f"level 1: a matmul and a convolution on {', '.join(short_device(d) for d in level1_devices)}")
    report.checks += _guarded(1, "matmul and conv2d", lambda: run_level1(level1_devices))
    if level >= 2:
        say(f"level 2: an all-reduce over {plan.replicas} replicas")
        report.checks += _guarded(2, "all-reduce", lambda: run_level2(plan))
    if level >= 3:
        say("level 3: a training run")
        # lazy for start-up: keeps validation.training out of every import of validation
        from envcheck.validation.training import run_level3

        requested = 0 if (gpus == 0 or cpu_replicas) else gpus  # None: every usable GPU
        report.checks += _guarded(
            3,
            "training",
            lambda: run_level3(
                plan,
                full=full,
                data_path=data,
                output=output,
                progress=progress,
                requested_gpus=requested,
                console=console,
                announce=announce,
            ),
        )
    return report
