"""Link 1: the interpreter. TensorFlow ships 64-bit wheels only."""

from __future__ import annotations

from typing import Iterator

from envcheck.findings import Command, Fix
from envcheck.rules.engine import Context, Hit, rule


@rule("EC-PY-001", "32-bit Python", "error", "python")
def python_32bit(ctx: Context) -> Iterator[Hit]:
    """TensorFlow publishes no 32-bit wheels; pip reports 'no matching distribution'."""
    py = ctx.facts.python
    if not py.bits or py.bits == 64:
        return
    windows = ctx.os == "windows"
    yield Hit(
        title=f"Python {py.version} is {py.bits}-bit; TensorFlow needs a 64-bit Python",
        detail=(
            "TensorFlow is only built for 64-bit interpreters, so pip finds no matching "
            "distribution and no GPU (or CPU) build can be installed into this one."
        ),
        evidence=(("python.bits", str(py.bits)), ("python.executable", py.executable)),
        fix=Fix(
            text=(
                "Install a 64-bit Python (on Windows the 'Windows installer (64-bit)', x86-64), "
                "create a fresh virtual environment with it, and install TensorFlow there."
            ),
            commands=(
                Command("py -3-64 -m venv tf-env", shell="powershell")
                if windows
                else Command("python3 -m venv tf-env", shell="bash"),
                Command('py -3-64 -c "import struct; print(struct.calcsize(\'P\') * 8)"', shell="powershell")
                if windows
                else Command("tf-env/bin/python -c \"import struct; print(struct.calcsize('P') * 8)\"", shell="bash"),
            ),
            link="https://www.python.org/downloads/",
        ),
    )
