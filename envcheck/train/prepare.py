"""Everything before the first step: the devices, how the run goes fast on them (envcheck.train.speed),
the model and its optimizer under the strategy, and the weights of an interrupted run.

TensorFlow starts here: the trainer imports this module only once the data is loaded, so that
a missing data set is reported before TensorFlow's seconds of start-up.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import keras
import tensorflow as tf

from envcheck.errors import UsageError
from envcheck.train import pipeline, speed
from envcheck.train.cifar import CifarData
from envcheck.train.config import JIT_WITH_CPU_REPLICAS, TrainConfig
from envcheck.train.model import build_training_model
from envcheck.train.outputs import OutputFolder
from envcheck.train.strategy import plan_devices
from envcheck.words import plural

# Keras 3.15's loop of several steps per call (a tf.while_loop of tf.cond over the iterator's
# optionals) fails under MirroredStrategy with two or more replicas: "You must feed a value for
# placeholder tensor 'while/body/.../while/cond/Placeholder'" at the first call.
SEVERAL_STEPS_WITH_REPLICAS = (
    "--steps-per-execution above 1 with several replicas: Keras's loop of several steps per call fails "
    "under MirroredStrategy; leave it out (one step a call) or train on one device"
)
FLAG_OF_POLICY = {policy: flag for flag, policy in speed.POLICIES.items()}


@dataclass
class PreparedRun:
    model: Any  # keras.Model, compiled
    plan: Any  # strategy.DevicePlan
    speed: speed.SpeedPlan
    steps: int  # steps per epoch
    global_batch: int
    epochs_done: int  # of an interrupted run; 0 for a new one
    rows: list[dict[str, Any]]  # the finished epochs' history rows

    def resume_key(self, config: TrainConfig) -> dict[str, Any]:
        """What the resume point records: the settings, and the precision this run trains in."""
        return {**config.resume_key(), "policy": self.speed.policy.value}


def prepare(
    config: TrainConfig, data: CifarData, plan, output: OutputFolder, state, stage=None, onednn=None
) -> PreparedRun:
    """Devices, the speed plan, the compiled model and the resume point, in that order."""
    if plan is None:
        plan = plan_devices(config.gpus, config.cpu_replicas, config.multi_worker)
    if stage is not None:
        stage(f"Building MiniGoogLeNet on {plural(plan.replicas, 'replica')}")
    if config.jit and plan.kind == "cpu" and plan.replicas > 1:
        raise UsageError(JIT_WITH_CPU_REPLICAS)
    recipe = config.recipe
    global_batch = recipe.batch_per_replica * plan.replicas
    steps = pipeline.steps_per_epoch(len(data.x_train), global_batch, config.steps_per_epoch)
    if steps < 1:
        raise UsageError(
            f"{len(data.x_train)} training images are fewer than one global batch of {global_batch} "
            f"({recipe.batch_per_replica} per replica x {plan.replicas} replicas): use more images or a smaller batch"
        )
    plan_for_speed = choose_speed(config, plan, steps, state, output)
    if onednn is not None and not plan.uses_gpu:  # it changes the CPU's kernels only
        plan_for_speed = dataclasses.replace(plan_for_speed, onednn=onednn)
    keras.utils.set_random_seed(config.seed)
    keras.mixed_precision.set_global_policy(plan_for_speed.policy.value)
    # Summed in float64 without a float64 copy of the images (1.2 GB for CIFAR-10's 50,000).
    mean_image = data.x_train.mean(axis=0, dtype="float64")
    with plan.strategy.scope():
        model = build_training_model(mean_image, data.num_classes, seed=config.seed)
        compile_for(model, config, plan_for_speed)
        if state:
            restore(model, output, state)
    rows = output.resume_rows(state) if state else []
    return PreparedRun(model, plan, plan_for_speed, steps, global_batch, state["epochs_done"] if state else 0, rows)


def compile_for(model, config: TrainConfig, plan: speed.SpeedPlan) -> None:
    """The recipe's SGD and loss, with XLA and the steps per call that the speed plan chose."""
    recipe = config.recipe
    optimizer = keras.optimizers.SGD(
        learning_rate=recipe.learning_rate,
        momentum=recipe.momentum,
        nesterov=recipe.nesterov,
        weight_decay=recipe.weight_decay or None,
    )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(label_smoothing=recipe.label_smoothing),
        metrics=["accuracy"],
        # Keras's "auto" turns XLA off under a distribution strategy: the plan says it explicitly.
        jit_compile=bool(plan.jit.value),
        steps_per_execution=int(plan.steps_per_call.value),
    )


