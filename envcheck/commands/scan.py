"""``envcheck scan``: every Python environment on this machine, each with the doctor's verdict."""

from __future__ import annotations

import argparse
import os
import threading

from envcheck.render import emit
from envcheck.scan.discover import places_from
from envcheck.scan.run import FULL_TIMEOUT, QUICK_TIMEOUT
from envcheck.words import plural

EPILOG = f"""\
Where it looks: the interpreter envcheck runs in, every python/python3/python3.X on PATH,
virtualenvs in the current folder and its subfolders, ~/.virtualenvs ($WORKON_HOME), ~/.venv*,
pipenv's and poetry's folders, pyenv's versions, conda's environments (conda env list, or
~/.conda/environments.txt), and Jupyter's kernels (jupyter kernelspec list, or the kernelspec
folders: a kernel's argv[0] is its interpreter). pipx's environments are left out. One
interpreter reached several ways is one line. Nothing is changed anywhere.

Each environment gets the doctor (--quick unless --full), {min(4, os.cpu_count() or 1)} at a time (--jobs), each
within --timeout ({QUICK_TIMEOUT:g} s quick, {FULL_TIMEOUT:g} s full), all within --budget (asking each
interpreter what it is included); what does not finish in time is listed as not checked. A kernel's
own variables (kernel.json's env) reach only its interpreter, never envcheck. A folder or file that
cannot be read is one "skipped:" line, and the scan goes on.

exit status:
  0  every environment was checked (whatever its verdict: see the table)
  1  something the scan itself found: a Jupyter kernel that cannot start, an interpreter that does
     not run, an environment not checked in time; with --fail-on, also a doctor's finding at that
     level in any environment
  2  bad usage (one line on stderr)
  3  an internal error: rerun with --traceback and report it
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument(
        "--json", action="store_true", help="print one JSON document, with every environment's doctor report"
    )
    p.add_argument(
        "--full", action="store_true", help="the full doctor in each environment (imports TensorFlow: slower)"
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help=f"for each environment (default: {QUICK_TIMEOUT:g}, or {FULL_TIMEOUT:g} with --full)",
    )
    p.add_argument(
        "--budget",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="for the whole scan (default: four times --timeout)",
    )
    p.add_argument(
        "--jobs",
        type=_count,
        default=None,
        metavar="N",
        help="environments checked at once (default: the CPUs, at most 4)",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "never"),
        default="never",
        help="also exit 1 for a doctor's finding of this severity in any environment (default: never)",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="every way each environment was reached, and its verdict in full"
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


class ScanProgress:
    """What the scan is doing while a person waits (render/stages.py): looking for environments,
    then the doctor on each, counted as they finish. Nothing when stderr is not a terminal."""

    def __init__(self, full: bool, enabled: bool) -> None:
        # lazy for start-up: keeps render.stages out of `envcheck scan --help` and the paths that do not use it
        from envcheck.render.stages import Stages

        self.stages = Stages(enabled=None if enabled else False)
        self.mode = "the full doctor" if full else "the quick doctor"
        self.total = self.done = 0
        self.lock = threading.Lock()  # environments finish on the scan's worker threads

    def __enter__(self) -> ScanProgress:
        self.stages("Looking for Python environments (PATH, virtualenvs, pyenv, conda, Jupyter kernels)")
        return self

    def __exit__(self, *exc) -> None:
        self.stages.__exit__(*exc)

    def found(self, environments) -> None:
        self.total = len(environments)
        self.stages(self._checking())

    def checked(self, env) -> None:
        with self.lock:
            self.done += 1
            self.stages.update(self._checking())

    def _checking(self) -> str:
        return f"Checking {plural(self.total, 'environment')} with {self.mode}: {self.done} of {self.total} done"


def run(args: argparse.Namespace) -> int:
    # lazy for start-up: keeps scan.result out of `envcheck scan --help` and the paths that do not use it
    from envcheck.scan.result import exit_code, scan

    environ = dict(os.environ)
    timeout = args.timeout or (FULL_TIMEOUT if args.full else QUICK_TIMEOUT)
    budget = args.budget or 4 * timeout
    jobs = args.jobs or max(1, min(4, os.cpu_count() or 1))
    places = places_from(environ)
    with ScanProgress(args.full, enabled=not args.json) as shown:
        result = scan(
            environ,
            places,
            full=args.full,
            timeout=timeout,
            budget=budget,
            jobs=jobs,
            progress=shown.checked,
            found=shown.found,
        )
    code = exit_code(result, args.fail_on)
    if args.json:
        # lazy for start-up: keeps render.scan out of `envcheck scan --help` and the paths that do not use it
        from envcheck.render.scan import render_json

        emit(render_json(result, code), is_json=True)
    else:
        # lazy for start-up: keeps render.scan out of `envcheck scan --help` and the paths that do not use it
        from envcheck.render.scan import render

        emit(render(result, home=str(places.home), verbose=args.verbose))
    return code
