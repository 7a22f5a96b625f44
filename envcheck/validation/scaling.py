"""validate --scaling: images/s on 1, 2, ... N devices at the same per-replica batch, and the
measurements that tell why it does not scale: the input pipeline alone, a bare all-reduce of the
model's gradients on the N devices, each device alone (with an in-memory batch, no pipeline), and
one device with a four times larger batch. ``envcheck.validation.bottleneck`` reads them.

A workload is the model, its input pipeline and an in-memory batch; ``reference_workload`` is the
trainer's MiniGoogLeNet on synthetic CIFAR-10-shaped data through the trainer's own pipeline.
Each configuration is built fresh under its strategy, warmed up (tracing) and then timed.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

WARMUP_STEPS = 2
DEFAULT_STEPS = 8
ALLREDUCE_REPEATS = 5
PIPELINE_BATCHES = 20
BATCH_PROBE_FACTOR = 4


@dataclass
class Workload:
    """What is measured: a model to build (under the strategy's scope), the input pipeline of a
    global batch, and an in-memory batch of n images (for the runs that leave the pipeline out)."""

    name: str
    build_model: Callable[[], Any]
    dataset: Callable[[int], Any]  # global batch -> tf.data.Dataset of (images, one-hot labels), repeating
    batch: Callable[[int], tuple[Any, Any]]  # n -> (images, labels) as numpy arrays
    batch_per_replica: int
    learning_rate: float = 0.005


@dataclass(frozen=True)
class Rate:
    devices: tuple[str, ...]
    batch_per_replica: int
    images_per_second: float
    step_seconds: float
    with_pipeline: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": list(self.devices),
            "batch_per_replica": self.batch_per_replica,
            "images_per_second": round(self.images_per_second, 2),
            "step_seconds": round(self.step_seconds, 5),
            "with_pipeline": self.with_pipeline,
        }


@dataclass
class ScalingMeasurement:
    workload: str
    devices: tuple[str, ...]
    logical_cpu: bool  # the devices are logical devices of one CPU, sharing its cores
    counts: list[Rate] = field(default_factory=list)  # 1..N devices, with the input pipeline
    pipeline_images_per_second: Optional[float] = None
    allreduce_seconds: Optional[float] = None
    gradient_megabytes: Optional[float] = None
    alone: list[Rate] = field(default_factory=list)  # each device alone, in-memory batch
    larger_batch: Optional[Rate] = None  # the first device alone, BATCH_PROBE_FACTOR x the batch
    under_load_nvml: Any = None  # NvmlFacts probed while the N devices trained (GPUs only)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "devices": list(self.devices),
            "logical_cpu": self.logical_cpu,
            "counts": [r.to_dict() for r in self.counts],
            "pipeline_images_per_second": _round(self.pipeline_images_per_second, 2),
            "allreduce_seconds": _round(self.allreduce_seconds, 6),
            "gradient_megabytes": _round(self.gradient_megabytes, 3),
            "alone": [r.to_dict() for r in self.alone],
            "larger_batch": self.larger_batch.to_dict() if self.larger_batch else None,
            "seconds": round(self.seconds, 2),
        }


def _round(value: Optional[float], digits: int) -> Optional[float]:
    return None if value is None else round(value, digits)


def measure(
    workload: Workload,
    devices: list[str],
    *,
    logical_cpu: bool = False,
    steps: int = DEFAULT_STEPS,
    say: Callable[[str], None] = lambda text: None,
    probe_under_load: Optional[Callable[[], Any]] = None,
) -> ScalingMeasurement:
    """Every measurement ``bottleneck.analyse`` needs, on ``devices`` (the first k for count k)."""
    started = time.perf_counter()
    result = ScalingMeasurement(workload.name, tuple(devices), logical_cpu)
    batch = workload.batch_per_replica
    for count in range(1, len(devices) + 1):
        say(f"training on {count} of {len(devices)} devices")
        probe = probe_under_load if count == len(devices) and count > 1 else None
        rate, nvml = _timed_training(workload, devices[:count], batch, steps, pipeline=True, probe=probe)
        result.counts.append(rate)
        result.under_load_nvml = nvml if nvml is not None else result.under_load_nvml
    say("the input pipeline alone")
    result.pipeline_images_per_second = pipeline_rate(workload, batch * len(devices))
    if len(devices) > 1:
        say(f"an all-reduce of the gradients over {len(devices)} devices")
        result.allreduce_seconds, result.gradient_megabytes = allreduce_time(workload, devices)
    for device in devices:
        say(f"{device.rsplit('/', 1)[-1]} alone")
        result.alone.append(_timed_training(workload, [device], batch, steps, pipeline=False)[0])
    say(f"{BATCH_PROBE_FACTOR}x the batch on one device")
    result.larger_batch = _timed_training(
        workload, devices[:1], batch * BATCH_PROBE_FACTOR, max(2, steps // 2), pipeline=False
    )[0]
    result.seconds = time.perf_counter() - started
    return result


_strategies_made = 0
# Group keys one strategy's collectives may use before the next strategy's begin.
COLLECTIVE_KEYS_PER_STRATEGY = 10_000


def strategy_for(devices: list[str]):
    """A MirroredStrategy over ``devices``, its collectives' group keys apart from the others'.

    Every MirroredStrategy numbers its collective groups from 1, so a second one over another set
    of devices in the same process joins the first one's group and fails ("joining a group with
    size 3, but that group has size 2"). TensorFlow's own tests set the class's key base apart for
    each strategy; so does this (when the attribute is there: it is not public).
    """
    global _strategies_made
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    strategy_class = tf.distribute.MirroredStrategy
    if hasattr(strategy_class, "_collective_key_base"):
        strategy_class._collective_key_base = COLLECTIVE_KEYS_PER_STRATEGY * _strategies_made
    _strategies_made += 1
    return strategy_class(devices)


def _train_step(strategy, model, optimizer, global_batch: int):
    # lazy for start-up: keras and tensorflow are heavy (or absent), imported only where it is used
    import keras
    import tensorflow as tf

    loss_of = keras.losses.CategoricalCrossentropy(reduction="none")

    def replica_step(images, labels):
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = tf.reduce_sum(loss_of(labels, predictions)) / global_batch
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def step(iterator):
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step, next(iterator)), axis=None)

    return step


def _timed_training(workload: Workload, devices: list[str], batch: int, steps: int, *, pipeline: bool, probe=None):
    """(images/s of ``steps`` timed steps after the warm-up, NVML probed during them or None)."""
    # lazy for start-up: keras and tensorflow are heavy (or absent), imported only where it is used
    import keras
    import tensorflow as tf

    strategy = strategy_for(devices)
    global_batch = batch * len(devices)
    with strategy.scope():
        model = workload.build_model()
        optimizer = keras.optimizers.SGD(workload.learning_rate, momentum=0.9)
        # Its momentum slots now, mirrored on every device: created inside the step, they would not be.
        optimizer.build(model.trainable_variables)
    if pipeline:
        dataset = workload.dataset(global_batch)
    else:
        images, labels = workload.batch(global_batch)
        dataset = tf.data.Dataset.from_tensors((images, labels)).repeat()
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    step = _train_step(strategy, model, optimizer, global_batch)
    for _ in range(WARMUP_STEPS):
        float(step(iterator))
    watcher = _Probe(probe) if probe is not None else None
    timer = time.perf_counter()
    for _ in range(steps):
        loss = step(iterator)
    float(loss)  # waits for the last step on every replica
    seconds = (time.perf_counter() - timer) / steps
    nvml = watcher.result() if watcher is not None else None
    return Rate(tuple(devices), batch, global_batch / seconds, seconds, pipeline), nvml


class _Probe:
    """Runs a probe once on a thread while the timed steps run: links and clocks under load."""

    def __init__(self, probe: Callable[[], Any]) -> None:
        self.value: Any = None
        self.thread = threading.Thread(target=self._run, args=(probe,), daemon=True)
        self.thread.start()

    def _run(self, probe) -> None:
        time.sleep(0.2)  # let the GPUs ramp up their clocks and links first
        try:
            self.value = probe()
        except Exception:  # noqa: BLE001 - the facts under load are a bonus, never a failure
            self.value = None

    def result(self) -> Any:
        self.thread.join(timeout=30)
        return self.value


def pipeline_rate(workload: Workload, global_batch: int, batches: int = PIPELINE_BATCHES) -> float:
    """Images/s the input pipeline delivers with nothing consuming them but the loop."""
    iterator = iter(workload.dataset(global_batch))
    next(iterator)  # the first batch starts the pipeline's threads
    timer = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return global_batch * batches / (time.perf_counter() - timer)


def allreduce_time(workload: Workload, devices: list[str]) -> tuple[float, float]:
    """(seconds per all-reduce of tensors shaped as the model's gradients, their megabytes)."""
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    strategy = strategy_for(devices)
    with strategy.scope():
        shapes = [tuple(v.shape) for v in workload.build_model().trainable_variables]
    megabytes = sum(4 * _elements(s) for s in shapes) / 1e6

    @tf.function
    def reduce_all():
        def replica():
            context = tf.distribute.get_replica_context()
            return context.all_reduce(tf.distribute.ReduceOp.SUM, [tf.ones(s) for s in shapes])

        return strategy.run(replica)

    _wait(strategy, reduce_all())  # tracing and the collective's set-up
    times = []
    for _ in range(ALLREDUCE_REPEATS):
        timer = time.perf_counter()
        _wait(strategy, reduce_all())
        times.append(time.perf_counter() - timer)
    return statistics.median(times), megabytes


def _wait(strategy, per_replica) -> None:
    for values in strategy.experimental_local_results(per_replica):
        for value in values if isinstance(values, (list, tuple)) else [values]:
            value.numpy()
            break


def _elements(shape: tuple) -> int:
    count = 1
    for size in shape:
        count *= int(size)
    return count