def restore(model, output: OutputFolder, state: dict[str, Any]) -> None:
    model.optimizer.build(model.trainable_variables)
    weights = output.resume_dir / state["weights"]
    try:
        model.load_weights(str(weights))
    except Exception as exc:  # noqa: BLE001 - h5py and Keras raise many kinds for a damaged file
        said = (str(exc).strip().splitlines() or [""])[0]
        raise UsageError(
            f"{weights}: the resume point cannot be read ({type(exc).__name__}: {said}); "
            f"delete {output.resume_dir} or use --overwrite to start over"
        ) from None


def choose_speed(config: TrainConfig, plan, steps: int, state, output: OutputFolder) -> speed.SpeedPlan:
    """Precision, XLA and steps per call for this run on these devices."""
    multi_worker = plan.kind == "multi-worker"
    policy = speed.choose_policy(
        config.precision,
        uses_gpu=plan.uses_gpu,
        gpu_capabilities=gpu_capabilities() if plan.uses_gpu else (),
        cpu=speed.read_cpu_flags(),
        multi_worker=multi_worker,
    )
    policy = _as_interrupted_run(policy, config, plan, state, output)
    jit = speed.choose_jit(config.jit, uses_gpu=plan.uses_gpu, cpu_replicas=plan.replicas if plan.kind == "cpu" else 1)
    if multi_worker:
        calls = speed.Choice(1, "the multi-worker loop runs one step a call")
    elif plan.replicas > 1:
        if config.steps_per_execution not in (None, 1):
            raise UsageError(SEVERAL_STEPS_WITH_REPLICAS)
        calls = speed.Choice(1, "several replicas: Keras's loop of several steps a call fails under MirroredStrategy")
    else:
        calls = speed.choose_steps_per_call(config.steps_per_execution, steps_per_epoch=steps, uses_gpu=plan.uses_gpu)
    return speed.SpeedPlan(policy, jit, calls)


def gpu_capabilities() -> list[Optional[tuple[int, int]]]:
    """The compute capability of every GPU this process trains on, as TensorFlow reports it."""
    found = []
    for gpu in tf.config.get_visible_devices("GPU"):
        try:
            capability = tf.config.experimental.get_device_details(gpu).get("compute_capability")
        except (RuntimeError, ValueError):
            capability = None
        found.append(tuple(capability) if capability else None)
    return found


def _as_interrupted_run(chosen: speed.Choice, config: TrainConfig, plan, state, output: OutputFolder) -> speed.Choice:
    """A resumed run trains in the precision it started with: its optimizer state (float16's loss
    scale among it) was saved for that one. An explicit other --precision is refused."""
    stored = _stored_policy(state, plan)
    if stored is None or stored == chosen.value:
        return chosen
    if config.precision == "auto":
        return speed.Choice(stored, "as the interrupted run trained")
    raise UsageError(
        f"{output.root} holds an interrupted run that trained in {speed.describe_policy(stored)}: resume it with "
        f"--precision {FLAG_OF_POLICY[stored]} (or without --precision), or use --overwrite to start over"
    )


def _stored_policy(state, plan) -> Optional[str]:
    settings = (state or {}).get("settings")
    if not isinstance(settings, dict):
        return None
    if settings.get("policy") in FLAG_OF_POLICY:
        return settings["policy"]
    if isinstance(settings.get("mixed_precision"), bool):  # a resume point written before --precision
        requested = speed.MIXED if settings["mixed_precision"] else "fp32"
        return speed.choose_policy(requested, uses_gpu=plan.uses_gpu).value
    return None
