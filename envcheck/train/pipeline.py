"""tf.data input pipelines over uint8 images kept in memory.

Only uint8 pixels and integer labels travel through tf.data (4x less memory and host-to-device
traffic than the post's float arrays), and they travel a batch at a time: the training set is
shuffled as a list of indices, and each batch is one gather from the arrays, not 64 tensors
sliced, shuffled and stacked one by one. The one-hot encoding is part of that vectorised map;
mean subtraction and augmentation happen inside the model, on the device.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import tensorflow as tf


def _options(multi_worker: bool) -> tf.data.Options:
    options = tf.data.Options()
    if multi_worker:
        # In-memory tensors have no files to split, so each worker takes every k-th batch.
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return options


def _one_hot(classes: int):
    def encode(images, labels):
        return images, tf.one_hot(labels, classes)

    return encode


def _gather_batch(classes: int):
    def take(indices, arrays):
        images, labels = arrays
        return tf.gather(images, indices), tf.one_hot(tf.gather(labels, indices), classes)

    return take


def training_dataset(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    global_batch: int,
    classes: int = 10,
    seed: int = 0,
    repeat: bool = False,
    multi_worker: bool = False,
) -> tf.data.Dataset:
    """Shuffled batches of (uint8 images, one-hot labels); the partial last batch is dropped.

    Dropping it keeps every step's batch split evenly across replicas, as the post's
    steps_per_epoch = len(trainX) // batch did. A fixed shuffle seed keeps the workers of a
    multi-worker run in step (each shards the same order); the order still changes every epoch.
    Only the indices are shuffled (a full shuffle of 4-byte numbers); the images stay in one
    tensor that every batch gathers from.
    """
    order = tf.data.Dataset.range(len(images))
    order = order.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        order = order.repeat()
    order = order.batch(global_batch, drop_remainder=True)
    # The arrays as one element repeated alongside the batches of indices: no copy per batch.
    arrays = tf.data.Dataset.from_tensors((images, labels.astype(np.int32))).repeat()
    dataset = tf.data.Dataset.zip((order, arrays))
    dataset = dataset.map(_gather_batch(classes), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(_options(multi_worker))


def evaluation_dataset(
    images: np.ndarray, labels: np.ndarray, *, global_batch: int, classes: int = 10, multi_worker: bool = False
) -> tf.data.Dataset:
    """Every test image once, in order, in batches of (uint8 images, one-hot labels)."""
    dataset = tf.data.Dataset.from_tensor_slices((images, labels.astype(np.int32))).cache()
    dataset = dataset.batch(global_batch).map(_one_hot(classes), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(_options(multi_worker))


def steps_per_epoch(train_images: int, global_batch: int, requested: Optional[int] = None) -> int:
    """The post's len(trainX) // batch, unless a number of steps was asked for."""
    return requested if requested is not None else train_images // global_batch
