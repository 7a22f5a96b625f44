"""One training run, start to finish: devices, data, model, fit, outputs.

The order matters: devices are configured before TensorFlow's runtime starts (a multi-worker
strategy must exist before any tensor), the model and optimizer are created under the strategy's
scope, and a resumed run restores weights and optimizer state before fit() continues at the
epoch after the last one finished.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from envcheck.errors import EXIT_FINDINGS, EnvcheckError, UsageError
from envcheck.printable import printable
from envcheck.train.config import TrainConfig, post_reference
from envcheck.train.data import (
    CIFAR10_CLASSES,
    CifarData,
    load_cifar10,
    synthetic_cifar10,
)
from envcheck.train.outputs import (
    OutputFolder,
    OutputsFull,
    atomic_path,
    check_output_folder,
    describe_write_error,
    write_json_atomically,
)
from envcheck.words import plural

SYNTHETIC_TRAIN_IMAGES = 50_000
SYNTHETIC_TEST_IMAGES = 10_000


class TrainingDiverged(EnvcheckError):
    """The loss became NaN or infinite: a failed run (exit 1), explained in one line."""

    exit_code = EXIT_FINDINGS


@dataclass
class TrainResult:
    summary: dict[str, Any]
    history: list[dict[str, Any]]
    already_finished: bool = False  # --resume on a finished run: nothing was trained


def load_data(config: TrainConfig, stage=None) -> CifarData:
    if config.synthetic:
        for flag, value, most in (
            ("--subset", config.subset, SYNTHETIC_TRAIN_IMAGES),
            ("--val-subset", config.val_subset, SYNTHETIC_TEST_IMAGES),
        ):
            if value is not None and value > most:  # before a byte is allocated
                raise UsageError(
                    f"{flag} {value:,}: --synthetic generates at most {most:,} images there (CIFAR-10's size)"
                )
        return synthetic_cifar10(
            config.subset or SYNTHETIC_TRAIN_IMAGES,
            config.val_subset or SYNTHETIC_TEST_IMAGES,
            seed=config.seed,
        )
    return load_cifar10(config.data, subset=config.subset, val_subset=config.val_subset, stage=stage)


def data_title(data: CifarData) -> str:
    """What the model learned from, as a person would name it: "CIFAR-10 (cifar10-jpg.tar.gz)",
    "synthetic images (seed 0)"."""
    if data.kind == "synthetic":
        return data.source.replace("synthetic", "synthetic images", 1)
    name = Path(data.source).name or data.source
    return (
        f"CIFAR-10 ({name})" if tuple(data.class_names) == CIFAR10_CLASSES else f"{data.num_classes} classes ({name})"
    )


def _writes_outputs(config: TrainConfig) -> bool:
    """Only the chief writes: the other workers of a multi-worker run need not reach --output."""
    if not config.multi_worker:
        return True
    from envcheck.train.strategy import chief_of, read_tf_config

    return chief_of(read_tf_config())[0]


def _precision_policy(plan) -> str:
    # float16 is what GPUs accelerate; CPUs (and TPUs) have bfloat16 instead, and no float16 units.
    return "mixed_float16" if plan.uses_gpu else "mixed_bfloat16"


def _show_start_up_lines() -> bool:
    """TensorFlow's start-up lines are kept quiet (envcheck.tfquiet) unless the user asked for
    every line (TF_CPP_MIN_LOG_LEVEL=0): the user's own setting wins."""
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0"


def _output_failure(config: TrainConfig, output: OutputFolder, exc: OSError, doing: str) -> OutputsFull:
    _release_failed_files()
    state = output.read_resume_state()
    kept = state["epochs_done"] if state else 0
    what = f"{_kept(kept)} kept in {config.output} (history and resume point)" if kept else "no epoch is kept yet"
    return OutputsFull(
        f"{config.output}: cannot write {doing} ({describe_write_error(exc)}); training stopped. "
        f"{what[0].upper() + what[1:]}; free some space and run the same command again to "
        f"{'resume' if kept else 'start'}"
    )


