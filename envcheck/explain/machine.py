"""What a machine adds to an explanation: the doctor's own findings, and what only a comparison of
the message with the machine can tell.

``explain`` with facts (this machine, probed quickly, or ``--facts FILE``) runs the doctor's rules
once and attaches to each explanation the findings whose ids its pattern names: the exact version,
file and command for that machine come from the same rules as ``envcheck doctor``, never from a
second copy. What is left here is explain's own: whether the message can have come from this
machine at all (another TensorFlow, another OS, no GPU here, another interpreter), and the values a
message carries that the machine can be held against (a device number, a compute capability, a
file name). Comparisons only read; where the facts or the matrix do not say, they say nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Optional

from envcheck import shell
from envcheck.errors import EnvcheckError
from envcheck.facts import MISSING, OK, Facts
from envcheck.findings import Finding, Severity
from envcheck.machine import ABSENT, Machine, parse_version, short_device
from envcheck.machine.libraries import libraries_apply, missing, needed
from envcheck.matrix import load_matrix
from envcheck.matrix.libraries import library_family
from envcheck.platform import PLATFORMS
from envcheck.shell import Command

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.explain.scanner import Occurrence
    from envcheck.findings import Report
    from envcheck.matrix import Matrix, TfBuild


@dataclass(frozen=True)
class MachineNote:
    text: str
    commands: tuple[Command, ...] = ()
    url: Optional[str] = None
    harmless: Optional[bool] = None  # overrides the pattern's verdict for this machine
    finding: Optional[str] = None  # the doctor's rule id, when the note is one of its findings
    # The message came from another TensorFlow, environment or machine: this machine's facts then
    # neither confirm nor rule out its causes.
    elsewhere: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "commands": [c.to_dict() for c in self.commands],
            "url": self.url,
            "finding": self.finding,
        }


class MachineContext:
    """The machine being advised (``facts`` None when not looked at), its doctor report, the matrix."""

    def __init__(
        self,
        facts: Optional[Facts],
        matrix_loader: Optional[Callable[[], "Matrix"]] = None,
        origin: str = "",
    ) -> None:
        self.facts = facts
        self.origin = origin  # "this machine (...)" or "the snapshot FILE"
        self._matrix_loader = matrix_loader
        self.problems: list[str] = []

    @cached_property
    def matrix(self) -> Optional["Matrix"]:
        try:
            if self._matrix_loader is not None:
                return self._matrix_loader()
            return load_matrix()
        except (EnvcheckError, ImportError) as exc:
            self.problems.append(f"the compatibility matrix could not be read ({exc}); advice is general")
            return None

    @cached_property
    def machine(self) -> Optional[Machine]:
        if self.facts is None or self.matrix is None:
            return None
        matrix = self.matrix
        return Machine(self.facts, matrix_loader=lambda: matrix)

    @cached_property
    def report(self) -> Optional["Report"]:
        """The doctor's judgement of these facts (run once, for every explanation)."""
        if self.facts is None or self.matrix is None:
            return None
        # lazy for start-up: keeps verdict out of every import of explain.machine
        from envcheck.verdict import judge

        matrix = self.matrix
        try:
            return judge(self.facts, matrix_loader=lambda: matrix)
        except EnvcheckError as exc:
            self.problems.append(f"the doctor's checks could not run on these facts ({exc})")
            return None

    def findings(self, rule_ids: tuple[str, ...]) -> list[Finding]:
        report = self.report
        if report is None or not rule_ids:
            return []
        return [f for f in report.findings if f.id in rule_ids]

    @property
    def os(self) -> Optional[str]:
        if self.facts is None or self.facts.platform.status != OK or not self.facts.platform.os:
            return None
        return self.facts.platform.os

    @property
    def shell(self) -> str:
        return "powershell" if self.os == "windows" else "bash"

    def installed(self):
        """(distribution name, version, matrix row or None) of the installed TensorFlow, or None."""
        m = self.machine
        if m is None or m.installed_tf is None:
            return None
        tf = m.installed_tf
        return tf.distribution, tf.version, (m.tf_build if self.os is not None else None)


