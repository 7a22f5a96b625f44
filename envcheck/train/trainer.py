"""One training run, start to finish: devices, data, model, fit, outputs.

The order matters: devices are configured before TensorFlow's runtime starts (a multi-worker
strategy must exist before any tensor), the model and optimizer are created under the strategy's
scope, and a resumed run restores weights and optimizer state before fit() continues at the
epoch after the last one finished.

Nothing imported at the top starts TensorFlow: the modules that import it (prepare, pipeline,
model, callbacks, loop) are imported inside the functions that run once it has started, so that
a bad output folder or a missing data set is said before TensorFlow's seconds of start-up.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from envcheck import interrupts
from envcheck.errors import EXIT_FINDINGS, EnvcheckError, UsageError
from envcheck.machine import short_device
from envcheck.printable import printable
from envcheck.render.stages import Stages
from envcheck.render.width import terminal_width, wrap
from envcheck.tfquiet import quiet_tensorflow
from envcheck.train import speed
from envcheck.train.config import TrainConfig, post_reference, same_settings
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
from envcheck.train.schedule import schedule_for
from envcheck.train.strategy import chief_of, read_tf_config
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
    return chief_of(read_tf_config())[0]


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


class OutOfMemory(EnvcheckError):
    """An allocation failed (host memory, or a GPU's): a limit of this machine, not a bug; exit 1."""

    exit_code = EXIT_FINDINGS


# How TensorFlow and its allocators say that an allocation failed, when not as a MemoryError.
_OUT_OF_MEMORY_NAMES = ("ResourceExhaustedError",)
_OUT_OF_MEMORY_WORDS = (
    "OOM when allocating",
    "out of memory",
    "Failed to allocate",
    "bad_alloc",
    "Cannot allocate memory",
)


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError) or type(exc).__name__ in _OUT_OF_MEMORY_NAMES:
        return True
    text = str(exc)[:20_000]
    return any(word.lower() in text.lower() for word in _OUT_OF_MEMORY_WORDS)


def out_of_memory(config: TrainConfig, exc: BaseException) -> OutOfMemory:
    """One line: what ran out, and the smaller batch (or subset) to try."""
    batch = config.recipe.batch_per_replica
    said = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    smaller = f"--batch-per-replica {batch // 2}" if batch > 1 else "fewer images (--subset)"
    return OutOfMemory(
        f"out of memory ({type(exc).__name__}: {said}); this machine cannot hold a run of {batch} images per "
        f"replica here: try {smaller}, or close what else uses the memory"
    )


# Below this address-space limit (ulimit -v, prlimit --as) TensorFlow's training aborts in C++
# (pthread_create or std::bad_alloc), where no Python code can catch it: a 2-core CPU run of
# TensorFlow 2.21 aborted under 3 GiB and trained under 4 GiB, 64 images per replica.
ADDRESS_SPACE_FLOOR = 4 * 1024**3


def check_address_space(config: TrainConfig, limit: Optional[int] = None) -> None:
    """Refuse, before TensorFlow starts, an address-space limit it would abort under."""
    if limit is None:
        try:
            import resource  # POSIX only
        except ImportError:
            return
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return
    if limit < 0 or limit >= ADDRESS_SPACE_FLOOR:
        return
    batch = config.recipe.batch_per_replica
    raise OutOfMemory(
        f"out of memory: the address-space limit (ulimit -v, prlimit --as) is {limit / 1024**3:.1f} GiB, below the "
        f"{ADDRESS_SPACE_FLOOR // 1024**3} GiB TensorFlow's training needs (its threads and allocators reserve "
        "address space beyond the memory in use, and it aborts past the limit); raise the limit to "
        f"{ADDRESS_SPACE_FLOOR // 1024**3} GiB or more (a cgroup's memory.max caps the memory in use instead); "
        f"a smaller batch (--batch-per-replica {max(1, batch // 2)}) lowers only the tensors' share"
    )


def train(config: TrainConfig, *, data: Optional[CifarData] = None, plan=None, progress_console=None) -> TrainResult:
    """One run, start to finish; an allocation that fails is one line (exit 1), not a traceback."""
    try:
        return _train(config, data, plan, progress_console)
    except EnvcheckError:
        raise
    except Exception as exc:
        if is_out_of_memory(exc):
            raise out_of_memory(config, exc) from None
        raise


def _train(config: TrainConfig, data: Optional[CifarData], plan, progress_console) -> TrainResult:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the C++ chatter would bury the progress bar
    output = OutputFolder(config.output)
    finished, state = _read_output_folder(config, output)
    if finished is not None:
        return finished
    check_address_space(config)
    onednn = speed.turn_on_onednn(
        os.environ, platform.machine(), speed.read_cpu_flags(), tensorflow_started="tensorflow" in sys.modules
    )
    data, run = _start(config, data, plan, output, state, progress_console, onednn)
    if run.plan.is_chief:
        _print_header(config, data, run)
    recorder, stop, seconds = _fit(config, data, run, output, progress_console)
    if recorder.write_error is not None:
        raise _output_failure(config, output, recorder.write_error, "the epoch's outputs") from None
    if stop.stopped_at:
        raise _diverged(config, run, stop.stopped_at)
    return _finish(config, run, output, recorder.meta, seconds)


