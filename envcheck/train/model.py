"""MiniGoogLeNet (the post's network) and the on-device preprocessing in front of it.

The network: every block is Conv2D (with bias) -> BatchNorm -> ReLU; an inception module is a 1x1
and a 3x3 block concatenated; a downsample module is a 3x3 stride-2 "valid" block concatenated with
a 3x3 stride-2 max-pool. 1,656,250 parameters for 10 classes. The batch normalization is Keras's,
computed by TensorFlow's fused kernel (cuDNN, oneDNN), as Keras 2 did for the post: Keras 3 builds
it from separate moments and arithmetic, which made a training step about 15% slower on a CPU.

The training model takes uint8 images and does the rest on the device: per-pixel mean subtraction
(as the post did with numpy before training), then, only while training, a random shift of up to
10% of height and width with "nearest" fill and a random horizontal flip (the post's
ImageDataGenerator settings). The shift and the flip are one small layer of our own, built from
gathers: the flip is folded into the column gather, and the augmentation of a batch is compiled
with XLA where XLA is available (uncompiled, the same gathers take about five times as long on a
CPU). Keras 3's RandomTranslation cannot be XLA-compiled, and its RandomFlip is a second pass.
"""

from __future__ import annotations

import platform
from typing import Optional

import keras
import numpy as np
import tensorflow as tf
from keras import layers

INPUT_SHAPE = (32, 32, 3)
MINI_GOOGLENET_PARAMETERS = 1_656_250  # for 10 classes, as Keras counts them


@keras.saving.register_keras_serializable(package="envcheck")
class FusedBatchNormalization(layers.BatchNormalization):
    """Keras's BatchNormalization (same weights, statistics and updates), run by the fused kernel.

    Images with the channels last only; anything else (masks, renorm, synchronised statistics,
    another axis) is left to Keras. As Keras 3 does, the statistics are computed in float32 under
    mixed precision, and the moving variance follows the batch variance without Bessel's
    correction (the fused kernel returns it with the correction, which is taken off).
    """

    def call(self, inputs, training=None, mask=None):
        rank = len(inputs.shape)
        if mask is not None or rank != 4 or self.axis not in (-1, rank - 1) or self.renorm or self.synchronized:
            return super().call(inputs, training=training, mask=mask)
        x = tf.cast(inputs, tf.float32)
        gamma = tf.cast(self.gamma, tf.float32) if self.scale else tf.ones_like(self.moving_mean)
        beta = tf.cast(self.beta, tf.float32) if self.center else tf.zeros_like(self.moving_mean)
        moving_mean = tf.cast(self.moving_mean, tf.float32)
        moving_variance = tf.cast(self.moving_variance, tf.float32)
        if training and self.trainable:
            y, mean, variance = tf.compat.v1.nn.fused_batch_norm(x, gamma, beta, epsilon=self.epsilon, is_training=True)
            count = tf.cast(tf.reduce_prod(tf.shape(x)[:-1]), tf.float32)
            variance = variance * (count - 1.0) / tf.maximum(count, 1.0)
            self.moving_mean.assign(moving_mean * self.momentum + mean * (1.0 - self.momentum))
            self.moving_variance.assign(moving_variance * self.momentum + variance * (1.0 - self.momentum))
        else:
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(
                x, gamma, beta, mean=moving_mean, variance=moving_variance, epsilon=self.epsilon, is_training=False
            )
        return tf.cast(y, inputs.dtype)


def conv_block(x, filters: int, kernel: int, strides: int = 1, padding: str = "same", name: str = ""):
    x = layers.Conv2D(filters, kernel, strides=strides, padding=padding, name=f"{name}_conv")(x)
    x = FusedBatchNormalization(name=f"{name}_bn")(x)
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
class MeanSubtraction(layers.Layer):
    """uint8 (or any) images to float, minus a fixed per-pixel mean image: the post's trainX -= mean.

    One cast and one subtraction; Keras's Normalization with unit variance does the same with a
    division more, a third pass over every batch.
    """

    def __init__(self, mean_image, **kwargs):
        super().__init__(**kwargs)
        self.mean_image = np.asarray(mean_image, dtype=np.float32)

    def call(self, images):
        return tf.cast(images, self.compute_dtype) - tf.constant(self.mean_image, dtype=self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "mean_image": self.mean_image.tolist()}


