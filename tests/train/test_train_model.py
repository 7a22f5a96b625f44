"""MiniGoogLeNet's shape and size, and the on-device preprocessing the post did in numpy."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from envcheck.train.model import (  # noqa: E402
    MINI_GOOGLENET_PARAMETERS,
    FusedBatchNormalization,
    RandomShift,
    RandomShiftAndFlip,
    _shift_and_flip,
    _shift_and_flip_compiled,
    build_mini_googlenet,
    build_training_model,
    network_of,
    shift_along_axis,
)


@pytest.fixture(scope="module")
def network():
    return build_mini_googlenet(10)


def test_parameter_count_matches_the_posts_network(network):
    assert network.count_params() == MINI_GOOGLENET_PARAMETERS == 1_656_250


@pytest.mark.parametrize(
    "layer, shape",
    [
        ("stem_relu", (None, 32, 32, 96)),
        ("inception_1a_concat", (None, 32, 32, 64)),
        ("inception_1b_concat", (None, 32, 32, 80)),
        ("downsample_1_concat", (None, 15, 15, 160)),
        ("inception_2d_concat", (None, 15, 15, 144)),
        ("downsample_2_concat", (None, 7, 7, 240)),
        ("inception_3b_concat", (None, 7, 7, 336)),
        ("average_pool", (None, 1, 1, 336)),
        ("probabilities", (None, 10)),
    ],
)
def test_output_shapes(network, layer, shape):
    assert tuple(network.get_layer(layer).output.shape) == shape


def test_every_block_is_conv_with_bias_then_batchnorm_then_relu(network):
    convs = [layer for layer in network.layers if isinstance(layer, keras.layers.Conv2D)]
    assert len(convs) == 1 + 2 * 8 + 2  # stem, 8 inception modules of two, 2 downsample modules
    for conv in convs:
        assert conv.use_bias
        block = conv.name[: -len("_conv")]
        assert isinstance(network.get_layer(f"{block}_bn"), keras.layers.BatchNormalization)
        assert network.get_layer(f"{block}_relu").activation is keras.activations.relu


def test_every_batch_normalization_is_the_fused_one(network):
    norms = [layer for layer in network.layers if isinstance(layer, keras.layers.BatchNormalization)]
    assert len(norms) == 19 and all(isinstance(layer, FusedBatchNormalization) for layer in norms)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_fused_batch_normalization_computes_what_keras_batch_normalization_does(policy):
    images = np.random.default_rng(8).normal(2.0, 3.0, size=(16, 15, 15, 24)).astype(np.float32)
    weights = np.random.default_rng(9).normal(size=images.shape).astype(np.float32)
    keras_norm = keras.layers.BatchNormalization(dtype=policy)
    fused = FusedBatchNormalization(dtype=policy)
    keras_norm.build(images.shape)
    fused.build(images.shape)
    rng = np.random.default_rng(10)
    start = [rng.uniform(0.5, 1.5, size=w.shape).astype(np.float32) for w in keras_norm.get_weights()]
    keras_norm.set_weights(start)
    fused.set_weights(start)
    tolerance = 1e-4 if policy == "float32" else 5e-2
    results = []
    for layer in (keras_norm, fused):
        x = tf.constant(images)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) * weights)
        gradients = tape.gradient(loss, [x, *layer.trainable_variables])
        results.append((y, gradients, [w.copy() for w in layer.get_weights()], layer(x, training=False)))
    (y_keras, g_keras, w_keras, infer_keras), (y_fused, g_fused, w_fused, infer_fused) = results
    assert y_fused.dtype == y_keras.dtype
    np.testing.assert_allclose(np.float32(y_fused), np.float32(y_keras), atol=tolerance)
    for ours, theirs in zip(g_fused, g_keras):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance * np.abs(theirs).max())
    for ours, theirs in zip(w_fused, w_keras):  # moving mean and variance updated alike
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.float32(infer_fused), np.float32(infer_keras), atol=tolerance)


def test_training_model_takes_uint8_and_subtracts_the_per_pixel_mean():
    images = np.random.default_rng(0).integers(0, 256, size=(6, 32, 32, 3), dtype=np.uint8)
    mean = images.astype(np.float64).mean(axis=0)
    model = build_training_model(mean, 10, seed=1)
    assert model.input.dtype == "uint8"
    assert network_of(model).count_params() == MINI_GOOGLENET_PARAMETERS
    subtracted = model.get_layer("mean_subtraction")(images)
    np.testing.assert_allclose(np.asarray(subtracted), images - mean.astype(np.float32), atol=1e-4)
    probabilities = model(images, training=False).numpy()
    assert probabilities.shape == (6, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)


def numpy_shift(image: np.ndarray, dy: float, dx: float) -> np.ndarray:
    """What ImageDataGenerator's shift with fill_mode="nearest" computes (bilinear, edge-clamped)."""
    h, w = image.shape[:2]

    def sample(axis_size, shift):
        pos = np.clip(np.arange(axis_size) - shift, 0, axis_size - 1)
        low = np.floor(pos).astype(int)
        return low, np.minimum(low + 1, axis_size - 1), pos - low

    r0, r1, rw = sample(h, dy)
    c0, c1, cw = sample(w, dx)
    rows = image[r0] * (1 - rw)[:, None, None] + image[r1] * rw[:, None, None]
    return rows[:, c0] * (1 - cw)[None, :, None] + rows[:, c1] * cw[None, :, None]


