"""The tf.data pipelines: uint8 batches with one-hot labels, every image once per epoch, reshuffled."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from envcheck.train.pipeline import evaluation_dataset, steps_per_epoch, training_dataset  # noqa: E402


def _images_tagged_by_index(count: int) -> np.ndarray:
    images = np.zeros((count, 32, 32, 3), np.uint8)
    images[:, 0, 0, 0] = np.arange(count)  # pixel (0, 0) says which image this is
    return images


def test_training_batches_are_uint8_with_one_hot_labels_and_drop_the_partial_batch():
    images, labels = _images_tagged_by_index(70), np.arange(70) % 10
    dataset = training_dataset(images, labels, global_batch=16, seed=1)
    assert int(dataset.cardinality()) == steps_per_epoch(70, 16) == 4  # fit() knows an epoch's length
    batches = list(dataset.as_numpy_iterator())
    assert len(batches) == 4
    x, y = batches[0]
    assert x.dtype == np.uint8 and x.shape == (16, 32, 32, 3)
    assert y.shape == (16, 10) and set(np.unique(y)) == {0.0, 1.0}
    np.testing.assert_array_equal(y.argmax(1), x[:, 0, 0, 0] % 10)  # labels travel with their images


def test_each_epoch_sees_distinct_images_in_a_new_order():
    images, labels = _images_tagged_by_index(64), np.zeros(64, int)
    dataset = training_dataset(images, labels, global_batch=8, seed=2)
    epochs = [np.concatenate([x[:, 0, 0, 0] for x, _ in dataset.as_numpy_iterator()]) for _ in range(2)]
    for order in epochs:
        assert sorted(order.tolist()) == list(range(64))
    assert epochs[0].tolist() != epochs[1].tolist()


def test_repeat_continues_past_one_pass_for_a_fixed_number_of_steps():
    images, labels = _images_tagged_by_index(20), np.zeros(20, int)
    dataset = training_dataset(images, labels, global_batch=8, repeat=True)
    assert len(list(dataset.take(7).as_numpy_iterator())) == 7
    assert steps_per_epoch(20, 8, requested=7) == 7


def test_evaluation_keeps_every_image_in_order():
    images, labels = _images_tagged_by_index(21), np.arange(21) % 10
    seen = np.concatenate(
        [x[:, 0, 0, 0] for x, _ in evaluation_dataset(images, labels, global_batch=8).as_numpy_iterator()]
    )
    assert seen.tolist() == list(range(21))


def test_multi_worker_datasets_shard_by_data():
    images, labels = _images_tagged_by_index(16), np.zeros(16, int)
    dataset = training_dataset(images, labels, global_batch=8, multi_worker=True)
    policy = dataset.options().experimental_distribute.auto_shard_policy
    assert policy == tf.data.experimental.AutoShardPolicy.DATA
