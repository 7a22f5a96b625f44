"""Ctrl-C, remembered: native code (TensorFlow's runtime) can turn the KeyboardInterrupt it is
handed into another exception (a SystemError from deep inside a call), which would then read as a
bug in envcheck. The CLI installs this handler; whoever catches an exception asks ``happened()``."""

from __future__ import annotations

import signal
import threading

_state = {"interrupted": False}


def _on_sigint(signum, frame) -> None:
    _state["interrupted"] = True
    raise KeyboardInterrupt


def install() -> None:
    """Remember Ctrl-C from now on (main thread only, and only over Python's own default handler)."""
    _state["interrupted"] = False
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, _on_sigint)


def happened() -> bool:
    """Whether Ctrl-C was pressed since ``install()``."""
    return _state["interrupted"]
