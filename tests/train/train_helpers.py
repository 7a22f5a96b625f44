"""Helpers for the trainer's tests: CIFAR-10 look-alikes written into tmp_path, and trainer subprocesses.

Multi-replica runs need the CPU split before TensorFlow starts, so they run in a fresh process
(``python -m envcheck.train``), which also tests the entry point people use.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
REAL_CIFAR10 = REPO / ".." / "shared" / "data" / "cifar10-jpg.tar.gz"
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def random_images(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(count, 32, 32, 3), dtype=np.uint8)


def write_python_batch(path: Path, images: np.ndarray, labels, protocol: int = 4) -> None:
    """CIFAR-10's python batch format: rows of 1024 red, 1024 green, 1024 blue values; bytes keys."""
    rows = images.transpose(0, 3, 1, 2).reshape(len(images), 3 * 32 * 32)
    batch = {b"batch_label": b"generated", b"labels": [int(v) for v in labels], b"data": rows}
    path.write_bytes(pickle.dumps(batch, protocol=protocol))


def write_python_batches(folder: Path, per_batch: int = 12, test: int = 10, seed: int = 0):
    """data_batch_1..5 and test_batch; returns (x_train, y_train, x_test, y_test) as written."""
    folder.mkdir(parents=True, exist_ok=True)
    x_train = random_images(5 * per_batch, seed)
    y_train = np.arange(5 * per_batch) % 10
    for i in range(5):
        part = slice(i * per_batch, (i + 1) * per_batch)
        write_python_batch(folder / f"data_batch_{i + 1}", x_train[part], y_train[part])
    x_test = random_images(test, seed + 1)
    y_test = (np.arange(test) * 3) % 10
    write_python_batch(folder / "test_batch", x_test, y_test)
    return x_train, y_train, x_test, y_test


def write_image_folders(
    root: Path, train_per_class: int = 3, test_per_class: int = 2, classes=CLASSES, suffix: str = ".png", seed: int = 0
) -> dict:
    """train/<class>/NNNN<suffix> and test/<class>/...; returns {(split, class, index): pixels}."""
    from PIL import Image

    written = {}
    rng = np.random.default_rng(seed)
    for split, count in (("train", train_per_class), ("test", test_per_class)):
        for name in classes:
            (root / split / name).mkdir(parents=True, exist_ok=True)
            for i in range(count):
                pixels = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / name / f"{i:04d}{suffix}")
                written[(split, name, i)] = pixels
    return written


def subprocess_env(tmp_path: Path) -> dict:
    """An environment for trainer subprocesses: this checkout importable, no Keras cache, own cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["KERAS_HOME"] = str(tmp_path / "keras-home")
    env["ENVCHECK_CACHE_DIR"] = str(tmp_path / "envcheck-cache")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("TF_CONFIG", None)
    return env


def run_module(module: str, *args: str, env: dict, timeout: float = 300, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(cwd or REPO),
    )


def read_json(path: Path):
    return json.loads(Path(path).read_text())
