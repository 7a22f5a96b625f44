"""Found messages turned into explanations: the pattern's texts filled in, its causes ranked, plus
what the log as a whole and the machine add (``machine``).

A message can have several causes. They are ranked here from what the message and the log say
(a cause's ``first_if`` / ``last_if``), then an optional ``assess`` hook may mark each one
``confirmed`` or ``ruled-out`` from a machine's facts; confirmed causes come first, ruled-out ones
last, the rest keep their order.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

from envcheck.errors import EnvcheckError
from envcheck.explain.build_facts import build_facts, python_facts
from envcheck.explain.catalogue import DERIVERS, CauseTemplate, Pattern, fill, fill_fix
from envcheck.explain.contradictions import weigh
from envcheck.explain.gpu_stacks import applies_on_another_stack
from envcheck.explain.loader_reasons import GLIBC_FILES
from envcheck.explain.machine import MachineNote, notes_for
from envcheck.explain.parts import MUSL_CAUSE, PATH_REASON_CAUSES, REASON_CAUSES, WINDOWS_CAUSES
from envcheck.explain.scanner import Occurrence, ScanResult
from envcheck.explain.status_causes import ranked_status_causes
from envcheck.findings import Fix, fix_to_dict
from envcheck.matrix import load_matrix
from envcheck.matrix.libraries import library_family, library_os, name_version
from envcheck.shell import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix

CONFIRMED = "confirmed"
# Causes under which the message is expected, so that a machine confirming one makes it harmless.
EXPECTED_WHEN_CONFIRMED = frozenset({"no-nvidia-gpu"})
RULED_OUT = "ruled-out"
STATUSES = (None, CONFIRMED, RULED_OUT)


@dataclass(frozen=True)
class Cause:
    """One possible cause of a message, filled in for this occurrence.

    ``tell`` says how to tell this cause from the others (a check to run, with commands);
    ``rule_ids`` are the doctor's rules that confirm it on a machine; ``fix`` is set when this
    cause has a fix of its own; ``status`` is None (not checked), "confirmed" or "ruled-out"."""

    id: str
    text: str
    tell: Optional[Fix] = None
    rule_ids: tuple[str, ...] = ()
    fix: Optional[Fix] = None
    status: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "tell": fix_to_dict(self.tell) if self.tell else None,
            "rule_ids": list(self.rule_ids),
            "fix": fix_to_dict(self.fix) if self.fix else None,
            "status": self.status,
        }


# assess(occurrence, causes) -> causes: some or all of the causes given (e.g. via dataclasses.replace or
# with_status), each with its status set; those left out stay unchecked.
Assess = Callable[[Occurrence, tuple[Cause, ...]], Iterable[Cause]]


@dataclass(frozen=True)
class Explanation:
    """One known message, explained, with what the log and this machine add."""

    id: str
    title: str
    harmless: bool
    meaning: str
    cause: str  # the first cause's text
    fix: Fix
    rule_ids: tuple[str, ...]
    sources: tuple[str, ...]
    count: int
    first_line: int
    line_numbers: tuple[int, ...]
    excerpt: str
    variables: dict[str, str]
    machine: tuple[Any, ...] = ()  # machine.MachineNote
    causes: tuple[Cause, ...] = field(default=())
    log_note: str = ""  # what the rest of the log says about this message ("" when nothing)
    dropped: tuple[tuple[str, str], ...] = ()  # (cause id, why): causes the rest of the log rules out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "harmless": self.harmless,
            "meaning": self.meaning,
            "cause": self.cause,
            "causes": [c.to_dict() for c in self.causes],
            "fix": fix_to_dict(self.fix),
            "rule_ids": list(self.rule_ids),
            "sources": list(self.sources),
            "count": self.count,
            "first_line": self.first_line,
            "line_numbers": list(self.line_numbers),
            "excerpt": self.excerpt,
            "variables": dict(self.variables),
            "in_this_log": self.log_note or None,
            "ruled_out_by_the_log": [{"id": cause_id, "why": why} for cause_id, why in self.dropped],
            "on_this_machine": [note.to_dict() for note in self.machine],
        }


def explain(result: ScanResult, ctx: Any = None, assess: Optional[Assess] = None) -> tuple[Explanation, ...]:
    """Fill each found pattern's texts, rank its causes, and add what the log and the machine say.

    ``ctx`` (a ``machine.MachineContext``) adds machine-specific notes. ``assess``, when given, is
    called as ``assess(occurrence, causes)`` for each explanation with its causes ranked from the
    message and the log, and returns them (all or some, in any order) with ``status`` set; those
    it leaves out stay unchecked, and a broken hook (an exception, or a return that breaks the
    contract) becomes a machine note without hiding the explanation."""
    log = _Log(result)
    matrix = _MatrixSource(ctx)
    occurrences = result.occurrences
    if _failed_unexplained(result.context):
        # records read by their severity alone are a log's background, never its verdict: where the
        # log shows an ERROR record, an uncaught exception or a crash that nothing else explains,
        # "all harmless" would hide that failure
        occurrences = tuple(o for o in occurrences if not o.pattern.record)
    if result.context.get("log_gpu_stack"):
        # the program runs on another vendor's GPU stack (ROCm, oneAPI): its lines in NVIDIA's words
        # (hipified "CUDA error", RCCL's "NCCL") are that stack's, and so are its crash and records
        occurrences = tuple(o for o in occurrences if applies_on_another_stack(o.pattern))
    if result.context.get("log_miner"):
        # a miner builds the epoch's DAG in the GPU's memory: out of memory there is a DAG larger
        # than the card, none of a framework's reasons (another process, its reservation, a batch)
        occurrences = tuple(o for o in occurrences if o.variables.get("status_name", "") not in _OUT_OF_MEMORY)
    if result.context.get("log_device_assert"):
        # a kernel's own assert failed on the device (an index or a label out of range): what the
        # CUDA stack reports after it in that process is that assert, not the setup
        occurrences = tuple(o for o in occurrences if not cuda_library_status(o.variables))
    if result.context.get("log_zluda"):
        # ZLUDA's stand-ins for the CUDA libraries report HIP's and ROCm's failures in NVIDIA's
        # status names: NVIDIA's meanings (drivers, architectures, CUDA releases) are not theirs
        occurrences = tuple(o for o in occurrences if not cuda_library_status(o.variables))
    explanations = [
        _explain_one(occurrence, log, ctx, assess, matrix)
        for occurrence in occurrences
        if not log.seen.intersection(occurrence.pattern.covered_by)  # a more specific message explains it
    ]
    links = {o.pattern.id: causal_link(o.pattern.rule_ids) for o in result.occurrences}
    # Errors first, the first broken link of the causal chain before what follows from it, then by line.
    explanations.sort(key=lambda e: (e.harmless, links[e.id], e.first_line))
    # a crash on another vendor's stack is that runtime's: the notices before it are no leads to it
    crash = "" if result.context.get("log_gpu_stack") else result.context.get("log_crash", "")
    return _after_a_crash(tuple(explanations), crash)


# The status tables of the CUDA runtime, the driver and the libraries on them (cuda_status.yaml's
# enums). A failed device-side assert leaves the process's CUDA context unusable: NVIDIA's
# reference for cudaErrorAssert (and CUDA_ERROR_ASSERT) says the context "cannot be used anymore,
# and must be destroyed", so every later call of the runtime, the driver or a library on them
# (cuBLAS creating its handle or running a GEMM, cuDNN, cuFFT, cuSOLVER, cuSPARSE) fails with that
# error or its own word for it ("CUBLAS_STATUS_EXECUTION_FAILED", "an illegal memory access",
# "unspecified launch failure"). Running out of memory is not among them: an allocation the
# sticky error refuses fails with the assert, never with out-of-memory.
# the CUDA runtime's, the driver's and the libraries' on them: the stack's tables
# (``_STACK_STATUS_ENUMS``) but NCCL's, NVML's and nvJitLink's
_CUDA_LIBRARY_ENUMS = frozenset({"CUresult", "cudaError_t", "cudnnStatus_t", "cublasStatus_t", "cufftResult",
                                 "cusolverStatus_t", "cusparseStatus_t"})  # fmt: skip
_OUT_OF_MEMORY = frozenset({"CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation"})


def cuda_library_status(variables: dict[str, str]) -> bool:
    """Whether a message is a status of the CUDA runtime, the driver or a library on them
    (``_CUDA_LIBRARY_ENUMS``) other than running out of memory."""
    return (
        variables.get("status_enum", "").split(" ")[0] in _CUDA_LIBRARY_ENUMS
        and variables.get("status_name", "") not in _OUT_OF_MEMORY
    )


def _failed_unexplained(context: dict[str, str]) -> bool:
    """The log shows a failure (an ERROR record, an uncaught exception, a crash)."""
    return bool(context.get("log_error_record") or context.get("log_exception") or context.get("log_crash"))


# The doctor's causal chain (DESIGN.md), by its rules' families: Python, the GPU on the bus, the
# driver, the compute capability, the CUDA libraries, TensorFlow's install, op placement, then the
# environment variables and memory. A log's messages are read in that order: a driver that does
# not start explains the library and framework errors after it, not the other way round.
CAUSAL_CHAIN = ("PY", "GPU", "DRV", "CC", "LIB", "TF", "PLC", "ENV")


def causal_link(rule_ids: tuple[str, ...]) -> int:
    """The earliest link of the causal chain a message's rules check (code-level errors, with no
    rule, come after every link)."""
    families = {rule.split("-")[1] for rule in rule_ids if rule.count("-") >= 2}
    return min((CAUSAL_CHAIN.index(f) for f in families if f in CAUSAL_CHAIN), default=len(CAUSAL_CHAIN))


# the messages whose causes the log's Python decides (``build_facts.python_facts``)
PYTHON_WHEEL_PATTERNS = frozenset({"pip-no-matching-tensorflow", "pip-unsupported-wheel"})


class _Log:
    """What the whole scanned input says, for each of its messages."""

    def __init__(self, result: ScanResult) -> None:
        self.result = result
        self.seen = frozenset(result.ids)
        self.no_gpu_evidence = _log_shows_no_gpu(result)
        # an NVIDIA GPU or its driver the log shows (nvidia-smi, the bug-report form, a driver
        # version), in words, where TensorFlow found no GPU in it ("" otherwise)
        found = any(o.pattern.shows == "gpu" for o in result.occurrences)
        self.gpu_unused = "" if found else _log_shows_a_gpu(result.context)


def _variables(occurrence: Occurrence, log: _Log, matrix: "_MatrixSource") -> dict[str, str]:
    pattern = occurrence.pattern
    variables = {**log.result.context, **occurrence.variables}  # what the whole log shows, for every message
    if "log_tf" in variables:  # the build that TensorFlow release is, from the matrix (``build_facts``)
        variables.update(build_facts(variables, matrix.get()))
    if "log_python" in variables and pattern.id in PYTHON_WHEEL_PATTERNS:  # which releases have wheels for it
        variables.update(python_facts(variables, matrix.get()))
    if pattern.derive and DERIVERS[pattern.derive][2]:
        variables.update(LATE_DERIVERS[pattern.derive](variables, matrix.get()))
    if "install_gpu" not in variables and pattern.uses("install_gpu"):
        variables["install_gpu"] = _gpu_install_requirement(variables, matrix.get())
    return variables


def _explain_one(
    occurrence: Occurrence, log: _Log, ctx: Any, assess: Optional[Assess], matrix: "_MatrixSource"
) -> Explanation:
    pattern = occurrence.pattern
    variables = _variables(occurrence, log, matrix)
    notes = _machine_notes(occurrence, ctx)
    own, by_versions = status_causes(pattern, variables, log.seen)
    ranked = with_part_causes(
        own or (*rank_causes(pattern, variables, log.seen), *status_causes_beside(pattern, variables, log.seen)),
        variables,
        pointed_first(pattern, variables, log.seen),
        refined=frozenset(r for c in pattern.causes for r in c.refines),
    )
    extra = log_causes(pattern, variables)
    ranked = (*extra, *(c for c in ranked if c.id not in {e.id for e in extra}))
    causes, dropped = weigh(ranked, variables)
    dropped = (*by_versions, *dropped)
    # A message from another TensorFlow or machine is not judged by this one's facts.
    if assess is not None and not any(getattr(n, "elsewhere", False) for n in notes):
        try:
            causes = _checked(tuple(assess(occurrence, causes)), causes)
        except Exception as exc:  # noqa: BLE001 - a broken check must not hide the explanation
            notes = (*notes, _bug_note("could not check the causes on this machine", exc))
    causes = order_by_status(causes)
    harmless, log_note, notes = _verdict(pattern, log, notes, causes)
    first = causes[0] if causes else None
    fix = first.fix if first is not None and first.fix is not None else fill_fix(pattern.fix_for(variables), variables)
    return Explanation(
        id=pattern.id,
        title=fill(pattern.title, variables),
        harmless=harmless,
        meaning=fill(pattern.meaning, variables),
        cause=first.text if first is not None else "",
        fix=fix,
        rule_ids=pattern.rule_ids,
        sources=pattern.sources,
        count=occurrence.count,
        first_line=occurrence.first_line,
        line_numbers=tuple(occurrence.line_numbers),
        excerpt=occurrence.excerpt,
        variables=variables,
        machine=notes,
        causes=causes,
        log_note=log_note,
        dropped=dropped,
    )


def _bug_note(what: str, exc: Exception) -> Any:
    return MachineNote(f"envcheck {what} ({type(exc).__name__}: {exc}); this is a bug.")


def _machine_notes(occurrence: Occurrence, ctx: Any) -> tuple[Any, ...]:
    if ctx is None:
        return ()
    try:
        return notes_for(occurrence, ctx)
    except Exception as exc:  # noqa: BLE001 - one broken specializer must not hide the explanation
        return (_bug_note("could not add advice for this machine", exc),)


def _log_shows_a_gpu(context: dict[str, str]) -> str:
    """What in the log shows an NVIDIA GPU or its driver on the machine, in words ("" for nothing)."""
    if context.get("log_gpu") == "yes":
        return "an NVIDIA GPU"
    if context.get("log_gpu_present") == "yes":
        return "an NVIDIA GPU (nvidia-smi lists it, or the report names it)"
    driver = context.get("log_driver") or context.get("log_kernel_driver")
    return f"NVIDIA driver {driver}" if driver else ""


def _verdict(
    pattern: Pattern, log: _Log, notes: tuple[Any, ...], causes: tuple[Cause, ...]
) -> tuple[bool, str, tuple[Any, ...]]:
    """(harmless, what the log says about it, the machine's notes) for one message."""
    harmless = pattern.harmless
    log_note = ""
    # Another message must show it: a message never makes itself harmless.
    evidence = next((title for pattern_id, title in log.no_gpu_evidence if pattern_id != pattern.id), "")
    if pattern.harmless_without_gpu and not harmless and evidence:
        harmless = True
        log_note = (
            f"This log shows no NVIDIA GPU ({evidence}) and no GPU that TensorFlow found, so this is a "
            "notice: TensorFlow runs on the CPU. It only needs fixing if this machine has an NVIDIA GPU you "
            "meant to use."
        )
    if harmless and pattern.harmful_with_gpu and log.gpu_unused:
        # the judgement the machine's facts make (machine.gpu_presence), from what the log shows
        harmless = False
        log_note = (
            f"Usually a notice on a machine without an NVIDIA GPU, but this log shows {log.gpu_unused} and no GPU "
            "that TensorFlow found: here TensorFlow not using it is the failure to fix."
        )
    harmful = next((o for o in log.result.occurrences if o.pattern.id in pattern.harmful_if_seen), None)
    if harmless and harmful is not None:
        harmless = False
        log_note = f"Usually harmless, but this log also shows: {harmful.title} (line {harmful.first_line}), so here it is part of that failure."
    for note in notes:
        if note.harmless is not None:
            harmless = note.harmless
    if causes and causes[0].status == CONFIRMED and causes[0].id in EXPECTED_WHEN_CONFIRMED and not harmless:
        # The machine confirms the cause under which the message is expected: nothing to act on.
        harmless = True
        notes = (*notes, MachineNote("The cause confirmed here makes this message expected: nothing to fix."))
    return harmless, log_note, notes


CRASH_REPORT = "process-crash-status"


def _after_a_crash(explanations: tuple[Explanation, ...], crash: str) -> tuple[Explanation, ...]:
    """A log that ends in a crash no explained error accounts for: its notices are not harmless
    there, they are the leads to that crash."""
    # the crash's own report (a signal, an exit code: CRASH_REPORT) names how the process died, not why
    if not crash or any(not e.harmless and e.id != CRASH_REPORT for e in explanations):
        return explanations
    note = (
        f"Usually harmless, but this log ends in a crash ({crash}) that no other message explains: here this "
        "notice is a lead to that crash, not a sign that all is well."
    )
    return tuple(
        e if e.id == CRASH_REPORT else replace(e, harmless=False, log_note=e.log_note or note) for e in explanations
    )


def rank_causes(pattern: Pattern, variables: dict[str, str], seen: frozenset[str] = frozenset()) -> tuple[Cause, ...]:
    """The causes that apply to this occurrence, filled in: those the message or the log points
    at (``first_if``) first, those it argues against (``last_if``) last, the rest in the pattern's
    order."""
    applicable = [c for c in pattern.causes if c.when is None or c.when.holds(variables, seen)]

    def rank(cause: CauseTemplate) -> int:
        if cause.first_if is not None and cause.first_if.holds(variables, seen):
            return 0
        if cause.last_if is not None and cause.last_if.holds(variables, seen):
            return 2
        return 1

    return tuple(_fill_cause(c, variables) for c in sorted(applicable, key=rank))


def status_causes(
    pattern: Pattern, variables: dict[str, str], seen: frozenset[str] = frozenset()
) -> tuple[tuple[Cause, ...], tuple[tuple[str, str], ...]]:
    """Where only a status is recognised (a ``fallback`` pattern: no pattern names the message),
    the status's own causes from cuda_status.yaml, ranked, and those the log's versions rule out;
    ((), ()) for any other message, whose pattern's causes stand."""
    if not pattern.fallback or not variables.get("status_name"):
        return (), ()
    templates, dropped = ranked_status_causes(variables["status_name"], variables, seen)
    return tuple(_fill_cause(t, variables) for t in templates), dropped if templates else ()


# the status tables of the CUDA stack's libraries (cuda_status.yaml), whose statuses mean the same
# wherever they are printed
_STACK_STATUS_ENUMS = _CUDA_LIBRARY_ENUMS | {"ncclResult_t", "nvmlReturn_t", "nvJitLinkResult"}


def status_causes_beside(
    pattern: Pattern, variables: dict[str, str], seen: frozenset[str] = frozenset()
) -> tuple[Cause, ...]:
    """The causes NVIDIA's documents give for the status a pattern's line names (cuda_status.yaml's
    ``status_causes``) that the pattern's own causes leave out, ranked, after the pattern's: a
    status has the same causes wherever it is printed, so a message the catalogue names is never
    answered with fewer of them than the bare status would be. A pattern of one cause (its id is
    the pattern's) is a deliberate single answer and stands alone; so does a cause the log's
    versions rule out. Only the statuses of the CUDA stack's own libraries count: a signal's, a
    Windows code's or an Xid's causes are those of any crashing program, which a pattern of such a
    report narrows on purpose."""
    if pattern.fallback or not pattern.causes or not variables.get("status_name"):
        return ()
    if variables.get("status_enum", "").split(" ")[0] not in _STACK_STATUS_ENUMS:
        return ()
    if len(pattern.causes) == 1 and pattern.causes[0].id == pattern.id:
        return ()
    templates, _ = ranked_status_causes(variables["status_name"], variables, seen)
    own = {c.id for c in pattern.causes}
    return tuple(_fill_cause(t, variables) for t in templates if t.id not in own)


def pointed_first(pattern: Pattern, variables: dict[str, str], seen: frozenset[str] = frozenset()) -> bool:
    """Whether the message or the log points at one of the pattern's own causes (its ``first_if``
    holds): that cause names the file or the setting behind the loader's reason, so it is more
    specific than the reason's generic cause."""
    return any(
        c.first_if is not None
        and c.first_if.holds(variables, seen)
        and (c.when is None or c.when.holds(variables, seen))
        for c in pattern.causes
    )


def part_causes(variables: dict[str, str]) -> tuple[Cause, ...]:
    """The cause the message's parts name outright (``parts``): a loader's reason other than
    "not found", or a Windows error code. It ranks first, before the pattern's own causes."""
    found = []
    code = variables.get("windows_code", "")
    reason = variables.get("dlerror_reason", "")
    path = variables.get("dlerror_path", "")
    if code in WINDOWS_CAUSES:  # a Windows code says it all, and its checks are Windows ones
        found.append((WINDOWS_CAUSES[code], "powershell" if code != "193" else "any"))
    elif variables.get("dlerror_loader") == "musl" and (
        reason == "undefined-symbol" or GLIBC_FILES.match(variables.get("dependency", ""))
    ):
        found.append((MUSL_CAUSE, "bash"))
    elif reason in REASON_CAUSES:
        found.append((REASON_CAUSES[reason], "bash"))
    elif reason in PATH_REASON_CAUSES:
        cause_id, text, tell, (with_path, without_path) = PATH_REASON_CAUSES[reason]
        found.append(((cause_id, text, tell, with_path if path else without_path), "bash"))
    needed = variables.get("needed_version", "")
    values = {
        **variables,
        "needed_version_family": "C library (glibc)" if needed.startswith("GLIBC_") else "C++ library (libstdc++)",
    }
    values.setdefault("dlerror_file", variables.get("library_file", "the library"))
    values.setdefault("library", variables.get("library_file", "the library"))
    values.setdefault("library_file", variables.get("library", "the library"))
    return tuple(
        Cause(
            id=cause_id,
            text=fill(text, values),
            tell=Fix(text=fill(tell, values), commands=_part_command(line, shell, values)),
        )
        for (cause_id, text, tell, line), shell in found
    )


_COMMAND_FIELD = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")
_SHELL_PLAIN = re.compile(r"[\w./+:@%=-]+")


def _part_command(line: str, shell: str, values: dict[str, str]) -> tuple[Command, ...]:
    """A part cause's check command, filled: none when a file it names was not read from the
    message (the texts say "the library", which no shell can run), and every value a message gave
    quoted for bash where it holds more than a path's characters (a Windows path's backslashes)."""
    names = _COMMAND_FIELD.findall(line)
    if any(values.get(n, "") in ("", "the library") for n in names):
        return ()
    if shell == "bash":
        values = {
            **values,
            **{n: values[n] if _SHELL_PLAIN.fullmatch(values[n]) else shlex.quote(values[n]) for n in names},
        }
    return (Command(fill(line, values), shell=shell),)


# Causes about the driver: a log that shows the driver library and the kernel module at different
# versions names the cause of any of them (TensorFlow's cuda_diagnostics prints both versions).
_DRIVER_CAUSES = frozenset({"driver-not-installed", "no-nvidia-gpu", "nvidia-uvm-not-loaded", "container-without-gpu"})


def log_causes(pattern: Pattern, variables: dict[str, str]) -> tuple[Cause, ...]:
    """The cause the rest of the log shows for a driver message (see ``contradictions``)."""
    user, kernel = variables.get("log_driver", ""), variables.get("log_kernel_driver", "")
    about_driver = any(r.startswith("EC-DRV") for r in pattern.rule_ids) or any(
        c.id in _DRIVER_CAUSES for c in pattern.causes
    )
    if not (user and kernel and about_driver) or user.split(".")[:2] == kernel.split(".")[:2]:
        return ()
    return (
        Cause(
            id="driver-upgraded-no-reboot",
            text=f"The log shows the driver library at {user} and the kernel module at {kernel}: the driver was "
            "upgraded (or a container brought its own driver libraries) and the running kernel still has the "
            "old module. Reboot, or unload and reload the nvidia modules.",
            tell=Fix(
                text="The two versions differ here:",
                commands=(Command("cat /proc/driver/nvidia/version; nvidia-smi | head -4", shell="bash"),),
            ),
            rule_ids=("EC-DRV-002",),
        ),
    )


def with_part_causes(
    causes: tuple[Cause, ...], variables: dict[str, str], pointed: bool = False, refined: frozenset[str] = frozenset()
) -> tuple[Cause, ...]:
    """The message's own causes, after the one its parts name (unless the pattern has it, or a
    cause of the pattern ``refines`` it, naming which case of it this is: then the pattern's
    ranking stands); when the message pointed at one of the pattern's causes (``pointed``), that
    one stays first and the parts' cause follows it."""
    own = {c.id for c in causes} | refined
    extra: dict[str, Cause] = {}
    for cause in part_causes(variables):
        if cause.id not in own:
            extra.setdefault(cause.id, cause)
    decisive = [c for c in extra.values() if c.id in DECISIVE_PART_CAUSES and names_cause_outright(variables)]
    # A reason that names the cause outright goes first; one the pattern's own first cause may
    # explain better (an undefined symbol, WinError 126, which Windows gives for any missing DLL)
    # comes second.
    second = [c for c in extra.values() if c not in decisive]
    if pointed:
        return (*causes[:1], *decisive, *second, *causes[1:])
    return (*decisive, *causes[:1], *second, *causes[1:])


DECISIVE_PART_CAUSES = frozenset(
    {
        "dependency-missing",
        "wrong-architecture",
        "system-library-too-old",
        "damaged-library-file",
        "library-not-readable",
        "executable-stack-refused",
        "paging-file-too-small",
        # the loader's reasons beyond "not found" (parts.PATH_REASON_CAUSES, MUSL_CAUSE): each names
        # the refusal outright, which no missing file gives
        "static-tls-exhausted",
        "noexec-mount",
        "selinux-denied",
        "library-validation",
        "macos-older-than-build",
        "not-loadable-elf",
        "library-path-is-folder",
        "open-file-limit",
        "loader-out-of-memory",
        "glibc-build-on-musl",
        # ERROR_PROC_NOT_FOUND: the DLL and its dependencies were found and loaded, and one lacks a
        # function the other imports; a missing file cannot give it
        "mixed-library-versions",
    }
)


def names_cause_outright(variables: dict[str, str]) -> bool:
    """Whether what the message's parts say (``part_causes``) names its cause outright. The same
    cause id can come from a decisive and a vaguer reading: "mixed-library-versions" is certain for
    Windows' ERROR_PROC_NOT_FOUND (127: the DLL loaded, a function it should export is missing), but
    only a lead for an undefined symbol, which the library that needs the symbol may explain better
    (a plug-in or op library built for another release of the framework it extends)."""
    code = variables.get("windows_code", "")
    if code in WINDOWS_CAUSES or variables.get("dlerror_loader") == "musl":
        return True
    return variables.get("dlerror_reason", "") not in VAGUE_REASONS


# Loader reasons that point at a cause without naming it (``parts.REASON_CAUSES``)
VAGUE_REASONS = frozenset({"undefined-symbol"})


def order_by_status(causes: tuple[Cause, ...]) -> tuple[Cause, ...]:
    """Confirmed first, ruled-out last, otherwise the order given."""
    weight = {CONFIRMED: 0, None: 1, RULED_OUT: 2}
    return tuple(sorted(causes, key=lambda c: weight.get(c.status, 1)))


def _fill_cause(cause: CauseTemplate, variables: dict[str, str]) -> Cause:
    return Cause(
        id=cause.id,
        text=fill(cause.text, variables),
        tell=fill_fix(cause.tell, variables) if cause.tell else None,
        rule_ids=cause.rule_ids,
        fix=fill_fix(cause.fix, variables) if cause.fix else None,
    )


def _checked(assessed: tuple[Any, ...], given: tuple[Cause, ...]) -> tuple[Cause, ...]:
    """What an assess hook returned, held to its contract (Cause objects, each one of those given,
    at most once, with a valid status), merged into the causes given: a cause it left out stays
    as it was, and the order stays the message's (``order_by_status`` then moves confirmed causes
    first and ruled-out ones last)."""
    known = {c.id for c in given}
    returned: dict[str, Cause] = {}
    for cause in assessed:
        if not isinstance(cause, Cause):
            raise TypeError(f"assess returned {type(cause).__name__}, not a Cause")
        if cause.id not in known:
            raise ValueError(f"assess returned an unknown cause {cause.id!r}")
        if cause.id in returned:
            raise ValueError(f"assess returned cause {cause.id!r} twice")
        if cause.status not in STATUSES:
            raise ValueError(f"cause {cause.id!r} has status {cause.status!r} (None, {CONFIRMED!r} or {RULED_OUT!r})")
        returned[cause.id] = cause
    return tuple(returned.get(c.id, c) for c in given)


def _log_shows_no_gpu(result: ScanResult) -> tuple[tuple[str, str], ...]:
    """The messages in the scanned text that show there is no NVIDIA GPU, as (pattern id, title),
    in the order they appear; none when the text also shows a GPU that TensorFlow found, or comes
    from WSL 1, which shows no GPU to Linux programs whatever the machine has (Microsoft's
    "Comparing WSL versions"): there the lines say nothing about the hardware."""
    if any(o.pattern.shows == "gpu" for o in result.occurrences) or result.context.get("log_wsl") == "1":
        return ()
    return tuple((o.pattern.id, o.title) for o in result.occurrences if o.pattern.shows == "no-gpu")


# --- names filled from the compatibility matrix --------------------------------------------------


class _MatrixSource:
    """The matrix of the machine context when there is one, else the bundled one; read only when
    an explanation needs it, and at most once."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._loaded = False
        self._matrix: Optional["Matrix"] = None

    def get(self) -> Optional["Matrix"]:
        if not self._loaded:
            self._loaded = True
            self._matrix = self._ctx.matrix if self._ctx is not None else _bundled_matrix()
        return self._matrix


@lru_cache(maxsize=1)
def _bundled_matrix() -> Optional["Matrix"]:
    try:
        return load_matrix()
    except (EnvcheckError, ImportError):
        return None


def _library_use_names(variables: dict[str, str], matrix: Optional["Matrix"]) -> dict[str, str]:
    """What a library file name stands for, by the releases that load it (the matrix, from
    TensorFlow's tested build configurations and the wheels themselves), not by its digits."""

    library = variables.get("library", "")
    use = matrix.library_use(library) if matrix is not None and library else None
    if use is not None and use.builds and variables.get("log_tf"):
        narrowed = _for_the_logs_tensorflow(use, variables["log_tf"])
        if narrowed:
            return narrowed
    if use is not None and use.builds:
        cudas = sorted({b.cuda for b in use.distinct_builds() if b.cuda is not None})
        return {
            "cuda_generation": use.generation() or "an unknown CUDA release",
            "releases": use.releases(),
            "newest_cuda": str(cudas[-1]) if cudas else "X.Y",
            "cuda_folder": f"v{cudas[-1]}" if cudas else "vX.Y",
        }
    # No release in the matrix loads this name (for example cudart64_12.dll: native Windows GPU
    # builds ended with TensorFlow 2.10 and CUDA 11.2). Say what the name's family is, no more.
    family = library_family(library) if library else ""
    digits = name_version(library) if library else ""
    major = digits.split(".")[0] if digits else ""
    if family == "cudnn" and major:
        generation = f"cuDNN {major}"
    elif major and len(major) <= 2 and int(major) >= 11:
        generation = f"CUDA {major}.x"
    elif digits:
        generation = f"the CUDA release its name carries ({digits})"
    else:
        generation = "an unknown CUDA release"
    where = (
        "on native Windows (TensorFlow's native Windows GPU builds end with 2.10, CUDA 11.2)"
        if library_os(library) == "windows"
        else ""
    )
    return {
        "cuda_generation": generation,
        "releases": f"no TensorFlow release in envcheck's compatibility matrix loads {library} {where}".strip(),
        "newest_cuda": f"{major}.x" if major else "X.Y",
        "cuda_folder": f"v{major}.x" if major else "vX.Y",
    }


def _for_the_logs_tensorflow(use: Any, tf: str) -> dict[str, str]:
    """The names for the TensorFlow the log prints, when that release loads the file: the log
    says which release it is, so the other releases that load the same name are beside the point."""
    wanted = ".".join(tf.split(".")[:2])
    builds = [b for b in use.builds if ".".join(str(b.tf).split(".")[:2]) == wanted and b.cuda is not None]
    if not builds:
        return {}
    build = builds[-1]
    return {
        "cuda_generation": f"CUDA {build.cuda}",
        "releases": f"TensorFlow {wanted} and its patch releases (CUDA {build.cuda}, cuDNN {build.cudnn}; this log prints {tf})",
        "newest_cuda": str(build.cuda),
        "cuda_folder": f"v{build.cuda}",
    }


LateDeriver = Callable[[dict[str, str], Optional["Matrix"]], dict[str, str]]


def _library_names(variables: dict[str, str], matrix: Optional["Matrix"]) -> dict[str, str]:
    names = _library_use_names(variables, matrix)
    names["install_gpu"] = _gpu_install_requirement(variables, matrix)
    return names


def _gpu_install_requirement(variables: dict[str, str], matrix: Optional["Matrix"]) -> str:
    """The pinned requirement for TensorFlow's GPU build with its CUDA wheels, as doctor, plan and
    matrix give it: for the release the log prints when the matrix has it, else the newest."""
    if matrix is None:
        return "tensorflow[and-cuda]"
    tf = variables.get("log_tf", "")
    try:
        builds = [b for b in matrix.tf_releases("linux") if b.gpu and str(b.tf).startswith(tf)] if tf else []
        build = builds[-1] if builds else matrix.newest_release("linux", gpu=True)
        return matrix.pip_requirement(build, "linux") if build is not None else "tensorflow[and-cuda]"
    except EnvcheckError:
        return "tensorflow[and-cuda]"


LATE_DERIVERS: dict[str, LateDeriver] = {"library": _library_names}


def with_status(cause: Cause, status: Optional[str]) -> Cause:
    """A copy of ``cause`` with ``status`` set (for assess hooks)."""
    if status not in STATUSES:
        raise ValueError(f"status must be None, {CONFIRMED!r} or {RULED_OUT!r}")
    return replace(cause, status=status)
