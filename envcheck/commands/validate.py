"""envcheck validate: check that TensorFlow computes, agrees across replicas and trains on the GPUs.

Exit codes as the doctor's: 0 every check passed, 1 a check failed, 2 bad usage, 3 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from envcheck.commands.train import MAX_CPU_REPLICAS, count_arg, path_arg
from envcheck.errors import UsageError, require_modules


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--level",
        type=int,
        choices=(1, 2, 3),
        default=2,
        help="1: matmul and convolution on each device; 2: plus the cross-replica all-reduce "
        "(default); 3: plus a training run",
    )
    parser.add_argument("--train", action="store_true", help="the same as --level 3")
    parser.add_argument(
        "--full",
        action="store_true",
        help="with level 3: the post's full 70-epoch protocol on the real CIFAR-10, "
        "accuracy compared with the post's (needs a GPU)",
    )
    parser.add_argument(
        "--data",
        "--data-dir",
        type=path_arg,
        metavar="PATH",
        dest="data",
        help="CIFAR-10 for level 3 (python batches, image folders, or an archive); "
        "default: the Keras cache, or synthetic data for the quick run",
    )
    parser.add_argument(
        "--gpus", type=count_arg(0), metavar="N", help="use the first N GPUs (default: all; 0: the CPU)"
    )
    parser.add_argument(
        "--cpu-replicas",
        type=count_arg(1, MAX_CPU_REPLICAS),
        metavar="N",
        help="logical CPU devices to mirror over when no GPU is used (default: 2)",
    )
    parser.add_argument(
        "--output",
        "-o",
        type=path_arg,
        metavar="DIR",
        help="keep the level 3 run's outputs here (default: a temporary folder; "
        "envcheck-validate-full for --full, so that it can be resumed)",
    )
    parser.add_argument(
        "--require-gpu", action="store_true", help="exit 1 unless the checks ran on a GPU (for CI gates)"
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="measure images/s on 1..N devices at the same per-replica batch, the input pipeline alone, "
        "the all-reduce and each device alone, and name the bottleneck",
    )
    parser.add_argument(
        "--batch-per-replica",
        type=count_arg(1),
        metavar="N",
        help="with --scaling: images per replica (default: 64 on GPUs, 32 on the CPU)",
    )
    parser.add_argument(
        "--steps",
        type=count_arg(1, 10_000),
        metavar="N",
        help="with --scaling: timed steps per measurement (default: 8)",
    )
    parser.add_argument("--plot", type=path_arg, metavar="PNG", help="with --scaling: draw efficiency against devices")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="show TensorFlow's own log lines and warnings")


def run(args: argparse.Namespace) -> int:
    if args.scaling:
        return run_scaling(args)
    for flag, value in (
        ("--batch-per-replica", args.batch_per_replica),
        ("--steps", args.steps),
        ("--plot", args.plot),
    ):
        if value is not None:
            raise UsageError(f"{flag} is for --scaling: add --scaling, or drop {flag}")
    level = 3 if args.train or args.full else args.level
    if args.train and args.level not in (2, 3):
        raise UsageError("--train is level 3; drop --level or use --level 3")
    if args.full and args.level not in (2, 3):
        raise UsageError("--full is level 3; drop --level or use --level 3")
    if level < 3 and (args.data is not None or args.output is not None):
        flag = "--data" if args.data is not None else "--output"
        raise UsageError(f"{flag} is for the training run of level 3: add --train, or drop {flag}")
    if args.data is not None and not args.data.expanduser().exists():
        raise UsageError(f"--data {args.data}: no such file or folder")
    if args.gpus and args.cpu_replicas:
        raise UsageError("--gpus and --cpu-replicas exclude each other: validate GPUs or CPU devices")
    if level >= 3:  # the trainer also decodes image folders
        require_modules("envcheck validate --train", "train", "numpy", "tensorflow", "PIL")
        # lazy for start-up: keeps train.outputs, validation.training out of `envcheck validate --help` and the paths that do not use it
        from envcheck.train.outputs import check_output_folder
        from envcheck.validation.training import FULL_OUTPUT

        output = args.output or (FULL_OUTPUT if args.full else None)
        if output is not None:
            check_output_folder(output)  # before levels 1 and 2, not after them
    else:
        require_modules("envcheck validate", "tf", "numpy", "tensorflow")
    # lazy for start-up: keeps render.stages, render.validate, tfquiet, validation out of `envcheck validate --help` and the paths that do not use it
    from envcheck.render.stages import Stages
    from envcheck.render.validate import print_validation
    from envcheck.tfquiet import quiet_tensorflow
    from envcheck.validation import run_validation

    console = _console()
    terminal = None if args.json else _terminal()  # taken before TensorFlow's noise is sent away
    with (
        Stages(console=terminal, enabled=None if terminal is not None else False) as stage,
        quiet_tensorflow(verbose=args.verbose),
    ):
        report = run_validation(
            level,
            full=args.full,
            data=args.data.expanduser() if args.data else None,
            output=args.output,
            gpus=args.gpus,
            cpu_replicas=args.cpu_replicas,
            progress=not args.json,
            require_gpu=args.require_gpu,
            announce=_announcer(stage),
            console=terminal,
        )
    if args.json:
        # lazy for start-up: keeps render out of `envcheck validate --help` and the paths that do not use it
        from envcheck.render import json_text

        sys.stdout.write(json_text("validate", report.to_dict(), report.exit_code))
    else:
        print_validation(report, console)
    return report.exit_code


def run_scaling(args: argparse.Namespace) -> int:
    """validate --scaling: the measurement, its table and verdict (or JSON), and the plot."""
    if args.train or args.full or args.level != 2 or args.data is not None or args.output is not None:
        raise UsageError("--scaling is a measurement of its own: drop --level, --train, --full, --data and --output")
    if args.gpus and args.cpu_replicas:
        raise UsageError("--gpus and --cpu-replicas exclude each other: measure GPUs or CPU devices")
    if args.plot is not None and not args.plot.expanduser().parent.is_dir():
        raise UsageError(f"--plot {args.plot}: no such folder {args.plot.expanduser().parent}")
    require_modules("envcheck validate --scaling", "tf", "numpy", "tensorflow")
    # lazy for start-up: keeps render.scaling, tfquiet, validation.scaling_run out of `envcheck validate --help` and the paths that do not use it
    from envcheck.render.scaling import render_scaling, write_scaling_plot
    from envcheck.tfquiet import quiet_tensorflow
    from envcheck.validation.scaling_run import run_scaling as measure_scaling

    console = _console()
    live = not args.json and console.is_terminal and not console.is_dumb_terminal
    status = console.status("starting TensorFlow", spinner="dots") if live else None
    say = (lambda text: status.update(text)) if status is not None else (lambda text: None)
    with quiet_tensorflow(verbose=args.verbose), status if status is not None else _nothing():
        result = measure_scaling(
            gpus=args.gpus, cpu_replicas=args.cpu_replicas, batch_per_replica=args.batch_per_replica,
            steps=args.steps or 8, say=say,
        )  # fmt: skip
    if args.plot is not None:
        try:
            write_scaling_plot(result, args.plot.expanduser())
            result["plot"] = str(args.plot)
        except ImportError:
            result["plot_error"] = "matplotlib is not installed (pip install 'envcheck-tf[train]')"
        except OSError as exc:
            result["plot_error"] = f"{args.plot}: {exc.strerror or exc}"
    if args.json:
        # lazy for start-up: keeps render out of `envcheck validate --help` and the paths that do not use it
        from envcheck.render import json_text

        sys.stdout.write(json_text("validate", result, result["exit_code"]))
    else:
        sys.stdout.write(render_scaling(result))
        _say_where(result)
    return result["exit_code"]


def _say_where(result: dict) -> None:
    # lazy for start-up: keeps render.scan out of `envcheck validate --help` and the paths that do not use it
    from envcheck.render.scan import tilde

    if "plot" in result:
        print(f"plot: {result['plot']}")
    if "plot_error" in result:
        print(f"no plot: {result['plot_error']}")
    if "baseline_file" in result:
        print(f"one device's figure kept for envcheck train: {tilde(result['baseline_file'], str(Path.home()))}")


def _nothing():
    return contextlib.nullcontext()


def _terminal():
    """A console on the terminal behind stderr, kept while TensorFlow's start-up lines are captured
    (they go to file descriptor 2): what validate waits for is shown there. None off a terminal."""

    # lazy for start-up: rich is heavy (or absent), imported only where it is used
    from rich.console import Console

    try:
        if not os.isatty(2):
            return None
        stream = os.fdopen(os.dup(2), "w", encoding=sys.stderr.encoding or "utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    return Console(file=stream, highlight=False)


# What run_validation announces before the trainer starts: the trainer draws its own stages and
# bar on the same terminal, so the live line gives way to it.
TRAINING_STARTS = "level 3: a training run"


def _announcer(stage):
    """Each stage on the live line, its seconds counting."""

    def announce(text: str) -> None:
        if text == TRAINING_STARTS:
            stage.close()
        else:
            stage(text[:1].upper() + text[1:])

    return announce


def _console():
    """A rich console that, when the reader goes away (`| head`), stops printing instead of exiting 1."""

    # lazy for start-up: rich is heavy (or absent), imported only where it is used
    from rich.console import Console

    class PipeTolerantConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so that the exit's final flush does not fail either

    # lazy for start-up: keeps render.width out of `envcheck validate --help` and the paths that do not use it
    from envcheck.render.width import terminal_width

    return PipeTolerantConsole(width=terminal_width(sys.stdout))  # the width every command wraps at
