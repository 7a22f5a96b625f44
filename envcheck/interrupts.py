"""Ctrl-C, remembered: native code (TensorFlow's runtime) can turn the KeyboardInterrupt it is
handed into another exception (a SystemError from deep inside a call), which would then read as a
bug in envcheck. And an interrupt that lands while Python runs a finalizer (TensorFlow's
``AtomicFunction.__del__``, at any garbage collection) is only printed, never raised, so the run
would go on as if Ctrl-C had not been pressed. The CLI installs this handler; whoever catches an
exception asks ``happened()``, and a long loop calls ``check()`` at its safe points."""

from __future__ import annotations

import signal
import sys
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
        if getattr(sys.unraisablehook, "_envcheck", False) is False:
            sys.unraisablehook = _quiet_about_interrupts(sys.unraisablehook)


def _quiet_about_interrupts(previous):
    """The unraisable hook, without the traceback of a Ctrl-C that landed in a finalizer: it is
    remembered, and ``check()`` raises it where it can be raised."""

    def hook(unraisable) -> None:
        if unraisable.exc_type is KeyboardInterrupt and _state["interrupted"]:
            return
        previous(unraisable)

    hook._envcheck = True
    return hook


def happened() -> bool:
    """Whether Ctrl-C was pressed since ``install()``."""
    return _state["interrupted"]


def check() -> None:
    """Raise the KeyboardInterrupt of a Ctrl-C that was pressed but swallowed (in a finalizer)."""
    if _state["interrupted"]:
        raise KeyboardInterrupt
