"""validate --scaling end to end: the devices (every GPU, or the CPU split into logical devices),
the measurement, the analysis, NVML's view of the GPUs while they trained (judged by the doctor's
Multi-GPU rules), the one-device figure kept for ``envcheck train``, and the exit code."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable
from typing import Any, Optional

from envcheck.errors import EXIT_FINDINGS, EXIT_OK
from envcheck.scaling_baseline import record_one_device
from envcheck.validation import plan_for_validation
from envcheck.validation.bottleneck import analyse
from envcheck.validation.scaling import DEFAULT_STEPS, ScalingMeasurement, measure

CPU_BATCH = 32  # MiniGoogLeNet does about 140 images/s on a small CPU: keep the CPU run short
GPU_BATCH = 64  # the post's batch per GPU


def run_scaling(
    gpus: Optional[int] = None,
    cpu_replicas: Optional[int] = None,
    batch_per_replica: Optional[int] = None,
    steps: int = DEFAULT_STEPS,
    say: Callable[[str], None] = lambda text: None,
    workload=None,
) -> dict[str, Any]:
    """The JSON document of one scaling run (``measurement``, ``analysis``, ``under_load``, ``exit_code``)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # lazy for start-up: keeps validation.workloads out of every import of validation.scaling_run
    from envcheck.validation.workloads import reference_workload

    say("starting TensorFlow")
    plan = plan_for_validation(gpus, cpu_replicas)  # the CPU in two logical devices when no GPU is used
    batch = batch_per_replica or (GPU_BATCH if plan.uses_gpu else CPU_BATCH)
    workload = workload or reference_workload(batch)
    probe = _nvml_probe if plan.uses_gpu else None
    m = measure(
        workload, list(plan.devices), logical_cpu=not plan.uses_gpu, steps=steps, say=say, probe_under_load=probe
    )
    analysis = analyse(m)
    result = {
        "measurement": m.to_dict(),
        "analysis": analysis.to_dict(),
        "under_load": _judged_under_load(m),
        "exit_code": EXIT_OK if analysis.scales else EXIT_FINDINGS,
    }
    kept = _keep_one_device(m, plan)
    if kept is not None:
        result["baseline_file"] = str(kept)
    return result


def _nvml_probe():
    # lazy for start-up: keeps probes.nvml out of every import of validation.scaling_run
    from envcheck.probes.nvml import probe_nvml

    return probe_nvml()


def _judged_under_load(m: ScalingMeasurement) -> list[dict[str, Any]]:
    """The doctor's Multi-GPU findings on what NVML said while the N devices trained."""
    if m.under_load_nvml is None:
        return []
    # lazy for start-up: keeps facts, machine, probes.system, rules.engine out of every import of validation.scaling_run
    from envcheck.facts import Facts
    from envcheck.machine import Machine
    from envcheck.probes.system import probe_environment, probe_platform
    from envcheck.rules.engine import evaluate

    facts = Facts(nvml=m.under_load_nvml, env=probe_environment(os.environ), platform=probe_platform(os.environ))
    return [f.to_dict() for f in evaluate(Machine(facts), select=("EC-PERF",))]


def _keep_one_device(m: ScalingMeasurement, plan):
    if not m.counts:
        return None
    one = m.counts[0]
    measured = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    return record_one_device(
        "gpu" if plan.uses_gpu else "cpu",
        one.batch_per_replica,
        one.images_per_second,
        device="GPU" if plan.uses_gpu else "CPU",
        measured=measured,
    )
