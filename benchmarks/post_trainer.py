"""The post's train.py, ported as little as possible to run today, against `envcheck train` with its recipe.

Both train MiniGoogLeNet on the same CIFAR-10 images (or the same synthetic ones) on the same
devices: SGD 5e-3 with momentum 0.9, linear ("poly", power 1) decay per epoch, 64 images per
device, per-pixel mean subtraction, one-hot labels, shift 0.1 both ways + horizontal flip with
"nearest" fill. Each run is a fresh process, 2 epochs of --steps steps; the two trainers take turns
for --rounds rounds (alternating which goes first) and the medians are reported:

  images/s of the second epoch (the first traces the step and, for the post, starts the generator);
  seconds to the 2 x --steps training steps, from the start of fit() to the end of the last step,
      tracing included, validation passes excluded, timed the same way in both;
  the process's wall time (import, data, model, both epochs with validation, outputs), for reference;
  the process's CPU seconds (all its threads, the same span): the work done, which other processes
      sharing the cores move far less than the wall time; each run also records the load average
      just before it started and just after it ended;
  envcheck's speed-up in each of these: the median over rounds of the ratio within a round.

  python benchmarks/post_trainer.py [--images 5000] [--val-images 512] [--steps 30] [--rounds 3]
                                    [--data PATH] [--gpus N] [--json]

The port (run_post below) follows the post's train.py step by step. What had to change, and why:
  - Keras 2 is tf_keras today (Keras 3, TensorFlow's default Keras since 2.16, has neither
    ImageDataGenerator nor fit_generator); fit_generator still exists there and is used.
  - multi_gpu_model is gone from TensorFlow 2: with more than one GPU the model is built and
    compiled under tf.distribute.MirroredStrategy instead of on the CPU and wrapped; one device
    runs the post's plain single-GPU path. The batch is still 64 x GPUs.
  - cifar10.load_data() cannot download on every machine: the images come from envcheck's loader,
    the same arrays the envcheck run reads (the archive or python batches, or synthetic images).
  - SGD(lr=...) is SGD(learning_rate=...) now; the metric is "accuracy".
  - LabelBinarizer is a numpy one-hot encoding (the same 0/1 rows, no scikit-learn).
  - Training is 2 epochs of --steps steps instead of 70 epochs of len(trainX) // 64 steps, and the
    poly decay runs over those 2 epochs, as envcheck's does with --epochs 2; verbose=0 instead of 2,
    and no plot or classification report (not part of what is timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

try:
    import resource  # POSIX: the CPU time of the runs
except ImportError:  # Windows: runs are timed by the clock alone
    resource = None

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

EPOCHS = 2
FIGURES = ("images_per_second_epoch_2", "seconds_to_steps", "wall_seconds", "cpu_seconds")
INIT_LR = 5e-3
BATCH_PER_DEVICE = 64


# --- the post's train.py, ported --------------------------------------------------------------


def mini_googlenet(keras, width: int, height: int, depth: int, classes: int):
    """MiniGoogLeNet as the post defines it, in Keras 2 (tf_keras) layers."""
    layers = keras.layers

    def conv_module(x, filters, kernel_x, kernel_y, stride, channel_axis, padding="same"):
        x = layers.Conv2D(filters, (kernel_x, kernel_y), strides=stride, padding=padding)(x)
        x = layers.BatchNormalization(axis=channel_axis)(x)
        return layers.Activation("relu")(x)

    def inception_module(x, filters_1x1, filters_3x3, channel_axis):
        one = conv_module(x, filters_1x1, 1, 1, (1, 1), channel_axis)
        three = conv_module(x, filters_3x3, 3, 3, (1, 1), channel_axis)
        return layers.concatenate([one, three], axis=channel_axis)

    def downsample_module(x, filters, channel_axis):
        three = conv_module(x, filters, 3, 3, (2, 2), channel_axis, padding="valid")
        pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
        return layers.concatenate([three, pool], axis=channel_axis)

    channel_axis = -1  # channels last
    inputs = layers.Input(shape=(height, width, depth))
    x = conv_module(inputs, 96, 3, 3, (1, 1), channel_axis)
    x = inception_module(x, 32, 32, channel_axis)
    x = inception_module(x, 32, 48, channel_axis)
    x = downsample_module(x, 80, channel_axis)
    for filters_1x1, filters_3x3 in ((112, 48), (96, 64), (80, 80), (48, 96)):
        x = inception_module(x, filters_1x1, filters_3x3, channel_axis)
    x = downsample_module(x, 96, channel_axis)
    x = inception_module(x, 176, 160, channel_axis)
    x = inception_module(x, 176, 160, channel_axis)
    x = layers.AveragePooling2D((7, 7))(x)
    x = layers.Dropout(0.5)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(classes)(x)
    x = layers.Activation("softmax")(x)
    return keras.Model(inputs, x, name="minigooglenet")


def run_post(args) -> dict:
    """The post's train.py: mean subtraction, one-hot labels, ImageDataGenerator, fit_generator."""
    import numpy as np
    import tensorflow as tf

    if args.gpus == 0:
        tf.config.set_visible_devices([], "GPU")
    gpus = tf.config.list_physical_devices("GPU")
    if args.gpus:
        gpus = gpus[: args.gpus]
        tf.config.set_visible_devices(gpus, "GPU")
    import tf_keras as keras
    from tf_keras.preprocessing.image import ImageDataGenerator

    G = max(1, len(gpus))  # the post's --gpus

    def poly_decay(epoch):
        # the post's schedule: base rate times (1 - epoch / epochs) ** 1
        return INIT_LR * (1 - (epoch / float(EPOCHS))) ** 1.0

    x_train, y_train, x_test, y_test = load_arrays(args)
    train_x = x_train.astype("float")
    test_x = x_test.astype("float")
    mean = np.mean(train_x, axis=0)
    train_x -= mean
    test_x -= mean
    train_y = np.eye(10)[y_train]
    test_y = np.eye(10)[y_test]

    aug = ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True, fill_mode="nearest")
    timer = type("EpochTimer", (EpochTiming, keras.callbacks.Callback), {})(args.steps * BATCH_PER_DEVICE * G)
    callbacks = [keras.callbacks.LearningRateScheduler(poly_decay), timer]

    strategy = tf.distribute.MirroredStrategy() if G > 1 else tf.distribute.get_strategy()
    with strategy.scope():
        model = mini_googlenet(keras, width=32, height=32, depth=3, classes=10)
        opt = keras.optimizers.SGD(learning_rate=INIT_LR, momentum=0.9)
        model.compile(loss="categorical_crossentropy", optimizer=opt, metrics=["accuracy"])

    model.fit_generator(
        aug.flow(train_x, train_y, batch_size=BATCH_PER_DEVICE * G),
        validation_data=(test_x, test_y),
        steps_per_epoch=args.steps,
        epochs=EPOCHS,
        callbacks=callbacks,
        verbose=0,
    )
    return {"devices": G if gpus else 0, "parameters": model.count_params(), "epochs": timer.epochs}


