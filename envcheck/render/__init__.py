"""Renderers: every command's output, in every format, drawn from the command's result object.

One interface for all of them: a command builds a result (a doctor ``Report``, a ``Plan``, an
explain report, a matrix answer, a validation report, a training summary) and a renderer turns it
into text: ``render_x(result, ...) -> str``; nothing here judges or probes. Every ``--json`` is one
document in one envelope (``document``): ``schema_version`` (of the JSON, not of the facts inside),
``envcheck_version``, ``command`` and ``exit_code`` first, then the command's own keys.

  terminal, markdown   the doctor's report
  plan                 envcheck plan: text and the bash / PowerShell scripts
  matrix               envcheck matrix answers
  validate             envcheck validate's checks
"""

from __future__ import annotations

import json as _json  # not "json": envcheck.render.json is a submodule of this package
import sys
from typing import Any, Optional, TextIO

from envcheck import __version__
from envcheck.printable import printable_json

# The version of every --json document's own layout. 2: the envelope, ``url`` for pages and
# ``link`` for chain links, ``gpus`` in the doctor's report. 3: one key per meaning for drivers
# (``driver_floor``: the oldest driver that runs a build, in plan and matrix; ``min_driver``: what a
# CUDA release itself asks for), the "degraded" verdict and ``finished``, each GPU's chain (``links``).
SCHEMA_VERSION = 3


def document(command: str, body: dict[str, Any], exit_code: int) -> dict[str, Any]:
    """The one JSON envelope: the same four keys first in every command's --json."""
    head = {
        "schema_version": SCHEMA_VERSION,
        "envcheck_version": __version__,
        "command": command,
        "exit_code": exit_code,
    }
    return {**head, **{k: v for k, v in body.items() if k not in head}}


def json_text(command: str, body: dict[str, Any], exit_code: int, ensure_ascii: bool = False) -> str:
    """The document as JSON text: every value exact, and no character a terminal would act on
    written raw (C1 controls, bidi overrides and the like as \\uXXXX, as JSON allows)."""
    return printable_json(_json.dumps(document(command, body, exit_code), indent=2, ensure_ascii=ensure_ascii)) + "\n"


def emit(text: str, stream: Optional[TextIO] = None, *, is_json: bool = False) -> None:
    """Write output; a console whose encoding lacks a character gets '?' (or, for JSON, \\u escapes,
    which keep every value)."""
    out = stream or sys.stdout
    encoding = getattr(out, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        if is_json:
            text = _json.dumps(_json.loads(text), indent=2, ensure_ascii=True) + "\n"
        else:
            text = text.encode(encoding, "replace").decode(encoding)
    except LookupError:
        pass
    out.write(text)
