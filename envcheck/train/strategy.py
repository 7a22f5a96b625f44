"""Which devices a run uses and the tf.distribute strategy over them.

  --gpus N          MirroredStrategy over the first N GPUs (all visible GPUs by default; 0: CPU)
  --cpu-replicas N  the CPU split into N logical devices, mirrored: the multi-replica code path on
                    a machine without GPUs
  --multi-worker    MultiWorkerMirroredStrategy from TF_CONFIG, over each worker's GPUs (or CPU)

Device configuration must happen before TensorFlow starts its runtime, so a plan is made once,
at the start of a process, before any tensor exists.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Any, Optional

from envcheck.errors import UsageError


@dataclass(frozen=True)
class DevicePlan:
    strategy: Any  # tf.distribute.Strategy
    kind: str  # "gpu", "cpu" or "multi-worker"
    devices: tuple[str, ...]  # this worker's devices
    replicas: int  # replicas in sync, over all workers
    workers: int = 1
    worker_index: int = 0
    is_chief: bool = True
    note: str = ""  # why the CPU is used when no device was asked for and no GPU is usable

    @property
    def uses_gpu(self) -> bool:
        return any("GPU" in d.upper() for d in self.devices)

    def describe(self) -> dict[str, Any]:
        return {
            "strategy": strategy_name(self.strategy),
            "kind": self.kind,
            "devices": list(self.devices),
            "replicas": self.replicas,
            "workers": self.workers,
            "worker_index": self.worker_index,
            "is_chief": self.is_chief,
            **({"note": self.note} if self.note else {}),
        }


def strategy_name(strategy) -> str:
    """The public tf.distribute name (MultiWorkerMirroredStrategy's class calls itself otherwise)."""
    import tensorflow as tf

    for name in ("MultiWorkerMirroredStrategy", "MirroredStrategy", "OneDeviceStrategy"):
        if isinstance(strategy, getattr(tf.distribute, name)):
            return name
    return type(strategy).__name__


def split_cpu(count: int) -> list[str]:
    """Split the CPU into `count` logical devices (or check that it already is); their names."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        current = tf.config.get_logical_device_configuration(cpu)
        if count > 1 and (current is None or len(current) != count):
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
            )
    except RuntimeError:
        pass  # the runtime has started: the split cannot change any more; checked below
    logical = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(logical) < count:
        raise UsageError(
            f"--cpu-replicas {count}: TensorFlow already started with {len(logical)} CPU device(s) in this "
            "process; the CPU can only be split before TensorFlow starts"
        )
    return logical[:count]


def select_gpus(requested: Optional[int], *, may_start_runtime: bool = True) -> list[str]:
    """Make the first `requested` GPUs (all when None) the only visible ones; their device names.

    With `may_start_runtime` (single-machine runs) envcheck.runtime does the work: GPUs numbered
    as nvidia-smi shows them, memory growth on. A multi-worker strategy must be created before
    TensorFlow's runtime starts, which envcheck.runtime's device listing would do, so that path
    sets visibility and memory growth directly.
    """
    import tensorflow as tf

    physical = tf.config.list_physical_devices("GPU")
    if requested is None:
        requested = len(physical)
    if requested > len(physical):
        have = (
            f"{len(physical)} GPU(s) TensorFlow can see ({', '.join(g.name for g in physical)})"
            if physical
            else "no GPU that TensorFlow can see (run `envcheck doctor` to find out why)"
        )
        raise UsageError(f"--gpus {requested}: this machine has {have}")
    if requested == 0:
        return []
    if may_start_runtime:
        names = _configure_with_runtime(requested)
        if names is not None:
            return names
    chosen = physical[:requested]
    try:
        tf.config.set_visible_devices(chosen, "GPU")
    except RuntimeError:
        pass  # already started with these devices visible (a second run in the same process)
    for gpu in chosen:
        try:
            # Allocate as needed instead of all at once, so a trainer can share its GPUs.
            tf.config.experimental.set_memory_growth(gpu, True)
        except (RuntimeError, ValueError):
            pass  # already initialised: growth can no longer change, and training still works
    # Visible GPUs are numbered from 0 in the order they were made visible.
    return [f"/gpu:{i}" for i in range(len(chosen))]


def _configure_with_runtime(count: int) -> Optional[list[str]]:
    """The first `count` GPUs through envcheck.runtime; None when it is absent or TensorFlow already started."""
    try:
        from envcheck import runtime
    except ImportError:
        return None
    try:
        devices = runtime.configure(gpus=list(range(count)), memory_growth=True, fallback="error")
    except getattr(runtime, "RuntimeConfigError", RuntimeError):
        return None
    return [d.name for d in devices]


def read_tf_config(environ=os.environ) -> dict[str, Any]:
    """TF_CONFIG, checked: the cluster and this process's task, or a one-line error."""
    raw = environ.get("TF_CONFIG")
    if not raw:
        raise UsageError(
            "--multi-worker needs TF_CONFIG, e.g. "
            '\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}}\''
        )
    try:
        config = json.loads(raw)
        cluster, task = config["cluster"], config["task"]
        members = cluster[task["type"]]
        index = int(task["index"])
        if not 0 <= index < len(members):
            raise ValueError(f"task index {index} is not in the cluster's {len(members)} {task['type']}(s)")
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"TF_CONFIG is not a valid cluster description ({type(exc).__name__}: {exc})") from None
    return config


