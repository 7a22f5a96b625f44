"""Images per second of the trainer's input pipeline with augmentation, beside the post's ImageDataGenerator.

Over the same images, batches of 64, taking turns round by round in one run (medians reported):

  the post's ImageDataGenerator, the real one: tf_keras's (Keras 2, still shipped for TensorFlow
      2.16+) ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
      horizontal_flip=True, fill_mode="nearest").flow(x, y, batch_size=64) over mean-subtracted
      float32 arrays and one-hot labels, as the post fed fit_generator. It transforms one image at
      a time in Python, with scipy's affine_transform on each channel;
  a numpy re-implementation of that flow() (a bilinear edge-clamped shift vectorised per image,
      then a coin-flip mirror): what this benchmark compared with before it ran the real one;
  the trainer's pipeline: envcheck.train.pipeline.training_dataset (uint8 batches gathered from
      the arrays in memory, one-hot labels, prefetch) and the training model's own preprocessing
      layers (mean subtraction, then the shift and flip, XLA-compiled) on the device (a GPU if
      there is one), measured three ways:
        one per call: one call per batch, as fit() drives a training step by default (the call's
          dispatch, a fixed cost a training step pays anyway, is included);
        as fit runs it: the steps per call `envcheck train` chooses for the post's epoch on this
          device (envcheck.train.speed: 11 of its 781 steps), the dispatch spread over them;
        16 per call: the dispatch spread over 16 batches, nearer the pipeline's own cost, like
          the generator's figures, which include no training step either;
  tf.data alone: the trainer's batches without the preprocessing, 16 per call (what the host side
      costs on its own).

  python benchmarks/input_pipeline.py [--images 5000] [--rounds 5] [--batch 64] [--data PATH] [--json]

Without tf_keras (pip install tf_keras scipy) the ImageDataGenerator column is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

BATCHES_PER_CALL = 16
POST_STEPS_PER_EPOCH = 50_000 // 64
COLUMNS = {
    "image_data_generator": "post's ImageDataGenerator (tf_keras, scipy)",
    "numpy_flow": "numpy re-implementation of flow()",
    "trainer_per_step": "trainer: tf.data + layers, one per call",
    "trainer_as_fit": "trainer: tf.data + layers, as fit runs it",
    "trainer_pipeline": f"trainer: tf.data + layers, {BATCHES_PER_CALL} per call",
    "tf_data_alone": f"tf.data alone, {BATCHES_PER_CALL} per call",
}


def post_style_shift(image: np.ndarray, dy: float, dx: float) -> np.ndarray:
    """One image moved by (dy, dx) pixels, bilinear, edges repeated ("nearest" fill)."""
    h, w = image.shape[:2]
    rows = np.clip(np.arange(h) - dy, 0, h - 1)
    cols = np.clip(np.arange(w) - dx, 0, w - 1)
    r0, c0 = np.floor(rows).astype(int), np.floor(cols).astype(int)
    r1, c1 = np.minimum(r0 + 1, h - 1), np.minimum(c0 + 1, w - 1)
    rw, cw = (rows - r0)[:, None, None], (cols - c0)[None, :, None]
    top = image[r0][:, c0] * (1 - cw) + image[r0][:, c1] * cw
    bottom = image[r1][:, c0] * (1 - cw) + image[r1][:, c1] * cw
    return top * (1 - rw) + bottom * rw


def post_style_flow(x: np.ndarray, y: np.ndarray, batch: int, seed: int = 0):
    """What ImageDataGenerator.flow(x, y, batch_size) yields, forever, re-implemented with numpy."""
    rng = np.random.default_rng(seed)
    h, w = x.shape[1:3]
    while True:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            indices = order[start : start + batch]
            out = np.empty((batch, *x.shape[1:]), dtype=x.dtype)
            for i, j in enumerate(indices):  # one image at a time, in Python, as flow() did
                image = post_style_shift(x[j], rng.uniform(-0.1, 0.1) * h, rng.uniform(-0.1, 0.1) * w)
                if rng.random() < 0.5:
                    image = image[:, ::-1]
                out[i] = image
            yield out, y[indices]


def post_arrays(x_uint8: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The post's inputs: float images minus the per-pixel mean image, one-hot labels."""
    x = x_uint8.astype("float32")
    x -= x_uint8.astype("float64").mean(axis=0).astype("float32")
    return x, np.eye(10, dtype="float32")[labels]


