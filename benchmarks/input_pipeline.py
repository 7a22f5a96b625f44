"""Images per second of the trainer's input pipeline with augmentation, beside the post's pipeline.

  tf.data + on-device augmentation (this trainer): uint8 images in memory -> cache, shuffle, batch,
      one-hot, prefetch -> mean subtraction, random shift 0.1 ("nearest" fill) and horizontal flip
      as layers of the model, on the device (a GPU if there is one);
  the post's pipeline: ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
      horizontal_flip=True, fill_mode="nearest").flow(mean-subtracted float arrays, batch_size=64).
      ImageDataGenerator no longer exists in Keras 3, so this script re-implements what flow() did:
      a Python generator that draws a batch of indices, then transforms each image on its own with
      numpy (a bilinear shift with edge clamping, as scipy's affine_transform(order=1, mode="nearest")
      did for it, then a coin-flip mirror) and stacks the batch.

Both produce the same augmented batches of the same data, in one run. Usage:

  python benchmarks/input_pipeline.py [--images 5000] [--batch 64] [--data PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


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
    """What ImageDataGenerator.flow(x, y, batch_size) yielded, forever: augmented float batches."""
    rng = np.random.default_rng(seed)
    h, w = x.shape[1:3]
    while True:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            indices = order[start:start + batch]
            out = np.empty((batch, *x.shape[1:]), dtype=x.dtype)
            for i, j in enumerate(indices):  # one image at a time, in Python, as flow() did
                image = post_style_shift(x[j], rng.uniform(-0.1, 0.1) * h, rng.uniform(-0.1, 0.1) * w)
                if rng.random() < 0.5:
                    image = image[:, ::-1]
                out[i] = image
            yield out, y[indices]


def measure_post_pipeline(x_uint8, labels, batch, images) -> float:
    x = x_uint8.astype("float32")
    x -= x.mean(axis=0)  # the post's per-pixel mean subtraction, done once up front
    y = np.eye(10, dtype="float32")[labels]
    flow = post_style_flow(x, y, batch)
    next(flow)
    started, seen = time.perf_counter(), 0
    while seen < images:
        xb, _ = next(flow)
        seen += len(xb)
    return seen / (time.perf_counter() - started)


def measure_tf_pipeline(x_uint8, labels, batch, images) -> tuple[float, str]:
    import keras
    import tensorflow as tf

    from envcheck.train.model import RandomShift
    from envcheck.train.pipeline import training_dataset

    device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
    mean = x_uint8.astype("float64").mean(axis=0).astype("float32")
    with tf.device(device):
        inputs = keras.Input((32, 32, 3), dtype="uint8")
        z = keras.layers.Normalization(axis=(1, 2, 3), mean=mean, variance=np.ones_like(mean))(inputs)
        z = RandomShift(0.1, 0.1, seed=0)(z, training=True)
        z = keras.layers.RandomFlip("horizontal", seed=0)(z, training=True)
        augment = keras.Model(inputs, z)

    @tf.function
    def on_device(batch_images):
        return augment(batch_images, training=True)

    dataset = training_dataset(x_uint8, labels, global_batch=batch, repeat=True)
    iterator = iter(dataset)
    with tf.device(device):
        on_device(next(iterator)[0]).numpy()  # trace and warm up
        started, seen, last = time.perf_counter(), 0, None
        while seen < images:
            xb, _ = next(iterator)
            last = on_device(xb)
            seen += batch
        last.numpy()  # wait for the device to finish the last batch
    return seen / (time.perf_counter() - started), device


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000, help="images to draw from each pipeline (5000)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (the post's 64 per GPU)")
    parser.add_argument("--data", help="CIFAR-10 to use (default: synthetic images of the same shape)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    x, y, source = load_images(args.data, max(args.images, args.batch * 4))
    post = measure_post_pipeline(x, y, args.batch, args.images)
    ours, device = measure_tf_pipeline(x, y, args.batch, args.images)
    result = {
        "date": date.today().isoformat(),
        "machine": describe_machine(),
        "data": source,
        "images": args.images,
        "batch": args.batch,
        "post_flow_images_per_second": round(post, 1),
        "tf_data_images_per_second": round(ours, 1),
        "augmentation_device": device,
        "speedup": round(ours / post, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"input pipeline with augmentation, {args.images} images in batches of {args.batch}")
        print(f"  data: {source}; machine: {result['machine']}; {result['date']}")
        print(f"  post's ImageDataGenerator.flow (per-image numpy): {post:10.1f} images/s")
        print(f"  tf.data + augmentation layers on {device:<8}:   {ours:10.1f} images/s  ({ours / post:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
