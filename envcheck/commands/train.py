"""envcheck train: the reference multi-GPU CIFAR-10 trainer (MiniGoogLeNet, the post's protocol).

Flags are checked here, before TensorFlow is imported, so a typo costs nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from envcheck.commands.arguments import positive_float
from envcheck.errors import UsageError, require_modules
from envcheck.printable import printable
from envcheck.render import json_text
from envcheck.scaling_baseline import compared_with_one_device
from envcheck.train.config import JIT_WITH_CPU_REPLICAS, PRESETS, TrainConfig
from envcheck.train.speed import MIXED, PRECISION_CHOICES
from envcheck.train.strategy import cluster_source
from envcheck.words import plural

DEFAULT_OUTPUT = "envcheck-train"


# Bounds on what a flag may ask for, checked before anything is allocated or started.
MAX_SEED = 2**32 - 1  # NumPy's seeds, which Keras's set_random_seed passes on
MAX_CPU_REPLICAS = 64  # logical CPU devices: each costs start-up time, more only waste it
MAX_COUNT = 10**9  # images, steps, epochs, batch sizes: past this a typo, not a request
SYNTHETIC_TRAIN_IMAGES = 50_000  # --synthetic generates CIFAR-10's sizes at most
SYNTHETIC_TEST_IMAGES = 10_000


def count_arg(minimum: int, maximum: int = MAX_COUNT):
    """An argparse type: a whole number from `minimum` to `maximum` (counts, sizes, seeds)."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if len(stripped.lstrip("+-")) > len(str(maximum)) + 1:  # no int() of 5,000 digits
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got a {len(stripped)}-digit number")
        try:
            value = int(stripped)
        except ValueError:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"expected a whole number, got {shown!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    return parse