@keras.saving.register_keras_serializable(package="envcheck")
class RandomShiftAndFlip(layers.Layer):
    """The post's augmentation: a random shift with "nearest" fill, then a random horizontal flip.

    What ImageDataGenerator(width_shift_range, height_shift_range, horizontal_flip=True,
    fill_mode="nearest") did to each image: a shift drawn uniformly in [-factor, factor] * size,
    bilinear between pixels, with sampling coordinates clamped to the image (exactly "nearest"
    fill), then a left-right mirror with probability 1/2. Per image, all drawn per batch.
    """

    def __init__(
        self,
        height_factor: float,
        width_factor: float,
        horizontal_flip: bool = True,
        seed: Optional[int] = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.height_factor = float(height_factor)
        self.width_factor = float(width_factor)
        self.horizontal_flip = bool(horizontal_flip)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, images, training=None):
        if not training:
            return images
        batch = tf.shape(images)[0]
        height, width = images.shape[1], images.shape[2]
        dy = keras.random.uniform((batch,), -self.height_factor, self.height_factor, seed=self.seed_generator)
        dx = keras.random.uniform((batch,), -self.width_factor, self.width_factor, seed=self.seed_generator)
        flip = keras.random.uniform((batch,), seed=self.seed_generator) < 0.5 if self.horizontal_flip else None
        augment = _shift_and_flip_compiled if xla_usable() else _shift_and_flip
        return augment(images, dy * height, dx * width, flip)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "height_factor": self.height_factor,
            "width_factor": self.width_factor,
            "horizontal_flip": self.horizontal_flip,
            "seed": self.seed,
        }


@keras.saving.register_keras_serializable(package="envcheck")
class RandomShift(RandomShiftAndFlip):
    """The shift alone: what models saved before the flip joined it hold (their flip is a RandomFlip)."""

    def __init__(self, height_factor: float, width_factor: float, seed: Optional[int] = None, **kwargs):
        kwargs.pop("horizontal_flip", None)
        super().__init__(height_factor, width_factor, horizontal_flip=False, seed=seed, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("horizontal_flip")
        return config


def xla_usable() -> bool:
    """Whether the augmentation may be XLA-compiled: everywhere but on Apple GPUs (tensorflow-metal has no XLA)."""
    return not (platform.system() == "Darwin" and tf.config.list_physical_devices("GPU"))


def _shift_and_flip(images, dy, dx, flip):
    """Each image i moved by (dy[i], dx[i]) pixels, edge fill, then mirrored where flip[i]."""
    images = shift_along_axis(images, dy, axis=1)
    return shift_along_axis(images, dx, axis=2, flip=flip)


_shift_and_flip_compiled = tf.function(_shift_and_flip, jit_compile=True)


def shift_along_axis(images, shifts, axis: int, flip=None):
    """Move each image by `shifts[i]` pixels (fractional) along `axis` (1 rows, 2 columns), edge fill.

    Output pixel p takes the input at p - shift, clamped to the image and linearly interpolated;
    where `flip[i]` is true, output pixel p takes what pixel size - 1 - p would have (the shifted
    image mirrored along `axis`), in the same gather.
    """
    size = images.shape[axis]
    targets = tf.range(size, dtype=images.dtype)[tf.newaxis, :]
    if flip is not None:
        targets = tf.where(flip[:, tf.newaxis], float(size - 1) - targets, targets)
    positions = targets - tf.cast(shifts, images.dtype)[:, tf.newaxis]
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
    # The mean image is part of the layer's config: the saved model takes raw images.
    x = MeanSubtraction(mean_image, dtype="float32", name="mean_subtraction")(inputs)
    if augment:
        # The post shifted and flipped the already mean-subtracted images; the order is kept.
        x = RandomShiftAndFlip(0.1, 0.1, horizontal_flip=True, seed=seed, dtype="float32", name="augmentation")(x)
    outputs = build_mini_googlenet(classes)(x)
    return keras.Model(inputs, outputs, name="mini_googlenet_cifar10")


def network_of(model: keras.Model) -> keras.Model:
    """The MiniGoogLeNet inside a training model (for counting its parameters)."""
    return model.get_layer("mini_googlenet")
