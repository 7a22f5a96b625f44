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
from typing import Any, Optional

import yaml

from envcheck.errors import EnvcheckError
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
    """The status a message's captures name, or None when they name none (or only success).

    Captures: ``status`` (a name), ``nvml_class`` (pynvml's NVMLError_X), ``<family>_number`` and
    ``<family>_text`` for a family of ``FAMILIES``."""
    tables = tables or load_statuses()
    found: tuple[Status, ...] = ()
    if variables.get("status"):
        found = tables.by_name(variables["status"])
    elif variables.get("nvml_class"):
        found = tables.by_name("NVML_ERROR_" + _camel_to_name(variables["nvml_class"]))
    else:
        for family in FAMILIES:
            number, text = variables.get(f"{family}_number", ""), variables.get(f"{family}_text", "")
            if number.lstrip("-").isdigit() and len(number) <= 6:
                found = tables.by_value(family, int(number))
            elif text:
                found = tables.by_string(family, text)
            if found:
                break
    found = tuple(s for s in found if s.value != 0)
    return found[0] if found else None


def status_variables(variables: dict[str, str]) -> Optional[dict[str, str]]:
    """The ``derive: status`` names: what the status means, from the tables; None (no match)
    when the message names no known status."""
    status = resolve(variables)
    if status is None:
        return None
    same_name = load_statuses().by_name(status.name)
    numbers = ", ".join(f"{s.value} in {s.library}" for s in same_name) if len(same_name) > 1 else str(status.value)
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
                )
            )
    return StatusTables(tuple(statuses))


# --- the causes of a status (``status_causes`` in cuda_status.yaml) ------------------------------
# Where only a status is recognised (no pattern names the message), the explanation carries the
# status's own causes from the data file, ranked by what the message and the log show. The causes
# are CauseTemplates, as a pattern's are, so a status-only answer and a pattern read alike.

_CAUSE_KEYS = {"text", "tell", "fix", "source", "rule_ids", "os"}
_OSES = ("linux", "windows", "macos", "wsl")
_REF_KEYS = {"id", "first_if", "last_if", "when", "unless", "first_when"}
_FIX_KEYS = {"text", "commands", "link"}
_SHELLS = ("any", "bash", "powershell")


def _major_minor(version: str) -> tuple[int, ...]:
    parts = version.split(".")[:2]
    return tuple(int(p) for p in parts if p.isdigit() and len(p) <= 6) if len(parts) == 2 else ()


def _driver_runs_log_cuda(variables: dict[str, str]) -> Optional[bool]:
    """Whether the driver the log shows runs the CUDA release the log shows: True, False, or None
    when the log does not show both. nvidia-smi's "CUDA Version" is the newest CUDA the driver
    runs; otherwise the driver's version is compared with the release's minimum in the
    compatibility matrix (a driver at the CUDA major's minor-version floor runs its later minor
    releases, CUDA compatibility guide)."""
    cuda = _major_minor(variables.get("log_cuda", ""))
    if not cuda:
        return None
    driver = variables.get("log_driver", "")
    newest = _major_minor(variables.get("log_driver_cuda", ""))
    if not _major_minor(driver):
        # the same "CUDA version: X" line can be read as both: then it says nothing of the driver
        return newest >= cuda if newest and newest != cuda else None
    try:
        # Imported here: the matrix is read only when a log shows both versions.
        from envcheck.matrix import load_matrix
        from envcheck.matrix.model import as_version

        os_name = variables.get("log_os", "") if variables.get("log_os", "") in ("windows", "wsl") else "linux"
        requirement = load_matrix().driver_requirement(variables["log_cuda"], os_name)
        if requirement is None or requirement.minimum is None:
            return None
        return as_version(driver) >= requirement.minimum
    except (EnvcheckError, ImportError, ValueError):
        return None


# name -> (the check, what it says when it holds); ``unless`` drops a cause when its check is True,
# ``first_when`` puts it first.
VERSION_CHECKS = {
    "driver-runs-log-cuda": (
        lambda v: _driver_runs_log_cuda(v) is True,
        lambda v: (
            f"the log shows driver {v.get('log_driver') or 'for CUDA ' + v.get('log_driver_cuda', '')}, "
            f"which runs the CUDA {v.get('log_cuda')} the log also shows"
        ),
    ),
    "driver-older-than-log-cuda": (
        lambda v: _driver_runs_log_cuda(v) is False,
        lambda v: f"the log shows a driver older than the CUDA {v.get('log_cuda')} it runs",
    ),
}


