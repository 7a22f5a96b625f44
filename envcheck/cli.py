"""Command-line entry point: parse arguments, dispatch, map errors to exit codes.

Each command lives in its own module exposing ``configure(parser)`` and ``run(args) -> int``.
Command modules are imported lazily so ``envcheck --version`` and ``doctor --quick`` stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence

from envcheck import __version__, interrupts
from envcheck.errors import EXIT_INTERNAL, EXIT_USAGE, EnvcheckError
from envcheck.printable import printable
from envcheck.render import emit, json_text
from envcheck.render.width import reflow, terminal_width, wrap_lines

# name -> (module, one-line help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("envcheck.commands.doctor", "check this machine (or a saved snapshot) and give a verdict"),
    "plan": ("envcheck.commands.plan", "which TensorFlow/CUDA/cuDNN/Python to install, with commands"),
    "explain": ("envcheck.commands.explain", "explain a TensorFlow/CUDA error message or log"),
    "matrix": ("envcheck.commands.matrix", "query the compatibility matrix"),
    "validate": ("envcheck.commands.validate", "check that TensorFlow computes and trains on the GPUs"),
    "train": ("envcheck.commands.train", "the reference multi-GPU CIFAR-10 trainer (MiniGoogLeNet)"),
    "scan": ("envcheck.commands.scan", "every Python environment on this machine, each with its verdict"),
    "diff": ("envcheck.commands.diff", "what differs between two snapshots, what explains the verdicts first"),
    "fleet": ("envcheck.commands.fleet", "many nodes' snapshots in one table, grouped, the odd ones named"),
}


class _HelpFormatter(argparse.HelpFormatter):
    """--help at the width every command prints at (COLUMNS, the terminal's, else 100): the
    descriptions and epilogs, written as paragraphs, tables and commands, are rewrapped to it;
    commands and examples stay whole."""

    def __init__(self, prog: str) -> None:
        width = terminal_width()
        super().__init__(prog, width=width, max_help_position=min(30, max(16, width // 4)))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return reflow(text, width, indent)

    def start_section(self, heading: str | None) -> None:
        """A group's title wrapped too ("the machine to plan for (default: this one):")."""
        if heading and len(heading) + 1 > self._width - self._current_indent:
            heading = "\n".join(wrap_lines(heading, self._width - self._current_indent - 1))
        super().start_section(heading)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so every usage error is one line and exit 2,
    naming the command it belongs to and the nearest spelling of a mistyped word."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        return _HelpFormatter(prog=self.prog)

    def error(self, message: str) -> None:  # type: ignore[override]
        where = self.prog[len("envcheck") :].strip()
        raise _ArgparseUsage(f"{where + ': ' if where else ''}{_with_suggestion(self, message)}")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self._deepest(parsed).error(f"unrecognized argument{'s' if len(extra) > 1 else ''}: {' '.join(extra)}")
        return parsed

    def _deepest(self, parsed) -> argparse.ArgumentParser:
        """The (sub)command parser the arguments reached: ``matrix tf`` for ``matrix tf 2.15 --jsn``."""
        owner: argparse.ArgumentParser = self
        while True:
            nested = next(
                (
                    a.choices[getattr(parsed, a.dest)]
                    for a in owner._actions
                    if isinstance(a, argparse._SubParsersAction) and getattr(parsed, a.dest, None) in a.choices
                ),
                None,
            )
            if nested is None:
                return owner
            owner = nested


def _with_suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    """Add "did you mean --json?" to an unknown flag or command."""
    # lazy for start-up: keeps difflib out of `envcheck --help` (only a mistyped word needs it)
    import difflib

    searched = message[:2000]  # it echoes what was typed: searched within a bound
    unknown = re.search(r"unrecognized arguments?: (\S+)", searched)
    if unknown:
        flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
        near = difflib.get_close_matches(unknown.group(1).split("=", 1)[0], flags, n=1, cutoff=0.6)
        return message + (f" (did you mean {near[0]}?)" if near else "")
    choice = re.search(r"(?:argument ([^:]+): )?invalid choice: '([^']*)' \(choose from (.*)\)", searched)
    if choice:
        options = [c.strip().strip("'") for c in choice.group(3).split(",")]
        near = difflib.get_close_matches(choice.group(2), options, n=1, cutoff=0.5)
        what = (
            "unknown command" if choice.group(1) in (None, "COMMAND", "QUERY") else f"{choice.group(1)}: unknown choice"
        )
        return f"{what} {choice.group(2)!r}" + (
            f" (did you mean {near[0]}?)" if near else f"; choose from {', '.join(options)}"
        )
    return message


EXIT_CODES = """\
exit status:
  0  GPU ready, CPU only where there is no NVIDIA GPU (or all are hidden on purpose), not
     installed yet, or only warnings
  1  degraded or broken (a GPU that is there and does not work), a finding at the --fail-on level
     (default: error), or no usable GPU with --require-gpu
  2  bad usage or bad input (one line on stderr)
  3  an internal error: rerun with --traceback and report it
"""


class _ArgparseUsage(EnvcheckError):
    pass


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="envcheck",
        description="Will TensorFlow use your NVIDIA GPU? If not, what exactly to do.",
    )
    parser.add_argument("--version", action="version", version=f"envcheck {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback on errors (for bug reports)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--traceback",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show the full traceback on errors (for bug reports)",
        )
        if only is None or only == name:
            module = importlib.import_module(module_name)
            module.configure(p)
            if name == "doctor" and not p.epilog:
                p.epilog = EXIT_CODES
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if arg in COMMANDS:
            return arg
        if not arg.startswith("-"):
            return None
    return None


