"""The output folder of a run, every file written atomically (temporary file, then os.replace).

  history.json, history.csv   one row per finished epoch, rewritten after every epoch
  history.png                 the post's plot: train/val loss and accuracy per epoch
  summary.json                parameters, devices, replicas, epochs, final metrics, speed
  model.keras                 the trained model (uint8 images in, probabilities out)
  resume/                     the last finished epoch's weights and optimizer state

A reader (a person watching a long run, or a resumed run) never sees a half-written file, and a
kill at any instant loses no finished epoch: an epoch is committed by one atomic write of
resume/state.json, which names the epoch's weights (written just before it) and carries the
history rows themselves; history.json, history.csv and the plot are drawn from those rows after
the commit, and a resumed run starts from the state, never from them. Temporary files a kill
left behind are removed when the next run starts.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import numpy as np

from envcheck.errors import EXIT_FINDINGS, EnvcheckError, UsageError

HISTORY_COLUMNS = (
    "epoch",
    "loss",
    "accuracy",
    "val_loss",
    "val_accuracy",
    "learning_rate",
    "seconds",
    "train_seconds",
    "images",
    "images_per_second",
    "images_per_second_per_replica",
    "startup",
)


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside `target` to write to; it replaces `target` only if the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # Same folder (so os.replace is atomic) and same endings (Keras and matplotlib read them).
    suffix = "".join(target.suffixes)
    stem = target.name[: len(target.name) - len(suffix)]
    handle, temp = tempfile.mkstemp(prefix=f".{stem}.tmp-", suffix=suffix, dir=target.parent)
    os.close(handle)
    try:
        yield Path(temp)
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide results from other users of the folder
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def write_text_atomically(target: Path, text: str) -> None:
    with atomic_path(target) as temp:
        temp.write_text(text, encoding="utf-8")


def write_json_atomically(target: Path, data: Any) -> None:
    write_text_atomically(target, json.dumps(data, indent=2, sort_keys=False) + "\n")


def history_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=HISTORY_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k) for k in HISTORY_COLUMNS})
    return buffer.getvalue()


def check_output_folder(root: Path, flag: str = "--output") -> None:
    """Fail in one line, before any training, when `root` cannot be a folder envcheck writes to.

    Creates nothing: it tries a file in `root`, or in the nearest folder above it that exists.
    """
    root = Path(root)
    existing = root
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == root else f" ({existing} is a file)"
        raise UsageError(
            f"{flag} {root}: exists and is not a folder{where}"
            if not where
            else f"{flag} {root}: cannot be created{where}"
        )
    try:
        handle, probe = tempfile.mkstemp(prefix=".envcheck-write-test-", dir=existing)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{flag} {root}: cannot write in {existing} ({exc.strerror or exc})") from None


class OutputsFull(EnvcheckError):
    """Writing the outputs failed (a full disk, a quota): one line saying what was kept, exit 1."""

    exit_code = EXIT_FINDINGS


class OutputFolder:
    def __init__(self, root: Path):
        self.root = Path(root)

    history_json = property(lambda self: self.root / "history.json")
    history_csv = property(lambda self: self.root / "history.csv")
    plot = property(lambda self: self.root / "history.png")
    summary = property(lambda self: self.root / "summary.json")
    model = property(lambda self: self.root / "model.keras")
    resume_dir = property(lambda self: self.root / "resume")
    resume_state = property(lambda self: self.root / "resume" / "state.json")

    RESULTS = ("history.json", "history.csv", "history.png", "summary.json", "model.keras")

    def write_history(self, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
        write_json_atomically(self.history_json, {**meta, "epochs": rows})
        write_text_atomically(self.history_csv, history_csv(rows))

    def read_history(self) -> list[dict[str, Any]]:
        try:
            return list(json.loads(self.history_json.read_text(encoding="utf-8"))["epochs"])
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def read_resume_state(self) -> Optional[dict[str, Any]]:
        """The interrupted run's state (epochs finished, weights file, settings, rows), or None."""
        try:
            state = json.loads(self.resume_state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict):
            return None
        weights = self.resume_dir / str(state.get("weights", ""))
        done = state.get("epochs_done")
        if isinstance(done, bool) or not isinstance(done, int) or done < 0 or not weights.is_file():
            return None
        return state

    def resume_rows(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """The finished epochs' rows as the commit recorded them (a state written before rows were
        kept there: the history file's rows up to the epoch it names)."""
        rows = state.get("rows")
        if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
            return [dict(r) for r in rows]
        return [r for r in self.read_history() if isinstance(r, dict) and r.get("epoch", 0) <= state["epochs_done"]]

    def commit_epoch(self, model, rows: list[dict[str, Any]], meta: dict[str, Any], key: dict[str, Any]) -> None:
        """Make the epoch of ``rows[-1]`` survive a kill: its weights, then the one write that
        commits it (resume/state.json with the rows), then the history files drawn from it.
        A kill before the commit leaves the previous epoch's pair whole; after it, this one."""
        epochs_done = len(rows)
        self.resume_dir.mkdir(parents=True, exist_ok=True)
        name = f"epoch-{epochs_done:04d}.weights.h5"
        self.check_space_for(model)
        with atomic_path(self.resume_dir / name) as temp:
            model.save_weights(str(temp), overwrite=True)
        write_json_atomically(
            self.resume_state, {"epochs_done": epochs_done, "weights": name, "settings": key, "rows": rows}
        )
        self.write_history(rows, meta)

    def drop_older_weights(self) -> None:
        state = self.read_resume_state()
        for old in self.resume_dir.glob("epoch-*.weights.h5"):
            if state is None or old.name != state.get("weights"):
                old.unlink(missing_ok=True)

    def check_space_for(self, model) -> None:
        """Refuse before writing what cannot fit: a weights file (with the optimizer's state) needs
        about three times the parameters' bytes; h5py left to hit a full disk itself fails messily."""
        try:
            need = 3 * sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in model.weights) + (1 << 20)
        except Exception:  # noqa: BLE001 - a model whose weights say no size: no estimate, no check
            return
        self.require_free_space(need)

    def require_free_space(self, need: int) -> None:
        try:
            free = shutil.disk_usage(self.root).free
        except OSError:
            return
        if free < need:
            raise OSError(
                errno.ENOSPC,
                f"No space left on device ({free // (1 << 20)} MiB free, about {need // (1 << 20) + 1} MiB needed)",
            )

    def clear_resume_point(self) -> None:
        shutil.rmtree(self.resume_dir, ignore_errors=True)

    def is_finished(self) -> bool:
        """A finished run is here: its summary exists (written only once every epoch is done)."""
        return self.summary.is_file()

    def clear_run(self) -> None:
        """--overwrite: remove the previous run's outputs (only the files a run writes)."""
        for name in self.RESULTS:
            (self.root / name).unlink(missing_ok=True)
        self.clear_resume_point()

    def remove_stale_temporaries(self) -> None:
        """Temporary files a killed run left behind (.history.tmp-*.png, ...): never results."""
        for folder in (self.root, self.resume_dir):
            try:
                entries = list(folder.iterdir())
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") and (
                    ".tmp-" in entry.name or entry.name.startswith(".envcheck-write-test-")
                ):
                    try:
                        entry.unlink()
                    except OSError:
                        pass


def describe_write_error(exc: OSError) -> str:
    """One short line for a failed write (h5py's own messages run over several lines)."""
    if exc.errno == errno.ENOSPC and exc.strerror and exc.strerror.startswith("No space left on device ("):
        return exc.strerror  # ours, with the figures
    if exc.errno:
        return os.strerror(exc.errno)
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
