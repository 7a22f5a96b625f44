"""The post's figure: training and validation loss and accuracy per epoch, one PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcheck.train.outputs import atomic_path


def plot_history(rows: list[dict[str, Any]], target: Path, title: str = "MiniGoogLeNet on CIFAR-10") -> None:
    """Draw the four curves of the post (train/test loss, train/test accuracy) against the epoch."""
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    epochs = [row["epoch"] for row in rows]
    curves = (
        ("loss", "train_loss"),
        ("val_loss", "val_loss"),
        ("accuracy", "train_acc"),
        ("val_accuracy", "val_acc"),
    )
    # A Figure of our own, not pyplot: no global backend or state, safe in any process.
    with matplotlib.style.context("ggplot"):
        figure = Figure(figsize=(8, 6))
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        for key, label in curves:
            values = [row.get(key) for row in rows]
            if any(v is not None for v in values):
                axes.plot(epochs, [float("nan") if v is None else v for v in values], label=label, marker=".")
        axes.set_title(title)
        axes.set_xlabel("Epoch #")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
        axes.set_ylabel("Loss/Accuracy")
        axes.legend()
        with atomic_path(target) as temp:
            figure.savefig(temp, dpi=100)