def path_arg(text: str) -> Path:
    """An argparse type: a path, never the empty string (which would quietly mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path, got an empty string")
    return Path(text)


def add_device_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpus",
        type=count_arg(0),
        metavar="N",
        help="mirror over the first N GPUs (default: every GPU TensorFlow sees; 0: the CPU)",
    )
    parser.add_argument(
        "--cpu-replicas",
        type=count_arg(1, MAX_CPU_REPLICAS),
        default=None,
        metavar="N",
        help=f"split the CPU into N logical devices (at most {MAX_CPU_REPLICAS}) and mirror over them (no GPU needed)",
    )


def add_data_flags(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--data",
        "--data-dir",
        type=path_arg,
        metavar="PATH",
        dest="data",
        help="CIFAR-10: the cifar-10-batches-py folder, a folder of train/<class>/ and "
        "test/<class>/ images, or a .tar.gz of either (default: the Keras cache)",
    )
    source.add_argument("--synthetic", action="store_true", help="generated images instead of CIFAR-10")
    parser.add_argument("--subset", type=count_arg(1), metavar="N", help="train on the first N training images")
    parser.add_argument("--val-subset", type=count_arg(1), metavar="N", help="validate on the first N test images")


def add_speed_flags(parser: argparse.ArgumentParser) -> None:
    """Precision, XLA and steps per call: chosen for the hardware unless given (the run's header says which)."""
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument(
        "--precision",
        choices=PRECISION_CHOICES,
        default="auto",
        help="compute type, float32 weights either way: auto (default: bf16 on CPUs with AVX512_BF16 or AMX and on "
        "GPUs of compute capability 8.0+, fp16 on 7.x, else fp32), fp32, bf16 (mixed bfloat16), fp16 (mixed float16)",
    )
    precision.add_argument(
        "--mixed-precision",
        action="store_const",
        const=MIXED,
        dest="precision",
        help="the device's mixed precision: float16 on GPUs, bfloat16 on CPUs",
    )
    parser.add_argument(
        "--jit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile the training step with XLA, or not (default: where it was measured faster; off on CPUs)",
    )
    parser.add_argument(
        "--steps-per-execution",
        type=count_arg(1),
        metavar="N",
        help="training steps per TensorFlow call, a divisor of the steps per epoch; the NaN check and the progress "
        "bar run once per call (default: up to 16 on a CPU, 64 on a GPU)",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        "-o",
        type=path_arg,
        default=Path(DEFAULT_OUTPUT),
        metavar="DIR",
        help=f"folder for the plot, history, summary and model (default: ./{DEFAULT_OUTPUT}); "
        "rerunning into a folder with an interrupted run resumes it",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --output; a finished one is kept and its summary shown",
    )
    again.add_argument(
        "--overwrite", action="store_true", help="start over, replacing the run in --output (finished or not)"
    )
    add_device_flags(parser)
    parser.add_argument(
        "--multi-worker",
        action="store_true",
        help="MultiWorkerMirroredStrategy over the cluster in TF_CONFIG, or SLURM's (run under srun); a worker "
        "waits at most 5 minutes for the others (ENVCHECK_CLUSTER_WAIT=SECONDS)",
    )
    add_data_flags(parser)
    parser.add_argument(
        "--preset",
        choices=("post", "fast"),
        default="post",
        help="post: the post's 70-epoch protocol (default); fast: a shorter modern recipe",
    )
    parser.add_argument("--epochs", type=count_arg(1), metavar="N", help="epochs (default: 70, or the preset's)")
    parser.add_argument(
        "--steps-per-epoch",
        type=count_arg(1),
        metavar="N",
        help="steps per epoch (default: one pass over the training images)",
    )
    parser.add_argument(
        "--batch-per-replica",
        type=count_arg(1),
        metavar="N",
        help="images per replica per step (default: 64, or the preset's)",
    )
    parser.add_argument(
        "--lr",
        type=positive_float,
        metavar="RATE",
        help="initial (peak) learning rate (default: 5e-3, or the preset's)",
    )
    add_speed_flags(parser)
    parser.add_argument(
        "--seed", type=count_arg(0, MAX_SEED), default=0, metavar="N", help=f"random seed, 0 to {MAX_SEED} (default: 0)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or per-epoch lines")


def config_from_args(args: argparse.Namespace):
    if args.data is not None and not args.data.expanduser().exists():
        raise UsageError(f"--data {args.data}: no such file or folder")
    if args.multi_worker:
        cluster_source()  # no TF_CONFIG and no SLURM step, or a malformed one: a usage error, before TensorFlow starts
    if args.output.exists() and not args.output.is_dir():
        raise UsageError(f"--output {args.output}: exists and is not a folder")
    if args.gpus and args.cpu_replicas:
        raise UsageError("--gpus and --cpu-replicas exclude each other: mirror over GPUs or over CPU devices")
    if args.multi_worker and args.cpu_replicas and args.cpu_replicas > 1:
        raise UsageError(
            "--multi-worker with --cpu-replicas: each worker mirrors over its GPUs or its one CPU, "
            "not over logical CPU devices; use --cpu-replicas on one machine"
        )
    if args.jit and args.cpu_replicas and args.cpu_replicas > 1:
        raise UsageError(JIT_WITH_CPU_REPLICAS)
    if args.synthetic:
        # Checked before the images are generated: --subset 100000000000 is 300 TB of them.
        for flag, value, most in (
            ("--subset", args.subset, SYNTHETIC_TRAIN_IMAGES),
            ("--val-subset", args.val_subset, SYNTHETIC_TEST_IMAGES),
        ):
            if value is not None and value > most:
                raise UsageError(
                    f"{flag} {value:,}: --synthetic generates at most {most:,} images there (CIFAR-10's size)"
                )
    recipe = PRESETS[args.preset]
    overrides = {
        name: value
        for name, value in (
            ("epochs", args.epochs),
            ("batch_per_replica", args.batch_per_replica),
            ("learning_rate", args.lr),
        )
        if value is not None
    }
    recipe = recipe.with_overrides(**overrides)
    return TrainConfig(
        output=args.output,
        recipe=recipe,
        gpus=args.gpus if not args.cpu_replicas else 0,
        cpu_replicas=args.cpu_replicas or 1,
        multi_worker=args.multi_worker,
        data=args.data.expanduser() if args.data else None,
        synthetic=args.synthetic,
        subset=args.subset,
        val_subset=args.val_subset,
        steps_per_epoch=args.steps_per_epoch,
        precision=args.precision,
        jit=args.jit,
        steps_per_execution=args.steps_per_execution,
        seed=args.seed,
        progress=not args.no_progress,
        resume=args.resume,
        overwrite=args.overwrite,
    )


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    require_modules("envcheck train", "train", "numpy", "tensorflow", "PIL")
    from envcheck.train.trainer import train  # numpy and the rest: once the flags and modules are checked

    result = train(config)
    summary = result.summary
    if not summary["devices"]["is_chief"]:
        return 0
    if result.already_finished and not args.json:
        print(
            f"envcheck: {printable(config.output)} holds a finished run; nothing was trained (--overwrite trains again)",
            file=sys.stderr,
        )
    if args.json:
        sys.stdout.write(json_text("train", summary, 0))
    else:
        print(fit_to_terminal(format_summary(summary, config.output)))
        against = one_device_line(summary)
        if against:
            print(against)
    return 0


def one_device_line(summary: dict) -> str | None:
    """How the run's images/s compare with one device, when validate --scaling measured one."""

    replicas = summary.get("replicas") or 1
    kind = (summary.get("devices") or {}).get("kind")
    if kind not in ("gpu", "cpu") or not summary.get("global_batch"):
        return None
    text = compared_with_one_device(
        summary.get("images_per_second_steady"), replicas, kind, summary["global_batch"] // replicas
    )
    return f"against one device: {text}" if text else None


def fit_to_terminal(text: str, width: int | None = None) -> str:
    """The summary at the terminal's width (or COLUMNS): each line wrapped at spaces, never inside
    a word, its continuation under the text after its label ("final: ", "outputs: ")."""

    # lazy for start-up: keeps render.width out of `envcheck train --help` and the paths that do not use it
    from envcheck.render.width import terminal_width, wrap_lines

    width = width or terminal_width()
    out = []
    for line in text.splitlines():
        label = re.match(r"[a-z]+: ", line)
        out += wrap_lines(line, width, "", " " * (label.end() if label else 2))
    return "\n".join(out)


def format_summary(summary: dict, output: Path) -> str:
    final = summary["final"]

    def fmt(value, spec=".4f"):
        return "-" if value is None else format(value, spec)

    return "\n".join(
        [
            f"MiniGoogLeNet ({summary['parameters']:,} parameters) on {printable(summary['data']['source'])}: "
            f"{plural(summary['epochs'], 'epoch')} on {plural(summary['replicas'], 'replica')} "
            f"({', '.join(summary['devices']['devices'])})",
            f"final: loss {fmt(final['loss'])}  accuracy {fmt(final['accuracy'])}  "
            f"val_loss {fmt(final['val_loss'])}  val_accuracy {fmt(final['val_accuracy'])}",
            f"time: {fmt(summary['seconds'], '.1f')} s, {fmt(summary['images_per_second_steady'], '.1f')} images/s "
            f"({fmt(summary['images_per_second_per_replica'], '.1f')} per replica)",
            f"outputs: {printable(output)}/ (history.png, history.json, history.csv, summary.json, model.keras)",
        ]
    )
