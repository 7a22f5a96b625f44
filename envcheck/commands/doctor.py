"""``envcheck doctor``: probe (or read a snapshot), judge, render, exit with the verdict's code."""

from __future__ import annotations

import argparse
import errno
import os
import select
import stat
import time

from envcheck.commands.arguments import positive_float
from envcheck.errors import UsageError
from envcheck.facts import load_facts, to_json
from envcheck.filename_fields import expand
from envcheck.fsutil import atomic_write_text
from envcheck.invocation import set_target
from envcheck.matrix import load_matrix
from envcheck.probes.limits import DOCTOR_TIMEOUT, TF_TIMEOUT
from envcheck.render import emit
from envcheck.render.live import live_progress
from envcheck.rules.engine import RULES, load_rule_modules
from envcheck.verdict import judge

# Start-up: the probes (not needed to judge a --facts snapshot), the renderers of one format each
# (rich's, not needed for --json) and --apply are imported where they are used, so a run pays only
# for what it does.


def configure(p: argparse.ArgumentParser) -> None:
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object (schema in README)")
    out.add_argument("--markdown", action="store_true", help="print a paste-ready bug report (redacted)")
    p.add_argument("--no-redact", action="store_true", help="with --markdown: keep user, host, home, GPU UUIDs")
    p.add_argument("--facts", metavar="FILE", help="judge a saved snapshot (from --json) instead of this machine")
    p.add_argument(
        "--save-facts",
        metavar="FILE",
        help="also write the facts snapshot to FILE; %%n in it is the SLURM node number (else the host name), "
        "%%h the host name: one command for every node of a cluster",
    )
    p.add_argument("--python", metavar="PATH", help="probe this interpreter (a venv or conda env) instead")
    p.add_argument("--quick", action="store_true", help="skip everything that imports TensorFlow")
    p.add_argument(
        "--tf-timeout",
        type=positive_float,
        default=TF_TIMEOUT,
        metavar="SECONDS",
        help=f"TensorFlow worker timeout ({TF_TIMEOUT:g})",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=DOCTOR_TIMEOUT,
        metavar="SECONDS",
        help=f"stop every probe after this long in all ({DOCTOR_TIMEOUT:g}); what ran out of time is reported",
    )
    p.add_argument("--matrix", metavar="FILE", help="use this compatibility matrix instead of the bundled one")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "never"),
        default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )
    p.add_argument(
        "--require-gpu", action="store_true", help="exit 1 when no GPU is usable (for CI gates), whatever else holds"
    )
    p.add_argument(
        "--select", metavar="IDS", default="", help="only rules whose id starts with one of these (comma-separated)"
    )
    p.add_argument("--ignore", metavar="IDS", default="", help="skip rules whose id starts with one of these")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence and per-probe timings")
    p.add_argument("--apply", choices=("cpu", "gpu"), help="run the pip steps of the CPU or GPU path (asks first)")
    p.add_argument("--yes", action="store_true", help="with --apply: do not ask for confirmation")


def _split_ids(text: str) -> tuple[str, ...]:
    return tuple(part.strip().upper() for part in text.split(",") if part.strip())


def build_report(args: argparse.Namespace):
    """Facts from the snapshot or the probes, judged against the matrix."""
    notes: tuple[str, ...] = ()
    if args.facts:
        if args.python:
            raise UsageError("--facts and --python cannot be used together (a snapshot is already probed)")
        facts = load_facts(args.facts)
        notes = (f"judged from a saved snapshot: {args.facts}",)
    else:
        from envcheck.probes import ProbeOptions, collect  # start-up: see the module's note

        show = not (getattr(args, "json", False) or getattr(args, "markdown", False))
        with live_progress(args.quick, enabled=show) as progress:
            facts = collect(
                ProbeOptions(
                    python=args.python,
                    quick=args.quick,
                    tf_timeout=args.tf_timeout,
                    timeout=args.timeout,
                    progress=progress,
                )
            )
    matrix_loader = None
    if args.matrix:
        matrix = load_matrix(args.matrix)  # validate now: a bad --matrix is exit 2 before any judging
        matrix_loader = lambda: matrix  # noqa: E731
    return judge(
        facts,
        matrix_loader=matrix_loader,
        fail_on=args.fail_on,
        select=_split_ids(args.select),
        ignore=_split_ids(args.ignore),
        notes=notes,
        require_gpu=getattr(args, "require_gpu", False),
    )


def _check_usage(args: argparse.Namespace) -> None:
    """Flag conflicts and empty values: exit 2 before anything is probed."""
    if args.no_redact and not args.markdown:
        raise UsageError("--no-redact only applies to --markdown")
    if args.yes and not args.apply:
        raise UsageError("--yes only applies to --apply")
    if args.apply and args.facts:
        raise UsageError("--apply changes this machine; it cannot be used with --facts (a saved snapshot)")
    if args.apply and (args.json or args.markdown):
        raise UsageError("--apply talks to a person; it cannot be combined with --json or --markdown")
    for flag in ("facts", "save_facts", "python", "matrix"):
        value = getattr(args, flag)
        if value is not None and not value.strip():
            raise UsageError(f"--{flag.replace('_', '-')} needs a path, got an empty string")
    for flag in ("select", "ignore"):
        _check_ids(flag, _split_ids(getattr(args, flag)))