def chief_of(config: dict[str, Any]) -> tuple[bool, int, int]:
    """(is this process the chief, its worker index, the number of workers) from a TF_CONFIG.

    The chief is the "chief" task when there is one, otherwise worker 0; it alone writes outputs.
    """
    cluster, task = config["cluster"], config["task"]
    workers = len(cluster.get("chief", [])) + len(cluster.get("worker", []))
    if "chief" in cluster:
        is_chief = task["type"] == "chief"
        index = 0 if is_chief else int(task["index"]) + len(cluster["chief"])
    else:
        index = int(task["index"])
        is_chief = task["type"] == "worker" and index == 0
    return is_chief, index, workers


def plan_devices(gpus: Optional[int] = None, cpu_replicas: int = 1, multi_worker: bool = False) -> DevicePlan:
    """Configure devices and build the strategy. Call before any other TensorFlow work."""
    if gpus and cpu_replicas > 1:
        raise UsageError("--gpus and --cpu-replicas exclude each other: mirror over GPUs or over CPU devices")
    import tensorflow as tf

    if multi_worker:
        config = read_tf_config()
        is_chief, index, workers = chief_of(config)
        # MultiWorkerMirroredStrategy mirrors over every visible GPU of a worker, so narrow them first.
        if gpus == 0:
            tf.config.set_visible_devices([], "GPU")
        else:
            select_gpus(gpus, may_start_runtime=False)
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        return DevicePlan(
            strategy, "multi-worker", _local_devices(strategy), strategy.num_replicas_in_sync, workers, index, is_chief
        )

    if cpu_replicas > 1 or gpus == 0:
        try:
            tf.config.set_visible_devices([], "GPU")
        except RuntimeError:
            pass
        names = split_cpu(cpu_replicas)
        if len(names) == 1:
            return _single(tf.distribute.OneDeviceStrategy(names[0]), "cpu")
        return _single(tf.distribute.MirroredStrategy(names), "cpu")

    names = select_gpus(gpus)
    if not names:  # no GPU asked for by number and none visible: the CPU, saying why
        cpu = tf.config.list_logical_devices("CPU")[0].name
        plan = _single(tf.distribute.OneDeviceStrategy(cpu), "cpu")
        return replace(plan, note=f"no usable GPU, training on the CPU: {gpu_unavailable_reason(tf)}")
    if len(names) == 1:
        return _single(tf.distribute.OneDeviceStrategy(names[0]), "gpu")
    return _single(tf.distribute.MirroredStrategy(names), "gpu")


def gpu_unavailable_reason(tf) -> str:
    """The doctor's one-line reason (through envcheck.runtime) why TensorFlow has no GPU here."""
    try:
        from envcheck import runtime

        return runtime.gpu_unavailable_reason(tf)
    except Exception:  # noqa: BLE001 - a reason is a courtesy; training goes on without it
        return "TensorFlow lists no GPU; run `envcheck doctor` to find out why"


def _local_devices(strategy) -> tuple[str, ...]:
    return tuple(strategy.extended.worker_devices)


def _single(strategy, kind: str) -> DevicePlan:
    """A plan for one machine: its devices as the strategy resolved them."""
    return DevicePlan(strategy, kind, _local_devices(strategy), strategy.num_replicas_in_sync)
