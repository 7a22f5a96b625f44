"""The cluster of a multi-worker run, checked before TensorFlow sees it: TF_CONFIG, or the
variables srun sets for a job step. Whatever they hold, the answer is the cluster or one line
naming the variable (exit 2); never a traceback, a MemoryError or a worker that waits for a peer
it has no reason to expect.

TF_CONFIG (what TensorFlow's TFConfigClusterResolver and MultiWorkerMirroredStrategy read): a JSON
object with ``cluster`` (task type -> list of "host:port") and ``task`` (``type`` and ``index``).
MultiWorkerMirroredStrategy runs ``chief`` (at most one) and ``worker`` tasks; an ``evaluator``
(at most one) may be listed but this process cannot be it; ``ps`` belongs to
ParameterServerStrategy. TensorFlow takes the index through int(), so 1.5 would be worker 1 and
true worker 1: only a whole number is one here.

SLURM (what TensorFlow's SlurmClusterResolver reads): SLURM_PROCID, SLURM_STEP_NUM_TASKS,
SLURM_STEP_NODELIST in the resolver's grammar (a prefix and at most one bracket of ranges at
the end of each name: ``node[01-04,07],gpu3``), SLURM_STEP_TASKS_PER_NODE (``2(x3),1``) and
SLURM_STEP_RESV_PORTS (``12000-12003``). Sizes are counted without expanding anything, so
``node[1-99999999]`` or ``1(x99999999999)`` is one line, not gigabytes.

A worker that cannot reach the others waits at most ``cluster_wait_seconds`` (5 minutes, or
ENVCHECK_CLUSTER_WAIT) for them, then stops with one line (exit 1).
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from envcheck.errors import EXIT_FINDINGS, EnvcheckError, UsageError
from envcheck.words import plural

MAX_WORKERS = 65_536  # far past any cluster one MultiWorkerMirroredStrategy spans
MAX_DIGITS = 9  # an index, a count or a node number; past it, int() could be asked for 5,000 digits
DEFAULT_CLUSTER_WAIT = 300.0
TASK_TYPES = ("chief", "worker", "evaluator")
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.%]{2,64}\]")
_NUMBER = re.compile(r"[0-9]{1,9}")
_PORTS = re.compile(r"^\s*(\d{1,5})(?:-(\d{1,5}))?\s*$")


class ClusterUnreachable(EnvcheckError):
    """The other workers did not answer in time: a state of the cluster, not bad input (exit 1)."""

    exit_code = EXIT_FINDINGS


def _shown(value: object, most: int = 60) -> str:
    """A value for a message: a string quoted (and cut when long), a number or null as JSON writes it."""
    if not isinstance(value, str):
        return json.dumps(value) if isinstance(value, (bool, int, float)) or value is None else type(value).__name__
    return repr(value) if len(value) <= most else repr(value[: most - 20]) + f"... ({len(value)} characters)"


# --- TF_CONFIG --------------------------------------------------------------------------------------


class _Raw:
    """A JSON value Python would not read as a number TF_CONFIG can hold: a number too long to
    convert (int() of 5,000 digits raises) or Infinity / NaN, kept as what it is for the message."""

    def __init__(self, what: str) -> None:
        self.what = what


def _number(text: str) -> Any:
    digits = len(text.lstrip("-"))
    return _Raw(f"a number of {digits:,} digits") if digits > 18 else int(text)


def _float(text: str) -> Any:
    return _Raw(f"a number of {len(text):,} characters") if len(text) > 40 else float(text)


def parse_tf_config(raw: str) -> dict[str, Any]:
    """TF_CONFIG as a checked cluster: the task's index an int, every member a "host:port"."""
    try:
        config = json.loads(raw, parse_int=_number, parse_float=_float, parse_constant=lambda c: _Raw(c))
    except RecursionError:
        raise UsageError("TF_CONFIG is nested too deeply to be a cluster description") from None
    except ValueError as exc:
        raise UsageError(f"TF_CONFIG is not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise UsageError(f"TF_CONFIG must be a JSON object with 'cluster' and 'task', got {_kind(config)}")
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not cluster:
        raise UsageError(f"TF_CONFIG's 'cluster' must be an object of task types, got {_kind(cluster)}")
    if not isinstance(task, dict):
        raise UsageError(f"TF_CONFIG's 'task' must be an object with 'type' and 'index', got {_kind(task)}")
    members = {kind: _members(kind, value) for kind, value in cluster.items()}
    if not members.get("worker") and not members.get("chief"):
        raise UsageError("TF_CONFIG's cluster has no 'chief' and no 'worker' task")
    _unique(members)
    kind, index = _task(task, members)
    return {**config, "cluster": members, "task": {**task, "type": kind, "index": index}}


def _kind(value: object) -> str:
    if isinstance(value, _Raw):
        return value.what
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(value), "a number"
    ) + ("" if isinstance(value, (dict, list, type(None))) else f" ({_shown(value)})")


