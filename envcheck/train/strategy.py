"""Which devices a run uses and the tf.distribute strategy over them.

  --gpus N          MirroredStrategy over the first N GPUs (all visible GPUs by default; 0: CPU)
  --cpu-replicas N  the CPU split into N logical devices, mirrored: the multi-replica code path on
                    a machine without GPUs
  --multi-worker    MultiWorkerMirroredStrategy from TF_CONFIG, or from SLURM's srun variables
                    (TensorFlow's SlurmClusterResolver), over each worker's GPUs (or CPU)

Device configuration must happen before TensorFlow starts its runtime, so a plan is made once,
at the start of a process, before any tensor exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Optional

from envcheck.errors import UsageError
from envcheck.train.cluster import check_slurm_step, cluster_wait_seconds, parse_tf_config, within_wait
from envcheck.words import plural


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
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    for name in ("MultiWorkerMirroredStrategy", "MirroredStrategy", "OneDeviceStrategy"):
        if isinstance(strategy, getattr(tf.distribute, name)):
            return name
    return type(strategy).__name__


def split_cpu(count: int) -> list[str]:
    """Split the CPU into `count` logical devices (or check that it already is); their names."""
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
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
            f"--cpu-replicas {count}: TensorFlow already started with {plural(len(logical), 'CPU device')} in this "
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
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    physical = tf.config.list_physical_devices("GPU")
    if requested is None:
        requested = len(physical)
    if requested > len(physical):
        have = (
            f"{plural(len(physical), 'GPU')} TensorFlow can see ({', '.join(g.name for g in physical)})"
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
        # lazy for start-up: keeps runtime (and what it imports) out of every import of train.strategy
        from envcheck import runtime
    except ImportError:
        return None
    try:
        devices = runtime.configure(gpus=list(range(count)), memory_growth=True, fallback="error")
    except getattr(runtime, "RuntimeConfigError", RuntimeError):
        return None
    return [d.name for d in devices]


_TF_CONFIG_EXAMPLE = (
    '\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}}\''
)

# What srun sets for each task of a job step, and what TensorFlow's SlurmClusterResolver reads.
SLURM_STEP_VARIABLES = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")
SLURM_PORT_BASE = 8888  # SlurmClusterResolver's own default, when srun reserved no ports (--resv-ports)


def cluster_source(environ=os.environ) -> str:
    """Where a multi-worker run finds its cluster: "TF_CONFIG" when it is set, else "SLURM" when
    srun's variables are; otherwise a one-line error saying what to set. Every variable is checked
    here (envcheck/train/cluster.py), before TensorFlow is imported, so a missing or malformed
    cluster costs nothing and TensorFlow never sees one."""
    cluster_wait_seconds(environ)
    if environ.get("TF_CONFIG"):
        parse_tf_config(environ["TF_CONFIG"])
        return "TF_CONFIG"
    missing = [name for name in SLURM_STEP_VARIABLES if not environ.get(name)]
    if not missing:
        check_slurm_step(environ, SLURM_PORT_BASE)
        return "SLURM"
    if any(name.startswith("SLURM_") for name in environ):
        raise UsageError(
            f"--multi-worker: this is a SLURM job but not a job step ({', '.join(missing)} not set): start one "
            "worker per task with srun (srun envcheck train --multi-worker ...), or set TF_CONFIG"
        )
    raise UsageError(
        "--multi-worker needs a cluster: neither TF_CONFIG nor SLURM's variables (run under srun) are set; "
        f"set TF_CONFIG, e.g. {_TF_CONFIG_EXAMPLE}"
    )


def read_tf_config(environ=os.environ) -> dict[str, Any]:
    """The cluster and this process's task, as TF_CONFIG describes them: from TF_CONFIG itself, or
    built from SLURM's variables by TensorFlow's SlurmClusterResolver; a one-line error otherwise.
    A SLURM cluster also carries ``slurm``: this task's slot on its node and the tasks there."""
    if cluster_source(environ) == "TF_CONFIG":
        return parse_tf_config(environ["TF_CONFIG"])
    return slurm_tf_config(environ)


def slurm_tasks(environ=os.environ) -> list[int]:
    """SLURM_STEP_TASKS_PER_NODE ("2(x3),1") as tasks per node ([2, 2, 2, 1]), with the step's other
    variables checked against it: one line naming the variable that is wrong."""
    return check_slurm_step(environ, SLURM_PORT_BASE)[0]


def slurm_port_base(environ=os.environ) -> int:
    """The first port srun reserved for the step (--resv-ports sets SLURM_STEP_RESV_PORTS=12000-12003),
    else the resolver's default."""
    return check_slurm_step(environ, SLURM_PORT_BASE)[1]


