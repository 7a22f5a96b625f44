"""What a CIFAR-10 data set is, wherever it comes from: the classes, the image shape, the arrays
the trainer gets, and the one error every loader raises. The loaders (`data.py` for the python
batches and the Keras cache, `image_folders.py` for folders and archives of images) build on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from envcheck.errors import UsageError

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
IMAGE_SHAPE = (32, 32, 3)
HOW_TO_PROVIDE = (
    "envcheck never downloads it: pass --data PATH (the cifar-10-batches-py folder, a folder with "
    "train/<class>/ and test/<class>/ images, or a .tar.gz of either), or use --synthetic"
)


class DataError(UsageError):
    """A data set that is missing, unreadable or not CIFAR-10 shaped: one line, exit 2."""


@dataclass(frozen=True)
class CifarData:
    x_train: np.ndarray  # (N, 32, 32, 3) uint8
    y_train: np.ndarray  # (N,) int64 class ids
    x_test: np.ndarray
    y_test: np.ndarray
    class_names: tuple[str, ...]
    source: str  # where it came from, for the summary
    kind: str  # "python-batches", "image-folders" or "synthetic"

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def describe(self) -> dict[str, object]:
        return {
            "source": self.source,
            "kind": self.kind,
            "train_images": int(len(self.x_train)),
            "test_images": int(len(self.x_test)),
            "classes": list(self.class_names),
        }


def find_test_folder(root: Path) -> Optional[Path]:
    for name in ("test", "val", "validation"):
        if (root / name).is_dir():
            return root / name
    return None
