"""MiniGoogLeNet (the post's network) and the on-device preprocessing in front of it.

The network: every block is Conv2D (with bias) -> BatchNorm -> ReLU; an inception module is a 1x1
and a 3x3 block concatenated; a downsample module is a 3x3 stride-2 "valid" block concatenated with
a 3x3 stride-2 max-pool. 1,656,250 parameters for 10 classes.

The training model takes uint8 images and does the rest on the device: per-pixel mean subtraction
(as the post did with numpy before training), then, only while training, a random shift of up to
10% of height and width with "nearest" fill and a random horizontal flip (the post's
ImageDataGenerator settings). Keras 3's RandomTranslation cannot be XLA-compiled, so the shift is
a small layer of our own built from gathers, which XLA handles.
"""

from __future__ import annotations

from typing import Optional

import keras
import numpy as np
import tensorflow as tf
from keras import layers

INPUT_SHAPE = (32, 32, 3)
MINI_GOOGLENET_PARAMETERS = 1_656_250  # for 10 classes, as Keras counts them


def conv_block(x, filters: int, kernel: int, strides: int = 1, padding: str = "same", name: str = ""):
    x = layers.Conv2D(filters, kernel, strides=strides, padding=padding, name=f"{name}_conv")(x)
    x = layers.BatchNormalization(name=f"{name}_bn")(x)
    return layers.Activation("relu", name=f"{name}_relu")(x)


def inception_module(x, filters_1x1: int, filters_3x3: int, name: str):
    branch_1x1 = conv_block(x, filters_1x1, 1, name=f"{name}_1x1")
    branch_3x3 = conv_block(x, filters_3x3, 3, name=f"{name}_3x3")
    return layers.Concatenate(name=f"{name}_concat")([branch_1x1, branch_3x3])


def downsample_module(x, filters: int, name: str):
    conv = conv_block(x, filters, 3, strides=2, padding="valid", name=f"{name}_3x3")
    pool = layers.MaxPooling2D(3, strides=2, name=f"{name}_pool")(x)
    return layers.Concatenate(name=f"{name}_concat")([conv, pool])


def build_mini_googlenet(classes: int = 10, input_shape=INPUT_SHAPE) -> keras.Model:
    """The post's network, float inputs (already mean-subtracted) to class probabilities."""
    inputs = keras.Input(shape=input_shape, name="image")
    x = conv_block(inputs, 96, 3, name="stem")
    x = inception_module(x, 32, 32, "inception_1a")
    x = inception_module(x, 32, 48, "inception_1b")
    x = downsample_module(x, 80, "downsample_1")
    for i, (f1, f3) in enumerate([(112, 48), (96, 64), (80, 80), (48, 96)]):
        x = inception_module(x, f1, f3, f"inception_2{'abcd'[i]}")
    x = downsample_module(x, 96, "downsample_2")
    x = inception_module(x, 176, 160, "inception_3a")
    x = inception_module(x, 176, 160, "inception_3b")
    x = layers.AveragePooling2D(7, name="average_pool")(x)
    x = layers.Dropout(0.5, name="dropout")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(classes, name="logits")(x)
    # Softmax in float32 even under mixed precision: float16 probabilities underflow in the loss.
    outputs = layers.Activation("softmax", dtype="float32", name="probabilities")(x)
    return keras.Model(inputs, outputs, name="mini_googlenet")


@keras.saving.register_keras_serializable(package="envcheck")
class RandomShift(layers.Layer):
    """Shift each image by a random fraction of its size, filling with the nearest edge pixel.

    What ImageDataGenerator(width_shift_range, height_shift_range, fill_mode="nearest") did: a
    shift drawn uniformly in [-factor, factor] * size, bilinear between pixels; sampling
    coordinates are clamped to the image, which is exactly "nearest" fill.
    """

    def __init__(self, height_factor: float, width_factor: float, seed: Optional[int] = None, **kwargs):
        super().__init__(**kwargs)
        self.height_factor = float(height_factor)
        self.width_factor = float(width_factor)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, images, training=None):
        if not training:
            return images
        batch = tf.shape(images)[0]
        height, width = images.shape[1], images.shape[2]
        dy = keras.random.uniform((batch,), -self.height_factor, self.height_factor, seed=self.seed_generator)
        dx = keras.random.uniform((batch,), -self.width_factor, self.width_factor, seed=self.seed_generator)
        images = shift_along_axis(images, dy * height, axis=1)
        return shift_along_axis(images, dx * width, axis=2)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor, "seed": self.seed}


def shift_along_axis(images, shifts, axis: int):
    """Move each image by `shifts[i]` pixels (fractional) along `axis` (1 rows, 2 columns), edge fill.

    Output pixel p takes the input at p - shift, clamped to the image and linearly interpolated.
    """
    size = images.shape[axis]
    positions = tf.range(size, dtype=images.dtype)[tf.newaxis, :] - tf.cast(shifts, images.dtype)[:, tf.newaxis]
    positions = tf.clip_by_value(positions, 0.0, float(size - 1))
    lower = tf.floor(positions)
    weight = positions - lower
    lower_index = tf.cast(lower, tf.int32)
    upper_index = tf.minimum(lower_index + 1, size - 1)
    below = tf.gather(images, lower_index, axis=axis, batch_dims=1)
    above = tf.gather(images, upper_index, axis=axis, batch_dims=1)
    weight = tf.reshape(weight, [-1, size, 1, 1] if axis == 1 else [-1, 1, size, 1])
    return below * (1.0 - weight) + above * weight


def build_training_model(
    mean_image: np.ndarray, classes: int = 10, *, augment: bool = True, seed: Optional[int] = None
) -> keras.Model:
    """uint8 images in, probabilities out: mean subtraction and augmentation run on the device."""
    mean_image = np.asarray(mean_image, dtype=np.float32)
    inputs = keras.Input(shape=INPUT_SHAPE, dtype="uint8", name="image_uint8")
    # Fixed mean, unit variance: a plain per-pixel subtraction kept in the saved model's config.
    x = layers.Normalization(
        axis=(1, 2, 3), mean=mean_image, variance=np.ones_like(mean_image), dtype="float32", name="mean_subtraction"
    )(inputs)
    if augment:
        # The post shifted and flipped the already mean-subtracted images; the order is kept.
        x = RandomShift(0.1, 0.1, seed=seed, dtype="float32", name="random_shift")(x)
        x = layers.RandomFlip("horizontal", seed=seed, dtype="float32", name="random_flip")(x)
    outputs = build_mini_googlenet(classes)(x)
    return keras.Model(inputs, outputs, name="mini_googlenet_cifar10")


def network_of(model: keras.Model) -> keras.Model:
    """The MiniGoogLeNet inside a training model (for counting its parameters)."""
    return model.get_layer("mini_googlenet")