def slurm_tf_config(environ=os.environ) -> dict[str, Any]:
    """The cluster from SLURM's variables, through TensorFlow's SlurmClusterResolver.

    The resolver hands each task of a node one GPU "slot" as it lists the tasks, and lists none
    when it is told of no GPUs; so it is given a slot per task (and ``auto_set_gpu=False``: it
    must not set CUDA_VISIBLE_DEVICES behind TensorFlow's back), and this process's GPUs are
    chosen from its slot afterwards (``plan_devices``).
    """
    counts, port_base = check_slurm_step(environ, SLURM_PORT_BASE)
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    with _process_environment(environ, SLURM_STEP_VARIABLES):
        try:
            resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
                port_base=port_base, gpus_per_node=max(counts), gpus_per_task=1, auto_set_gpu=False
            )
            cluster = resolver.cluster_spec().as_dict()
            task_type, task_id = resolver.get_task_info()
        except (RuntimeError, ValueError, KeyError, AssertionError, TypeError) as exc:
            said = " ".join(str(exc).split())[:300]
            raise UsageError(f"SLURM's variables do not describe a cluster TensorFlow can use: {said}") from None
    address = cluster[task_type][task_id]
    slot = int(address.rsplit(":", 1)[1]) - port_base
    host = address.rsplit(":", 1)[0]
    on_node = sum(1 for a in cluster[task_type] if a.rsplit(":", 1)[0] == host)
    return {
        "cluster": cluster,
        "task": {"type": task_type, "index": task_id},
        "slurm": {"slot": slot, "tasks_on_node": on_node, "port_base": port_base},
    }


class _process_environment:
    """SlurmClusterResolver reads os.environ: let it read ``environ`` when that is another mapping."""

    def __init__(self, environ, names) -> None:
        self.environ, self.names, self.saved = environ, names, None

    def __enter__(self):
        if self.environ is not os.environ:
            self.saved = {n: os.environ.get(n) for n in self.names}
            for n in self.names:
                os.environ[n] = self.environ[n]
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is not None:
            for n, value in self.saved.items():
                if value is None:
                    os.environ.pop(n, None)
                else:
                    os.environ[n] = value


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
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    if multi_worker:
        config = read_tf_config()
        is_chief, index, workers = chief_of(config)
        if "slurm" in config:
            strategy = _slurm_strategy(tf, config, gpus)
        else:
            # MultiWorkerMirroredStrategy mirrors over every visible GPU of a worker, so narrow them first.
            if gpus == 0:
                tf.config.set_visible_devices([], "GPU")
            else:
                select_gpus(gpus, may_start_runtime=False)
            strategy = _multi_worker(tf, None, f"{config['task']['type']} {config['task']['index']}", config["cluster"])
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


def _slurm_strategy(tf, config: dict[str, Any], gpus: int | None):
    """MultiWorkerMirroredStrategy over the SLURM cluster: this task's share of its node's GPUs (the
    node's GPUs split evenly among its tasks, by slot), or the CPU when there is none."""
    slurm = config["slurm"]
    physical = tf.config.list_physical_devices("GPU")
    wanted = len(physical) if gpus is None else gpus
    if wanted > len(physical):
        raise UsageError(f"--gpus {wanted}: this node has {plural(len(physical), 'GPU')} TensorFlow can see")
    share = wanted // slurm["tasks_on_node"]
    if wanted and not share:
        raise UsageError(
            f"SLURM runs {slurm['tasks_on_node']} tasks on this node and it has {plural(wanted, 'GPU')}: "
            "run one task per GPU or fewer (srun --ntasks-per-node), or --gpus 0 for the CPU"
        )
    chosen = physical[slurm["slot"] * share : (slurm["slot"] + 1) * share]
    tf.config.set_visible_devices(chosen, "GPU")
    for gpu in chosen:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except (RuntimeError, ValueError):
            pass
    task = config["task"]
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(config["cluster"]),
        task_type=task["type"],
        task_id=task["index"],
        num_accelerators={"GPU": len(chosen)},
        rpc_layer="grpc",
    )
    return _multi_worker(
        tf, resolver, f"SLURM task {task['index']} ({task['type']} {task['index']})", config["cluster"]
    )


def _multi_worker(tf, resolver, who: str, cluster: dict):
    """MultiWorkerMirroredStrategy, waiting for the other workers at most cluster_wait_seconds();
    what TensorFlow refuses of the cluster is one line."""

    def start():
        try:
            if resolver is None:
                return tf.distribute.MultiWorkerMirroredStrategy()
            return tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        except (ValueError, TypeError, KeyError) as exc:
            said = " ".join(str(exc).split())[:300]
            raise UsageError(f"--multi-worker: TensorFlow refused the cluster: {said}") from None

    return within_wait(tf, cluster_wait_seconds(), who, cluster, start)


def gpu_unavailable_reason(tf) -> str:
    """The doctor's one-line reason (through envcheck.runtime) why TensorFlow has no GPU here."""
    try:
        # lazy for start-up: keeps runtime (and what it imports) out of every import of train.strategy
        from envcheck import runtime

        return runtime.gpu_unavailable_reason(tf)
    except Exception:  # noqa: BLE001 - a reason is a courtesy; training goes on without it
        return "TensorFlow lists no GPU; run `envcheck doctor` to find out why"


def _local_devices(strategy) -> tuple[str, ...]:
    return tuple(strategy.extended.worker_devices)


def _single(strategy, kind: str) -> DevicePlan:
    """A plan for one machine: its devices as the strategy resolved them."""
    return DevicePlan(strategy, kind, _local_devices(strategy), strategy.num_replicas_in_sync)