def load_arrays(args):
    """The images the envcheck run reads with the same flags: first --images, first --val-images."""
    from envcheck.train.data import load_cifar10, synthetic_cifar10

    if args.data:
        data = load_cifar10(Path(args.data), subset=args.images, val_subset=args.val_images)
    else:
        data = synthetic_cifar10(args.images, args.val_images, seed=0)
    return data.x_train, data.y_train, data.x_test, data.y_test


class EpochTiming:
    """Per epoch: seconds of the training steps (up to the validation pass) and of the whole epoch.

    Mixed into the callback class of whichever Keras runs (tf_keras here; envcheck's trainer
    times its epochs the same way).
    """

    def __init__(self, images_per_epoch: int):
        super().__init__()
        self.images_per_epoch = images_per_epoch
        self.epochs: list[dict] = []
        self._start = 0.0
        self._train_end: float | None = None

    def on_epoch_begin(self, epoch, logs=None):
        self._start, self._train_end = time.perf_counter(), None

    def on_test_begin(self, logs=None):
        if self._train_end is None:
            self._train_end = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        end = time.perf_counter()
        train = (self._train_end or end) - self._start
        self.epochs.append(
            {
                "train_seconds": round(train, 3),
                "seconds": round(end - self._start, 3),
                "images": self.images_per_epoch,
                "loss": float((logs or {}).get("loss", float("nan"))),
            }
        )


# --- the comparison ---------------------------------------------------------------------------