def notes_for(occurrence: "Occurrence", ctx: MachineContext) -> tuple[MachineNote, ...]:
    """The machine's notes for one explanation: the doctor's findings the pattern names, then the
    comparisons of the message with the machine (none when nothing specific is known)."""
    pattern = occurrence.pattern
    if ctx.facts is None:
        # Without a machine, only what the message and the matrix tell (a compute capability).
        return tuple(SPECIALIZERS[pattern.specialize](occurrence, ctx)) if pattern.specialize in _MATRIX_ONLY else ()
    if pattern.os and ctx.os and ctx.os not in _compatible_oses(pattern.os):
        return (
            MachineNote(
                f"This message is printed on {' or '.join(pattern.os)}, but {ctx.origin or 'the machine looked at'} "
                f"runs {ctx.os}: run `envcheck explain` on the machine that printed it (or pass its "
                "snapshot with --facts FILE) for advice specific to that machine."
            ),
        )
    notes: list[MachineNote] = []
    if pattern.specialize:
        notes.extend(SPECIALIZERS[pattern.specialize](occurrence, ctx))
    if not any(n.harmless is True for n in notes):
        notes.extend(finding_note(f) for f in ctx.findings(pattern.rule_ids) if f.severity is not Severity.INFO)
    return tuple(notes)


def finding_note(finding: Finding) -> MachineNote:
    """One of the doctor's findings on this machine, as explain shows it."""
    fix = finding.fix
    text = f"envcheck doctor ({finding.id}): {finding.title}."
    if fix is not None:
        text += f" Fix: {fix.text}"
    return MachineNote(text, commands=fix.commands if fix else (), url=fix.url if fix else None, finding=finding.id)


def assess_causes(occurrence: "Occurrence", causes: tuple[Any, ...], ctx: MachineContext) -> tuple[Any, ...]:
    """Mark each of a message's possible causes from the doctor's findings on this machine:
    "confirmed" when one of the cause's rules fired, "ruled-out" when the links those rules check
    were probed and none of them fired, unchanged when the machine cannot tell."""
    report = ctx.report
    if report is None:
        return causes
    fired = {f.id for f in report.findings}  # an info finding (no GPU here) still says its condition holds
    probed = {link.name for link in report.links if link.status != "skipped"}
    # lazy for start-up: keeps rules out of every import of explain.machine
    from envcheck.rules import RULES, load_rule_modules

    load_rule_modules()
    by_files = _where_the_files_are(ctx)
    out = []
    for cause in causes:
        ids = tuple(getattr(cause, "rule_ids", ()) or ())
        if cause.id in by_files:
            out.append(dataclasses.replace(cause, status=by_files[cause.id]) if by_files[cause.id] else cause)
        elif not ids:
            out.append(cause)
        elif any(i in fired for i in ids):
            out.append(dataclasses.replace(cause, status="confirmed"))
        elif all(i in RULES and RULES[i].link in probed for i in ids):
            out.append(dataclasses.replace(cause, status="ruled-out"))
        else:
            out.append(cause)
    return tuple(out)


# Causes that one finding cannot tell apart: EC-LIB-001 (and -002) fire both when the file is nowhere
# and when it sits in a folder the loader does not search. Where the library probe found the files
# decides: (family, True) for "installed but not on the path", (family, False) for "not installed".
_FILE_CAUSES = {
    "cuda-not-installed": ("cudart", False),
    "cuda-bin-not-on-path": ("cudart", True),
    "cuda-lib-not-on-path": ("cudart", True),
    "cudnn-not-installed": ("cudnn", False),
    "cudnn-not-on-path": ("cudnn", True),
    "cudnn-lib-not-on-path": ("cudnn", True),
}


