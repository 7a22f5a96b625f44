"""The machine's verdict, composed from its GPUs' chains.

``walk_chain`` reads, in order:

1. the machine's chain: the first broken link, and the errors it causes (``consequences``);
2. each GPU's chain (``Machine.gpus``): usable or not, hidden or not, and the finding that explains
   its first broken link;
3. the state, the first that holds of: not installed; TensorFlow cannot run at all (broken); no
   NVIDIA GPU (CPU only, finished); every GPU hidden on purpose (CPU only, finished); every visible
   GPU usable (ready); some usable (degraded); GPUs there and none usable (broken); no GPU seen
   and none known to be absent (CPU only, not finished);
4. the ways forward: the GPU path for one target release, and the CPU path.

No rule id is written here: a finding is chosen by its link in the chain and the GPUs it names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from envcheck.facts import SKIPPED
from envcheck.findings import BROKEN, CPU_ONLY, DEGRADED, GPU_READY, NOT_INSTALLED, Finding, Fix, Severity, Verdict
from envcheck.machine import ABSENT, GpuView
from envcheck.machine.gpus import EXPLAINED_BY, OK_LINK, UNKNOWN
from envcheck.rules.engine import Context
from envcheck.rules.recommendation import recommend
from envcheck.verdict import consequences
from envcheck.verdict.ways_forward import cpu_path, gpu_path
from envcheck.words import plural


@dataclass(frozen=True)
class Judgement:
    findings: list[Finding]
    verdict: Verdict
    gpus: tuple[GpuView, ...]  # each with the finding that explains why it is not usable


@dataclass(frozen=True)
class _Scene:
    """What the states read: the machine, its findings in chain order, its GPUs, the GPU path."""

    ctx: Context
    findings: list[Finding]
    gpus: tuple[GpuView, ...]
    steps: tuple[Fix, ...]

    @property
    def visible(self) -> list[GpuView]:
        return [g for g in self.gpus if not g.hidden]

    @property
    def usable(self) -> list[GpuView]:
        return [g for g in self.visible if g.usable]

    def first(self, *links: str, severity: Optional[Severity] = None) -> Optional[Finding]:
        return next(
            (f for f in self.findings if f.link in links and (severity is None or f.severity is severity)), None
        )

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]


def walk_chain(ctx: Context, findings: list[Finding]) -> Judgement:
    findings, own_fix = consequences.group(findings)
    gpus = tuple(_with_finding(g, findings) for g in ctx.gpus)
    scene = _Scene(ctx, findings, gpus, gpu_path(ctx, findings, own_fix))
    for state in STATES:
        verdict = state(scene)
        if verdict is not None:
            return Judgement(findings, verdict, gpus)
    raise AssertionError("the last state always holds")  # pragma: no cover


# --- each GPU's finding --------------------------------------------------------------------------


def _with_finding(gpu: GpuView, findings: list[Finding]) -> GpuView:
    """The finding that explains why a GPU is not usable: of a chain link that can break the GPU's
    first broken link, naming this GPU (or the whole machine), the first in chain order, followed
    back to its cause."""
    if gpu.usable or gpu.hidden:
        return gpu
    broken = gpu.first_broken
    links = EXPLAINED_BY[broken.name] if broken is not None else ("tensorflow", "placement")
    candidates = [f for f in findings if f.link in links and f.severity is not Severity.INFO]
    named = [f for f in candidates if gpu.key in f.gpus] + [f for f in candidates if not f.gpus]
    ranked = sorted(named, key=lambda f: (f.severity is not Severity.ERROR, findings.index(f)))
    if not ranked:
        return gpu
    return dataclasses.replace(gpu, finding=consequences.root_of(ranked[0], findings).id)


# --- the states, in order ------------------------------------------------------------------------


def _not_installed(scene: _Scene) -> Optional[Verdict]:
    ctx = scene.ctx
    if not ctx.tf_not_installed:
        return None
    finding = scene.first("tensorflow")
    plan = recommend(ctx)
    if plan is None:
        return Verdict(
            status=NOT_INSTALLED,
            reason="TensorFlow is not installed; run `envcheck plan` for the release that fits this machine",
            first_broken_link="tensorflow",
            finding_id=finding.id if finding else None,
            gpu_path=scene.steps,
            cpu_path=cpu_path(ctx, scene.findings),
            finished=True,
        )
    return Verdict(
        status=NOT_INSTALLED,
        reason=plan.reason,
        first_broken_link="tensorflow",
        finding_id=finding.id if finding else None,
        gpu_path=plan.gpu_steps,
        cpu_path=plan.cpu_steps,
        plan=plan.to_dict(),
        finished=True,
    )


def _cannot_run(scene: _Scene) -> Optional[Verdict]:
    """No TensorFlow runs in this interpreter, on any device: broken, named by its cause (not by an
    earlier GPU problem that would only send it to the CPU)."""
    ctx = scene.ctx
    if not ctx.tf_unusable:
        return None
    breaking = scene.first("python", "tensorflow", severity=Severity.ERROR)
    root = consequences.root_of(breaking, scene.findings) if breaking is not None else None
    root = root or consequences.first_root(scene.findings)
    return _verdict(scene, BROKEN, root.title if root else "TensorFlow cannot run in this interpreter", root)


def _no_gpu(scene: _Scene) -> Optional[Verdict]:
    """Nothing to fix: no NVIDIA GPU, and no error anywhere else (else the last state names it)."""
    ctx = scene.ctx
    if ctx.gpu_presence != ABSENT or scene.gpus or consequences.first_root(scene.findings) is not None:
        return None
    reason = "no NVIDIA GPU on this machine; TensorFlow runs on the CPU (nothing to fix)"
    return _verdict(scene, CPU_ONLY, reason, scene.first("gpu"), finished=True, link="gpu")


def _hidden_on_purpose(scene: _Scene) -> Optional[Verdict]:
    ctx = scene.ctx
    if not scene.gpus or scene.visible or not ctx.hidden_on_purpose:
        return None
    value = ctx.facts.env_var("CUDA_VISIBLE_DEVICES")
    reason = (
        f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU ({plural(len(scene.gpus), 'GPU')}): TensorFlow runs on "
        "the CPU, as set; unset it to use them"
    )
    finished = consequences.first_root(scene.findings) is None
    return _verdict(scene, CPU_ONLY, reason, scene.first("environment"), finished=finished, link="environment")


def _ready(scene: _Scene) -> Optional[Verdict]:
    usable, visible = scene.usable, scene.visible
    if not usable or len(usable) != len(visible):
        return None
    hidden = len(scene.gpus) - len(visible)
    ready, unchecked = _ready_words(scene)
    reason = f"{ready} ({plural(len(usable), 'GPU')}" + (
        f"; {hidden} hidden by CUDA_VISIBLE_DEVICES)" if hidden else ")"
    )
    reason += unchecked + _not_tested(scene)
    first = consequences.first_root(scene.findings)
    if first is not None:
        reason += f"; but {_lower_first(first.title)}"
    return _verdict(scene, GPU_READY, reason, first, finished=first is None, steps=scene.steps if first else ())


def _degraded(scene: _Scene) -> Optional[Verdict]:
    usable, visible = scene.usable, scene.visible
    if not usable:
        return None
    failing = next(g for g in visible if not g.usable)
    finding = _finding(scene, failing)
    ready, unchecked = _ready_words(scene)
    reason = (
        f"{ready} ({len(usable)} of {plural(len(visible), 'GPU')}){unchecked}{_not_tested(scene)}; "
        f"but {failing.label}: {failing.reason}"
    )
    return _verdict(scene, DEGRADED, reason, finding)


def _gpus_broken(scene: _Scene) -> Optional[Verdict]:
    if not scene.gpus:
        return None
    explained = {g.finding for g in scene.gpus if g.finding}
    root = next((f for f in scene.findings if f.id in explained and f.caused_by is None), None)
    root = root or consequences.first_root(scene.findings)
    failing = next((g for g in scene.visible if not g.usable), None)
    reason = root.title if root is not None else f"{failing.label}: {failing.reason}" if failing else "no GPU is usable"
    return _verdict(scene, BROKEN, reason, root)


def _nothing_seen(scene: _Scene) -> Verdict:
    """No GPU seen, and none known to be absent (Windows or WSL2 without a driver): the CPU, with the
    first error (or warning) that may be why."""
    first = consequences.first_root(scene.findings) or next(
        (f for f in scene.findings if f.severity is Severity.WARNING), None
    )
    reason = first.title if first is not None else "no GPU usable by TensorFlow was found"
    return _verdict(scene, CPU_ONLY, reason, first, finished=not scene.errors())


STATES: tuple[Callable[[_Scene], Optional[Verdict]], ...] = (
    _not_installed,
    _cannot_run,
    _no_gpu,
    _hidden_on_purpose,
    _ready,
    _degraded,
    _gpus_broken,
    _nothing_seen,
)


# --- helpers -------------------------------------------------------------------------------------


def _verdict(
    scene: _Scene,
    status: str,
    reason: str,
    finding: Optional[Finding],
    *,
    finished: bool = False,
    link: Optional[str] = None,
    steps: Optional[tuple[Fix, ...]] = None,
) -> Verdict:
    ctx = scene.ctx
    return Verdict(
        status=status,
        reason=reason,
        first_broken_link=finding.link if finding is not None else link,
        finding_id=finding.id if finding is not None else None,
        gpus=len(scene.usable),
        gpu_path=scene.steps if steps is None else steps,
        cpu_path=() if status in (GPU_READY, DEGRADED) else cpu_path(ctx, scene.findings),
        finished=finished,
    )


def _finding(scene: _Scene, gpu: GpuView) -> Optional[Finding]:
    return next((f for f in scene.findings if f.id == gpu.finding), None)


def _libraries_unchecked(scene: _Scene) -> bool:
    """A usable GPU's libraries link is unknown although the build loads CUDA libraries: no library
    probe in the snapshot (a hand-written or partial one), and TensorFlow neither ran an op on the
    GPU nor listed it (it lists GPUs only once every library has loaded). Its readiness then rests
    on a link nobody looked at."""
    build = scene.ctx.tf_build
    if scene.ctx.is_cuda_tf is not True or build is None or not build.libraries:
        return False
    return any(_status(g, "libraries") == UNKNOWN and _status(g, "listed") != OK_LINK for g in scene.usable)


def _status(gpu: GpuView, link: str) -> Optional[str]:
    found = gpu.link(link)
    return found.status if found is not None else None


def _ready_words(scene: _Scene) -> tuple[str, str]:
    """How sure "ready" is, and what was not looked at: ("GPU ready", "") when every link was."""
    if _libraries_unchecked(scene):
        return "GPU probably ready", "; the CUDA libraries were not checked"
    return "GPU ready", ""


def _not_tested(scene: _Scene) -> str:
    facts = scene.ctx.facts
    if facts.quick or (facts.tensorflow.status == SKIPPED and not facts.tensorflow.error):
        return "; TensorFlow itself not tested (--quick)"
    if facts.tensorflow.status == SKIPPED:
        return f"; TensorFlow itself not tested ({facts.tensorflow.error})"
    return ""


def _lower_first(title: str) -> str:
    """ "Driver 450 is too old" -> "driver 450 is too old"; "CUDA ..." stays."""
    word = title.split(" ", 1)[0]
    if len(word) > 1 and word[0].isupper() and word[1:].isalpha() and word[1:].islower():
        return title[0].lower() + title[1:]
    return title
