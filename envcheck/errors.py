"""The project's own exceptions and the exit codes they map to."""

from __future__ import annotations

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
