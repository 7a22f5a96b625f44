"""The training figure a person looks at: loss and accuracy on panels of their own, one tick per
whole epoch, and a title that says what the model learned from."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from envcheck.train.cifar import CIFAR10_CLASSES, CifarData
from envcheck.train.plots import history_figure, plot_history


def rows(count: int, loss: float = 6.0) -> list[dict]:
    return [
        {"epoch": e, "loss": loss / e, "val_loss": loss / e + 0.5, "accuracy": 0.1 * e, "val_accuracy": 0.08 * e}
        for e in range(1, count + 1)
    ]


def test_loss_and_accuracy_have_a_panel_each():
    figure = history_figure(rows(3), "MiniGoogLeNet on CIFAR-10 (x): 1 replica (cpu)")
    loss, accuracy = figure.axes
    assert (loss.get_title(), accuracy.get_title()) == ("Loss", "Accuracy")
    assert [line.get_label() for line in loss.get_lines()] == ["train_loss", "val_loss"]
    assert [line.get_label() for line in accuracy.get_lines()] == ["train_acc", "val_acc"]
    # A loss of 6 does not squash accuracies of 0.1-0.3: their axis is their own.
    assert accuracy.get_ylim()[1] < 1.5
    assert figure.get_suptitle() == "MiniGoogLeNet on CIFAR-10 (x): 1 replica (cpu)"


@pytest.mark.parametrize("epochs", [1, 2, 7, 40])
def test_epoch_ticks_are_whole_numbers(epochs):
    figure = history_figure(rows(epochs), "t")
    figure.canvas.draw()
    for axes in figure.axes:
        ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    if epochs == 1:
        assert list(figure.axes[0].get_xticks()) == [1]


def test_the_png_is_written(tmp_path):
    target = tmp_path / "history.png"
    plot_history(rows(2), target, "t")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_title_names_the_data():
    from envcheck.train.data import synthetic_cifar10
    from envcheck.train.trainer import data_title

    assert data_title(synthetic_cifar10(10, 10, seed=3)) == "synthetic images (seed 3)"
    import numpy as np

    empty = np.zeros((0, 32, 32, 3), np.uint8)
    labels = np.zeros((0,), np.int64)
    real = CifarData(empty, labels, empty, labels, CIFAR10_CLASSES, "/data/cifar10-jpg.tar.gz", "image-folders")
    assert data_title(real) == "CIFAR-10 (cifar10-jpg.tar.gz)"
    other = CifarData(empty, labels, empty, labels, ("cat", "dog"), "/data/pets", "image-folders")
    assert data_title(other) == "2 classes (pets)"
