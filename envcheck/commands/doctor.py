"""``envcheck doctor``: probe (or read a snapshot), judge, render, exit with the verdict's code."""

from __future__ import annotations

import argparse
import sys


def configure(p: argparse.ArgumentParser) -> None:
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object (schema in README)")
    out.add_argument("--markdown", action="store_true", help="print a paste-ready bug report (redacted)")
    p.add_argument("--no-redact", action="store_true", help="with --markdown: keep user, host, home, GPU UUIDs")
    p.add_argument("--facts", metavar="FILE", help="judge a saved snapshot (from --json) instead of this machine")
    p.add_argument("--save-facts", metavar="FILE", help="also write the facts snapshot to FILE")
    p.add_argument("--python", metavar="PATH", help="probe this interpreter (a venv or conda env) instead")
    p.add_argument("--quick", action="store_true", help="skip everything that imports TensorFlow")
    p.add_argument(
        "--tf-timeout", type=_positive_float, default=60.0, metavar="SECONDS", help="TensorFlow worker timeout (60)"
    )
    p.add_argument("--matrix", metavar="FILE", help="use this compatibility matrix instead of the bundled one")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "never"),
        default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )
    p.add_argument("--select", metavar="IDS", default="", help="only rules whose id starts with one of these (comma-separated)")
    p.add_argument("--ignore", metavar="IDS", default="", help="skip rules whose id starts with one of these")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence and per-probe timings")
    p.add_argument("--apply", choices=("cpu", "gpu"), help="run the pip steps of the CPU or GPU path (asks first)")
    p.add_argument("--yes", action="store_true", help="with --apply: do not ask for confirmation")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _split_ids(text: str) -> tuple[str, ...]:
    return tuple(part.strip().upper() for part in text.split(",") if part.strip())


def build_report(args: argparse.Namespace):
    """Facts from the snapshot or the probes, judged against the matrix."""
    from envcheck.rules import judge

    notes: tuple[str, ...] = ()
    if args.facts:
        if args.python:
            from envcheck.errors import UsageError

            raise UsageError("--facts and --python cannot be used together (a snapshot is already probed)")
        from envcheck.facts import load_facts

        facts = load_facts(args.facts)
        notes = (f"judged from a saved snapshot: {args.facts}",)
    else:
        from envcheck.probes import ProbeOptions, collect

        facts = collect(ProbeOptions(python=args.python, quick=args.quick, tf_timeout=args.tf_timeout))
    matrix_loader = None
    if args.matrix:
        from envcheck.matrix import load_matrix

        matrix = load_matrix(args.matrix)  # validate now: a bad --matrix is exit 2 before any judging
        matrix_loader = lambda: matrix  # noqa: E731
    return judge(
        facts,
        matrix_loader=matrix_loader,
        fail_on=args.fail_on,
        select=_split_ids(args.select),
        ignore=_split_ids(args.ignore),
        notes=notes,
    )


def run(args: argparse.Namespace) -> int:
    if args.no_redact and not args.markdown:
        from envcheck.errors import UsageError

        raise UsageError("--no-redact only applies to --markdown")
    report = build_report(args)
    if args.save_facts:
        _write_facts(args.save_facts, report.facts)
    if args.apply:
        from envcheck.apply import apply_path

        return apply_path(args, report)
    if args.json:
        from envcheck.render.json import render
    elif args.markdown:
        from envcheck.render.markdown import render as render_md

        def render(r, verbose=False):  # noqa: ARG001
            return render_md(r, redact=not args.no_redact)
    else:
        from envcheck.render.terminal import render
    sys.stdout.write(render(report, verbose=args.verbose))
    return report.exit_code


def _write_facts(path: str, facts) -> None:
    from envcheck.facts import to_json
    from envcheck.errors import UsageError
    from envcheck.fsutil import atomic_write_text

    try:
        atomic_write_text(path, to_json(facts) + "\n")
    except OSError as exc:
        raise UsageError(f"--save-facts {path}: cannot write: {exc.strerror or exc}") from None
