"""TensorFlow without its start-up noise: its C++ log lines (oneDNN notices, "failed call to
cuInit" on a machine without a GPU, absl's "log messages before InitializeLog") and its Python
warnings ("Using MirroredStrategy eagerly has significant overhead") are captured, not printed,
while TensorFlow is imported and its devices set up. With ``verbose`` they are printed as they
were; when the import fails they are printed too, since then they are the explanation, except
when the failure is one of envcheck's own one-line errors (bad input needs no TensorFlow log).

The doctor never needs this (its TensorFlow runs in a subprocess whose output it reads); train,
validate and ``envcheck.runtime`` run TensorFlow in their own process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator

from envcheck.errors import EnvcheckError


class Captured:
    """What TensorFlow printed while quiet: read with ``text``, printed again with ``replay``."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def replay(self, stream=None) -> None:
        stream = stream or sys.stderr
        for line in self.lines:
            print(line, file=stream)


@contextlib.contextmanager
def quiet_tensorflow(verbose: bool = False) -> Iterator[Captured]:
    """Capture what TensorFlow prints at import and device set-up (file descriptor 2, Python
    warnings, TensorFlow's logger) unless ``verbose``."""
    captured = Captured()
    if verbose:
        yield captured
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    failed = False
    with tempfile.TemporaryFile(mode="w+b") as sink, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saved = _redirect_fd2(sink)
        loggers = _quiet_loggers()
        try:
            yield captured
        except EnvcheckError:
            raise
        except BaseException:
            failed = True
            raise
        finally:
            _restore_fd2(saved)
            for logger, level in loggers:
                logger.setLevel(level)
            sink.seek(0)
            captured.lines = sink.read(1 << 20).decode("utf-8", "replace").splitlines()
            captured.lines += [f"{w.category.__name__}: {w.message}" for w in caught if _from_tensorflow(w)]
            others = [w for w in caught if not _from_tensorflow(w)]
            for w in others:  # warnings that are not TensorFlow's noise pass through
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if failed:
                captured.replay()


def _redirect_fd2(sink):
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        return saved
    except (OSError, ValueError, AttributeError):
        return None


def _restore_fd2(saved) -> None:
    if saved is None:
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(saved, 2)
    os.close(saved)


def _quiet_loggers():
    """TensorFlow's Python logger ("WARNING:tensorflow:Using MirroredStrategy eagerly...")."""
    out = []
    for name in ("tensorflow", "absl"):
        logger = logging.getLogger(name)
        out.append((logger, logger.level))
        logger.setLevel(logging.ERROR)
    return out


def _from_tensorflow(w) -> bool:
    path = (w.filename or "").replace("\\", "/")
    return any(part in path for part in ("/tensorflow/", "/keras/", "/tf_keras/", "/absl/", "/ml_dtypes/"))
