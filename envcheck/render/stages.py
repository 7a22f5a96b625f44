"""What a long command is doing before its own progress starts (unpacking an archive, decoding
images, starting TensorFlow), in the manner of ``flutter doctor``: a spinner with the stage and its
elapsed seconds, and a line with a mark for each stage that took long enough to be worth a line.

On a colour terminal only. ``NO_COLOR`` or ``TERM=dumb`` on a terminal: one plain line per stage
as it starts. Not a terminal (a pipe, a log file, ``--json``): nothing at all.
"""

from __future__ import annotations

import time
from typing import Optional

from envcheck.printable import printable

WORTH_A_LINE = 1.0  # seconds: a stage shorter than this leaves no line behind


class Stages:
    """``stages("doing", done="done")`` starts a stage and ends the one before; ``close()`` ends
    the last. Thread-unsafe by design: one command drives it from its main thread."""

    def __init__(self, console=None, enabled: Optional[bool] = None) -> None:
        # lazy for start-up: rich is heavy (or absent), imported only where it is used
        from rich.console import Console

        # lazy for start-up: keeps render.terminal out of every import of render.stages
        from envcheck.render.terminal import use_color

        self.console = console or Console(stderr=True, highlight=False)
        terminal = self.console.is_terminal
        self.animated = terminal and use_color(self.console.file) if enabled is None else enabled
        self.plain = terminal and not self.animated if enabled is None else False
        self._status = None
        self._current: Optional[tuple[str, Optional[str], float]] = None

    def __call__(self, doing: str, done: Optional[str] = None) -> None:
        self._finish()
        # A stage names an archive or a folder: shown escaped, like every name from outside.
        doing, done = printable(doing), None if done is None else printable(done)
        self._current = (doing, done, time.perf_counter())
        if self.animated:
            if self._status is None:
                self._status = self.console.status(_Elapsed(self), spinner="dots")
                self._status.start()
            # Drawn now, not at the spinner's next tick: what comes next may hold the interpreter
            # for seconds (TensorFlow's import loads its libraries without letting the spinner's
            # thread run), and the user must see what is being waited for meanwhile.
            self._status.update(spinner="dots")
        elif self.plain:
            self.console.print(f"envcheck: {doing} ...", markup=False)

    def update(self, doing: str) -> None:
        """Say more of the current stage (a count that grows) without starting another: its
        clock runs on, and nothing is printed again where the display is plain."""
        if self._current is None:
            self(doing)
            return
        _, done, started = self._current
        self._current = (doing, done, started)

    def _finish(self) -> None:
        if self._current is None:
            return
        doing, done, started = self._current
        self._current = None
        seconds = time.perf_counter() - started
        if self.animated and done and seconds >= WORTH_A_LINE:
            # lazy for start-up: rich is heavy (or absent), imported only where it is used
            from rich.text import Text

            self.console.print(Text.assemble(("✔ ", "green"), done, (f"  {seconds:.1f} s", "dim")))

    def close(self) -> None:
        """End the last stage and take the spinner off the screen (also after Ctrl-C or an error)."""
        self._finish()
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self._current = None  # a stage that failed is not done
        self.close()


class _Elapsed:
    """The spinner's text, redrawn at each refresh with the current stage's seconds."""

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def __rich__(self):
        # lazy for start-up: rich is heavy (or absent), imported only where it is used
        from rich.text import Text

        current = self.stages._current
        if current is None:
            return Text("")
        doing, _, started = current
        return Text.assemble(doing, (f"  {time.perf_counter() - started:.0f} s", "dim"))
