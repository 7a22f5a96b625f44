"""``envcheck fleet node-*.json``: the snapshots of many nodes in one table, grouped by verdict and
by the facts that matter, the odd ones out named."""

from __future__ import annotations

import argparse
import os
import sys

from envcheck.errors import UsageError
from envcheck.printable import printable

EPILOG = """\
Each FILE is a facts snapshot (doctor --save-facts) or a doctor --json report; a folder stands for
the .json files in it. On a cluster, with the tools it has (SLURM shown; pdsh, mpirun and kubectl
exec work the same):
  srun --ntasks-per-node=1 envcheck doctor --json --save-facts node-%n.json
  envcheck fleet node-*.json
(--save-facts expands %n to SLURM's node number, else the host name, and %h to the host name.)

A file that cannot be read is refused with one line on stderr; the others are still shown.

exit status:
  0  every file read, and every node passes the doctor (no error finding)
  1  at least one node has an error finding (its doctor exits 1); with --require-uniform, also
     when the nodes differ in any fact that matters
  2  bad usage, or a file refused (the table of the others is still printed), or nothing readable
  3  an internal error: rerun with --traceback and report it
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("files", nargs="+", metavar="FILE", help="snapshots or doctor --json reports (or folders of them)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON document")
    out.add_argument(
        "--markdown", action="store_true", help="print a Markdown report for a ticket (home, user, GPU UUIDs redacted)"
    )
    p.add_argument(
        "--require-uniform", action="store_true", help="exit 1 when the nodes differ in any fact that matters"
    )
    p.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="worker processes for reading (default: the CPUs, at most 8)",
    )


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    # lazy for start-up: keeps compare.fleet, render out of `envcheck fleet --help` and the paths that do not use it
    from envcheck.compare.fleet import read_fleet
    from envcheck.render import emit

    if any(not f.strip() for f in args.files):
        raise UsageError("fleet: a file name is empty")
    jobs = args.jobs or max(1, min(8, os.cpu_count() or 1))
    fleet = read_fleet(args.files, jobs=jobs)
    for r in fleet.refused:
        print(f"envcheck: fleet: {printable(r.source)}: {printable(r.reason)}", file=sys.stderr)
    if not fleet.nodes:
        raise UsageError(
            f"fleet: no readable snapshot among {len(fleet.refused)} file{'s' if len(fleet.refused) != 1 else ''}"
        )
    code = 1 if any(n.exit_code != 0 for n in fleet.nodes) or (args.require_uniform and not fleet.uniform) else 0
    if fleet.refused:
        code = 2
    if args.json:
        # lazy for start-up: keeps render.fleet out of `envcheck fleet --help` and the paths that do not use it
        from envcheck.render.fleet import render_json

        emit(render_json(fleet, code), is_json=True)
    elif args.markdown:
        # lazy for start-up: keeps render.fleet out of `envcheck fleet --help` and the paths that do not use it
        from envcheck.render.fleet import render_markdown

        emit(render_markdown(fleet))
    else:
        # lazy for start-up: keeps render.fleet out of `envcheck fleet --help` and the paths that do not use it
        from envcheck.render.fleet import render

        emit(render(fleet))
    if fleet.refused:
        print(
            f"envcheck: fleet: {len(fleet.refused)} of {len(fleet.refused) + len(fleet.nodes)} files refused (above); the table shows the others",
            file=sys.stderr,
        )
    return code
