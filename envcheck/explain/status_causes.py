"""The causes of a status of the CUDA stack (``status_causes`` in cuda_status.yaml).

Where only a status is recognised (no pattern names the message: a ``fallback`` pattern explains
it), the explanation carries the status's own causes from the data file, ranked by what the
message and the log show. They are CauseTemplates, as a pattern's causes are, so a status-only
answer and a pattern read alike, and a cause the catalogue names keeps the catalogue's id.

Ranking: ``first_if`` / ``last_if`` / ``when`` conditions on the message's parts and the log's
variables (as patterns write them), a cause's ``os`` (left out for a log of another system), and
the checks of the versions the log prints (``VERSION_CHECKS``): ``unless`` drops a cause the
versions contradict (named as ruled out by the log), ``first_when`` puts one they confirm first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

import yaml

from envcheck.errors import EnvcheckError
from envcheck.explain.catalogue import PATTERN_ID, CauseTemplate, CommandTemplate, Condition, FixTemplate
from envcheck.explain.context import CONTEXT_NAMES
from envcheck.explain.parts import PART_NAMES
from envcheck.explain.statuses import STATUS_FILE, STATUS_NAMES, StatusTableError, StatusTables, load_statuses
from envcheck.matrix import load_matrix
from envcheck.matrix.model import as_version
from envcheck.resources import data_file

_CAUSE_KEYS = {"text", "tell", "fix", "source", "rule_ids", "os"}
_OSES = ("linux", "windows", "macos", "wsl")
_REF_KEYS = {"id", "first_if", "last_if", "when", "unless", "first_when"}
_FIX_KEYS = {"text", "commands", "link"}
_SHELLS = ("any", "bash", "powershell")


def _major_minor(version: str) -> tuple[int, ...]:
    parts = version.split(".")[:2]
    return tuple(int(p) for p in parts if p.isdigit() and len(p) <= 6) if len(parts) == 2 else ()


def _log_cuda_run(variables: dict[str, str]) -> str:
    """The CUDA release the log's program runs: the one the log prints, else the one the log's
    TensorFlow release was built with (``build_facts``' ``log_tf_cuda``, the matrix's build row:
    its wheels load that release's runtime)."""
    return variables.get("log_cuda") or variables.get("log_tf_cuda", "")


def _cuda_run_text(variables: dict[str, str], printed: str) -> str:
    if variables.get("log_cuda"):
        return f"{variables['log_cuda']} {printed}"
    return f"{variables.get('log_tf_cuda', '')} TensorFlow {variables.get('log_tf', '')} was built with"


def _driver_runs_log_cuda(variables: dict[str, str]) -> Optional[bool]:
    """Whether the driver the log shows runs the CUDA release the log shows: True, False, or None
    when the log does not show both. nvidia-smi's "CUDA Version" is the newest CUDA the driver
    runs; otherwise the driver's version is compared with the release's minimum in the
    compatibility matrix (a driver at the CUDA major's minor-version floor runs its later minor
    releases, CUDA compatibility guide)."""
    cuda_text = _log_cuda_run(variables)
    cuda = _major_minor(cuda_text)
    if not cuda:
        return None
    driver = variables.get("log_driver", "")
    newest = _major_minor(variables.get("log_driver_cuda", ""))
    if not _major_minor(driver):
        if not variables.get("log_cuda"):  # the build's CUDA, from the matrix: no line read twice
            return newest >= cuda if newest else None
        # the same "CUDA version: X" line can be read as both: then it says nothing of the driver
        return newest >= cuda if newest and newest != cuda else None
    try:
        os_name = variables.get("log_os", "") if variables.get("log_os", "") in ("windows", "wsl") else "linux"
        requirement = load_matrix().driver_requirement(cuda_text, os_name)
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
            f"which runs the CUDA {_cuda_run_text(v, 'the log also shows')}"
        ),
    ),
    "driver-older-than-log-cuda": (
        lambda v: _driver_runs_log_cuda(v) is False,
        lambda v: f"the log shows a driver older than the CUDA {_cuda_run_text(v, 'it runs')}",
    ),
}


@dataclass(frozen=True)
class StatusCause:
    """One cause of a status: the cause's template, and the checks of the log's versions that
    drop it (``unless``) or put it first (``first_when``)."""

    template: CauseTemplate
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


def _cause(file: Path, cause_id: str, raw: Any) -> tuple[CauseTemplate, str]:
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


def _fix(where: str, raw: Any) -> FixTemplate:
    if not isinstance(raw, dict) or set(raw) - _FIX_KEYS or not str(raw.get("text", "")).strip():
        raise StatusTableError(f"{where}: a mapping with 'text' (and optionally 'commands', 'link')")
    commands = []
    for command in raw.get("commands") or []:
        if not isinstance(command, dict) or command.get("shell", "any") not in _SHELLS or not command.get("line"):
            raise StatusTableError(f"{where}: each command is {{shell: any|bash|powershell, line}}")
        commands.append(CommandTemplate(shell=command.get("shell", "any"), line=str(command["line"])))
    return FixTemplate(text=raw["text"].strip(), commands=tuple(commands), link=raw.get("link"))


def _reference(file: Path, ref: Any, pool: dict[str, tuple[CauseTemplate, str]]) -> StatusCause:
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


def _condition(file: Path, raw: Any) -> Condition:
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
) -> tuple[tuple[CauseTemplate, ...], tuple[tuple[str, str], ...]]:
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
