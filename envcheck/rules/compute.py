"""Link 4: each GPU has code in the TensorFlow build that it can run, with this driver.

The question is the matrix's (``envcheck.matrix.runs``): a cubin (``sm_XY``) for the GPU's
architecture, or PTX (``compute_XY``) at or below its capability that this driver can JIT-compile;
and a driver the GPU's architecture still gets. Each rule names the GPU. Where the other GPUs run
the build, the way forward is to leave this one out (``CUDA_VISIBLE_DEVICES``), not to give up the
release; where none does, it is the release the plan recommends for the GPUs worth using.
"""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.findings import Fix, Severity
from envcheck.machine import GpuView, minor, parse_version
from envcheck.matrix.model import code_for
from envcheck.matrix.runs import NATIVE, NONE, PTX, SOURCES, TF_ON_BLACKWELL
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.evidence import matrix_evidence
from envcheck.rules.installs import install_release, move_fix, newest_release_for
from envcheck.words import counted

CUDA_GPUS_PAGE = "https://developer.nvidia.com/cuda-gpus"


def known_capabilities(ctx: Context) -> list[tuple[GpuView, str]]:
    """(GPU, compute capability) for each GPU left visible whose capability is known (NVML's, or
    the matrix's for its product name)."""
    return [(g, g.compute_capability) for g in ctx.gpus if g.compute_capability and not g.hidden]


def _ignored_lines(ctx: Context) -> tuple[tuple[str, str], ...]:
    return tuple(
        ("tensorflow log", line) for line in ctx.facts.tensorflow.log_lines if "Ignoring visible gpu device" in line
    )


def _others_that_run(ctx: Context, gpu: GpuView) -> list[GpuView]:
    """The other visible GPUs the installed build runs on (or may: their answer is not a no)."""
    return [g for g, cc in known_capabilities(ctx) if g is not gpu and ctx.gpu_run(cc).runs is not False]


def leave_out_fix(ctx: Context, gpu: GpuView, others: list[GpuView], tail: str = "") -> Fix:
    """Hide one GPU from TensorFlow, keeping the ones that run: CUDA_VISIBLE_DEVICES in CUDA's numbering."""
    keep = ctx.keep_only([g.index for g in others if g.index is not None])
    names = ", ".join(counted(g.name for g in others))
    return Fix(
        text=(
            f"Leave {gpu.name} out: {ctx.tf_name} runs on the other GPU{'s' if len(others) != 1 else ''} ({names}). "
            "CUDA_VISIBLE_DEVICES keeps only those (in CUDA's numbering); put it in your shell profile to keep it."
            + tail
        ),
        commands=keep,
        url=CUDA_GPUS_PAGE,
        release=ctx.installed_release,
    )


@rule("EC-CC-001", "Compute capability below what the TensorFlow build supports", "error", "compute")
def compute_capability_unsupported(ctx: Context) -> Iterator[Hit]:
    """TF ignores a GPU it has no code for ("Ignoring visible gpu device ... minimum required")."""
    archs = ctx.build_archs
    if not archs:
        return
    build = ctx.tf_build
    caps = ", ".join(archs)
    for gpu, cc in known_capabilities(ctx):
        if ctx.gpu_run(cc).code != NONE:
            continue
        newest = newest_release_for(ctx, cc)
        evidence = [
            (f"gpu {gpu.key}", f"{gpu.name}: compute capability {cc}"),
            ("TensorFlow build architectures", caps),
        ]
        if build is not None:
            evidence.append(matrix_evidence(ctx, build))
        evidence.extend(_ignored_lines(ctx))
        # A card newer than the build: its PTX would reach it, but the release compiles its kernels
        # for the card at run time with a PTX ISA that predates it (Matrix.ptx_serves).
        newer = code_for(archs, cc)[0] == PTX
        evidence.append(("NVIDIA: binary and PTX compatibility", SOURCES[0]))
        if newer:
            evidence.append(("TensorFlow on a card newer than its CUDA", " ".join(TF_ON_BLACKWELL)))
        newest_text = (
            f"the newest TensorFlow that runs on it is {newest.label}"
            if newest is not None
            else "no TensorFlow release in the matrix runs on it"
        )
        otherwise = f"build TensorFlow from source for compute capability {cc}" if newer else "use a newer GPU"
        others = _others_that_run(ctx, gpu)
        if others:
            fix = leave_out_fix(ctx, gpu, others, f" ({newest_text[0].upper()}{newest_text[1:]}.)")
        else:
            fix = move_fix(
                ctx, f"the newest release that runs on {gpu.name} (compute capability {cc})", CUDA_GPUS_PAGE, otherwise
            )
        what = "is newer than this TensorFlow build can serve" if newer else "is not supported by this TensorFlow build"
        yield Hit(
            title=f"{gpu.name} (compute capability {cc}) {what}; {newest_text}",
            detail=(
                f"The build carries code for {caps} only; TensorFlow ignores a GPU it has no native code or PTX for."
                if not newer
                else f"The build carries code for {caps}: {ctx.gpu_run(cc).reason}."
            ),
            evidence=tuple(evidence),
            fix=fix,
            gpus=(gpu.key,),
        )


