"""The output folder of a run, every file written atomically (temporary file, then os.replace).

  history.json, history.csv   one row per finished epoch, rewritten after every epoch
  history.png                 the post's plot: train/val loss and accuracy per epoch
  summary.json                parameters, devices, replicas, epochs, final metrics, speed
  model.keras                 the trained model (uint8 images in, probabilities out)
  resume/                     the last finished epoch's weights and optimizer state

A reader (a person watching a long run, or a resumed run) never sees a half-written file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

HISTORY_COLUMNS = (
    "epoch", "loss", "accuracy", "val_loss", "val_accuracy", "learning_rate",
    "seconds", "train_seconds", "images", "images_per_second", "images_per_second_per_replica", "startup",
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
    from envcheck.errors import UsageError

    root = Path(root)
    existing = root
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == root else f" ({existing} is a file)"
        raise UsageError(f"{flag} {root}: exists and is not a folder{where}" if not where
                         else f"{flag} {root}: cannot be created{where}")
    try:
        handle, probe = tempfile.mkstemp(prefix=".envcheck-write-test-", dir=existing)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{flag} {root}: cannot write in {existing} ({exc.strerror or exc})") from None


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

    def write_history(self, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
        write_json_atomically(self.history_json, {**meta, "epochs": rows})
        write_text_atomically(self.history_csv, history_csv(rows))

    def read_history(self) -> list[dict[str, Any]]:
        try:
            return list(json.loads(self.history_json.read_text(encoding="utf-8"))["epochs"])
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def read_resume_state(self) -> Optional[dict[str, Any]]:
        """The interrupted run's state (epochs finished, weights file, settings), or None."""
        try:
            state = json.loads(self.resume_state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        weights = self.resume_dir / str(state.get("weights", ""))
        if not isinstance(state.get("epochs_done"), int) or not weights.is_file():
            return None
        return state

    def save_resume_point(self, model, epochs_done: int, key: dict[str, Any]) -> None:
        """Weights first, then the state naming them: a kill between the two leaves the previous pair."""
        self.resume_dir.mkdir(parents=True, exist_ok=True)
        name = f"epoch-{epochs_done:04d}.weights.h5"
        with atomic_path(self.resume_dir / name) as temp:
            model.save_weights(str(temp), overwrite=True)
        write_json_atomically(self.resume_state, {"epochs_done": epochs_done, "weights": name, "settings": key})
        for old in self.resume_dir.glob("epoch-*.weights.h5"):
            if old.name != name:
                old.unlink(missing_ok=True)

    def clear_resume_point(self) -> None:
        shutil.rmtree(self.resume_dir, ignore_errors=True)