def _read_output_folder(config: TrainConfig, output: OutputFolder):
    """(a finished run to report, or None; the interrupted run's resume state, or None). Neither
    needs TensorFlow, and their errors should not wait for it."""
    if _writes_outputs(config):
        check_output_folder(config.output)
        output.remove_stale_temporaries()
        finished = _previous_run(config, output)
        if finished is not None:
            return finished, None
    state = output.read_resume_state()
    if state is not None and not same_settings(state.get("settings"), config.resume_key()):
        raise UsageError(
            f"{config.output} holds an interrupted run with other settings; resume it with the same "
            f"flags, use --overwrite to start over, or use another --output"
        )
    return None, state


def _start(config: TrainConfig, data, plan, output: OutputFolder, state, progress_console, onednn=None):
    """The data, then TensorFlow, the devices and the model, each stage said on a terminal as it
    happens (the archive, TensorFlow's start, the model), so a first run's minute of unpacking is
    never silence."""
    # A caller with a plan (validate) has started TensorFlow itself, under its own quiet.
    verbose = plan is not None or _show_start_up_lines()
    with Stages(console=progress_console, enabled=None if config.progress else False) as stage:
        if data is None:
            data = load_data(config, stage)
        stage("Starting TensorFlow")
        # What TensorFlow prints while it starts and the run is set up is captured: dropped when the
        # set-up ends well or in one of our one-line errors, replayed when it fails otherwise.
        with quiet_tensorflow(verbose=verbose):
            # Imported here, not at the top: this is where TensorFlow starts (seconds), after the data.
            from envcheck.train.prepare import prepare

            run = prepare(config, data, plan, output, state, stage, onednn)
    return data, run


def _print_header(config: TrainConfig, data: CifarData, run) -> None:
    """What this run is and how it goes fast, before the first step (stderr, as every message)."""
    plan = run.plan
    if plan.note:
        print(f"envcheck: note: {printable(plan.note)}", file=sys.stderr)
    if run.epochs_done:
        print(
            f"envcheck: resuming the run in {printable(config.output)} after epoch {run.epochs_done} of {config.recipe.epochs} "
            "(--overwrite starts over)",
            file=sys.stderr,
        )
    width = terminal_width(sys.stderr)
    devices = ", ".join(short_device(d) for d in plan.devices)
    lines = [
        f"envcheck: training MiniGoogLeNet on {data_title(data)}: {plural(plan.replicas, 'replica')} ({devices}), "
        f"{run.global_batch} images a step, {run.steps} steps an epoch",
        f"  precision: {speed.describe_policy(run.speed.policy.value)} ({run.speed.policy.why})",
        f"  XLA: {'on' if run.speed.jit.value else 'off'} ({run.speed.jit.why})",
        f"  steps per call: {run.speed.steps_per_call.value} ({run.speed.steps_per_call.why})",
    ]
    if run.speed.onednn is not None:
        lines.append(f"  oneDNN kernels: {'on' if run.speed.onednn.value else 'off'} ({run.speed.onednn.why})")
    print("\n".join(wrap(line, width, 4) for line in lines), file=sys.stderr)


def _datasets(config: TrainConfig, data: CifarData, run):
    from envcheck.train import pipeline  # TensorFlow: imported once it has started (_start)

    multi_worker = run.plan.kind == "multi-worker"
    train_data = pipeline.training_dataset(
        data.x_train,
        data.y_train,
        global_batch=run.global_batch,
        classes=data.num_classes,
        seed=config.seed,
        repeat=config.steps_per_epoch is not None,
        multi_worker=multi_worker,
    )
    val_data = pipeline.evaluation_dataset(
        data.x_test, data.y_test, global_batch=run.global_batch, classes=data.num_classes, multi_worker=multi_worker
    )
    return train_data, val_data


def _run_meta(config: TrainConfig, data: CifarData, run) -> dict[str, Any]:
    from envcheck.train.model import network_of  # TensorFlow: imported once it has started (_start)

    return {
        "model": "MiniGoogLeNet",
        "parameters": network_of(run.model).count_params(),
        "config": config.to_dict(),
        "devices": run.plan.describe(),
        "data": data.describe(),
        "global_batch": run.global_batch,
        "steps_per_epoch": run.steps,
        "speed": run.speed.describe(),
    }


