"""CIFAR-10 from a local copy, never a download, as uint8 arrays in memory.

Sources, in the order they are tried:
  --data PATH: the python batches folder (cifar-10-batches-py), a folder of class subfolders
      (train/<class>/*.jpg and test/<class>/*.jpg), or a .tar.gz/.tar of either;
  the Keras cache: $KERAS_HOME or ~/.keras, datasets/cifar-10-batches-py-target/cifar-10-batches-py
      (Keras 3) or datasets/cifar-10-batches-py (Keras 2 / tf.keras);
  --synthetic: generated images of ten learnable classes, for smoke tests and throughput.

No TensorFlow here: loading and checking data must be cheap and testable on its own.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import numpy as np

from envcheck.fsutil import read_user_bytes
from envcheck.train import image_folders
from envcheck.train.cifar import (
    CIFAR10_CLASSES,
    HOW_TO_PROVIDE,
    IMAGE_SHAPE,
    CifarData,
    DataError,
    find_test_folder,
)

BATCH_FILE = "a CIFAR-10 python batch"
# A batch of 10,000 images is 30.7 MB; CIFAR-100's training file (50,000) is 154 MB.
MAX_BATCH_BYTES = 256 * 1024 * 1024
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"


def cache_dir() -> Path:
    """Where envcheck keeps extracted archives and decoded arrays: never inside a repository."""
    explicit = os.environ.get("ENVCHECK_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "envcheck"
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "envcheck" / "cache"
    return Path.home() / ".cache" / "envcheck"


def keras_cache_candidates() -> list[Path]:
    """The folders Keras's cifar10.load_data() leaves the python batches in, newest layout first."""
    home = Path(os.environ.get("KERAS_HOME") or Path.home() / ".keras").expanduser()
    datasets = home / "datasets"
    return [
        datasets / "cifar-10-batches-py-target" / "cifar-10-batches-py",
        datasets / "cifar-10-batches-py",
    ]


def load_cifar10(
    path: Optional[Path] = None, *, subset: Optional[int] = None, val_subset: Optional[int] = None, stage=None
) -> CifarData:
    """CIFAR-10 from `path`, or from the Keras cache when `path` is None; first N images when asked."""
    if path is None:
        for candidate in keras_cache_candidates():
            if (candidate / TRAIN_BATCHES[0]).is_file():
                return load_python_batches(candidate, subset=subset, val_subset=val_subset)
        looked = ", ".join(str(c) for c in keras_cache_candidates())
        raise DataError(f"CIFAR-10 not found: looked in the Keras cache ({looked}); {HOW_TO_PROVIDE}")

    path = Path(path).expanduser()
    if not path.exists():
        raise DataError(f"--data {path}: no such file or folder; {HOW_TO_PROVIDE}")
    given = path
    if path.is_file():
        if not image_folders.is_archive(path):
            raise DataError(f"--data {path}: a file, but not a .tar.gz/.tgz/.tar archive; {HOW_TO_PROVIDE}")
        path = image_folders.extract_archive(path, cache_dir(), stage)
    layout, root = find_layout(path)
    if layout == "python-batches":
        data = load_python_batches(root, subset=subset, val_subset=val_subset)
    else:
        data = image_folders.load_image_folders(
            root, subset=subset, val_subset=val_subset, cache=cache_dir(), stage=stage
        )
    # The source a person recognises: the archive they named, not the cache folder it went to.
    return dataclasses.replace(data, source=str(given)) if given != path else data


def find_layout(path: Path) -> tuple[str, Path]:
    """("python-batches" | "image-folders", folder), looking in `path` and up to two levels below."""
    levels = [[path]]
    for _ in range(2):
        levels.append(sorted(c for p in levels[-1] for c in _subfolders(p)))
    for level in levels:
        for folder in level:
            if (folder / TRAIN_BATCHES[0]).is_file():
                return "python-batches", folder
            if (folder / "train").is_dir() and find_test_folder(folder) is not None:
                return "image-folders", folder
    raise DataError(
        f"--data {path}: holds neither CIFAR-10 python batches (data_batch_1..5, test_batch) nor "
        f"train/<class>/ and test/<class>/ image folders; {HOW_TO_PROVIDE}"
    )