def _where_the_files_are(ctx: MachineContext) -> dict[str, Optional[str]]:
    """Each file cause's status from the probe: the one that holds confirmed, the other ruled out;
    both ruled out when the files load; nothing when the library checks do not apply."""
    m = ctx.machine
    if m is None:
        return {}

    if not libraries_apply(m):
        return {}
    statuses: dict[str, Optional[str]] = {}
    for cause_id, (family, off_path) in _FILE_CAUSES.items():
        if not needed(m, (family,)):
            statuses[cause_id] = None  # this build loads no such file: the machine cannot tell
            continue
        gone = missing(m, (family,))
        if not gone:
            statuses[cause_id] = "ruled-out"
        else:
            somewhere = any(n.off_path for n in gone)
            statuses[cause_id] = "confirmed" if somewhere == off_path else "ruled-out"
    return statuses


def _compatible_oses(oses: tuple[str, ...]) -> set[str]:
    """The OSes a message naming ``oses`` can come from: those that run the same TensorFlow wheels
    (a Linux message can come from WSL2 and the other way round)."""
    wheels = {PLATFORMS[o].wheels_os for o in oses if o in PLATFORMS}
    return set(oses) | {name for name, p in PLATFORMS.items() if p.wheels_os in wheels}


# --- helpers -------------------------------------------------------------------------------------


def _bus_read(facts: Facts) -> bool:
    """The PCI probe looked at the bus (``missing``: it found no NVIDIA device there)."""
    return facts.pci.status in (OK, MISSING)


def _no_gpu_here(ctx: MachineContext) -> bool:
    """The PCI bus was read and holds no NVIDIA GPU (under WSL2 the bus does not show the GPU)."""
    m = ctx.machine
    return m is not None and ctx.os not in ("wsl", "macos") and _bus_read(ctx.facts) and m.gpu_presence == ABSENT


NO_GPU_HERE = "this machine has no NVIDIA GPU (none on the PCI bus), so the message comes from another machine"


def _pip(ctx: MachineContext, requirement: str) -> Command:
    """``python -m pip install REQ`` for the machine's interpreter when known, else a generic one."""
    if ctx.machine is not None:
        return ctx.machine.pip_command("install", requirement)
    return shell.pip_command("python", "bash", "install", requirement)


def _same_family(build: "TfBuild", family: str) -> Optional[str]:
    return next((name for name in build.libraries if library_family(name) == family), None)


# --- comparisons of the message with the machine ------------------------------------------------