def child_env(repo: Path = REPO) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def run_child(command: list[str], repo: Path = REPO) -> tuple[dict | None, dict, str]:
    """(the child's JSON output or None, how it ran, the last line of its error or "").

    How it ran: its wall time, the CPU seconds it used (user and system, all its threads: the
    work done, which other processes on the machine move far less than the wall time) and the
    load average just before it started and just after it ended.
    """
    load_before, cpu_before = os.getloadavg()[0], _children_cpu_seconds()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=repo, env=child_env(repo), capture_output=True, text=True, check=False)
    ran = {
        "wall_seconds": round(time.perf_counter() - started, 2),
        "load_average": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    if resource is not None:
        ran["cpu_seconds"] = round(_children_cpu_seconds() - cpu_before, 2)
    if done.returncode != 0:
        return None, ran, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(done.stdout), ran, ""


def _children_cpu_seconds() -> float:
    if resource is None:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the children waited for so far
    return usage.ru_utime + usage.ru_stime


def measure_post(args) -> dict:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--run-post",
        "--images",
        str(args.images),
        "--val-images",
        str(args.val_images),
        "--steps",
        str(args.steps),
    ]
    command += ["--data", args.data] if args.data else []
    command += ["--gpus", str(args.gpus)] if args.gpus is not None else []
    out, ran, error = run_child(command)
    if out is None:
        return {"error": error}
    return {**figures(out["epochs"], args.steps), **ran, "devices": out["devices"]}


def measure_envcheck(args, repo: Path = REPO) -> dict:
    """One run of `envcheck train` from `repo` (this checkout, or another one to compare with)."""
    with tempfile.TemporaryDirectory(prefix="envcheck-post-bench-") as output:
        command = [
            sys.executable,
            "-m",
            "envcheck.train",
            "--no-progress",
            "--json",
            "--output",
            output,
            "--epochs",
            str(EPOCHS),
            "--steps-per-epoch",
            str(args.steps),
            "--subset",
            str(args.images),
            "--val-subset",
            str(args.val_images),
        ]
        command += ["--data", args.data] if args.data else ["--synthetic"]
        command += ["--gpus", str(args.gpus)] if args.gpus is not None else []
        out, ran, error = run_child(command, repo)
        if out is None:
            return {"error": error}
        epochs = json.loads((Path(output) / "history.json").read_text())["epochs"]
    devices = 0 if out["devices"]["kind"] == "cpu" else out["replicas"]
    speed = out.get("speed") or {}
    return {
        **figures(epochs, args.steps),
        **ran,
        "devices": devices,
        **{k: speed[k] for k in ("precision", "jit", "steps_per_execution") if k in speed},
    }


def figures(epochs: list[dict], steps: int) -> dict:
    second = epochs[-1]
    return {
        "images_per_second_epoch_2": round(second["images"] / second["train_seconds"], 2),
        "seconds_to_steps": round(sum(e["train_seconds"] for e in epochs), 2),
        "steps": steps * len(epochs),
    }


def summarise(runs: dict[str, list[dict]]) -> dict:
    """Each trainer's medians, and envcheck's speed-up: the median over rounds of the two runs of a round.

    The runs of one round are next to each other in time, so the load of a shared machine hits
    both alike; a ratio of the medians would mix rounds run under different loads.
    """
    medians = {}
    for name, results in runs.items():
        good = [r for r in results if "error" not in r]
        if not good:
            medians[name] = {"error": results[-1]["error"]}
            continue
        medians[name] = {
            key: round(statistics.median(r[key] for r in good), 2) for key in FIGURES if all(key in r for r in good)
        }
        medians[name]["devices"] = good[0]["devices"]
    result = {"medians": medians, "envcheck_speedup": speedup_over(runs.get("post", []), runs.get("envcheck", []))}
    if "before" in runs:
        result["before_speedup"] = speedup_over(runs["post"], runs["before"])
        result["envcheck_over_before"] = speedup_over(runs["before"], runs["envcheck"])
    return result