def test_the_shift_fills_with_the_nearest_edge_pixel():
    image = np.random.default_rng(1).normal(size=(1, 32, 32, 3)).astype(np.float32)
    shifted = shift_along_axis(tf.constant(image), tf.constant([3.0]), axis=2).numpy()[0]
    np.testing.assert_allclose(shifted[:, 3:], image[0][:, :-3], atol=1e-6)
    for column in range(3):  # "nearest": the border column repeated, not reflected, not zeros
        np.testing.assert_allclose(shifted[:, column], image[0][:, 0], atol=1e-6)


def test_the_shift_matches_the_posts_numpy_shift_at_fractional_offsets():
    images = np.random.default_rng(2).normal(size=(3, 32, 32, 3)).astype(np.float32)
    dys, dxs = np.array([-2.6, 0.4, 3.2]), np.array([1.7, -3.1, 0.0])
    out = shift_along_axis(tf.constant(images), tf.constant(dys, tf.float32), axis=1)
    out = shift_along_axis(out, tf.constant(dxs, tf.float32), axis=2).numpy()
    for i in range(3):
        np.testing.assert_allclose(out[i], numpy_shift(images[i], dys[i], dxs[i]), atol=1e-4)


def test_augmentation_is_the_posts_shift_and_horizontal_flip_and_only_while_training():
    model = build_training_model(np.zeros((32, 32, 3)), 10, seed=3)
    augmentation = model.get_layer("augmentation")
    assert isinstance(augmentation, RandomShiftAndFlip)
    assert (augmentation.height_factor, augmentation.width_factor, augmentation.horizontal_flip) == (0.1, 0.1, True)
    images = tf.constant(np.random.default_rng(3).normal(size=(64, 32, 32, 3)).astype(np.float32))
    np.testing.assert_array_equal(augmentation(images, training=False).numpy(), images.numpy())
    assert not np.allclose(augmentation(images, training=True).numpy(), images.numpy())


def test_the_flip_is_horizontal_only_about_half_the_time():
    flip_only = RandomShiftAndFlip(0.0, 0.0, horizontal_flip=True, seed=5)
    images = np.random.default_rng(5).normal(size=(64, 32, 32, 3)).astype(np.float32)
    flipped = flip_only(tf.constant(images), training=True).numpy()
    mirrored = [np.allclose(f, im[:, ::-1], atol=1e-6) for f, im in zip(flipped, images)]
    unchanged = [np.allclose(f, im, atol=1e-6) for f, im in zip(flipped, images)]
    assert all(m or u for m, u in zip(mirrored, unchanged))  # never upside down, never anything else
    assert 10 < sum(mirrored) < 54


