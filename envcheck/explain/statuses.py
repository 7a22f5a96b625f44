"""Every status of the CUDA stack, from ``cuda_status.yaml``: CUresult, cudaError_t, cudnnStatus_t
(cuDNN 9, and 7-8 whose numbers differ), cublasStatus_t, cufftResult, cusolverStatus_t,
cusparseStatus_t, ncclResult_t and nvmlReturn_t, each value with its meaning, each table with the
NVIDIA header and release it comes from.

A message names a status by its name (``CUDNN_STATUS_NOT_INITIALIZED``), by the text the
library's error-string function prints (``no CUDA-capable device is detected``), by a Python
binding's class (``NVMLError_DriverNotLoaded``), or by a number next to the library's name
(``cuda runtime error (35)``); ``resolve`` reads any of these. The file is read when a message
first needs it, not when envcheck starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

import yaml

from envcheck.errors import EnvcheckError
from envcheck.explain.exit_codes import CAPTURES as CRASH_CAPTURES
from envcheck.explain.exit_codes import NTSTATUS_TABLE, SIGNAL_TABLE, crash_lookup
from envcheck.resources import data_file

STATUS_FILE = "cuda_status.yaml"

# The families a message can name a number of, and the tables that hold their numbers (cuDNN's
# numbering changed with cuDNN 9, so a cuDNN number is looked up in both).
FAMILIES = {
    "cu": ("CUresult",),
    "cudart": ("cudaError_t",),
    "cudnn": ("cudnnStatus_t", "cudnnStatus_t (cuDNN 7 and 8)"),
    "cublas": ("cublasStatus_t",),
    "cufft": ("cufftResult",),
    "cusolver": ("cusolverStatus_t",),
    "cusparse": ("cusparseStatus_t",),
    "nccl": ("ncclResult_t",),
    "nvml": ("nvmlReturn_t",),
    "win": ("Win32 error codes",),
    "xid": ("NVIDIA Xid",),
    # how a crashed process is reported (envcheck/explain/exit_codes.py reads their spellings)
    "ntstatus": ("NTSTATUS",),
    "signal": ("POSIX signals",),
}


class StatusTableError(EnvcheckError):
    """cuda_status.yaml is malformed (a packaging bug: the file ships with envcheck)."""


@dataclass(frozen=True)
class Status:
    enum: str  # the table's type, e.g. "cudaError_t"
    library: str  # in words
    name: str
    value: int
    meaning: str
    source: str  # "header, versions", and the page of this value where the table names one per value
    strings: tuple[str, ...] = ()
    programs_own: bool = False  # the program's own code reporting on its data (cuda_status.yaml)
    mnemonic: str = ""  # the header's name of the number, where the table gives one (nverror.h's for an Xid)
    kind: str = ""  # the kind of fault the documents put it in (an Xid's class in cuda_status.yaml)

    @property
    def title(self) -> str:
        return f"{self.name} ({self.value})"


class StatusTables:
    def __init__(self, statuses: tuple[Status, ...]) -> None:
        self.statuses = statuses
        names: dict[str, list[Status]] = {}
        for status in statuses:
            names.setdefault(status.name.upper(), []).append(status)
        self._names = {k: tuple(v) for k, v in names.items()}

    def by_name(self, name: str) -> tuple[Status, ...]:
        return self._names.get(name.upper(), ())

    def by_value(self, family: str, value: int) -> tuple[Status, ...]:
        enums = FAMILIES.get(family, ())
        return tuple(s for s in self.statuses if s.enum in enums and s.value == value)

    def twins(self, status: Status) -> tuple[Status, ...]:
        """``status`` and the status of the same meaning in the other CUDA API (the driver's
        CUresult and the runtime's cudaError_t give most errors under both names)."""
        apis = ("CUresult", "cudaError_t")
        if status.enum not in apis:
            return (status,)
        return tuple(s for s in self.statuses if s.enum in apis and s.meaning == status.meaning)

    def by_string(self, family: str, text: str) -> tuple[Status, ...]:
        """The statuses of ``family`` whose printed text starts ``text`` (the message may go on)."""
        wanted = _squeeze(text)
        enums = FAMILIES.get(family, ())
        matched = [
            (max(len(_squeeze(t)) for t in s.strings if wanted.startswith(_squeeze(t))), s)
            for s in self.statuses
            if s.enum in enums and any(wanted.startswith(_squeeze(t)) for t in s.strings if len(t) >= 4)
        ]
        return tuple(s for _, s in sorted(matched, key=lambda m: -m[0]))  # the longest text first


def _squeeze(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _camel_to_name(camel: str) -> str:
    """``LibRmVersionMismatch`` -> ``LIB_RM_VERSION_MISMATCH`` (pynvml's error classes)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", camel).upper()


def resolve(variables: dict[str, str], tables: Optional[StatusTables] = None) -> Optional[Status]:
    """The status a message's captures name, or None when they name none (or only success, or
    only a status of the program's own, ``programs_own``).

    Captures: ``status`` (a name), ``nvml_class`` (pynvml's NVMLError_X), ``<family>_number`` and
    ``<family>_text`` for a family of ``FAMILIES``, and a crash's (``exit_codes.CAPTURES``)."""
    tables = tables or load_statuses()
    found: tuple[Status, ...] = ()
    if variables.get("status"):
        found = tables.by_name(variables["status"])
    elif variables.get("nvml_class"):
        found = tables.by_name("NVML_ERROR_" + _camel_to_name(variables["nvml_class"]))
    elif any(variables.get(name) for name in CRASH_CAPTURES):
        found = _crash(variables, tables)
    else:
        for family in FAMILIES:
            number, text = variables.get(f"{family}_number", ""), variables.get(f"{family}_text", "")
            if number.lstrip("-").isdigit() and len(number) <= 6:
                found = tables.by_value(family, int(number))
            elif text:
                found = tables.by_string(family, text)
            if found:
                break
    # success is no error, and a status the program raises on its own data (a device-side
    # assert) is no message of the setup: neither is named
    found = tuple(s for s in found if s.value != 0 and not s.programs_own)
    return found[0] if found else None


def _crash(variables: dict[str, str], tables: StatusTables) -> tuple[Status, ...]:
    found = crash_lookup(variables)
    if found is None:
        return ()
    kind, table, key = found
    family = "ntstatus" if table == NTSTATUS_TABLE else "signal"
    if kind == "value":
        return tables.by_value(family, int(key))
    if kind == "name":
        return tuple(s for s in tables.by_name(str(key)) if s.enum == table)
    return tables.by_string(family, str(key))


def status_variables(variables: dict[str, str]) -> Optional[dict[str, str]]:
    """The ``derive: status`` names: what the status means, from the tables; None (no match)
    when the message names no known status."""
    status = resolve(variables)
    if status is None:
        return None
    same_name = load_statuses().by_name(status.name)
    numbers = ", ".join(f"{s.value} in {s.library}" for s in same_name) if len(same_name) > 1 else str(status.value)
    if status.enum == NTSTATUS_TABLE:  # every spelling a crash report may have used
        numbers = f"0x{status.value:08X}, {status.value} unsigned, {status.value - (1 << 32)} signed"
    elif status.enum == SIGNAL_TABLE:
        numbers = f"signal {status.value}, exit status {128 + status.value}"
    return {
        "status_name": status.name,
        "status_value": numbers,
        "status_enum": status.enum.split(" ")[0],
        "status_library": status.library,
        "status_meaning": status.meaning,
        "status_source": status.source,
    }


STATUS_NAMES = ("status_name", "status_value", "status_enum", "status_library", "status_meaning", "status_source")


@lru_cache(maxsize=1)
def load_statuses(path: Optional[Path] = None) -> StatusTables:
    """The bundled tables, read and checked once."""
    file = path or data_file(STATUS_FILE)
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as exc:
        raise StatusTableError(f"{file}: cannot be read: {exc}") from None
    statuses = []
    for table in (data or {}).get("tables") or []:
        source = f"{table['header']}, {table['versions']}"
        for value in table["values"]:
            if not isinstance(value.get("value"), int) or not value.get("name") or not value.get("meaning"):
                raise StatusTableError(f"{file}: {table['enum']}: a value needs name, value (a number) and meaning")
            statuses.append(
                Status(
                    enum=table["enum"],
                    library=table["library"],
                    name=value["name"],
                    value=value["value"],
                    meaning=value["meaning"],
                    source=f"{source}; {value['source']}" if value.get("source") else source,
                    strings=tuple(value.get("strings") or ()),
                    programs_own=value.get("programs_own") is True,
                    mnemonic=str(value.get("mnemonic") or ""),
                    kind=str(value.get("class") or ""),
                )
            )
    return StatusTables(tuple(statuses))
