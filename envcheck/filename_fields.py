"""Per-node file names for ``doctor --save-facts``: one command line, run on every node of a cluster
(srun, pdsh, mpirun, a DaemonSet), writes one file per node.

  %n   the node's number in the SLURM job (SLURM_NODEID), else its host name
  %h   the host name
  %%   a literal %

srun expands ``%n`` only in its own ``--output``/``--error``, never in the program's arguments, so
envcheck expands it here. A host name keeps only characters that are safe in a file name.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping

from envcheck.errors import UsageError

FIELDS = {"n": "the SLURM node number (SLURM_NODEID), else the host name", "h": "the host name", "%": "a literal %"}


def expand(pattern: str, environ: Mapping[str, str], hostname: str | None = None, flag: str = "--save-facts") -> str:
    """``pattern`` with its %-fields filled in; an unknown field is one line (exit 2)."""
    if "%" not in pattern:
        return pattern
    host = _safe(hostname if hostname is not None else socket.gethostname()) or "localhost"

    def field(match: re.Match) -> str:
        code = match.group(1)
        if code == "%":
            return "%"
        if code == "h":
            return host
        if code == "n":
            node = environ.get("SLURM_NODEID", "").strip()
            return node if node.isdigit() else host
        known = ", ".join(f"%{k} ({v})" for k, v in FIELDS.items())
        raise UsageError(f"{flag} {pattern}: unknown field %{code or ''} (known: {known})")

    return re.sub(r"%(.?)", field, pattern)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name or "").strip("._")