def _members(kind: object, value: object) -> list[str]:
    if kind == "ps":
        raise UsageError(
            "TF_CONFIG's cluster has a 'ps' task: parameter servers are ParameterServerStrategy's; "
            "MultiWorkerMirroredStrategy has 'chief' and 'worker' tasks only"
        )
    if kind not in TASK_TYPES:
        raise UsageError(f"TF_CONFIG's cluster has a task type {_shown(kind)}: expected chief, worker or evaluator")
    if not isinstance(value, list):
        raise UsageError(f"TF_CONFIG's cluster['{kind}'] must be a list of \"host:port\" addresses, got {_kind(value)}")
    if len(value) > MAX_WORKERS:
        raise UsageError(f"TF_CONFIG's cluster['{kind}'] lists {len(value):,} tasks: at most {MAX_WORKERS:,}")
    if kind in ("chief", "evaluator") and len(value) > 1:
        raise UsageError(f"TF_CONFIG's cluster['{kind}'] lists {len(value)} tasks: a cluster has at most one {kind}")
    for address in value:
        _address(f"TF_CONFIG's cluster['{kind}']", address)
    return list(value)


def _address(where: str, address: object) -> None:
    if not isinstance(address, str):
        raise UsageError(f'{where} holds {_kind(address)}: each task is a "host:port" string')
    host, colon, port = address.rpartition(":")
    if not colon or not host:
        raise UsageError(f'{where} holds {_shown(address)}: an address is "host:port" (the port is missing)')
    if not _HOST.fullmatch(host):
        raise UsageError(f"{where} holds {_shown(address)}: {_shown(host)} is no host name or address")
    if not _NUMBER.fullmatch(port) or not 1 <= int(port) <= 65535:
        raise UsageError(f"{where} holds {_shown(address)}: the port must be a number from 1 to 65535")


def _unique(members: dict[str, list[str]]) -> None:
    seen: dict[str, str] = {}
    for kind, addresses in members.items():
        for address in addresses:
            if address in seen:
                raise UsageError(f"TF_CONFIG's cluster lists {_shown(address)} twice ({seen[address]} and {kind})")
            seen[address] = kind


def _task(task: dict, members: dict[str, list[str]]) -> tuple[str, int]:
    kind, index = task.get("type"), task.get("index")
    if kind == "evaluator":
        raise UsageError("TF_CONFIG's task is the evaluator: envcheck train runs the chief and the workers only")
    if kind not in ("chief", "worker"):
        raise UsageError(f"TF_CONFIG's task 'type' must be 'chief' or 'worker', got {_kind(kind)}")
    if "index" not in task:
        raise UsageError(f"TF_CONFIG's task has no 'index' (which {kind} this process is)")
    if isinstance(index, str) and _NUMBER.fullmatch(index):
        index = int(index)  # TensorFlow takes "1" through int() too
    if isinstance(index, bool) or not isinstance(index, int):
        raise UsageError(f"TF_CONFIG's task 'index' must be a whole number, got {_kind(index)}")
    have = members.get(kind) or []
    if not 0 <= index < len(have):
        raise UsageError(
            f"TF_CONFIG's task is {kind} {index}, but the cluster has {plural(len(have), kind)}"
            + (f" (indexes 0 to {len(have) - 1})" if len(have) > 1 else "")
        )
    return kind, index


# --- SLURM ------------------------------------------------------------------------------------------


def _count(name: str, environ: Mapping[str, str], low: int = 0) -> int:
    raw = environ.get(name, "")
    if not _NUMBER.fullmatch(raw.strip()):
        raise UsageError(f"{name}={_shown(raw)} is not a whole number (of at most {MAX_DIGITS} digits)")
    value = int(raw)
    if value < low:
        raise UsageError(f"{name}={value} must be at least {low}")
    return value


