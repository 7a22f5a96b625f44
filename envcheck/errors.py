"""The project's own exceptions and the exit codes they map to."""

from __future__ import annotations

import importlib.util
import sys

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class EnvcheckError(Exception):
    """Base class: an error envcheck explains in one line instead of a traceback."""

    exit_code = EXIT_USAGE


class UsageError(EnvcheckError):
    """Bad flags, bad arguments, or bad input files: exit 2."""


class FactsError(EnvcheckError):
    """A facts snapshot that cannot be read: wrong shape, bad JSON, future schema."""


class MatrixError(EnvcheckError):
    """compat_matrix.yaml (or a --matrix file) is malformed."""


class NotFoundError(EnvcheckError):
    """A query the matrix does not cover (exit 1: the question was fine, the answer is 'unknown')."""

    exit_code = EXIT_FINDINGS


class MissingDependencyError(EnvcheckError):
    """A command needs a package that is not installed (TensorFlow for train/validate): exit 2."""


def require_modules(command: str, extra: str, *modules: str) -> None:
    """Fail with one line naming the pip command when ``modules`` are not importable.

    Looks the modules up without importing them, so the check costs nothing when they are there.
    """

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        names = [_PIP_NAMES.get(m, m) for m in missing]
        verb = "is" if len(missing) == 1 else "are"
        raise MissingDependencyError(
            f"{command} needs {', '.join(names)}, which {verb} not installed in this interpreter; "
            f"install with: {_pip_install(names)} (envcheck's [{extra}] extra)"
        )


def _pip_install(names: list[str]) -> str:
    """The pip of the interpreter envcheck runs in: a bare ``pip`` may be another one (a venv that
    is not activated, as in the README's quick start)."""
    # lazy for start-up: keeps shell (and shlex) out of `envcheck --help`, which imports errors
    from envcheck import shell

    return shell.run(sys.executable, ("-m", "pip", "install", *names), shell.BASH)


_PIP_NAMES = {"PIL": "pillow", "yaml": "PyYAML"}