def _check_ids(flag: str, prefixes: tuple[str, ...]) -> None:
    """Every --select/--ignore prefix must name at least one rule: a typo must not pass silently."""

    if not prefixes:
        return
    load_rule_modules()
    known = (*RULES, "EC-INT-001")
    for prefix in prefixes:
        if not any(rule_id.startswith(prefix) for rule_id in known):
            raise UsageError(
                f"--{flag} {prefix}: no rule id starts with it (ids look like EC-LIB-001; see docs/rules.md)"
            )


def run(args: argparse.Namespace) -> int:
    _check_usage(args)
    save_to = None
    if args.save_facts:
        save_to = expand(args.save_facts, os.environ)  # a bad %-field is exit 2 before anything is probed
    report = build_report(args)
    _record_target(args, report)
    if save_to:
        _write_facts(save_to, report.facts)
    if args.apply:
        from envcheck.commands.apply import apply_path  # start-up: see the module's note

        return apply_path(args, report, rejudge=build_report)
    if args.json:
        from envcheck.render.json import render  # start-up: see the module's note
    elif args.markdown:
        from envcheck.render.markdown import render as render_md  # start-up: see the module's note

        def render(r, verbose=False):
            return render_md(r, redact=not args.no_redact)
    else:
        from envcheck.render.terminal import render  # start-up: see the module's note
    emit(render(report, verbose=args.verbose), is_json=args.json)
    return report.exit_code


def _record_target(args: argparse.Namespace, report) -> None:
    """What this doctor looked at, and how: the printed follow-ups (``doctor -v``, ``plan``,
    ``explain``) keep it."""

    options = [("--python", args.python), ("--facts", args.facts), ("--matrix", args.matrix), ("--quick", args.quick)]
    options += [("--select", args.select.strip() or None), ("--ignore", args.ignore.strip() or None)]
    if args.tf_timeout != TF_TIMEOUT:
        options.append(("--tf-timeout", f"{args.tf_timeout:g}"))
    if args.timeout != DOCTOR_TIMEOUT:
        options.append(("--timeout", f"{args.timeout:g}"))
    set_target("doctor", options, python_version=report.facts.python.version)


def _write_facts(path: str, facts) -> None:
    """Write the snapshot to ``path``: a new file gets the usual permissions (0666 less the umask),
    an existing one keeps its own, a write-protected one is refused. A device or a pipe
    (/dev/stdout, a FIFO) is written into, never replaced, and never waited on for long."""
    text = to_json(facts) + "\n"
    try:
        try:
            st = os.stat(path)  # follows symlinks
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            _write_into(path, text.encode("utf-8"))
            return
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
            if not mode & stat.S_IWUSR or not os.access(path, os.W_OK):
                raise UsageError(
                    f"--save-facts {path}: the file is write-protected (mode {mode:04o}); "
                    "make it writable or choose another file"
                )
        else:
            mode = 0o666 & ~_umask()
        # Through a symlink to its target: the link itself stays.
        target = os.path.realpath(path)
        atomic_write_text(target, text, mode=mode)
        if st is not None and hasattr(os, "chown") and os.geteuid() == 0 and st.st_uid != 0:
            try:
                os.chown(target, st.st_uid, st.st_gid)  # root replacing a user's file leaves it theirs
            except OSError:
                pass
    except OSError as exc:
        raise UsageError(f"--save-facts {path}: cannot write: {exc.strerror or exc}") from None


SAVE_FACTS_WAIT = 30.0  # seconds a pipe may take to get a reader, and its reader to read


def _write_into(path: str, data: bytes) -> None:
    """Write into a device or a pipe without ever blocking on it: a FIFO that nobody opens for
    reading, or whose reader stops reading, is given up on after SAVE_FACTS_WAIT seconds."""
    if not hasattr(os, "O_NONBLOCK"):  # Windows: no FIFOs to wait on
        with open(path, "wb") as fh:
            fh.write(data)
        return
    deadline = time.monotonic() + SAVE_FACTS_WAIT
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: a FIFO with no reader yet
                raise
            if time.monotonic() >= deadline:
                raise UsageError(
                    f"--save-facts {path}: is a pipe (FIFO) that nobody opened for reading within {SAVE_FACTS_WAIT:g} s"
                ) from None
            time.sleep(0.05)
    try:
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise UsageError(f"--save-facts {path}: nobody read the snapshot within {SAVE_FACTS_WAIT:g} s")
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current