def cuda_library(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """A CUDA or cuDNN library TF could not load: is it the one this TensorFlow loads at all?"""
    library = occurrence.variables.get("library", "")
    installed = ctx.installed()
    if installed is None:
        python = ctx.facts.python
        yield MachineNote(
            f"TensorFlow is not installed in {python.executable or 'this Python'}: the message came from another "
            "environment. Rerun with --python pointing at that environment's interpreter.",
            elsewhere=True,
        )
        return
    name, version, build = installed
    if ctx.os is None or ctx.matrix is None:
        return  # without the OS or the matrix nothing specific can be said
    if build is None:
        yield MachineNote(
            f"{name} {version} is not in envcheck's compatibility matrix, so the CUDA version it needs is unknown "
            "here (see `envcheck matrix`)."
        )
        return
    m = ctx.machine
    # The installed build itself says whether it is a CUDA build (tensorflow-cpu is not, whatever
    # the matrix row for its release); the matrix only where TensorFlow did not say.
    if not build.gpu or (m is not None and m.is_cuda_tf is False):
        yield MachineNote(
            f"{name} {version} on {ctx.os} is a CPU-only build and never loads {library}: this message came from "
            "another TensorFlow (another environment or machine).",
            elsewhere=True,
        )
        return
    use = ctx.matrix.library_use(library)
    if use.family and not any(library.lower() == own.lower() for own in build.libraries):
        own = _same_family(build, use.family)
        if own is not None and use.family in ("cudart", "cudnn", "cublas"):
            by = f" ({use.releases()} load it)" if use.known else ""
            yield MachineNote(
                f"The installed {name} {version} was built for CUDA {build.cuda} and cuDNN {build.cudnn}, so it asks for "
                f"{own}, not {library}{by}: this log comes from a different TensorFlow (another environment or machine).",
                elsewhere=True,
            )
            return
    if not ctx.findings(occurrence.pattern.rule_ids) and ctx.facts.libraries.status == OK:
        winner = m.winner_for(library) if m is not None else None
        if winner is not None and winner.loads is not False:
            yield MachineNote(
                f"Here the library search finds {library} at {winner.path}: the message predates a fix, or came from "
                "a process with another PATH or LD_LIBRARY_PATH (a service, an IDE, a notebook kernel)."
            )


def gpu_presence(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Whether 'no CUDA driver/device' is expected here (no NVIDIA GPU) or a real problem."""
    facts, m = ctx.facts, ctx.machine
    if ctx.os == "macos":
        yield MachineNote(
            "macOS has no CUDA support in any current TensorFlow: TensorFlow runs on the CPU (Apple GPUs through "
            "tensorflow-metal). Nothing to fix here.",
            harmless=True,
        )
        return
    if m is None:
        return
    if not m.gpu_names:
        if _bus_read(facts):
            yield MachineNote(
                "This machine has no NVIDIA GPU (none on the PCI bus), so TensorFlow runs on the CPU and this "
                "message is expected: nothing to fix.",
                harmless=True,
            )
        return
    gpu_list = ", ".join(sorted(set(m.gpu_names)))
    if facts.nvml.status == OK and facts.nvml.gpus:
        hidden = m.visibility is not None and m.visibility.hides_all
        yield MachineNote(
            f"This machine has {gpu_list} and its driver {facts.nvml.driver_version or ''} answers, so the process "
            "that printed this could not reach it: "
            + (
                "CUDA_VISIBLE_DEVICES hides every GPU in this environment."
                if hidden
                else "a container started without GPU access "
                "(docker --gpus all), another machine, or CUDA_VISIBLE_DEVICES set in that process."
            )
            + " Run `envcheck doctor` in that same environment.",
            harmless=False,
        )
        return
    yield MachineNote(
        f"This machine has {gpu_list} but no working NVIDIA driver, so here this is not harmless: the GPU is unused.",
        harmless=False,
    )


def driver_version(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """The message says the driver is too old: is it, for this TensorFlow?"""
    m = ctx.machine
    if m is None:
        return
    driver_text = m.driver_version
    cuda = m.tf_cuda if m.installed_tf is not None else None
    need = m.driver_requirement(cuda) if cuda else None
    if need is None or need.minimum is None:
        if driver_text:
            yield MachineNote(
                f"The NVIDIA driver here is {driver_text}; `envcheck doctor` compares it with what TensorFlow needs."
            )
        elif _no_gpu_here(ctx):
            yield MachineNote(f"{NO_GPU_HERE[0].upper()}{NO_GPU_HERE[1:]}.")
        return
    driver = parse_version(driver_text)
    if driver is None:
        yield MachineNote(
            f"{m.tf_name} uses CUDA {cuda}, which needs driver {need.minimum} or newer ({need.os_title})"
            + (f"; {NO_GPU_HERE}." if _no_gpu_here(ctx) else "; envcheck could not read this machine's driver version.")
        )
        return
    if driver >= (need.full or need.minimum):
        yield MachineNote(
            f"The driver here ({driver_text}) is new enough for CUDA {cuda} (needs {need.full or need.minimum}), so the "
            "CUDA runtime that complained is another one: an older libcudart or a cuda-compat libcuda earlier on the "
            "library path (EC-LIB-004), or a different environment. `envcheck doctor` lists every copy."
        )


def visible_devices(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """A device number in the message against the GPUs CUDA shows here."""
    m = ctx.machine
    if m is None:
        return
    device = occurrence.variables.get("device", "")
    wanted = _device_index(device)
    resolution = m.visibility
    if resolution is not None and resolution.hides_all:
        return  # the doctor's CUDA_VISIBLE_DEVICES finding says why, with the fix
    visible = resolution.count if resolution is not None else None
    if wanted is not None and visible is not None and wanted >= visible:
        yield MachineNote(
            f"TensorFlow numbers the GPUs it can see from 0; here {visible} {'is' if visible == 1 else 'are'} visible, "
            f"so {device} does not exist. Use tf.config.list_logical_devices('GPU') to pick devices, or "
            "tf.config.set_soft_device_placement(True)."
        )
    elif m.gpu_presence == ABSENT and not ctx.os == "wsl":
        yield MachineNote(
            "This machine has no NVIDIA GPU that CUDA can use: TensorFlow runs on the CPU here.", harmless=True
        )


def _device_index(device: str) -> Optional[int]:
    short = short_device(device)
    number = short[4:]
    return int(number) if short.startswith("GPU:") and number.isdigit() and len(number) <= 9 else None


def compute_capability(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """The newest TF release whose build still runs on the compute capability in the message."""
    cc = occurrence.variables.get("cc", "")
    matrix = ctx.matrix
    if not cc or matrix is None:
        return
    os_name = ctx.os or "linux"
    try:
        newest = matrix.newest_release(os_name, gpu=True, accept=lambda b: matrix.support(b, cc) != "none")
    except EnvcheckError:
        return
    if newest is None:
        yield MachineNote(
            f"No TensorFlow {os_name} GPU build in the matrix supports compute capability {cc}: use the CPU build, "
            "or build TensorFlow from source for this card with a CUDA that still supports it."
        )
        return
    yield MachineNote(
        f"The newest TensorFlow whose {os_name} GPU build still runs on compute capability {cc} is {newest.tf} "
        f"(CUDA {newest.cuda}, cuDNN {newest.cudnn}, Python {', '.join(newest.python)}); "
        f"`envcheck plan --compute-capability {cc}` gives the full steps, with the Python it needs.",
        commands=(_pip(ctx, matrix.pip_requirement(newest, os_name)),),
    )


def gpu_memory(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """Out of GPU memory on a machine without a GPU: the message came from another machine. (Whether
    TensorFlow here reserves a shared GPU's memory is the doctor's EC-ENV-009, attached by id.)"""
    if _no_gpu_here(ctx):
        yield MachineNote(f"{NO_GPU_HERE[0].upper()}{NO_GPU_HERE[1:]}: the fix applies there.")


def tf_installed(occurrence: "Occurrence", ctx: MachineContext) -> Iterator[MachineNote]:
    """'No module named tensorflow' where this interpreter has TensorFlow: the message came from
    another one. (Where it has none, the doctor's EC-TF-001 says so with the install command.)"""
    installed = ctx.installed()
    if ctx.facts.python.status != OK or installed is None:
        return
    yield MachineNote(
        f"{ctx.facts.python.executable} has {installed[0]} {installed[1]}, so the error came from a different "
        "interpreter or environment: print sys.executable in the failing program and compare."
    )


SPECIALIZERS: dict[str, Callable[["Occurrence", MachineContext], Iterator[MachineNote]]] = {
    "cuda_library": cuda_library,
    "gpu_presence": gpu_presence,
    "driver_version": driver_version,
    "visible_devices": visible_devices,
    "compute_capability": compute_capability,
    "gpu_memory": gpu_memory,
    "tf_installed": tf_installed,
}
# Comparisons that need only the message and the matrix, so they run without a machine too.
_MATRIX_ONLY = ("compute_capability",)