def tasks_per_node(environ: Mapping[str, str]) -> list[int]:
    """SLURM_STEP_TASKS_PER_NODE ("2(x3),1") as tasks per node ([2, 2, 2, 1]), counted before it is
    expanded, so a repetition of 99999999999 is one line."""
    raw = environ.get("SLURM_STEP_TASKS_PER_NODE", "")
    parts: list[tuple[int, int]] = []
    for part in raw.split(","):
        match = re.fullmatch(r"\s*([0-9]{1,9})(?:\(x([0-9]{1,12})\))?\s*", part)
        if match is None:
            raise UsageError(f"SLURM_STEP_TASKS_PER_NODE={_shown(raw)} is not a tasks-per-node list such as '2(x3),1'")
        parts.append((int(match.group(1)), int(match.group(2) or 1)))
    nodes = sum(repeat for _, repeat in parts)
    tasks = sum(count * repeat for count, repeat in parts)
    if tasks > MAX_WORKERS or nodes > MAX_WORKERS:
        raise UsageError(
            f"SLURM_STEP_TASKS_PER_NODE={_shown(raw)} adds up to {tasks:,} tasks on {nodes:,} nodes: "
            f"at most {MAX_WORKERS:,} workers"
        )
    return [count for count, repeat in parts for _ in range(repeat)]


def nodes_in(nodelist: str) -> int:
    """How many names SLURM_STEP_NODELIST expands to, in SlurmClusterResolver's grammar, without
    expanding it; one line when it is not in that grammar or past MAX_WORKERS."""
    shown = f"SLURM_STEP_NODELIST={_shown(nodelist)}"
    total = 0
    for part in _split_nodelist(nodelist, shown):
        prefix, bracket, ranges = part.partition("[")
        if not bracket:
            if "]" in part or not part:
                raise UsageError(f"{shown} is not a SLURM host list such as 'node[01-04],gpu7'")
            total += 1
            continue
        if not ranges.endswith("]") or "]" in ranges[:-1] or "]" in prefix:
            raise UsageError(f"{shown}: {_shown(part)} has text after its range (TensorFlow reads node[1-4] only)")
        total += _range_size(ranges[:-1], shown)
        if total > MAX_WORKERS:
            raise UsageError(f"{shown} names more than {MAX_WORKERS:,} nodes")
    return total


def _split_nodelist(nodelist: str, shown: str) -> Iterator[str]:
    """The names at the commas outside brackets, as the resolver splits them."""
    depth, start = 0, 0
    for i, char in enumerate(nodelist):
        if char == "[":
            depth += 1
            if depth > 1:
                raise UsageError(f"{shown} has a bracket inside a bracket")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise UsageError(f"{shown} closes a bracket it never opened")
        elif char == "," and depth == 0:
            yield nodelist[start:i]
            start = i + 1
    if depth:
        raise UsageError(f"{shown} leaves a bracket open")
    yield nodelist[start:]


def _range_size(ranges: str, shown: str) -> int:
    size = 0
    for piece in ranges.split(","):
        low, dash, high = piece.partition("-")
        high = high if dash else low
        if not (_NUMBER.fullmatch(low) and _NUMBER.fullmatch(high)) or int(high) < int(low):
            raise UsageError(f"{shown}: {_shown(piece)} is no range of node numbers such as 01-04")
        size += int(high) - int(low) + 1
        if size > MAX_WORKERS:
            raise UsageError(f"{shown} names more than {MAX_WORKERS:,} nodes")
    return size


def port_base(environ: Mapping[str, str], most_on_a_node: int, default: int) -> int:
    """The first port srun reserved (SLURM_STEP_RESV_PORTS=12000-12003), else ``default``; the
    resolver gives a node's tasks base, base+1, ...: they must all be ports, and reserved."""
    raw = environ.get("SLURM_STEP_RESV_PORTS")
    if raw is None or not raw.strip():
        low, high = default, 65535
    else:
        first = raw.split(",")[0]
        match = _PORTS.match(first)
        if match is None:
            raise UsageError(f"SLURM_STEP_RESV_PORTS={_shown(raw)} is not a port range such as 12000-12003")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if not 1 <= low <= high <= 65535:
            raise UsageError(f"SLURM_STEP_RESV_PORTS={_shown(raw)}: ports are numbers from 1 to 65535, low to high")
    if low + most_on_a_node - 1 > high:
        raise UsageError(
            f"SLURM_STEP_RESV_PORTS={_shown(raw or str(default))}: {most_on_a_node} tasks on a node need "
            f"{most_on_a_node} ports from {low}; reserve them with srun --resv-ports={most_on_a_node}"
        )
    return low


