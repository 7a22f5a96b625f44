"""``envcheck explain``: error text or a whole log in; what each known message means and the fix out.

Exit codes: 0 when at least one known message was found (harmless ones count), 1 when none was
(including empty input), 2 for bad usage or an unreadable input file.
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Optional

from envcheck.errors import UsageError
from envcheck.explain import explain, load_patterns
from envcheck.explain.context import shell_for
from envcheck.explain.machine import MachineContext, assess_causes
from envcheck.explain.report import ExplainReport
from envcheck.facts import load_facts
from envcheck.fsutil import open_user_file
from envcheck.invocation import set_target
from envcheck.matrix import load_matrix
from envcheck.probes import ProbeOptions, collect
from envcheck.render import emit
from envcheck.render.explain import render_catalogue, render_catalogue_json, render_json, render_text

GZIP_MAGIC = b"\x1f\x8b"

EPILOG = """\
input: the message as arguments (quote it), '-' to read standard input (paste the message, then
Ctrl-D; a message with quotes of its own keeps them this way), or --file LOG (a whole TensorFlow
log works; gzip-compressed logs are read as they are, from a file or a pipe).
exit status: 0 when at least one known message was found, 1 when none was (or the input was
empty), 2 for bad usage or an unreadable file.
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("text", nargs="*", metavar="TEXT", help="the error text; '-' reads standard input")
    p.add_argument("--file", metavar="LOG", help="read the text from this file ('-' for standard input)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-probe", action="store_true", help="do not look at this machine; general advice only")
    p.add_argument("--facts", metavar="FILE", help="make the advice specific to a saved snapshot (doctor --json)")
    p.add_argument("--python", metavar="PATH", help="look at this interpreter (a venv or conda env) instead")
    p.add_argument("--matrix", metavar="FILE", help="use this compatibility matrix instead of the bundled one")
    p.add_argument("--patterns", metavar="FILE", help="use this patterns file instead of the bundled one")
    p.add_argument("--hide-harmless", action="store_true", help="leave harmless notices out of the text output")
    p.add_argument(
        "--list", action="store_true", help="list every message envcheck knows and exit (with --json: as JSON)"
    )


def run(args: argparse.Namespace) -> int:
    catalogue = load_patterns(args.patterns)
    if args.list:
        if args.text or args.file is not None:
            raise UsageError("--list shows every known message; give it no text and no --file")
        emit(render_catalogue_json(catalogue) if args.json else render_catalogue(catalogue), is_json=args.json)
        return 0
    _check_options(args)

    set_target("explain", [("--python", args.python), ("--facts", args.facts), ("--matrix", args.matrix)])
    # Bad --matrix or --facts files are usage errors whatever the text holds, so read them first.
    matrix_loader = _matrix_loader(args.matrix)
    snapshot = _load_snapshot(args.facts)
    with _open_input(args) as (stream, source):
        scan = catalogue.scan(stream)
    # Looking at the machine only helps explanations that have machine-specific advice.
    wants_facts = any(
        o.pattern.specialize or o.pattern.rule_ids or any(c.rule_ids for c in o.pattern.causes)
        for o in scan.occurrences
    )
    ctx = _machine_context(args, matrix_loader, snapshot, look=wants_facts)

    # Each cause the doctor's rules can check is marked confirmed or ruled out on this machine.
    explanations = explain(scan, ctx, assess=None if ctx.facts is None else lambda o, c: assess_causes(o, c, ctx))
    report = ExplainReport(
        source=source,
        scan=scan,
        explanations=explanations,
        machine=ctx.origin if ctx.facts is not None else "",
        machine_os=ctx.os,
        # the machine's shell; without one, the shell of the platform the log itself comes from
        shell=ctx.shell if ctx.os else shell_for(scan.context.get("log_os")),
        problems=tuple(ctx.problems),
    )
    if args.json:
        emit(render_json(report), is_json=True)
    else:
        emit(render_text(report, show_harmless=not args.hide_harmless))
    return report.exit_code


