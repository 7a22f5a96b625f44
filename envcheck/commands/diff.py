"""``envcheck diff A B``: what differs between two machines (or one machine before and after), the
differences that explain why their verdicts differ first."""

from __future__ import annotations

import argparse

from envcheck.errors import UsageError

EPILOG = """\
A and B are facts snapshots (doctor --save-facts FILE) or doctor --json reports; '-' is this
machine now, probed the way the other side was (in full, TensorFlow imported, when the snapshot
was; --quick or --full to choose). What only one side probed is left out, and said so.

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
    how = p.add_mutually_exclusive_group()
    how.add_argument("--full", action="store_true", help="with -: probe this machine in full (imports TensorFlow)")
    how.add_argument("--quick", action="store_true", help="with -: the quick probes only (TensorFlow not imported)")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="list every difference (by default the rest is counted)"
    )


def run(args: argparse.Namespace) -> int:
    # lazy for start-up: keeps compare.diff, render out of `envcheck diff --help` and the paths that do not use it
    from envcheck.compare.diff import compare
    from envcheck.render import emit

    if args.a == THIS_MACHINE and args.b == THIS_MACHINE:
        raise UsageError("diff: A and B are both '-': compare this machine with a snapshot of it or of another one")
    for flag in ("full", "quick"):
        if getattr(args, flag) and THIS_MACHINE not in (args.a, args.b):
            raise UsageError(f"diff: --{flag} only applies to '-' (this machine now)")
    for value in (args.a, args.b):
        if not value.strip():
            raise UsageError("diff: needs two snapshot files (or -), got an empty string")
    saved = {value: side(value) for value in (args.a, args.b) if value != THIS_MACHINE}
    if THIS_MACHINE in (args.a, args.b):
        other = next(iter(saved.values()))
        full = probe_in_full(args, other)
        letter = "A" if args.a != THIS_MACHINE else "B"
        why = f"(--{'full' if full else 'quick'})" if args.full or args.quick else f"as {letter} was taken"
        saved[THIS_MACHINE] = this_machine(full, why, show=not args.json)
    a, b = saved[args.a], saved[args.b]
    diff = compare(a, b)
    code = 1 if diff.differences else 0
    if args.json:
        # lazy for start-up: keeps render.diff out of `envcheck diff --help` and the paths that do not use it
        from envcheck.render.diff import render_json

        emit(render_json(diff, code), is_json=True)
    else:
        # lazy for start-up: keeps render.diff out of `envcheck diff --help` and the paths that do not use it
        from envcheck.render.diff import render

        emit(render(diff, verbose=args.verbose))
    return code


def side(source: str):
    """A snapshot, judged."""
    # lazy for start-up: keeps compare.diff, facts, verdict out of `envcheck diff --help` and the paths that do not use it
    from envcheck.compare.diff import Side
    from envcheck.facts import load_facts
    from envcheck.verdict import judge

    return Side(source, judge(load_facts(source)))


def probe_in_full(args: argparse.Namespace, other) -> bool:
    """This machine is probed as the other side was, unless --full or --quick says otherwise."""
    return args.full or (not args.quick and not other.facts.quick)


def this_machine(full: bool, why: str, show: bool = True):
    """This machine now, probed and judged; on a terminal, what the wait is for while it lasts."""
    # lazy for start-up: keeps compare.diff, probes, render.stages, verdict out of `envcheck diff --help` and the paths that do not use it
    from envcheck.compare.diff import Side
    from envcheck.probes import ProbeOptions, collect
    from envcheck.render.stages import Stages
    from envcheck.verdict import judge

    how = "in full (TensorFlow imported)" if full else "with the quick probes"
    with Stages(enabled=None if show else False) as stage:
        stage(f"Probing this machine {how}, {why}")
        facts = collect(ProbeOptions(quick=not full))
    return Side("this machine now" + ("" if full else " (--quick)"), judge(facts))
