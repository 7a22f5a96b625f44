"""A distributed training loop for MultiWorkerMirroredStrategy, driving the same Keras callbacks.

Keras 3's fit() fails under MultiWorkerMirroredStrategy (keras-team/keras#20585: before training
it reduces an (images, labels) batch with strategy.reduce, which that strategy cannot do). This
loop does what fit() does with public TensorFlow APIs only: strategy.run of a step that computes
the loss scaled by the global batch, the gradients, and the optimizer update (which all-reduces
the gradients across every replica of every worker). Only --multi-worker uses it.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf


def _sums(strategy, per_replica):
    return [float(strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)) for value in per_replica]


def fit_distributed(
    model: keras.Model,
    strategy,
    train_data: tf.data.Dataset,
    val_data: tf.data.Dataset,
    *,
    epochs: int,
    initial_epoch: int,
    steps_per_epoch: int,
    global_batch: int,
    label_smoothing: float,
    jit: bool,
    callbacks: list,
) -> None:
    """Train like model.fit(train_data.repeat(), steps_per_epoch=..., validation_data=val_data)."""
    loss_fn = keras.losses.CategoricalCrossentropy(label_smoothing=label_smoothing, reduction=None)
    optimizer = model.optimizer

    def train_on_replica(images, labels):
        with tf.GradientTape() as tape:
            probabilities = model(images, training=True)
            per_example = loss_fn(labels, probabilities)
            # Divided by the global batch: summing the replicas' losses gives the batch mean.
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            scaled = optimizer.scale_loss(loss)  # loss scaling under mixed float16; else unchanged
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return _batch_totals(labels, probabilities, per_example)

    def evaluate_on_replica(images, labels):
        probabilities = model(images, training=False)
        return _batch_totals(labels, probabilities, loss_fn(labels, probabilities))

    train_step = tf.function(train_on_replica, jit_compile=jit)
    eval_step = tf.function(evaluate_on_replica, jit_compile=jit)

    @tf.function
    def run_train_step(batch):
        return strategy.run(train_step, args=batch)

    @tf.function
    def run_eval_step(batch):
        return strategy.run(eval_step, args=batch)

    # Every worker must run the same number of steps, or the collectives wait forever: the
    # training data repeats and each epoch is exactly steps_per_epoch steps.
    train_iterator = iter(strategy.experimental_distribute_dataset(train_data.repeat()))
    distributed_val = strategy.experimental_distribute_dataset(val_data)
    callback_list = keras.callbacks.CallbackList(callbacks, model=model, epochs=epochs, steps=steps_per_epoch)
    model.stop_training = False
    callback_list.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        callback_list.on_epoch_begin(epoch)
        totals = [0.0, 0.0, 0.0]
        logs: dict[str, Any] = {}
        for step in range(steps_per_epoch):
            callback_list.on_train_batch_begin(step)
            totals = [a + b for a, b in zip(totals, _sums(strategy, run_train_step(next(train_iterator))))]
            logs = _means(totals)
            callback_list.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        if not model.stop_training:
            callback_list.on_test_begin()
            val_totals = [0.0, 0.0, 0.0]
            # The distributed iterator agrees across workers on when the data ends, and splits a
            # partial last batch (some replicas may get none).
            for batch in distributed_val:
                val_totals = [a + b for a, b in zip(val_totals, _sums(strategy, run_eval_step(batch)))]
            val_logs = _means(val_totals)
            callback_list.on_test_end(val_logs)
            logs.update({f"val_{k}": v for k, v in val_logs.items()})
        callback_list.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    callback_list.on_train_end(logs)


def _batch_totals(labels, probabilities, per_example_loss):
    correct = tf.cast(tf.equal(tf.argmax(labels, -1), tf.argmax(probabilities, -1)), tf.float32)
    count = tf.cast(tf.shape(labels)[0], tf.float32)
    return tf.reduce_sum(tf.cast(per_example_loss, tf.float32)), tf.reduce_sum(correct), count


def _means(totals: list[float]) -> dict[str, float]:
    loss_sum, correct, count = totals
    if count == 0:
        return {"loss": math.nan, "accuracy": math.nan}
    return {"loss": loss_sum / count, "accuracy": correct / count}
