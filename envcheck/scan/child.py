"""The doctor on one environment, in a child process of its own, isolated from what it checks.

A Jupyter kernel's ``env`` (kernel.json) is that kernel's business: its ``PYTHONPATH`` or
``LD_PRELOAD`` must reach the kernel's interpreter, never envcheck. So the child is started with
``python -I`` (no ``PYTHON*`` variables, no user site, no current folder on ``sys.path``) and an
environment of only what envcheck itself needs (``child_environment``); the environment the
probed interpreter runs in (the scan's, with the kernel's variables over it) travels on standard
input, with envcheck's own import path, and only the probes hand it to the interpreter they run.

The child answers as ``envcheck doctor --json --python ...`` does: the report on standard output,
exit 0 or 1; bad input (an interpreter that does not run) one ``envcheck: error:`` line, exit 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from envcheck import procs
from envcheck.errors import EnvcheckError
from envcheck.printable import printable
from envcheck.render import emit

# What envcheck's own process needs from the scan's environment: where programs are (nvidia-smi,
# ldconfig), who and where the user is, the locale, the temporary folder, Windows' system
# folders, and the loader path NVML is found on (NVML loads into envcheck's process). Nothing a
# kernel sets is among them, and no PYTHON* variable (``-I`` would ignore it anyway).
_CHILD_NEEDS = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "LD_LIBRARY_PATH",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "NO_COLOR",
)

# Runs in the child (``python -I -c``): envcheck's import path first, then the request's doctor.
BOOT = (
    "import json, sys; request = json.loads(sys.stdin.buffer.read().decode('utf-8', 'surrogateescape')); "
    "sys.path[:0] = request['path']; from envcheck.scan.child import main; sys.exit(main(request))"
)


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """envcheck's own environment in the child: the scan's, cut to what envcheck needs."""
    return {name: environ[name] for name in _CHILD_NEEDS if name in environ}


def request(interpreter: str, probe_environ: Mapping[str, str], *, full: bool, timeout: float) -> bytes:
    """What the child is asked (on its standard input)."""
    path = [p for p in sys.path if p]  # "" is the current folder: never
    body = {
        "path": path,
        "python": interpreter,
        "environ": dict(probe_environ),
        "quick": not full,
        "timeout": timeout,
        "tf_timeout": max(1.0, timeout - 5),
    }
    return json.dumps(body).encode("utf-8", "surrogateescape")


def main(body: dict[str, Any]) -> int:
    """The doctor's ``--json`` report on the request's interpreter, with the request's environment."""

    try:
        with procs.adopting_orphans():  # what the probed interpreter leaves behind is ended with it
            return _doctor(body)
    except EnvcheckError as exc:
        print(f"envcheck: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - the scan reports it as this environment's failure
        print(f"envcheck: internal error: {type(exc).__name__}: {printable(str(exc))}", file=sys.stderr)
        return 3


def _doctor(body: dict[str, Any]) -> int:
    # lazy for start-up: keeps probes, render.json, verdict out of every import of scan.child
    from envcheck.probes import ProbeOptions, collect
    from envcheck.render.json import render
    from envcheck.verdict import judge

    options = ProbeOptions(
        python=body["python"],
        quick=bool(body["quick"]),
        timeout=float(body["timeout"]),
        tf_timeout=float(body["tf_timeout"]),
        environ=dict(body["environ"]),
    )
    report = judge(collect(options))
    emit(render(report), is_json=True)
    return report.exit_code