@dataclass(frozen=True)
class StatusCause:
    """One cause of a status: the cause's template, and the checks of the log's versions that
    drop it (``unless``) or put it first (``first_when``)."""

    template: Any  # catalogue.CauseTemplate
    unless: str = ""
    first_when: str = ""
    source: str = ""


@lru_cache(maxsize=1)
def load_status_causes(path: Optional[Path] = None) -> dict[str, tuple[StatusCause, ...]]:
    """{upper-case status name: its causes, in the data file's order}, read and checked once."""
    file = path or data_file(STATUS_FILE)
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as exc:
        raise StatusTableError(f"{file}: cannot be read: {exc}") from None
    section = (data or {}).get("status_causes") or {}
    if not section.get("sources"):
        raise StatusTableError(f"{file}: status_causes: 'sources' must name NVIDIA's pages")
    pool = {cause_id: _cause(file, cause_id, raw) for cause_id, raw in (section.get("causes") or {}).items()}
    tables = load_statuses(path)
    found: dict[str, tuple[StatusCause, ...]] = {}
    for entry in section.get("statuses") or []:
        names = entry.get("names") or []
        unknown = [n for n in names if not tables.by_name(n)]
        if not names or unknown:
            raise StatusTableError(f"{file}: status_causes: {unknown or 'an entry'} names no status of the tables")
        causes = tuple(_reference(file, ref, pool) for ref in entry.get("causes") or [])
        if not any(c.template.when is None or c.template.when.holds({}) for c in causes):
            raise StatusTableError(
                f"{file}: status_causes: {names[0]} needs a cause that holds for a log that shows nothing"
            )
        for name in names:
            if name.upper() in found:
                raise StatusTableError(f"{file}: status_causes: {name} is given twice")
            found[name.upper()] = causes
    return found


def _cause(file: Path, cause_id: str, raw: Any) -> Any:
    # Imported here: the catalogue is above the tables (its deriver reads them).
    from envcheck.explain.catalogue import PATTERN_ID, CauseTemplate

    where = f"{file}: status_causes: cause {cause_id!r}"
    if not isinstance(raw, dict) or set(raw) - _CAUSE_KEYS or not PATTERN_ID.match(str(cause_id)):
        raise StatusTableError(f"{where}: an id of lower-case words, and only {', '.join(sorted(_CAUSE_KEYS))}")
    for key in ("text", "tell", "fix", "source"):
        if not raw.get(key):
            raise StatusTableError(f"{where}: needs {key!r}")
    oses = raw.get("os") or []
    if not isinstance(oses, list) or not set(oses) <= set(_OSES):
        raise StatusTableError(f"{where}: 'os' is a list of {', '.join(_OSES)}")
    return CauseTemplate(
        id=cause_id,
        text=raw["text"].strip(),
        tell=_fix(where + " tell", raw["tell"]),
        fix=_fix(where + " fix", raw["fix"]),
        rule_ids=tuple(raw.get("rule_ids") or ()),
        # a cause of some systems only: left out for a log of another (a log of no known system keeps it)
        when=_condition(file, {"vars": {"log_os": [*oses, ""]}}) if oses else None,
    ), str(raw["source"])


def _fix(where: str, raw: Any) -> Any:
    from envcheck.explain.catalogue import CommandTemplate, FixTemplate

    if not isinstance(raw, dict) or set(raw) - _FIX_KEYS or not str(raw.get("text", "")).strip():
        raise StatusTableError(f"{where}: a mapping with 'text' (and optionally 'commands', 'link')")
    commands = []
    for command in raw.get("commands") or []:
        if not isinstance(command, dict) or command.get("shell", "any") not in _SHELLS or not command.get("line"):
            raise StatusTableError(f"{where}: each command is {{shell: any|bash|powershell, line}}")
        commands.append(CommandTemplate(shell=command.get("shell", "any"), line=str(command["line"])))
    return FixTemplate(text=raw["text"].strip(), commands=tuple(commands), link=raw.get("link"))