def _coordinate_images(count: int) -> np.ndarray:
    """Channel 0 is 10 + the column, channel 1 is 10 + the row: each output pixel says where it came from."""
    rows, columns = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    image = np.stack([10.0 + columns, 10.0 + rows, np.zeros((32, 32))], axis=-1).astype(np.float32)
    return np.repeat(image[np.newaxis], count, axis=0)


def test_augmentation_shifts_by_up_to_a_tenth_both_ways_and_fills_with_the_nearest_pixel():
    augmentation = RandomShiftAndFlip(0.1, 0.1, horizontal_flip=True, seed=6)
    out = augmentation(tf.constant(_coordinate_images(256)), training=True).numpy()
    columns, rows = out[:, 16, :, 0] - 10.0, out[:, :, 16, 1] - 10.0
    flipped = columns[:, 0] > columns[:, -1]
    targets = np.where(flipped[:, None], 31 - np.arange(32), np.arange(32))
    dx = targets[:, 16] - columns[:, 16]
    dy = 16 - rows[:, 16]
    assert np.abs(dx).max() <= 3.2 + 1e-4 and np.abs(dy).max() <= 3.2 + 1e-4  # 10% of 32 pixels
    assert dx.min() < -2 and dx.max() > 2 and dy.min() < -2 and dy.max() > 2  # both ways, most of the range
    assert 0.3 < flipped.mean() < 0.7
    # Every pixel of a row and of a column is the source clamped to the image: "nearest" fill,
    # not zeros (the values start at 10), not a reflection.
    np.testing.assert_allclose(columns, np.clip(targets - dx[:, None], 0, 31), atol=1e-4)
    np.testing.assert_allclose(rows, np.clip(np.arange(32) - dy[:, None], 0, 31), atol=1e-4)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # tf_keras calls scipy.ndimage.interpolation
@pytest.mark.parametrize("compiled", [True, False], ids=["xla", "plain"])
def test_augmentation_matches_the_posts_image_data_generator_image_for_image(compiled):
    image_module = pytest.importorskip("tf_keras.preprocessing.image")
    pytest.importorskip("scipy")
    generator = image_module.ImageDataGenerator(
        width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True, fill_mode="nearest"
    )
    images = np.random.default_rng(7).normal(size=(8, 32, 32, 3)).astype(np.float32)
    draws = [generator.get_random_transform(images.shape[1:], seed=seed) for seed in range(len(images))]
    expected = np.stack([generator.apply_transform(image, draw) for image, draw in zip(images, draws)])
    assert any(d["flip_horizontal"] for d in draws) and not all(d["flip_horizontal"] for d in draws)
    # ImageDataGenerator samples the input at output + (ty, tx): our shift is the opposite sign.
    dy = tf.constant([-d["ty"] for d in draws], tf.float32)
    dx = tf.constant([-d["tx"] for d in draws], tf.float32)
    flip = tf.constant([bool(d["flip_horizontal"]) for d in draws])
    augment = _shift_and_flip_compiled if compiled else _shift_and_flip
    np.testing.assert_allclose(augment(tf.constant(images), dy, dx, flip).numpy(), expected, atol=1e-4)


def test_a_random_shift_saved_before_the_flip_joined_it_still_shifts_only():
    old = RandomShift.from_config(
        {
            "name": "random_shift",
            "height_factor": 0.1,
            "width_factor": 0.1,
            "seed": 1,
            "dtype": "float32",
            "trainable": True,
        }
    )
    assert not old.horizontal_flip and "horizontal_flip" not in old.get_config()
    ramp = _coordinate_images(64)
    columns = old(tf.constant(ramp), training=True).numpy()[:, 16, :, 0]
    assert (np.diff(columns, axis=1) >= -1e-4).all()  # shifted, never mirrored


def test_a_saved_training_model_loads_with_its_preprocessing(tmp_path):
    images = np.random.default_rng(4).integers(0, 256, size=(4, 32, 32, 3), dtype=np.uint8)
    model = build_training_model(images.mean(axis=0), 10, seed=4)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(loaded.predict(images, verbose=0), model.predict(images, verbose=0), atol=1e-5)
