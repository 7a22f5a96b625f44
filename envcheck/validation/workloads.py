"""The workload validate --scaling measures: the reference trainer's MiniGoogLeNet (mean
subtraction and augmentation on the device, as envcheck train runs it) on synthetic uint8
CIFAR-10-shaped images, through the trainer's own input pipeline."""

from __future__ import annotations

import numpy as np

from envcheck.validation.scaling import Workload

SYNTHETIC_IMAGES = 4096  # enough for the pipeline's shuffle to be real work, small in memory
CLASSES = 10


def reference_workload(batch_per_replica: int = 64, seed: int = 0) -> Workload:
    # lazy for start-up: keeps train.model, train.pipeline out of every import of validation.workloads
    from envcheck.train.model import build_training_model
    from envcheck.train.pipeline import training_dataset

    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(SYNTHETIC_IMAGES, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, size=SYNTHETIC_IMAGES).astype(np.int32)
    mean = images.mean(axis=0).astype(np.float32)

    def batch(n: int):
        picked = rng.integers(0, SYNTHETIC_IMAGES, size=n)
        return images[picked], np.eye(CLASSES, dtype=np.float32)[labels[picked]]

    return Workload(
        name="MiniGoogLeNet (the reference trainer's model) on synthetic CIFAR-10-shaped images",
        build_model=lambda: build_training_model(mean, CLASSES, augment=True, seed=seed),
        dataset=lambda global_batch: training_dataset(images, labels, global_batch=global_batch, repeat=True),
        batch=batch,
        batch_per_replica=batch_per_replica,
    )