def _subfolders(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """Python batches are pickles; this refuses anything but numpy arrays, so a file can't run code."""

    ALLOWED = {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only numpy arrays are expected)")


def read_python_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(images (N, 32, 32, 3) uint8, labels (N,) int64) from one CIFAR-10 python batch file.

    Read through the bounded reader every user file goes through: a FIFO or a device in its
    place is refused at once, and a file past MAX_BATCH_BYTES is refused before it is read.
    """
    if not os.path.lexists(path):
        raise DataError(
            f"{path}: missing; a CIFAR-10 python batches folder holds {', '.join(TRAIN_BATCHES)} "
            f"and {TEST_BATCH}; {HOW_TO_PROVIDE}"
        )
    raw = read_user_bytes(path, BATCH_FILE, DataError, max_bytes=MAX_BATCH_BYTES)
    try:
        batch = _ArraysOnlyUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means the file is corrupt
        raise DataError(f"{path}: not a readable CIFAR-10 python batch ({type(exc).__name__}: {exc})") from None
    if not isinstance(batch, dict):
        raise DataError(f"{path}: not a CIFAR-10 python batch (a {type(batch).__name__}, not a dict)")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in batch or "labels" not in batch:
        raise DataError(f"{path}: not a CIFAR-10 python batch (no 'data' and 'labels' entries)")
    try:
        data = np.asarray(batch["data"])
        labels = np.asarray(batch["labels"], dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DataError(f"{path}: not a CIFAR-10 python batch (labels are not whole numbers: {exc})") from None
    if labels.ndim != 1:
        raise DataError(f"{path}: not a CIFAR-10 python batch (labels of shape {labels.shape}, expected a list)")
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(data) != len(labels):
        raise DataError(
            f"{path}: not a CIFAR-10 python batch (data {data.dtype} {data.shape}, {len(labels)} labels; "
            "expected uint8 (N, 3072) and N labels)"
        )
    if len(labels) and (labels.min() < 0 or labels.max() >= len(CIFAR10_CLASSES)):
        raise DataError(f"{path}: labels outside 0..9 ({labels.min()}..{labels.max()})")
    # Rows are channel planes (1024 red, 1024 green, 1024 blue): to height, width, channel.
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def load_python_batches(folder: Path, *, subset: Optional[int] = None, val_subset: Optional[int] = None) -> CifarData:
    x_parts, y_parts, have = [], [], 0
    for name in TRAIN_BATCHES:
        if subset is not None and have >= subset:
            break  # the first N images: later batch files need not be read
        images, labels = read_python_batch(folder / name)
        x_parts.append(images)
        y_parts.append(labels)
        have += len(labels)
    x_train, y_train = _first(np.concatenate(x_parts), subset), _first(np.concatenate(y_parts), subset)
    x_test, y_test = read_python_batch(folder / TEST_BATCH)
    return CifarData(
        x_train=x_train,
        y_train=y_train,
        x_test=_first(x_test, val_subset),
        y_test=_first(y_test, val_subset),
        class_names=CIFAR10_CLASSES,
        source=str(folder),
        kind="python-batches",
    )


def _first(array: np.ndarray, count: Optional[int]) -> np.ndarray:
    return array if count is None else array[:count]


def synthetic_cifar10(
    train_images: int = 50_000, test_images: int = 10_000, *, seed: int = 0, classes: Sequence[str] = CIFAR10_CLASSES
) -> CifarData:
    """Generated CIFAR-shaped data whose classes are learnable (a colour pattern each, plus noise).

    Learnable on purpose: a smoke test can then check that the loss falls, not only that it runs.
    """
    rng = np.random.default_rng(seed)
    # One coarse 4x4 colour pattern per class, blown up to 32x32.
    patterns = rng.integers(40, 216, size=(len(classes), 4, 4, 3)).astype(np.int16)
    templates = patterns.repeat(8, axis=1).repeat(8, axis=2)

    def make(count: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.permutation(np.arange(count) % len(classes)).astype(np.int64)
        images = np.empty((count, *IMAGE_SHAPE), dtype=np.uint8)
        for start in range(0, count, 4096):  # in chunks: int16 noise for 50k images is 300 MB
            stop = min(count, start + 4096)
            noise = rng.integers(-48, 49, size=(stop - start, *IMAGE_SHAPE), dtype=np.int16)
            images[start:stop] = np.clip(templates[labels[start:stop]] + noise, 0, 255)
        return images, labels

    x_train, y_train = make(train_images)
    x_test, y_test = make(test_images)
    return CifarData(x_train, y_train, x_test, y_test, tuple(classes), f"synthetic (seed {seed})", "synthetic")