def driver_ceiling(ctx: Context, cc: str):
    """The last driver branch the GPU's architecture gets (Kepler: 470), or None when it is still
    supported or not known."""
    return ctx.matrix.last_driver_branch(cc)


@rule("EC-CC-003", "The GPU's architecture ended before the driver this TensorFlow needs", "error", "compute")
def driver_ceiling_too_low(ctx: Context) -> Iterator[Hit]:
    """Each GPU architecture stops getting drivers at a branch (Kepler after 470; Maxwell, Pascal
    and Volta after 580): a TensorFlow whose CUDA needs a later driver can never run on it, so
    "update the driver" is no fix; the way forward is an older release, or another GPU."""
    cuda = ctx.tf_cuda
    if cuda is None:
        return
    for gpu, cc in known_capabilities(ctx):
        ceiling = driver_ceiling(ctx, cc)
        run = ctx.gpu_run(cc)
        need = ctx.driver_requirement(cuda, run.code)
        if ceiling is None or need is None or need.minimum is None:
            continue
        if ctx.matrix.supports_driver(cc, need.minimum) is not False:
            continue
        arch = ctx.matrix.architecture(cc)
        name = arch.name if arch is not None else "its architecture"
        evidence = (
            (f"gpu {gpu.key}", f"{gpu.name}: compute capability {cc} ({name})"),
            ("matrix: last driver branch", f"{ceiling} for {name}"),
            (f"matrix: CUDA {minor(cuda)} minimum driver", f"{need.minimum} ({need.os_title})"),
        )
        others = _others_that_run(ctx, gpu)
        if others:
            fix = leave_out_fix(ctx, gpu, others)
        else:
            fix = move_fix(
                ctx, f"the newest release that runs on {name} GPUs with a {ceiling}-branch driver", CUDA_GPUS_PAGE
            )
        yield Hit(
            title=f"{gpu.name} ({name}) gets no driver after the {ceiling} branch, and {ctx.tf_name}'s CUDA {minor(cuda)} needs {need.minimum} or newer",
            detail="A driver update cannot fix this: NVIDIA's drivers after that branch do not support the card at all.",
            evidence=evidence,
            fix=fix,
            caused_by="EC-CC-001" if run.code == NONE else None,  # the same move (an older release) fixes both
            gpus=(gpu.key,),
        )