def _release_failed_files() -> None:
    """h5py objects of a file whose write failed complain (and can crash) when freed at exit:
    free them now, quietly, while the process is in a known state."""
    import gc

    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _previous_run(config: TrainConfig, output: OutputFolder) -> Optional[TrainResult]:
    """What --output already holds decides what this run does: a finished run is kept unless
    --overwrite says otherwise (--resume: report it, train nothing); an interrupted run resumes."""
    if config.overwrite:
        output.clear_run()
        return None
    if not output.is_finished():
        return None
    try:
        summary = json.loads(output.summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = None
    if not isinstance(summary, dict) or "devices" not in summary:
        raise UsageError(
            f"--output {config.output}: holds a finished run whose summary.json cannot be read; "
            "use --overwrite to train again from scratch, or another --output"
        )
    if config.resume:
        return TrainResult(summary=summary, history=output.read_history(), already_finished=True)
    epochs = summary.get("epochs")
    raise UsageError(
        f"--output {config.output}: holds a finished run ({epochs} epoch{'' if epochs == 1 else 's'}); "
        "rerun with --resume to keep it (its summary is shown, nothing is trained), --overwrite to train "
        "again from scratch (its history and model are replaced), or use another --output"
    )


def train(config: TrainConfig, *, data: Optional[CifarData] = None, plan=None, progress_console=None) -> TrainResult:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the C++ chatter would bury the progress bar
    # A caller with a plan (validate) has started TensorFlow itself, under its own quiet.
    verbose = plan is not None or _show_start_up_lines()

    # Resume point and data first: neither needs TensorFlow, and their errors should not wait for it.
    writes = _writes_outputs(config)
    output = OutputFolder(config.output)
    if writes:
        check_output_folder(config.output)
        output.remove_stale_temporaries()
        finished = _previous_run(config, output)
        if finished is not None:
            return finished
    resume_key = config.resume_key()
    state = output.read_resume_state()
    if state is not None and state.get("settings") != resume_key:
        raise UsageError(
            f"{config.output} holds an interrupted run with other settings; resume it with the same "
            f"flags, use --overwrite to start over, or use another --output"
        )
    from envcheck.render.stages import Stages
    from envcheck.tfquiet import quiet_tensorflow

    # On a terminal, what happens before the first step is shown as it happens (the archive,
    # TensorFlow's start, the model), so a first run's minute of unpacking is never silence.
    with Stages(console=progress_console, enabled=None if config.progress else False) as stage:
        if data is None:
            data = load_data(config, stage)
        stage("Starting TensorFlow")
        # What TensorFlow prints while it starts and the run is set up is captured: dropped when the
        # set-up ends well or in one of our one-line errors, replayed when it fails otherwise.
        with quiet_tensorflow(verbose=verbose):
            model, plan, steps, global_batch, epochs_done, rows = _set_up(config, data, plan, output, state, stage)
    if plan.note and plan.is_chief:
        print(f"envcheck: note: {printable(plan.note)}", file=sys.stderr)
    if epochs_done and plan.is_chief:
        print(
            f"envcheck: resuming the run in {printable(config.output)} after epoch {epochs_done} of {config.recipe.epochs} "
            "(--overwrite starts over)",
            file=sys.stderr,
        )
    recipe = config.recipe
    import keras

    from envcheck.train import callbacks as cb
    from envcheck.train import pipeline
    from envcheck.train.model import network_of
    from envcheck.train.schedule import schedule_for

    train_data = pipeline.training_dataset(
        data.x_train,
        data.y_train,
        global_batch=global_batch,
        classes=data.num_classes,
        seed=config.seed,
        repeat=config.steps_per_epoch is not None,
        multi_worker=plan.kind == "multi-worker",
    )
    val_data = pipeline.evaluation_dataset(
        data.x_test,
        data.y_test,
        global_batch=global_batch,
        classes=data.num_classes,
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
        output=output,
        is_chief=plan.is_chief,
        images_per_epoch=steps * global_batch,
        replicas=plan.replicas,
        rows=rows,
        meta=meta,
        resume_key=resume_key,
        plot_title=f"MiniGoogLeNet on {data_title(data)}: {plural(plan.replicas, 'replica')} ({plan.kind})",
        on_row=progress.print_row if progress else None,
    )
    if rows and plan.is_chief:
        try:  # a kill between an epoch's commit and its history files: they catch up now
            recorder.write_views()
        except OSError as exc:
            raise _output_failure(config, output, exc, "the history") from None
    schedule = schedule_for(recipe)
    callbacks = [
        keras.callbacks.LearningRateScheduler(lambda epoch, lr: schedule(epoch)),
        stop,
        recorder,
        *([progress] if progress else []),
    ]

    started = time.time()
    try:
        if epochs_done < recipe.epochs and plan.kind == "multi-worker":
            from envcheck.train.loop import fit_distributed

            fit_distributed(
                model,
                plan.strategy,
                train_data,
                val_data,
                epochs=recipe.epochs,
                initial_epoch=epochs_done,
                steps_per_epoch=steps,
                global_batch=global_batch,
                label_smoothing=recipe.label_smoothing,
                jit=bool(config.jit),
                callbacks=callbacks,
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
    except Exception:
        from envcheck import interrupts

        if not interrupts.happened():
            raise
        _say_what_an_interruption_kept(config, recorder, plan)
        raise KeyboardInterrupt from None
    except KeyboardInterrupt:
        _say_what_an_interruption_kept(config, recorder, plan)
        raise
    finally:
        if progress is not None:
            progress.close()  # also on Ctrl-C: no half-drawn bar left on the terminal
    if recorder.write_error is not None:
        raise _output_failure(config, output, recorder.write_error, "the epoch's outputs") from None
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
        try:
            output.check_space_for(model)
            with atomic_path(output.model) as temp:
                model.save(str(temp))
            write_json_atomically(output.summary, summary)
        except OSError as exc:
            raise _output_failure(config, output, exc, "the model") from None
        output.clear_resume_point()
    return TrainResult(summary=summary, history=rows)


def _kept(epochs: int) -> str:
    return "epoch 1 is" if epochs == 1 else f"epochs 1-{epochs} are"


def _say_what_an_interruption_kept(config: TrainConfig, recorder, plan) -> None:
    if not plan.is_chief:
        return
    kept = len(recorder.rows)
    if kept:
        print(
            f"envcheck: stopped; {_kept(kept)} kept in {printable(config.output)}: the same command resumes after epoch {kept}",
            file=sys.stderr,
        )
    else:
        print("envcheck: stopped before the first epoch ended; nothing is kept", file=sys.stderr)


def _set_up(config: TrainConfig, data: CifarData, plan, output: OutputFolder, state, stage=None):
    """Devices, the model and the resume point: everything before the first step (TensorFlow
    starts here)."""
    from envcheck.train.strategy import plan_devices

    if plan is None:
        plan = plan_devices(config.gpus, config.cpu_replicas, config.multi_worker)
    if stage is not None:
        stage(f"Building MiniGoogLeNet on {plan.replicas} replica{'s' if plan.replicas != 1 else ''}")
    if config.jit and plan.kind == "cpu" and plan.replicas > 1:
        from envcheck.train.config import JIT_WITH_CPU_REPLICAS

        raise UsageError(JIT_WITH_CPU_REPLICAS)
    import keras

    from envcheck.train import pipeline
    from envcheck.train.model import build_training_model

    recipe = config.recipe
    global_batch = recipe.batch_per_replica * plan.replicas
    steps = pipeline.steps_per_epoch(len(data.x_train), global_batch, config.steps_per_epoch)
    if steps < 1:
        raise UsageError(
            f"{len(data.x_train)} training images are fewer than one global batch of {global_batch} "
            f"({recipe.batch_per_replica} per replica x {plan.replicas} replicas): use more images or a smaller batch"
        )

    epochs_done = state["epochs_done"] if state else 0
    rows = output.resume_rows(state) if state else []

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
                    f"delete {output.resume_dir} or use --overwrite to start over"
                ) from None
    return model, plan, steps, global_batch, epochs_done, rows


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