def _callbacks(config: TrainConfig, data: CifarData, run, output: OutputFolder, progress_console):
    """(the callbacks for fit, the recorder, the NaN stop, the progress bar or None)."""
    import keras  # TensorFlow, as in _datasets

    # lazy for start-up: callbacks imports keras (TensorFlow) at its top
    from envcheck.train import callbacks as cb

    plan = run.plan
    progress = None
    if plan.is_chief and config.progress:
        progress = cb.RichProgress(epochs=config.recipe.epochs, steps=run.steps, console=progress_console)
    stop = cb.StopOnNaN()
    recorder = cb.EpochRecorder(
        output=output,
        is_chief=plan.is_chief,
        images_per_epoch=run.steps * run.global_batch,
        replicas=plan.replicas,
        rows=run.rows,
        meta=_run_meta(config, data, run),
        resume_key=run.resume_key(config),
        plot_title=f"MiniGoogLeNet on {data_title(data)}: {plural(plan.replicas, 'replica')} ({plan.kind})",
        on_row=progress.print_row if progress else None,
    )
    if run.rows and plan.is_chief:
        try:  # a kill between an epoch's commit and its history files: they catch up now
            recorder.write_views()
        except OSError as exc:
            raise _output_failure(config, output, exc, "the history") from None
    schedule = schedule_for(config.recipe)
    learning_rate = keras.callbacks.LearningRateScheduler(lambda epoch, lr: schedule(epoch))
    callbacks = [cb.StopOnInterrupt(), learning_rate, stop, recorder, *([progress] if progress else [])]
    return callbacks, recorder, stop, progress


def _fit(config: TrainConfig, data: CifarData, run, output: OutputFolder, progress_console):
    """Train the epochs left (all, or those after the resume point); Ctrl-C says what is kept."""
    train_data, val_data = _datasets(config, data, run)
    callbacks, recorder, stop, progress = _callbacks(config, data, run, output, progress_console)
    started = time.time()
    try:
        if run.epochs_done < config.recipe.epochs:
            _fit_epochs(config, run, train_data, val_data, callbacks)
        interrupts.check()  # a Ctrl-C swallowed after the last step still ends as one
    except Exception:
        if not interrupts.happened():
            raise
        _say_what_an_interruption_kept(config, recorder, run.plan)
        raise KeyboardInterrupt from None
    except KeyboardInterrupt:
        _say_what_an_interruption_kept(config, recorder, run.plan)
        raise
    finally:
        if progress is not None:
            progress.close()  # also on Ctrl-C: no half-drawn bar left on the terminal
    return recorder, stop, time.time() - started


def _fit_epochs(config: TrainConfig, run, train_data, val_data, callbacks) -> None:
    recipe = config.recipe
    if run.plan.kind == "multi-worker":
        from envcheck.train.loop import fit_distributed  # TensorFlow, as in _datasets

        fit_distributed(
            run.model,
            run.plan.strategy,
            train_data,
            val_data,
            epochs=recipe.epochs,
            initial_epoch=run.epochs_done,
            steps_per_epoch=run.steps,
            global_batch=run.global_batch,
            label_smoothing=recipe.label_smoothing,
            jit=bool(run.speed.jit.value),
            callbacks=callbacks,
        )
        return
    run.model.fit(
        train_data,
        validation_data=val_data,
        epochs=recipe.epochs,
        initial_epoch=run.epochs_done,
        steps_per_epoch=run.steps if config.steps_per_epoch is not None else None,
        callbacks=callbacks,
        shuffle=False,  # the dataset shuffles itself, every epoch
        verbose=0,
    )


def _diverged(config: TrainConfig, run, where: dict[str, Any]) -> TrainingDiverged:
    calls = run.speed.steps_per_call.value
    return TrainingDiverged(
        f"training stopped: the loss became {where['loss']} at epoch {where['epoch']}, batch {where['batch']}"
        + (f" (checked every {calls} steps)" if calls > 1 else "")
        + f"; lower --lr (now {config.recipe.learning_rate:g})"
        + (" or train in float32 (--precision fp32)" if run.speed.policy.value != "float32" else "")
        + (f"; epochs up to {len(run.rows)} are kept in {config.output}" if run.rows else "")
    )


def _finish(config: TrainConfig, run, output: OutputFolder, meta: dict[str, Any], seconds: float) -> TrainResult:
    """The summary and the model, written by the chief; the resume point goes once both are."""
    summary = build_summary(
        meta=meta,
        rows=run.rows,
        plan=run.plan,
        speed_plan=run.speed,
        config=config,
        resumed_from=run.epochs_done,
        wall_seconds=seconds,
    )
    if run.plan.is_chief:
        try:
            output.check_space_for(run.model)
            with atomic_path(output.model) as temp:
                run.model.save(str(temp))
            write_json_atomically(output.summary, summary)
        except OSError as exc:
            raise _output_failure(config, output, exc, "the model") from None
        output.clear_resume_point()
    return TrainResult(summary=summary, history=run.rows)


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


def build_summary(
    *, meta, rows, plan, speed_plan, config: TrainConfig, resumed_from: int, wall_seconds: float
) -> dict[str, Any]:
    import keras  # TensorFlow, as in _datasets

    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
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
        "precision": speed_plan.policy.value,
        "mixed_precision": speed_plan.policy.value if speed_plan.policy.value != "float32" else None,
        "jit": bool(speed_plan.jit.value),
        "steps_per_execution": speed_plan.steps_per_call.value,
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "post_reference": post_reference(plan.replicas),
    }