@rule("EC-CC-002", "GPU covered only by PTX (slow first start)", "warning", "compute")
def compute_capability_ptx_only(ctx: Context) -> Iterator[Hit]:
    """With only PTX for a card, the driver JIT-compiles every kernel at first use: minutes."""
    caps = ", ".join(ctx.build_archs)
    build = ctx.tf_build
    for gpu, cc in known_capabilities(ctx):
        run = ctx.gpu_run(cc)
        if run.code != PTX or run.runs is False:
            continue  # a driver that cannot compile the PTX is EC-CC-004
        native = ctx.newest_release(gpu=True, accept=lambda b, cc=cc: ctx.matrix.support(b, cc) == NATIVE)
        text = (
            "Let the first start compile once and keep the result: raise the CUDA JIT cache so the "
            "compiled kernels are not evicted."
        )
        commands = [ctx.set_variable("CUDA_CACHE_MAXSIZE", "4294967296")]
        if native is not None and (build is None or native.tf > build.tf):
            install, python_note = install_release(ctx, native)
            text += f" TensorFlow {native.label} has native code for compute capability {cc}.{python_note}"
            commands.extend(install)
        yield Hit(
            title=f"{gpu.name} (compute capability {cc}) runs only through PTX: the first start JIT-compiles kernels (can take many minutes)",
            detail=f"The build carries native code for {caps}; for {cc} the driver compiles the {run.entry} PTX at start-up.",
            evidence=((f"gpu {gpu.key}", f"compute capability {cc}"), ("TensorFlow build architectures", caps)),
            fix=Fix(text=text, commands=tuple(commands)),
            severity=Severity.WARNING,
            gpus=(gpu.key,),
        )


@rule("EC-CC-004", "GPU served only by PTX that this driver cannot compile", "error", "compute")
def ptx_needs_newer_driver(ctx: Context) -> Iterator[Hit]:
    """A GPU with no cubin in the build runs only if the driver JIT-compiles its PTX, and a driver
    compiles only PTX of a CUDA release it supports: minor-version compatibility, which lets
    the rest of the build run on an older driver of the same major, does not cover the JIT."""
    cuda = ctx.tf_cuda
    driver = ctx.driver_version
    if cuda is None or driver is None:
        return
    for gpu, cc in known_capabilities(ctx):
        run = ctx.gpu_run(cc)
        if run.code != PTX or run.runs is not False or run.driver_needed is None:
            continue
        if run.card_cuda:
            continue  # the driver predates the card itself, whatever code the build has: EC-DRV-009
        if ctx.matrix.supports_driver(cc, run.driver_needed) is False:
            continue  # no driver that new exists for this card: EC-CC-003
        floor = ctx.driver_requirement(cuda)
        if floor is not None and floor.minimum is not None and parse_version(driver) < floor.minimum:
            continue  # below even the floor: no CUDA code runs, EC-DRV-001 says so
        native = ctx.newest_release(gpu=True, accept=lambda b, cc=cc: ctx.matrix.support(b, cc) == NATIVE)
        text = f"Update the NVIDIA driver to {run.driver_needed} or newer: it compiles CUDA {minor(cuda)}'s PTX."
        commands: tuple = ()
        if native is not None:
            install, python_note = install_release(ctx, native, step=False)
            text += f" Or install TensorFlow {native.label}, which has native code for compute capability {cc}.{python_note}"
            commands = install
        others = _others_that_run(ctx, gpu)
        if others:
            keep = ctx.keep_only([g.index for g in others if g.index is not None])
            text += " Or leave it out and use the other GPUs as they are."
            commands = commands + keep
        yield Hit(
            title=f"{gpu.label} has no native code in {ctx.tf_name}, only {run.entry} PTX, and driver {driver} cannot compile CUDA {minor(cuda)}'s PTX (needs {run.driver_needed})",
            detail=(
                "Without a cubin for its architecture the driver must JIT-compile the PTX, and a driver compiles only "
                "PTX of CUDA releases it supports; minor-version compatibility does not cover the JIT "
                "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)."
            ),
            evidence=(
                (f"gpu {gpu.key}", f"{gpu.name}: compute capability {cc}"),
                ("TensorFlow build architectures", ", ".join(ctx.build_archs)),
                ("driver version", driver),
                (f"matrix: CUDA {minor(cuda)} driver for PTX JIT", f"{run.driver_needed}"),
                ("NVIDIA: minor-version compatibility and PTX", run.sources[-1]),
            ),
            fix=Fix(
                text=text,
                commands=commands,
                url="https://www.nvidia.com/Download/index.aspx",
                release=ctx.installed_release,
            ),
            gpus=(gpu.key,),
        )