def _take_traceback(argv: list[str]) -> tuple[list[str], bool]:
    """``--traceback`` is global: it may stand anywhere before ``--`` (after ``matrix cuda X``
    too, where a nested parser would not know it), so it is taken out before parsing."""
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != "--traceback"] + argv[end:]
    return kept, len(kept) != len(argv)


_LONG_WORD = re.compile(r"\S{201,}")


def one_line(message: str) -> str:
    """A message as one line on a terminal: a value with a newline or an escape sequence in it
    (a hostile file name, a pasted flag) is shown escaped, never acted on, and a value thousands
    of characters long is shortened."""
    escaped = printable(message)
    return _LONG_WORD.sub(lambda m: f"{m.group()[:60]}... ({len(m.group())} characters)", escaped)


def main(argv: Sequence[str] | None = None) -> int:
    argv, want_traceback = _take_traceback(list(sys.argv[1:] if argv is None else argv))

    interrupts.install()
    try:
        # Only the chosen command's module is imported: startup cost stays with that command.
        parser = build_parser(only=_command_in(argv) or "")
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return EXIT_USAGE
        module = importlib.import_module(COMMANDS[args.command][0])
        # lazy for start-up: keeps invocation out of `envcheck --help`
        from envcheck.invocation import targeting

        with targeting():  # what the command records for its follow-ups ends with it
            return int(module.run(args))
    except EnvcheckError as exc:
        if want_traceback:
            raise
        print(f"envcheck: error: {one_line(str(exc))}", file=sys.stderr)
        _json_error(argv, exc.exit_code, str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        print("envcheck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if interrupts.happened() and not want_traceback:  # Ctrl-C that native code turned into another error
            print("envcheck: interrupted", file=sys.stderr)
            return 130
        if want_traceback:
            raise
        print(
            f"envcheck: internal error: {type(exc).__name__}: {one_line(str(exc))}\n"
            "This is a bug in envcheck. Rerun with --traceback and include the output in a report.",
            file=sys.stderr,
        )
        _json_error(argv, EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_INTERNAL


def _wants_json(argv: Sequence[str]) -> bool:
    end = list(argv).index("--") if "--" in argv else len(argv)
    words = list(argv[:end])
    return (
        "--json" in words
        or "--format=json" in words
        or any(a == "--format" and b == "json" for a, b in zip(words, words[1:]))
    )


def _json_error(argv: Sequence[str], code: int, message: str) -> None:
    """A run asked for --json gets its one document on stdout even when it fails: the envelope,
    the exit code and the error (the same line is on stderr for a person)."""
    if not _wants_json(argv):
        return

    try:
        emit(json_text(_command_in(argv) or "envcheck", {"error": message}, code), is_json=True)
    except (OSError, ValueError):
        pass  # stdout itself is what failed