def check_slurm_step(environ: Mapping[str, str], default_port: int) -> tuple[list[int], int]:
    """(tasks per node, the first port) once every variable of the step agrees with the others."""
    counts = tasks_per_node(environ)
    tasks = _count("SLURM_STEP_NUM_TASKS", environ, low=1)
    rank = _count("SLURM_PROCID", environ)
    raw = environ.get("SLURM_STEP_TASKS_PER_NODE", "")
    if tasks != sum(counts):
        raise UsageError(
            f"SLURM_STEP_NUM_TASKS={tasks} but SLURM_STEP_TASKS_PER_NODE={_shown(raw)} adds up to {sum(counts)}"
        )
    if not 0 <= rank < tasks:
        raise UsageError(f"SLURM_PROCID={rank} is not one of the step's {tasks} tasks")
    nodes = nodes_in(environ.get("SLURM_STEP_NODELIST", ""))
    if nodes != len(counts):
        raise UsageError(
            f"SLURM_STEP_NODELIST names {plural(nodes, 'node')} but SLURM_STEP_TASKS_PER_NODE={_shown(raw)} "
            f"gives tasks for {len(counts)}"
        )
    return counts, port_base(environ, max(counts), default_port)


# --- waiting for the others --------------------------------------------------------------------------


def cluster_wait_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """How long a worker waits for the others: ENVCHECK_CLUSTER_WAIT seconds, else 5 minutes."""
    raw = environ.get("ENVCHECK_CLUSTER_WAIT")
    if raw is None or not raw.strip():
        return DEFAULT_CLUSTER_WAIT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 1 <= value <= 86400:
        raise UsageError(f"ENVCHECK_CLUSTER_WAIT={_shown(raw)} must be a number of seconds from 1 to 86400")
    return value


def within_wait(tf, seconds: float, who: str, cluster: dict[str, list[str]], start: Callable[[], Any]) -> Any:
    """``start()`` (MultiWorkerMirroredStrategy) waiting for the other workers at most ``seconds``.
    The strategy waits for every worker to join as it sets up the collective ops through the
    coordination service (TensorFlow 2.9 on), and in its first all-reduce, both without end by
    default; past ``seconds`` here, one line (exit 1) says who waited for what."""
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    from tensorflow.python.distribute import collective_all_reduce_strategy as collective

    _coordination_with_timeout(tf, cluster, seconds)
    extended = getattr(collective, "CollectiveAllReduceExtended", None)
    saved = getattr(extended, "_check_health_initial_timeout", None)
    if saved is not None:
        extended._check_health_initial_timeout = max(1, math.ceil(seconds))
    try:
        return start()
    except (RuntimeError, tf.errors.DeadlineExceededError, tf.errors.UnavailableError) as exc:
        if "timeout" not in str(exc).lower() and not isinstance(exc, tf.errors.OpError):
            raise
    finally:
        if saved is not None:
            extended._check_health_initial_timeout = saved
    _close_the_context()  # out of the handler: no frame of the failed start holds it any more
    raise ClusterUnreachable(
        f"--multi-worker: {who} waited {seconds:g} s for the other workers and gave up: start every "
        "worker (each with its own task in TF_CONFIG, or all under one srun), check that their "
        "addresses are reachable from here, or wait longer with ENVCHECK_CLUSTER_WAIT=SECONDS"
    )


def _close_the_context() -> None:
    """End the failed eager context now, while the set-up still holds TensorFlow's output: its
    coordination agent, shut down in an error state, prints a dozen lines."""
    try:
        # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
        from tensorflow.python.eager import context

        context._reset_context()
        gc.collect()
    except (ImportError, AttributeError, RuntimeError):
        pass


def _coordination_with_timeout(tf, cluster: dict[str, list[str]], seconds: float) -> None:
    """The coordination service MultiWorkerMirroredStrategy would configure (a standalone service
    led by the chief, else worker 0, over the chief and worker jobs), with a registration timeout:
    the strategy keeps a service configured before it. A TensorFlow without these parts (older or
    newer internals) keeps its own waits."""
    try:
        # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
        from tensorflow.python.distribute import multi_worker_util
        from tensorflow.python.eager import context

        ctx = context.context()
        if ctx.coordination_service is not None:
            return
        proto = context.coordination_config_pb2
        spec = tf.train.ClusterSpec({kind: cluster[kind] for kind in ("chief", "worker") if cluster.get(kind)})
        jobs = [proto.CoordinatedJob(name=job, num_tasks=spec.num_tasks(job)) for job in spec.jobs]
        ctx.configure_coordination_service(
            service_type="standalone",
            service_leader=multi_worker_util.coordination_leader(spec),
            coordinated_jobs=jobs,
            cluster_register_timeout_in_ms=int(seconds * 1000),
        )
        # The timeout counts only with the registration barrier: without it the first task goes
        # on and waits for the others, unbounded, as it sets up the collective ops.
        ctx.coordination_service.cluster_register_with_barrier = True
    except (ImportError, AttributeError, TypeError, ValueError):
        return
