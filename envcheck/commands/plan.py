"""``envcheck plan``: which TensorFlow, CUDA, cuDNN and Python to install, with the exact steps.

Plans for this machine (the quick probes, no TensorFlow import) unless told otherwise; every value
can be given on the command line to plan another machine. With ``--os`` naming another OS than
this one, nothing of this machine is used.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from envcheck.errors import UsageError
from envcheck.facts import load_facts
from envcheck.invocation import set_target
from envcheck.matrix import load_matrix
from envcheck.planner import apply_overrides, make_plan
from envcheck.planner.target import retarget, target_from_facts
from envcheck.platform import OSES, platform_named
from envcheck.render.plan import render_json, render_script, render_text

FORMATS = ("text", "json", "bash", "powershell")


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Which TensorFlow/CUDA/cuDNN/Python to install, why, and the exact steps. Recommends the newest "
        "release that fits the OS, the Python and the GPU; when it needs a newer driver, upgrading it is "
        "the first step and keeping the driver is listed as an alternative. Exit 0 with a plan, 1 when "
        "the matrix does not cover the question (an unknown GPU or release), 2 on bad input."
    )
    machine = p.add_argument_group("the machine to plan for (default: this one)")
    machine.add_argument("--os", choices=OSES, help="operating system (wsl: Windows with WSL2)")
    machine.add_argument("--python", metavar="3.X", help="Python version to use, e.g. 3.11")
    gpu = machine.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", metavar="NAME", help='GPU product name, e.g. "GeForce GTX 1060"')
    gpu.add_argument("--cpu", action="store_true", help="plan for a machine without an NVIDIA GPU")
    machine.add_argument(
        "--compute-capability", metavar="X.Y", help="the GPU's compute capability (instead of, or with, --gpu)"
    )
    machine.add_argument(
        "--driver", metavar="VERSION", help="installed NVIDIA driver version, e.g. 417.35 or 550.54.14"
    )
    machine.add_argument("--tf", metavar="VERSION", help="plan for this TensorFlow release instead of choosing one")
    machine.add_argument(
        "--facts", metavar="FILE", help="plan for the machine in a saved snapshot (doctor --json / --save-facts)"
    )
    p.add_argument("--matrix", metavar="FILE", help="use this compatibility matrix instead of the bundled one")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="same as --format json")
    out.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), json, or a script to review and run: bash (Linux, macOS, inside WSL2) "
        "or powershell (Windows; the Windows side of WSL2)",
    )


def _base_target(args: argparse.Namespace, matrix):
    """This machine (or the snapshot's) as a target; None when ``--os`` makes it another machine."""
    if args.facts:
        base = target_from_facts(load_facts(args.facts), matrix, snapshot=True)
    else:
        if args.os is not None:
            from envcheck.probes.system import probe_platform  # start-up: the probes only for this machine

            here = platform_named(probe_platform(os.environ).os or "linux")
            if args.os != here.name and not (here.windows_driver and platform_named(args.os).windows_driver):
                return (
                    None  # another machine (native Windows and WSL2 share one): probing this one would only cost time
                )
        from envcheck.probes import ProbeOptions, collect  # start-up: the probes only for this machine

        base = target_from_facts(collect(ProbeOptions(quick=True)), matrix)
    return base if args.os is None else retarget(base, args.os)


_LONG_NUMBER = re.compile(r"\d{10}")


def _check_numbers(args: argparse.Namespace) -> None:
    """No part of a version has ten digits: a longer number (one past int()'s 4,300-digit limit
    would crash the parse) is bad input, said before anything reads it."""
    for flag in ("tf", "python", "driver", "compute_capability"):
        value = getattr(args, flag)
        if value is not None and _LONG_NUMBER.search(value):
            shown = value if len(value) <= 40 else f"{value[:24]}... ({len(value)} characters)"
            raise UsageError(f"--{flag.replace('_', '-')} {shown}: not a version (no part of one is that long)")


# The flags that say which machine a plan is for, in --help's order: its follow-ups keep them.
TARGET_FLAGS = ("os", "python", "gpu", "cpu", "compute_capability", "driver", "tf", "facts", "matrix")


def _record_target(args: argparse.Namespace) -> None:
    set_target("plan", [("--" + name.replace("_", "-"), getattr(args, name)) for name in TARGET_FLAGS])


def run(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else args.format
    matrix = load_matrix(args.matrix) if args.matrix else load_matrix()
    if args.compute_capability and args.cpu:
        raise UsageError("--cpu plans for a machine without a GPU; drop --compute-capability")
    _check_numbers(args)
    target = apply_overrides(
        _base_target(args, matrix),
        matrix,
        os=args.os,
        python=args.python,
        gpu=args.gpu,
        compute_capability=args.compute_capability,
        driver=args.driver,
        tf=args.tf,
        cpu=args.cpu,
    )
    plan = make_plan(matrix, target)
    _record_target(args)
    if fmt == "json":
        text = render_json(plan)
    elif fmt == "text":
        text = render_text(plan)
    else:
        text = render_script(plan, fmt)
    sys.stdout.write(text)
    return 0