def image_data_generator_flow(x: np.ndarray, y: np.ndarray, batch: int):
    """The post's augmentation, the real one; None when tf_keras (or scipy) is not installed."""
    try:
        import scipy.ndimage  # noqa: F401 - ImageDataGenerator's transforms need it
        from tf_keras.preprocessing.image import ImageDataGenerator
    except ImportError:
        return None
    augmenter = ImageDataGenerator(
        width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True, fill_mode="nearest"
    )
    return augmenter.flow(x, y, batch_size=batch)


def generator_rate(flow, images: int) -> float:
    """Images per second drawing `images` from a Python generator of (x, y) batches."""
    started, seen = time.perf_counter(), 0
    while seen < images:
        seen += len(next(flow)[0])
    return seen / (time.perf_counter() - started)


class TrainerPipeline:
    """The trainer's tf.data pipeline and the training model's preprocessing layers, on one device."""

    def __init__(self, x_uint8: np.ndarray, labels: np.ndarray, batch: int):
        import keras
        import tensorflow as tf

        from envcheck.train.model import build_training_model
        from envcheck.train.pipeline import training_dataset
        from envcheck.train.speed import choose_steps_per_call

        self.batch = batch
        self.device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
        self.fit_steps = choose_steps_per_call(
            None, steps_per_epoch=POST_STEPS_PER_EPOCH, uses_gpu=self.device.startswith("/GPU")
        ).value
        mean = x_uint8.astype("float64").mean(axis=0)
        with tf.device(self.device):
            model = build_training_model(mean, 10, seed=0)
            # The trainer's own layers: uint8 in, mean-subtracted, shifted and flipped images out.
            preprocess = keras.Model(model.input, model.get_layer("augmentation").output)
        self.iterator = iter(training_dataset(x_uint8, labels, global_batch=batch, repeat=True))

        def one_step(iterator):
            images, labels = next(iterator)
            return preprocess(images, training=True), labels

        def many_steps(iterator, augment: bool, count: int = BATCHES_PER_CALL):
            total = tf.constant(0.0)
            for _ in tf.range(count):
                images, labels = next(iterator)
                out = preprocess(images, training=True) if augment else tf.cast(images, tf.float32)
                # Every output is used, so nothing can be pruned away.
                total += tf.reduce_sum(out) + tf.reduce_sum(labels)
            return total

        with tf.device(self.device):
            self._one = tf.function(one_step)
            self._many = tf.function(lambda it: many_steps(it, True))
            self._as_fit = tf.function(lambda it: many_steps(it, True, self.fit_steps))
            self._alone = tf.function(lambda it: many_steps(it, False))
            for function in (self._one, self._many, self._as_fit, self._alone):  # trace and compile before timing
                _sync(function(self.iterator))

    def per_step(self, images: int) -> float:
        return self._rate(self._one, images, 1)

    def as_fit(self, images: int) -> float:
        return self._rate(self._as_fit, images, self.fit_steps)

    def pipeline(self, images: int) -> float:
        return self._rate(self._many, images, BATCHES_PER_CALL)

    def tf_data_alone(self, images: int) -> float:
        return self._rate(self._alone, images, BATCHES_PER_CALL)

    def _rate(self, function: Callable, images: int, batches_per_call: int) -> float:
        import tensorflow as tf

        calls = max(1, -(-images // (self.batch * batches_per_call)))
        with tf.device(self.device):
            started = time.perf_counter()
            for _ in range(calls):
                result = function(self.iterator)
            _sync(result)  # a GPU runs asynchronously: wait for the last batch
        return calls * batches_per_call * self.batch / (time.perf_counter() - started)


def _sync(result) -> None:
    first = result[0] if isinstance(result, tuple) else result
    first.numpy()


def describe_machine() -> str:
    """CPU model and count, and the GPUs TensorFlow sees (names from the driver), for the results table."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpus = []
    try:
        import tensorflow as tf

        for gpu in tf.config.list_physical_devices("GPU"):
            gpus.append(tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name))
    except Exception:  # noqa: BLE001 - a description, not a check
        pass
    described = f"{cpu} ({os.cpu_count()} CPUs), {platform.system()}"
    return described + (f", {len(gpus)} GPU: {', '.join(gpus)}" if gpus else ", no GPU")


def load_images(data: str | None, count: int):
    from envcheck.train.data import load_cifar10, synthetic_cifar10

    if data:
        cifar = load_cifar10(Path(data), subset=count, val_subset=1)
    else:
        cifar = synthetic_cifar10(count, 1)
    return cifar.x_train, cifar.y_train, cifar.source


def measure(x_uint8, labels, *, batch: int, images: int, rounds: int) -> tuple[dict[str, list[float]], str]:
    """Images per second of every column, `rounds` times, the columns taking turns; the layers' device."""
    x, y = post_arrays(x_uint8, labels)
    flows: dict[str, object] = {"numpy_flow": post_style_flow(x, y, batch)}
    real = image_data_generator_flow(x, y, batch)
    if real is not None:
        flows["image_data_generator"] = real
    for flow in flows.values():
        next(flow)  # the first batch: the generators start
    trainer = TrainerPipeline(x_uint8, labels, batch)
    measures: dict[str, Callable[[], float]] = {
        **{name: (lambda f=flow: generator_rate(f, images)) for name, flow in flows.items()},
        "trainer_per_step": lambda: trainer.per_step(images),
        "trainer_as_fit": lambda: trainer.as_fit(images),
        "trainer_pipeline": lambda: trainer.pipeline(images),
        "tf_data_alone": lambda: trainer.tf_data_alone(images),
    }
    rates: dict[str, list[float]] = {name: [] for name in COLUMNS if name in measures}
    for _ in range(rounds):
        for name, values in rates.items():
            values.append(measures[name]())
    return rates, f"{trainer.device}, fit runs {trainer.fit_steps} steps per call"


def summarise(rates: dict, reference: str) -> dict[str, dict[str, float]]:
    """Median images/s of every column and its ratio to the reference column."""
    medians = {name: statistics.median(values) for name, values in rates.items()}
    base = medians.get(reference)
    return {
        name: {"images_per_second": round(value, 1), **({"ratio": round(value / base, 1)} if base else {})}
        for name, value in medians.items()
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000, help="images drawn per round from each pipeline (5000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, the pipelines taking turns (5)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (the post's 64 per GPU)")
    parser.add_argument("--data", help="CIFAR-10 to use (default: synthetic images of the same shape)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.images < 1 or args.rounds < 1 or args.batch < 1:
        parser.error("--images, --rounds and --batch must be at least 1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    x, y, source = load_images(args.data, max(args.images, args.batch * 4))
    rates, device = measure(x, y, batch=args.batch, images=args.images, rounds=args.rounds)
    reference = "image_data_generator" if "image_data_generator" in rates else "numpy_flow"
    result = {
        "date": date.today().isoformat(),
        "machine": describe_machine(),
        "data": source,
        "images_per_round": args.images,
        "rounds": args.rounds,
        "batch": args.batch,
        "augmentation_device": device,
        "ratios_against": reference,
        "columns": summarise(rates, reference),
        "rounds_images_per_second": {name: [round(v, 1) for v in values] for name, values in rates.items()},
    }
    if reference != "image_data_generator":
        result["note"] = "tf_keras or scipy is not installed: the real ImageDataGenerator was not measured"
    print(json.dumps(result, indent=2) if args.json else text_of(result))
    return 0


def text_of(result: dict) -> str:
    """The figures for a person: one line per pipeline, its ratio to the reference."""
    lines = [
        f"input pipeline with augmentation: {result['images_per_round']} images a round, {result['rounds']} rounds, "
        f"batches of {result['batch']}; medians",
        f"  data: {result['data']}; machine: {result['machine']}; augmentation on {result['augmentation_device']}; "
        f"{result['date']}",
    ]
    for name, column in result["columns"].items():
        ratio = f"  ({column['ratio']:.1f}x)" if "ratio" in column else ""
        lines.append(f"  {COLUMNS[name]:<44} {column['images_per_second']:10.1f} images/s{ratio}")
    lines.append(f"  ratios against: {COLUMNS[result['ratios_against']]}")
    if "note" in result:
        lines.append(f"  note: {result['note']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
