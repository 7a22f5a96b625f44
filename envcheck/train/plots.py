"""The post's figure: training and validation loss and accuracy per epoch, one PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcheck.train.outputs import atomic_path


def plot_history(rows: list[dict[str, Any]], target: Path, title: str = "MiniGoogLeNet on CIFAR-10") -> None:
    """Draw the figure of ``rows`` into the PNG ``target`` (atomically: a kill leaves the old one)."""
    figure = history_figure(rows, title)
    with atomic_path(target) as temp:
        figure.savefig(temp, dpi=100)


def history_figure(rows: list[dict[str, Any]], title: str):
    """The post's four curves against the epoch, on two panels: loss (train, validation) on the
    left and accuracy on the right, so that a large loss never flattens the accuracy curves."""
    # matplotlib takes most of a second to import: paid at the first epoch's end, not at start-up.
    import matplotlib.style

    # lazy for start-up: matplotlib is heavy (or absent), imported only where it is used
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    epochs = [row["epoch"] for row in rows]
    panels = (
        ("Loss", (("loss", "train_loss"), ("val_loss", "val_loss"))),
        ("Accuracy", (("accuracy", "train_acc"), ("val_accuracy", "val_acc"))),
    )
    # A Figure of our own, not pyplot: no global backend or state, safe in any process.
    with matplotlib.style.context("ggplot"):
        figure = Figure(figsize=(11, 4.5), layout="constrained")
        FigureCanvasAgg(figure)
        figure.suptitle(title)
        for axes, (name, curves) in zip(figure.subplots(1, 2), panels):
            for key, label in curves:
                values = [row.get(key) for row in rows]
                if any(v is not None for v in values):
                    axes.plot(epochs, [float("nan") if v is None else v for v in values], label=label, marker=".")
            axes.set_title(name)
            axes.set_xlabel("Epoch #")
            axes.set_ylabel(name)
            if len(epochs) <= 12:
                axes.set_xticks(epochs)  # every epoch, and nothing between them
                if len(epochs) == 1:
                    axes.set_xlim(epochs[0] - 0.5, epochs[0] + 0.5)
            else:
                axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
            if name == "Accuracy":
                axes.set_ylim(bottom=0)
            if axes.get_legend_handles_labels()[0]:
                axes.legend()
    return figure