def _check_options(args: argparse.Namespace) -> None:
    if args.file is not None and args.text:
        raise UsageError("give the text as arguments or with --file, not both")
    if args.file is None and not args.text and _stdin_is_piped():
        args.text = ["-"]  # `some-command | envcheck explain` reads the pipe, as grep or jq would
    if args.file is None and not args.text:
        raise UsageError(
            "nothing to explain: give the error text as an argument, '-' to read standard input, or --file LOG"
        )
    if args.facts and (args.no_probe or args.python):
        raise UsageError("--facts replaces looking at this machine; it cannot be combined with --no-probe or --python")
    if args.no_probe and args.python:
        raise UsageError("--python says which interpreter to look at; --no-probe says not to look")


def _stdin_is_piped() -> bool:
    """Whether standard input is a pipe or a file (not a terminal, not closed)."""
    stream = sys.stdin
    if stream is None:
        return False
    try:
        return not stream.isatty() and stream.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        return False  # pytest's capture or a detached stream: nothing to read


def _matrix_loader(path: Optional[str]):
    if not path:
        return None

    matrix = load_matrix(path)  # validated now: a bad --matrix is exit 2 before any output
    return lambda: matrix


@contextmanager
def _open_input(args: argparse.Namespace) -> Iterator[tuple[IO[bytes], str]]:
    if args.text and args.text != ["-"]:
        yield io.BytesIO(" ".join(args.text).encode("utf-8", "surrogateescape")), "the argument"
        return
    if args.text == ["-"] or args.file == "-":
        stdin = sys.stdin.buffer
        if sys.stdin.isatty():
            print(
                "envcheck explain: reading standard input; end it with Ctrl-D (Ctrl-Z Enter on Windows)",
                file=sys.stderr,
            )
            # A terminal gives end-of-file once per Ctrl-D; the scanner reads in chunks and would
            # wait for a second one. What is pasted into a terminal is read whole, up to the first.
            yield io.BytesIO(stdin.read()), "standard input"
            return
        peek = getattr(stdin, "peek", None)
        if peek is not None and peek(2)[:2] == GZIP_MAGIC:  # `cat train.log.gz | envcheck explain -`
            with gzip.GzipFile(fileobj=stdin, mode="rb") as unzipped:
                try:
                    yield unzipped, "standard input"  # type: ignore[misc]
                except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                    raise UsageError(f"standard input: damaged gzip data ({exc})") from None
            return
        yield stdin, "standard input"
        return
    path = args.file
    fh = open_user_file(path, "a log file", UsageError, label=f"--file {path}")
    try:
        if fh.read(2) == GZIP_MAGIC:
            fh.seek(0)
            stream: IO[bytes] = gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[assignment]
        else:
            fh.seek(0)
            stream = fh
        try:
            yield stream, path
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise UsageError(f"--file {path}: damaged gzip file ({exc})") from None
        except IsADirectoryError:  # a directory that open() accepted (some platforms)
            raise UsageError(f"--file {path}: is a directory, not a log file") from None
        except OSError as exc:
            raise UsageError(f"--file {path}: cannot read: {exc.strerror or exc}") from None
    finally:
        fh.close()


def _load_snapshot(path: Optional[str]):
    if not path:
        return None

    return load_facts(path)


def _machine_context(args: argparse.Namespace, matrix_loader, snapshot, look: bool):
    if args.no_probe or not look:
        return MachineContext(None, matrix_loader, origin="")
    if snapshot is not None:
        return MachineContext(snapshot, matrix_loader, origin=f"the snapshot {args.facts}")

    facts = collect(ProbeOptions(python=args.python, quick=True))
    platform = facts.platform
    described = f"this machine ({platform.os or 'unknown OS'}, Python {facts.python.version or '?'})"
    return MachineContext(facts, matrix_loader, origin=described)