def speedup_over(reference: list[dict], ours: list[dict]) -> dict:
    """How much faster `ours` is than `reference`: the median over rounds of the ratio within a
    round, and every round's ratio of the epoch-2 images/s (so "ahead in every round" can be read)."""
    pairs = [(ref, run) for ref, run in zip(reference, ours) if "error" not in ref and "error" not in run]
    if not pairs:
        return {}
    rate = "images_per_second_epoch_2"
    return {
        rate: round(statistics.median(run[rate] / ref[rate] for ref, run in pairs), 2),
        # times as fast: the reference's seconds over ours
        **{
            key: round(statistics.median(ref[key] / run[key] for ref, run in pairs), 2)
            for key in ("seconds_to_steps", "wall_seconds", "cpu_seconds")
            if all(key in ref and key in run for ref, run in pairs)
        },
        "rounds": [round(run[rate] / ref[rate], 2) for ref, run in pairs],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000, help="training images (5000)")
    parser.add_argument("--val-images", type=int, default=512, help="validation images (512)")
    parser.add_argument("--steps", type=int, default=30, help="steps per epoch, 2 epochs (30; 300+ on a GPU)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each trainer, taking turns (3)")
    parser.add_argument("--data", help="CIFAR-10 to use (default: synthetic images)")
    parser.add_argument("--gpus", type=int, help="GPUs to use (default: all; 0: the CPU)")
    parser.add_argument(
        "--compare-with",
        metavar="CHECKOUT",
        help="also run envcheck train from another checkout of envcheck (the one before a change), in every round",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--run-post", action="store_true", help=argparse.SUPPRESS)  # one run of the port
    args = parser.parse_args(argv)
    if min(args.images, args.val_images, args.steps, args.rounds) < 1:
        parser.error("--images, --val-images, --steps and --rounds must be at least 1")
    if args.run_post:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        print(json.dumps(run_post(args)))
        return 0

    from input_pipeline import describe_machine  # beside this script, on sys.path when it runs

    runs: dict[str, list[dict]] = {"post": [], "envcheck": []}
    order = [("post", measure_post), ("envcheck", measure_envcheck)]
    if args.compare_with:
        before = Path(args.compare_with).resolve()
        runs["before"] = []
        order.insert(1, ("before", lambda a: measure_envcheck(a, before)))
    for round_index in range(args.rounds):
        for name, measure in order if round_index % 2 == 0 else order[::-1]:
            runs[name].append(measure(args))
            if not args.json:
                print(f"  round {round_index + 1} {name:<9} {_line(runs[name][-1])}", flush=True)
    result = {
        "date": date.today().isoformat(),
        "machine": describe_machine(),
        "data": args.data or "synthetic",
        "images": args.images,
        "steps": args.steps * EPOCHS,
        "rounds": args.rounds,
        **summarise(runs),
        "runs": runs,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_result(result, args)
    return 0


LOADS = ("load_average", "load_average_after")
LABELS = {"post": "post's train.py", "before": "envcheck (before)", "envcheck": "envcheck train"}


def print_result(result: dict, args) -> None:
    print(
        f"the post's train.py (tf_keras, ImageDataGenerator, fit_generator) against envcheck train; "
        f"{EPOCHS} epochs of {args.steps} steps, medians of {args.rounds}"
    )
    loads = [r[key] for runs in result["runs"].values() for r in runs for key in LOADS if key in r]
    shown = f"; load average {min(loads):.2f}-{max(loads):.2f}" if loads else ""
    print(f"  data: {result['data']}; machine: {result['machine']}; {result['date']}{shown}")
    for name, medians in result["medians"].items():
        print(f"  {LABELS[name]:<18} {_line(medians)}")
    for key, label in (
        ("envcheck_speedup", "envcheck train / post"),
        ("before_speedup", "before / post"),
        ("envcheck_over_before", "envcheck train / before"),
    ):
        speedup = result.get(key)
        if speedup:
            print(
                f"  {label}: {speedup['images_per_second_epoch_2']:.2f}x the images/s of epoch 2 (rounds: "
                f"{', '.join(f'{r:.2f}' for r in speedup['rounds'])}), {speedup['seconds_to_steps']:.2f}x as fast "
                f"to {args.steps * EPOCHS} steps, {speedup['wall_seconds']:.2f}x in wall time"
                # the JSON's ratio is the reference's over ours, as for the seconds; printed the other way
                + (f", {1 / speedup['cpu_seconds']:.2f}x the CPU time" if speedup.get("cpu_seconds") else "")
            )


def _line(result: dict) -> str:
    if "error" in result:
        return f"failed: {result['error']}"
    return (
        f"{result['images_per_second_epoch_2']:9.1f} images/s in epoch 2, {result['seconds_to_steps']:7.1f} s "
        f"to the steps, {result['wall_seconds']:7.1f} s wall"
        + (f", {result['cpu_seconds']:7.1f} s CPU" if "cpu_seconds" in result else "")
    )


if __name__ == "__main__":
    sys.exit(main())
