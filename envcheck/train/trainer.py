"""One training run, start to finish: devices, data, model, fit, outputs.

The order matters: devices are configured before TensorFlow's runtime starts (a multi-worker
strategy must exist before any tensor), the model and optimizer are created under the strategy's
scope, and a resumed run restores weights and optimizer state before fit() continues at the
epoch after the last one finished.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Optional

from envcheck.errors import EXIT_FINDINGS, EnvcheckError, UsageError
from envcheck.train.config import TrainConfig, post_reference
from envcheck.train.data import CifarData, load_cifar10, synthetic_cifar10
from envcheck.train.outputs import OutputFolder, check_output_folder, write_json_atomically

SYNTHETIC_TRAIN_IMAGES = 50_000
SYNTHETIC_TEST_IMAGES = 10_000


class TrainingDiverged(EnvcheckError):
    """The loss became NaN or infinite: a failed run (exit 1), explained in one line."""

    exit_code = EXIT_FINDINGS


@dataclass
class TrainResult:
    summary: dict[str, Any]
    history: list[dict[str, Any]]


def load_data(config: TrainConfig) -> CifarData:
    if config.synthetic:
        return synthetic_cifar10(
            config.subset or SYNTHETIC_TRAIN_IMAGES,
            config.val_subset or SYNTHETIC_TEST_IMAGES,
            seed=config.seed,
        )
    return load_cifar10(config.data, subset=config.subset, val_subset=config.val_subset)


def _writes_outputs(config: TrainConfig) -> bool:
    """Only the chief writes: the other workers of a multi-worker run need not reach --output."""
    if not config.multi_worker:
        return True
    from envcheck.train.strategy import chief_of, read_tf_config

    return chief_of(read_tf_config())[0]


def _quiet_tensorflow() -> None:
    # TensorFlow's C++ start-up chatter would bury the progress bar; the user's own setting wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _precision_policy(plan) -> str:
    # float16 is what GPUs accelerate; CPUs (and TPUs) have bfloat16 instead, and no float16 units.
    return "mixed_float16" if plan.uses_gpu else "mixed_bfloat16"


def train(config: TrainConfig, *, data: Optional[CifarData] = None, plan=None, progress_console=None) -> TrainResult:
    _quiet_tensorflow()
    from envcheck.train.strategy import plan_devices

    # Resume point and data first: neither needs TensorFlow, and their errors should not wait for it.
    if _writes_outputs(config):
        check_output_folder(config.output)
    output = OutputFolder(config.output)
    resume_key = config.resume_key()
    state = output.read_resume_state()
    if state is not None and state.get("settings") != resume_key:
        raise UsageError(
            f"{config.output} holds an interrupted run with other settings; resume it with the same "
            f"flags, or use another --output (or delete {output.resume_dir} to start over)"
        )
    if data is None:
        data = load_data(config)
    if plan is None:
        plan = plan_devices(config.gpus, config.cpu_replicas, config.multi_worker)
    if plan.note and plan.is_chief:
        print(f"envcheck: note: {plan.note}", file=sys.stderr)
    if config.jit and plan.kind == "cpu" and plan.replicas > 1:
        from envcheck.train.config import JIT_WITH_CPU_REPLICAS

        raise UsageError(JIT_WITH_CPU_REPLICAS)
    import keras

    from envcheck.train import callbacks as cb
    from envcheck.train import pipeline
    from envcheck.train.model import build_training_model, network_of
    from envcheck.train.schedule import schedule_for

    recipe = config.recipe
    global_batch = recipe.batch_per_replica * plan.replicas
    steps = pipeline.steps_per_epoch(len(data.x_train), global_batch, config.steps_per_epoch)
    if steps < 1:
        raise UsageError(
            f"{len(data.x_train)} training images are fewer than one global batch of {global_batch} "
            f"({recipe.batch_per_replica} per replica x {plan.replicas} replicas): use more images or a smaller batch"
        )

    epochs_done = state["epochs_done"] if state else 0
    rows = [row for row in output.read_history() if row.get("epoch", 0) <= epochs_done] if state else []

    keras.utils.set_random_seed(config.seed)
    keras.mixed_precision.set_global_policy(_precision_policy(plan) if config.mixed_precision else "float32")
    mean_image = data.x_train.astype("float64").mean(axis=0)
    with plan.strategy.scope():
        model = build_training_model(mean_image, data.num_classes, seed=config.seed)
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
            # Keras's "auto" turns XLA off under a distribution strategy: ask for it explicitly.
            jit_compile=bool(config.jit),
        )
        if state:
            model.optimizer.build(model.trainable_variables)
            weights = output.resume_dir / state["weights"]
            try:
                model.load_weights(str(weights))
            except Exception as exc:  # noqa: BLE001 - h5py and Keras raise many kinds for a damaged file
                said = (str(exc).strip().splitlines() or [""])[0]
                raise UsageError(
                    f"{weights}: the resume point cannot be read ({type(exc).__name__}: {said}); "
                    f"delete {output.resume_dir} to start over"
                ) from None

    train_data = pipeline.training_dataset(
        data.x_train, data.y_train, global_batch=global_batch, classes=data.num_classes,
        seed=config.seed, repeat=config.steps_per_epoch is not None, multi_worker=plan.kind == "multi-worker",
    )
    val_data = pipeline.evaluation_dataset(
        data.x_test, data.y_test, global_batch=global_batch, classes=data.num_classes,
        multi_worker=plan.kind == "multi-worker",
    )

    parameters = network_of(model).count_params()
    meta = {
        "model": "MiniGoogLeNet",
        "parameters": parameters,
        "config": config.to_dict(),
        "devices": plan.describe(),
        "data": data.describe(),
        "global_batch": global_batch,
        "steps_per_epoch": steps,
    }
    progress = None
    if plan.is_chief and config.progress:
        progress = cb.RichProgress(epochs=recipe.epochs, steps=steps, console=progress_console)
    stop = cb.StopOnNaN()
    recorder = cb.EpochRecorder(
        output=output, is_chief=plan.is_chief, images_per_epoch=steps * global_batch, replicas=plan.replicas,
        rows=rows, meta=meta, resume_key=resume_key,
        plot_title=f"MiniGoogLeNet on CIFAR-10 ({plan.replicas} replica{'s' if plan.replicas != 1 else ''}, "
        f"{plan.kind})",
        on_row=progress.print_row if progress else None,
    )
    schedule = schedule_for(recipe)
    callbacks = [
        keras.callbacks.LearningRateScheduler(lambda epoch, lr: schedule(epoch)),
        stop,
        recorder,
        *([progress] if progress else []),
    ]

    started = time.time()
    if epochs_done < recipe.epochs and plan.kind == "multi-worker":
        from envcheck.train.loop import fit_distributed

        fit_distributed(
            model, plan.strategy, train_data, val_data, epochs=recipe.epochs, initial_epoch=epochs_done,
            steps_per_epoch=steps, global_batch=global_batch, label_smoothing=recipe.label_smoothing,
            jit=bool(config.jit), callbacks=callbacks,
        )
    elif epochs_done < recipe.epochs:
        model.fit(
            train_data,
            validation_data=val_data,
            epochs=recipe.epochs,
            initial_epoch=epochs_done,
            steps_per_epoch=steps if config.steps_per_epoch is not None else None,
            callbacks=callbacks,
            shuffle=False,  # the dataset shuffles itself, every epoch
            verbose=0,
        )
    if stop.stopped_at:
        where = stop.stopped_at
        raise TrainingDiverged(
            f"training stopped: the loss became {where['loss']} at epoch {where['epoch']}, batch {where['batch']}; "
            f"lower --lr (now {recipe.learning_rate:g})"
            + (" or drop --mixed-precision" if config.mixed_precision else "")
            + (f"; epochs up to {len(rows)} are kept in {config.output}" if rows else "")
        )

    summary = build_summary(
        meta=meta, rows=rows, plan=plan, config=config, resumed_from=epochs_done, wall_seconds=time.time() - started
    )
    if plan.is_chief:
        from envcheck.train.outputs import atomic_path

        with atomic_path(output.model) as temp:
            model.save(str(temp))
        write_json_atomically(output.summary, summary)
        output.clear_resume_point()
    return TrainResult(summary=summary, history=rows)


def build_summary(*, meta, rows, plan, config: TrainConfig, resumed_from: int, wall_seconds: float) -> dict[str, Any]:
    import keras
    import tensorflow as tf

    last = rows[-1] if rows else {}
    train_seconds = sum(r["train_seconds"] for r in rows)
    images = sum(r["images"] for r in rows)
    # A process's first epoch includes tracing and compilation; the steady rate leaves those out.
    steady = [r for r in rows if not r.get("startup")] or rows
    steady_seconds = sum(r["train_seconds"] for r in steady)
    steady_rate = sum(r["images"] for r in steady) / steady_seconds if steady_seconds > 0 else None
    return {
        **meta,
        "replicas": plan.replicas,
        "epochs": len(rows),
        "epochs_planned": config.recipe.epochs,
        "resumed_from_epoch": resumed_from or None,
        "final": {k: last.get(k) for k in ("loss", "accuracy", "val_loss", "val_accuracy")},
        "best_val_accuracy": max((r["val_accuracy"] for r in rows if r.get("val_accuracy") is not None), default=None),
        "seconds": round(sum(r["seconds"] for r in rows), 2),
        "seconds_this_process": round(wall_seconds, 2),
        "seconds_per_epoch": round(sum(r["seconds"] for r in steady) / len(steady), 2) if steady else None,
        "images_per_second": round(images / train_seconds, 2) if train_seconds > 0 else None,
        "images_per_second_steady": round(steady_rate, 2) if steady_rate else None,
        "images_per_second_per_replica": round(steady_rate / plan.replicas, 2) if steady_rate else None,
        "mixed_precision": keras.mixed_precision.global_policy().name if config.mixed_precision else None,
        "jit": bool(config.jit),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "post_reference": post_reference(plan.replicas),
    }
