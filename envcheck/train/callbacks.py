"""Keras callbacks of the trainer: the per-epoch record (history, plot, resume point), NaN stop, progress.

Keras callbacks know nothing of multiple workers, so each one that writes is told whether this
process is the chief; the others only watch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Optional

import keras
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from envcheck import interrupts
from envcheck.train.outputs import OutputFolder
from envcheck.train.plots import plot_history


def _finite_or_none(value: Any) -> Optional[float]:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def current_learning_rate(optimizer) -> float:
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


class StopOnInterrupt(keras.callbacks.Callback):
    """Ctrl-C stops the run at the next step even when Python swallowed its KeyboardInterrupt
    (pressed while a finalizer ran): ``interrupts.check()`` raises it again here."""

    def on_train_batch_end(self, batch, logs=None):
        interrupts.check()

    def on_epoch_end(self, epoch, logs=None):
        interrupts.check()


class StopOnNaN(keras.callbacks.Callback):
    """Stop at the first batch whose loss is NaN or infinite, and remember where that was."""

    def __init__(self):
        super().__init__()
        self.epoch = 0
        self.stopped_at: Optional[dict[str, Any]] = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.stopped_at = {"epoch": self.epoch + 1, "batch": batch + 1, "loss": float(loss)}
            self.model.stop_training = True


class EpochRecorder(keras.callbacks.Callback):
    """After each finished epoch: a history row, committed with the epoch's weights in one atomic
    write of the resume state, then the history files and the plot drawn from it.

    A kill at any instant leaves either the previous epoch committed or this one, never a history
    row without its resume point. An epoch whose loss diverged is neither recorded nor saved: the
    last good resume point stays. A write that fails (a full disk) stops the training; the error
    is kept in ``write_error`` for the trainer to report in one line.
    """

    def __init__(
        self,
        *,
        output: OutputFolder,
        is_chief: bool,
        images_per_epoch: int,
        replicas: int,
        rows: list[dict[str, Any]],
        meta: dict[str, Any],
        resume_key: dict[str, Any],
        plot_title: str,
        on_row: Optional[Callable[[dict[str, Any]], None]] = None,
    ):
        super().__init__()
        self.output = output
        self.is_chief = is_chief
        self.images_per_epoch = images_per_epoch
        self.replicas = replicas
        self.rows = rows
        self.meta = meta
        self.resume_key = resume_key
        self.plot_title = plot_title
        self.on_row = on_row
        self._epoch_start = 0.0
        self._train_end: Optional[float] = None
        self._learning_rate = 0.0
        self._first_epoch_of_process = True
        self.write_error: Optional[OSError] = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.perf_counter()
        self._train_end = None
        self._learning_rate = current_learning_rate(self.model.optimizer)

    def on_test_begin(self, logs=None):
        if self._train_end is None:  # the validation pass at the end of an epoch
            self._train_end = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if _finite_or_none(logs.get("loss")) is None:
            return
        end = time.perf_counter()
        train_seconds = (self._train_end or end) - self._epoch_start
        rate = self.images_per_epoch / train_seconds if train_seconds > 0 else None
        row = {
            "epoch": epoch + 1,
            "loss": _finite_or_none(logs.get("loss")),
            "accuracy": _finite_or_none(logs.get("accuracy")),
            "val_loss": _finite_or_none(logs.get("val_loss")),
            "val_accuracy": _finite_or_none(logs.get("val_accuracy")),
            "learning_rate": float(f"{self._learning_rate:.7g}"),  # float32 noise off: 5e-3, not 0.004999999888
            "seconds": round(end - self._epoch_start, 3),
            "train_seconds": round(train_seconds, 3),
            "images": self.images_per_epoch,
            "images_per_second": round(rate, 2) if rate else None,
            "images_per_second_per_replica": round(rate / self.replicas, 2) if rate else None,
            # The first epoch a process runs also traces and compiles: not a steady-state figure.
            "startup": self._first_epoch_of_process,
        }
        self._first_epoch_of_process = False
        if self.write_error is not None:
            return
        self.rows.append(row)
        if self.is_chief:
            try:
                self.output.commit_epoch(self.model, self.rows, self.meta, self.resume_key)
            except OSError as exc:
                self.rows.pop()  # not committed: not part of this run's record
                self._stop(exc)
                return
            try:
                self.write_views(committed=True)
            except OSError as exc:
                self._stop(exc)
        if self.on_row is not None:
            self.on_row(row)

    def write_views(self, committed: bool = False) -> None:
        """The history files (unless the commit just wrote them) and the plot, from the rows; then
        the weights of earlier epochs go."""
        if not committed:
            self.output.write_history(self.rows, self.meta)
        plot_history(self.rows, self.output.plot, self.plot_title)
        self.output.drop_older_weights()

    def _stop(self, exc: OSError) -> None:
        self.write_error = exc
        self.model.stop_training = True


class RichProgress(keras.callbacks.Callback):
    """A progress bar per epoch on stderr, and one line per finished epoch with its figures."""

    def __init__(self, *, epochs: int, steps: int, console=None):
        super().__init__()
        self.epochs = epochs
        self.steps = steps
        self.console = console or Console(stderr=True)
        self._progress = None
        self._task = None

    def on_train_begin(self, logs=None):
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[metrics]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._progress.start()

    def on_epoch_begin(self, epoch, logs=None):
        self._task = self._progress.add_task(f"epoch {epoch + 1}/{self.epochs}", total=self.steps, metrics="")

    def on_train_batch_end(self, batch, logs=None):
        logs = logs or {}
        loss, accuracy = _finite_or_none(logs.get("loss")), _finite_or_none(logs.get("accuracy"))
        metrics = f"loss {loss:.4f} acc {accuracy:.4f}" if loss is not None and accuracy is not None else ""
        self._progress.update(self._task, completed=batch + 1, metrics=metrics)

    def on_epoch_end(self, epoch, logs=None):
        self._progress.remove_task(self._task)

    def on_train_end(self, logs=None):
        self.close()

    def close(self) -> None:
        """Take the bar off the screen; safe to call twice, and after Ctrl-C stopped the training."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def print_row(self, row: dict[str, Any]) -> None:
        """Called by EpochRecorder once a row exists (it knows the timings)."""

        def fmt(value, spec):
            return "-" if value is None else format(value, spec)

        self.console.print(
            f"epoch {row['epoch']}/{self.epochs}  loss {fmt(row['loss'], '.4f')}  acc {fmt(row['accuracy'], '.4f')}  "
            f"val_loss {fmt(row['val_loss'], '.4f')}  val_acc {fmt(row['val_accuracy'], '.4f')}  "
            f"lr {row['learning_rate']:.2e}  {row['seconds']:.1f} s  {fmt(row['images_per_second'], '.0f')} img/s",
            highlight=False,
            soft_wrap=True,
        )