def _reference(file: Path, ref: Any, pool: dict[str, Any]) -> StatusCause:
    from dataclasses import replace

    ref = {"id": ref} if isinstance(ref, str) else ref
    if not isinstance(ref, dict) or set(ref) - _REF_KEYS or ref.get("id") not in pool:
        raise StatusTableError(
            f"{file}: status_causes: {ref!r} is not a known cause id (with {', '.join(sorted(_REF_KEYS))})"
        )
    for check in (ref.get("unless"), ref.get("first_when")):
        if check is not None and check not in VERSION_CHECKS:
            raise StatusTableError(
                f"{file}: status_causes: unknown check {check!r} (known: {', '.join(VERSION_CHECKS)})"
            )
    template, source = pool[ref["id"]]
    conditions = {key: _condition(file, ref[key]) for key in ("when", "first_if", "last_if") if key in ref}
    return StatusCause(
        template=replace(template, **conditions),
        unless=ref.get("unless", ""),
        first_when=ref.get("first_when", ""),
        source=source,
    )


def _condition(file: Path, raw: Any) -> Any:
    from envcheck.explain.catalogue import Condition
    from envcheck.explain.context import CONTEXT_NAMES
    from envcheck.explain.parts import PART_NAMES

    known = set(CONTEXT_NAMES) | set(PART_NAMES) | set(STATUS_NAMES)
    variables = (raw or {}).get("vars") if isinstance(raw, dict) else None
    if not isinstance(variables, dict) or set(raw) - {"vars"} or not variables:
        raise StatusTableError(f"{file}: status_causes: a condition is {{vars: {{name: [values]}}}}")
    pairs = []
    for name, values in variables.items():
        values = [values] if isinstance(values, str) else values
        if name not in known or not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise StatusTableError(
                f"{file}: status_causes: condition on {name!r}: a known variable and a list of values"
            )
        pairs.append((name, tuple(v.lower() for v in values)))
    return Condition(variables=tuple(pairs))


def causes_of(status_name: str, tables: Optional[StatusTables] = None) -> tuple[StatusCause, ...]:
    """The causes the data file gives ``status_name``: its own, else its twin's in the other CUDA
    API, else (a cuDNN 9 NOT_SUPPORTED sub-code) those of NOT_SUPPORTED; () when it has none."""
    known = load_status_causes()
    if status_name.upper() in known:
        return known[status_name.upper()]
    tables = tables or load_statuses()
    for status in tables.by_name(status_name):
        for twin in tables.twins(status):
            if twin.name.upper() in known:
                return known[twin.name.upper()]
        if status.enum == "cudnnStatus_t" and 3000 < status.value < 4000:  # a NOT_SUPPORTED sub-code
            category = next(
                (s for s in tables.by_value("cudnn", status.value // 1000 * 1000) if s.enum == status.enum), None
            )
            if category is not None and category.name.upper() in known:
                return known[category.name.upper()]
    return ()


def ranked_status_causes(
    status_name: str, variables: dict[str, str], seen: frozenset[str] = frozenset()
) -> tuple[tuple[Any, ...], tuple[tuple[str, str], ...]]:
    """(the status's cause templates that apply, ranked; the causes the log's versions rule out,
    each as (cause id, why)). First: those the message or the log points at (``first_if``,
    ``first_when``); last: those it argues against (``last_if``); otherwise the data file's order.
    The last cause is never dropped: a status keeps an explanation."""
    applicable = [
        c for c in causes_of(status_name) if c.template.when is None or c.template.when.holds(variables, seen)
    ]
    kept, dropped = [], []
    for cause in applicable:
        check = VERSION_CHECKS.get(cause.unless)
        if check is not None and check[0](variables):
            dropped.append((cause.template.id, check[1](variables)))
        else:
            kept.append(cause)
    if not kept:
        kept, dropped = applicable, []

    def rank(cause: StatusCause) -> int:
        first = VERSION_CHECKS.get(cause.first_when)
        if (cause.template.first_if is not None and cause.template.first_if.holds(variables, seen)) or (
            first is not None and first[0](variables)
        ):
            return 0
        if cause.template.last_if is not None and cause.template.last_if.holds(variables, seen):
            return 2
        return 1

    return tuple(c.template for c in sorted(kept, key=rank)), tuple(dropped)
