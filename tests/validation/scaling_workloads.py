"""Workloads whose costs the scaling tests choose, to prove that validate --scaling names the
right bottleneck. A replica's "device work" is a sleep (it releases the GIL, so replicas on
logical CPU devices run it side by side, as GPUs would), the input pipeline can be made to sleep
per image, the gradients can be made large, and one device can be made slower than the others.
The measurement and the analysis are envcheck's own, unchanged."""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf

from envcheck.validation.scaling import Workload

SHAPE = (4, 4, 3)
CLASSES = 10


class DeviceWork(keras.layers.Layer):
    """Sleeps fixed + per_image x batch seconds per step (times `slow_factor` on `slow_device`);
    carries `weights` trainable floats, whose gradients the all-reduce then moves."""

    def __init__(self, fixed, per_image, weights=16, slow_device=None, slow_factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.fixed, self.per_image, self.size = fixed, per_image, weights
        self.slow_device, self.slow_factor = slow_device, slow_factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(self.size,), initializer="zeros", name="w")

    def compute_output_shape(self, input_shape):
        return input_shape

    def call(self, x):
        here = tf.identity(x).device  # the replica's device, fixed when the step is traced
        factor = self.slow_factor if self.slow_device and here.endswith(self.slow_device) else 1.0
        fixed, per_image = self.fixed * factor, self.per_image * factor

        def work(n, _replica_input):
            time.sleep(fixed + per_image * int(n))
            return np.float32(0.0)

        # Not stateful: tf.function would chain stateful ops one after another, replicas included,
        # where a device's work runs beside the others'. The replica's own input keeps the ops apart.
        delay = tf.numpy_function(work, [tf.shape(x)[0], tf.reduce_mean(x)], tf.float32, stateful=False)
        delay = tf.stop_gradient(tf.ensure_shape(delay, ()))
        return x + 0.0 * tf.reduce_sum(self.w) + 0.0 * delay


def _batch(n: int):
    rng = np.random.default_rng(n)
    return rng.random((n, *SHAPE), dtype=np.float32), np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, n)]


def _fast_dataset(global_batch: int):
    return tf.data.Dataset.from_tensors(_batch(global_batch)).repeat().prefetch(4)


def _slow_dataset(seconds_per_image: float):
    def make(global_batch: int):
        images, labels = _batch(global_batch)

        def load(_):
            time.sleep(seconds_per_image * global_batch)
            return images, labels

        def loaded(i):
            x, y = tf.numpy_function(load, [i], (tf.float32, tf.float32))
            return tf.ensure_shape(x, (global_batch, *SHAPE)), tf.ensure_shape(y, (global_batch, CLASSES))

        return tf.data.Dataset.range(1 << 30).map(loaded).prefetch(2)  # one map call at a time

    return make


def workload(
    name, *, fixed=0.01, per_image=0.06, weights=16, slow_device=None, slow_factor=1.0, input_delay=None, batch=16
):
    def build():
        inputs = keras.Input(SHAPE)
        x = DeviceWork(fixed, per_image, weights, slow_device, slow_factor)(inputs)
        outputs = keras.layers.Dense(CLASSES, activation="softmax")(keras.layers.Flatten()(x))
        return keras.Model(inputs, outputs)

    dataset = _slow_dataset(input_delay) if input_delay else _fast_dataset
    return Workload(name, build, dataset, _batch, batch)


# Half the sleeps of workload()'s defaults for the three scenarios a sleep makes slow: every ratio
# the analysis reads is the same (a device alone, the pipeline, the devices summed), and a 0.5 s
# step still leaves the 3-device step 50 ms of TensorFlow's own overhead before the healthy run
# falls below 90% (it takes about 5: 0.99 efficiency). The three took 330 of the file's 355 s.
HALF = {"fixed": 0.005, "per_image": 0.03}

SCENARIOS = {
    "healthy": lambda: workload("healthy", **HALF),
    "slow input": lambda: workload("slow input", input_delay=0.02, **HALF),
    # Twice as slow: alone it does 50% of the median's images/s, far below the straggler bar (80%).
    "slow device": lambda: workload("slow device", slow_device="CPU:1", slow_factor=2.0, **HALF),
    "large gradients": lambda: workload("large gradients", fixed=0.002, per_image=0.004, weights=4_000_000),
    "small batch": lambda: workload("small batch", fixed=0.15, per_image=0.002, batch=4),
}
