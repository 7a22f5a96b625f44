"""``envcheck diff A B``: what differs between two machines (or one machine before and after), the
differences that explain why their verdicts differ first."""

from __future__ import annotations

import argparse

EPILOG = """\
A and B are facts snapshots (doctor --save-facts FILE) or doctor --json reports; '-' is this
machine now (the quick probes; --full also imports TensorFlow).

Differences are grouped by link of the chain; first those of the links where the two verdicts
part (the driver, a library copy, the TensorFlow build, an environment variable), then the rest.
When each snapshot was taken, probe times, PIDs, the memory in use, host and user names, the home
folder and GPU UUIDs never count as differences.

exit status:
  0  no differences
  1  differences (shown)
  2  bad usage or bad input: a file that is not a snapshot (one line on stderr)
  3  an internal error: rerun with --traceback and report it
"""

THIS_MACHINE = "-"


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("a", metavar="A", help="a snapshot or doctor --json report, or - for this machine now")
    p.add_argument("b", metavar="B", help="the other one")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--full", action="store_true", help="with -: probe this machine in full (imports TensorFlow)")


def run(args: argparse.Namespace) -> int:
    from envcheck.compare.diff import compare
    from envcheck.errors import UsageError
    from envcheck.render import emit

    if args.a == THIS_MACHINE and args.b == THIS_MACHINE:
        raise UsageError("diff: A and B are both '-': compare this machine with a snapshot of it or of another one")
    if args.full and THIS_MACHINE not in (args.a, args.b):
        raise UsageError("diff: --full only applies to '-' (this machine now)")
    for value in (args.a, args.b):
        if not value.strip():
            raise UsageError("diff: needs two snapshot files (or -), got an empty string")
    a = side(args.a, args.full)
    b = side(args.b, args.full)
    diff = compare(a, b)
    code = 1 if diff.differences else 0
    if args.json:
        from envcheck.render.diff import render_json

        emit(render_json(diff, code), is_json=True)
    else:
        from envcheck.render.diff import render

        emit(render(diff))
    return code


def side(source: str, full: bool = False):
    """One side of the comparison: a snapshot judged, or this machine probed and judged."""
    from envcheck.compare.diff import Side
    from envcheck.verdict import judge

    if source == THIS_MACHINE:
        from envcheck.probes import ProbeOptions, collect

        facts = collect(ProbeOptions(quick=not full))
        return Side("this machine now" + ("" if full else " (--quick)"), judge(facts))
    from envcheck.facts import load_facts

    return Side(source, judge(load_facts(source)))
