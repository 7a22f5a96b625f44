"""envcheck validate: check that TensorFlow computes, agrees across replicas and trains on the GPUs.

Exit codes as the doctor's: 0 every check passed, 1 a check failed, 2 bad usage, 3 internal error.
"""

from __future__ import annotations

import argparse
import sys

from envcheck.errors import UsageError, require_modules


def configure(parser: argparse.ArgumentParser) -> None:
    from envcheck.commands.train import MAX_CPU_REPLICAS, count_arg, path_arg

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
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="show TensorFlow's own log lines and warnings")


def run(args: argparse.Namespace) -> int:
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
        from envcheck.train.outputs import check_output_folder
        from envcheck.validation.training import FULL_OUTPUT

        output = args.output or (FULL_OUTPUT if args.full else None)
        if output is not None:
            check_output_folder(output)  # before levels 1 and 2, not after them
    else:
        require_modules("envcheck validate", "tf", "numpy", "tensorflow")
    from envcheck.render.stages import Stages
    from envcheck.tfquiet import quiet_tensorflow
    from envcheck.validation import run_validation
    from envcheck.validation.checks import render_terminal

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
        from envcheck.render import json_text

        sys.stdout.write(json_text("validate", report.to_dict(), report.exit_code))
    else:
        render_terminal(report, console)
    return report.exit_code


def _terminal():
    """A console on the terminal behind stderr, kept while TensorFlow's start-up lines are captured
    (they go to file descriptor 2): what validate waits for is shown there. None off a terminal."""
    import os

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
    import os

    from rich.console import Console

    class PipeTolerantConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so that the exit's final flush does not fail either

    from envcheck.render.width import terminal_width

    return PipeTolerantConsole(width=terminal_width(sys.stdout))  # the width every command wraps at
