"""Live progress while the doctor probes, in the manner of ``flutter doctor``: one line per link of
the chain, a spinner until the probes behind it have answered, then a neutral mark ("checked": the
verdict on it comes with the report), the TensorFlow import last with its elapsed seconds. Only on
a terminal with colour, and only when the probes take longer than a quarter of a second (a quick
doctor is done by then); the final report replaces it (transient).

``NO_COLOR`` or ``TERM=dumb`` on a terminal: no animation, one plain line on stderr when the wait
is for TensorFlow. Not a terminal, ``--json`` or ``--markdown``: nothing at all.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

from envcheck.findings import LINK_NAMES
from envcheck.render.terminal import SHORT_TITLES, use_color

# Seconds before the live lines appear: a wait shorter than this needs no display.
SHOW_AFTER = 0.25

# A link whose probes have answered: neutral, since the rules have not judged it yet (a green tick
# here would say "ok" of a link the report then marks "–" or "!").
DONE_MARK = "•"

# Which probes each link waits for.
LINK_PROBES = {
    "python": ("python",),
    "gpu": ("pci", "nvml"),
    "driver": ("driver", "nvml"),
    "compute": ("nvml",),
    "libraries": ("libraries",),
    "tensorflow": ("tensorflow",),
    "placement": ("tensorflow",),
    "environment": ("environment",),
    "multigpu": ("nvml", "pci"),
}


class Progress:
    """Probe events in, the live lines out (thread-safe: NVML reports from its own thread)."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.started: dict[str, float] = {}
        self.done: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, name: str, event: str) -> None:
        with self.lock:
            if event == "start":
                self.started.setdefault(name, time.perf_counter())
            elif event == "done":
                self.done.add(name)

    def renderable(self):
        """The lines as one rich Text (no Table: the live display must cost no start-up time)."""
        # lazy for start-up: rich is heavy (or absent), imported only where it is used
        from rich.spinner import Spinner
        from rich.text import Text

        width = max(len(t) for t in SHORT_TITLES.values()) + 2
        now = time.perf_counter()
        lines = Text()
        with self.lock:
            for number, link in enumerate(LINK_NAMES):
                probes = LINK_PROBES[link]
                title = SHORT_TITLES[link].ljust(width)
                if link in ("tensorflow", "placement") and self.quick:
                    mark, note = Text("–", style="dim"), "not run (--quick)"
                elif all(p in self.done for p in probes):
                    # Done, not judged: whether the link is ok is known only from the report.
                    mark, note = Text(DONE_MARK), "checked"
                else:
                    mark, note = Spinner("dots", style="cyan").render(now), "waiting"
                    if "tensorflow" in probes and "tensorflow" in self.started:
                        note = f"importing TensorFlow… {now - self.started['tensorflow']:.1f} s"
                if number:
                    lines.append("\n")
                lines.append("  ")
                lines.append_text(mark)
                lines.append(" " + title)
                lines.append(note, style="dim")
        lines.no_wrap = True
        return lines


@contextmanager
def live_progress(quick: bool, enabled: Optional[bool] = None, stream=None) -> Iterator[Optional[Progress]]:
    """A progress receiver for ``ProbeOptions.progress`` while the block runs; None when nothing is
    to be shown (not a terminal)."""
    stream = stream or sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if enabled is False or not tty:
        yield None
        return
    if not use_color(stream):
        progress = Progress(quick)
        done = threading.Event()

        def plain() -> None:
            # One plain line, only if the TensorFlow check is what keeps the doctor waiting.
            if not done.wait(1.0) and not quick:
                print("envcheck: checking TensorFlow (its import can take a while)...", file=sys.stderr, flush=True)

        waiter = threading.Thread(target=plain, daemon=True)
        waiter.start()
        try:
            yield progress
        finally:
            done.set()
        return
    progress = Progress(quick)
    state: dict[str, object] = {}
    lock = threading.Lock()

    def start() -> None:
        # Only when the probes are still running after a moment: a quick doctor that is done by
        # then draws nothing and pays nothing for the display (not even rich.live's import).
        from rich.console import Console

        # lazy for start-up: rich is heavy (or absent), imported only where it is used
        from rich.live import Live

        with lock:
            if state.get("closed"):
                return
            console = Console(file=stream, highlight=False, markup=False, emoji=False)
            live = Live(
                progress.renderable(),
                console=console,
                refresh_per_second=12,
                transient=True,
                get_renderable=progress.renderable,
            )
            live.start()
            state["live"] = live

    timer = threading.Timer(SHOW_AFTER, start)
    timer.daemon = True
    timer.start()
    try:
        yield progress
    finally:
        timer.cancel()
        with lock:
            state["closed"] = True
            live = state.get("live")
            if live is not None:
                live.stop()  # type: ignore[attr-defined]
