"""Live progress while the doctor probes, in the manner of ``flutter doctor``: one line per link of
the chain, a spinner until the probes behind it have answered, the TensorFlow import last with its
elapsed seconds. Only on a terminal with colour; the final report replaces it (transient).

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
        from rich.spinner import Spinner
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 0))
        grid.add_column(width=2)
        grid.add_column(width=2)
        grid.add_column(width=max(len(t) for t in SHORT_TITLES.values()) + 2, no_wrap=True)
        grid.add_column(no_wrap=True)
        with self.lock:
            for link in LINK_NAMES:
                probes = LINK_PROBES[link]
                title = SHORT_TITLES[link]
                if link in ("tensorflow", "placement") and self.quick:
                    grid.add_row("", Text("–", style="dim"), title, Text("not run (--quick)", style="dim"))
                elif all(p in self.done for p in probes):
                    grid.add_row("", Text("✔", style="green"), title, Text("checked", style="dim"))
                else:
                    note = "waiting"
                    if "tensorflow" in probes and "tensorflow" in self.started:
                        note = f"importing TensorFlow… {time.perf_counter() - self.started['tensorflow']:.1f} s"
                    grid.add_row("", Spinner("dots", style="cyan"), title, Text(note, style="dim"))
        return grid


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
    from rich.console import Console
    from rich.live import Live

    progress = Progress(quick)
    console = Console(file=stream, highlight=False, markup=False, emoji=False)
    with Live(
        progress.renderable(),
        console=console,
        refresh_per_second=12,
        transient=True,
        get_renderable=progress.renderable,
    ):
        yield progress
