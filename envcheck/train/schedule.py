"""Learning rate per epoch: the post's linear ("poly", power 1) decay, and the fast preset's curve.

Plain functions of the epoch index so they can be tested, plotted and reused without TensorFlow;
Keras's LearningRateScheduler calls them at the start of each epoch, as the post did.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from envcheck.train.config import Recipe


def poly_decay(epoch: int, *, epochs: int, base_lr: float, power: float = 1.0) -> float:
    """The post's schedule: base_lr * (1 - epoch / epochs) ** power, reaching 0 after the last epoch."""
    if epoch >= epochs:
        return 0.0
    return base_lr * (1.0 - epoch / float(epochs)) ** power


def warmup_cosine(epoch: int, *, epochs: int, base_lr: float, warmup_epochs: int) -> float:
    """Linear warm-up to base_lr over `warmup_epochs`, then half a cosine down to 0 at `epochs`."""
    if epoch >= epochs:
        return 0.0
    if epoch < warmup_epochs:
        return base_lr * (epoch + 1) / float(warmup_epochs + 1)
    span = max(1, epochs - warmup_epochs)
    progress = (epoch - warmup_epochs) / float(span)
    return 0.5 * base_lr * (1.0 + math.cos(math.pi * progress))


def schedule_for(recipe: Recipe) -> Callable[[int], float]:
    """The learning rate of each epoch (0-based) for a recipe."""
    if recipe.schedule == "poly":
        return lambda epoch: poly_decay(epoch, epochs=recipe.epochs, base_lr=recipe.learning_rate)
    if recipe.schedule == "warmup-cosine":
        return lambda epoch: warmup_cosine(
            epoch, epochs=recipe.epochs, base_lr=recipe.learning_rate, warmup_epochs=recipe.warmup_epochs
        )
    raise ValueError(f"unknown schedule {recipe.schedule!r}")
