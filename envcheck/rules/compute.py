"""Link 4: each GPU's compute capability is covered by the code in the TensorFlow build.

A build carries native code (``sm_XY``) for some architectures and PTX (``compute_XY``) that the
driver can compile for newer ones; a card below every entry cannot run it at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

from envcheck.findings import Fix, Severity
from envcheck.machine import minor, pci_product_name
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.evidence import matrix_evidence
from envcheck.rules.installs import install_release


@dataclass(frozen=True)
class GpuCapability:
    name: str
    compute_capability: str
    source: str  # which fact (or matrix row) gave the capability


@dataclass(frozen=True)
class _Architectures:
    """The two fields ``Matrix.support`` reads, for the list TF itself reported."""

    compute_capabilities: tuple[str, ...]
    gpu: bool = True


def gpu_capabilities(ctx: Context) -> list[GpuCapability]:
    """Each GPU's compute capability: NVML's answer, else the matrix's entry for its product name."""
    out = []
    facts = ctx.facts
    if facts.nvml.gpus:
        for gpu in facts.nvml.gpus:
            name = gpu.name or f"GPU {gpu.index}"
            if gpu.compute_capability:
                out.append(GpuCapability(name, gpu.compute_capability, f"nvml gpu {gpu.index}"))
            elif gpu.name:
                product = ctx.matrix.gpu(gpu.name)
                if product is not None:
                    out.append(GpuCapability(name, str(product.compute_capability), f"matrix: {product.name}"))
        return out
    for dev in facts.pci.devices:
        name = pci_product_name(dev.name)
        product = ctx.matrix.gpu(name) if name else None
        if product is not None:
            out.append(
                GpuCapability(name, str(product.compute_capability), f"matrix: {product.name} (from pci {dev.address})")
            )
    return out


def build_architectures(ctx: Context):
    """What the installed build carries: TF's own build info when probed, else the matrix row."""
    if ctx.is_cuda_tf is not True:
        return None
    reported = ctx.facts.tensorflow.compute_capabilities
    if reported:
        return _Architectures(tuple(reported))
    build = ctx.tf_build
    if build is None or not build.gpu or not build.compute_capabilities:
        return None
    return build


def support(ctx: Context, build, cc: str) -> Optional[str]:
    try:
        return ctx.matrix.support(build, cc)
    except Exception:  # noqa: BLE001 - an unparseable capability is unknown
        return None


def _ignored_lines(ctx: Context) -> tuple[tuple[str, str], ...]:
    return tuple(
        ("tensorflow log", line) for line in ctx.facts.tensorflow.log_lines if "Ignoring visible gpu device" in line
    )


@rule("EC-CC-001", "Compute capability below what the TensorFlow build supports", "error", "compute")
def compute_capability_unsupported(ctx: Context) -> Iterator[Hit]:
    """TF ignores a GPU it has no code for ("Ignoring visible gpu device ... minimum required")."""
    arch = build_architectures(ctx)
    if arch is None:
        return
    build = ctx.tf_build
    caps = ", ".join(arch.compute_capabilities)
    for gpu in gpu_capabilities(ctx):
        if support(ctx, arch, gpu.compute_capability) != "none":
            continue
        cc = gpu.compute_capability
        newest = ctx.newest_release(gpu=True, accept=_tf_fits(ctx, cc))
        evidence = [(gpu.source, f"{gpu.name}: compute capability {cc}"), ("TensorFlow build architectures", caps)]
        if build is not None:
            evidence.append(matrix_evidence(ctx, build))
        evidence.extend(_ignored_lines(ctx))
        if newest is not None:
            commands, python_note = install_release(ctx, newest)
            text = (
                f"Install TensorFlow {newest.label} (CUDA {newest.cuda}, cuDNN {newest.cudnn}, Python "
                f"{', '.join(newest.python)}), the newest release with code for compute capability {cc}, "
                f"or use a newer GPU.{python_note}"
            )
            newest_text = f"the newest TensorFlow that runs on it is {newest.label}"
        else:
            text = "No TensorFlow release in the matrix has code for this GPU: run on the CPU or use a newer GPU."
            commands = ()
            newest_text = "no TensorFlow release in the matrix runs on it"
        yield Hit(
            title=f"{gpu.name} (compute capability {cc}) is not supported by this TensorFlow build; {newest_text}",
            detail=(
                f"The build carries code for {caps} only; TensorFlow ignores a GPU it has no native code or PTX for."
            ),
            evidence=tuple(evidence),
            fix=Fix(text=text, commands=commands, url="https://developer.nvidia.com/cuda-gpus"),
        )


def driver_ceiling(ctx: Context, cc: str):
    """The last driver branch the GPU's architecture gets (Kepler: 470), or None when it is still
    supported or not known."""
    try:
        return ctx.matrix.last_driver_branch(cc)
    except Exception:  # noqa: BLE001 - an odd capability is unknown
        return None


def runs_within_ceiling(ctx: Context, build, cc: str) -> bool:
    """The build has code for the GPU and its CUDA's driver is one the GPU can still get."""
    if build.cuda is None or support(ctx, build, cc) in (None, "none"):
        return False
    need = ctx.driver_requirement(build.cuda, support(ctx, build, cc))
    if need is None or need.minimum is None:
        return True
    return ctx.matrix.supports_driver(cc, need.minimum) is not False


def _tf_fits(ctx: Context, cc: str):
    return lambda b: runs_within_ceiling(ctx, b, cc)


@rule("EC-CC-003", "The GPU's architecture ended before the driver this TensorFlow needs", "error", "compute")
def driver_ceiling_too_low(ctx: Context) -> Iterator[Hit]:
    """Each GPU architecture stops getting drivers at a branch (Kepler after 470; Maxwell, Pascal
    and Volta after 580): a TensorFlow whose CUDA needs a later driver can never run on it, so
    "update the driver" is no fix; the way forward is an older release, or another GPU."""
    cuda = ctx.tf_cuda
    if cuda is None:
        return
    for gpu in gpu_capabilities(ctx):
        cc = gpu.compute_capability
        ceiling = driver_ceiling(ctx, cc)
        if ceiling is None:
            continue
        need = ctx.driver_requirement(
            cuda, support(ctx, build_architectures(ctx), cc) if build_architectures(ctx) is not None else None
        )
        if need is None or need.minimum is None or ctx.matrix.supports_driver(cc, need.minimum) is not False:
            continue
        arch = ctx.matrix.architecture(cc)
        name = arch.name if arch is not None else "its architecture"
        newest = ctx.newest_release(gpu=True, accept=_tf_fits(ctx, cc))
        evidence = [
            (gpu.source, f"{gpu.name}: compute capability {cc} ({name})"),
            ("matrix: last driver branch", f"{ceiling} for {name}"),
            (f"matrix: CUDA {minor(cuda)} minimum driver", f"{need.minimum} ({need.os_title})"),
        ]
        if newest is not None:
            commands, python_note = install_release(ctx, newest)
            text = (
                f"Install TensorFlow {newest.label} (CUDA {newest.cuda}, cuDNN {newest.cudnn}), the newest release that runs on "
                f"{name} GPUs with a {ceiling}-branch driver, or use a newer GPU.{python_note}"
            )
        else:
            commands, text = (
                (),
                f"No TensorFlow GPU build in the matrix runs on {name} with a {ceiling}-branch driver: use the CPU, or a newer GPU.",
            )
        arch_build = build_architectures(ctx)
        no_code = arch_build is not None and support(ctx, arch_build, cc) == "none"
        yield Hit(
            title=f"{gpu.name} ({name}) gets no driver after the {ceiling} branch, and {ctx.tf_name}'s CUDA {minor(cuda)} needs {need.minimum} or newer",
            detail="A driver update cannot fix this: NVIDIA's drivers after that branch do not support the card at all.",
            evidence=tuple(evidence),
            fix=Fix(text=text, commands=commands, url="https://developer.nvidia.com/cuda-gpus"),
            caused_by="EC-CC-001" if no_code else None,  # the same move (an older release) fixes both
        )
        return


@rule("EC-CC-002", "GPU covered only by PTX (slow first start)", "warning", "compute")
def compute_capability_ptx_only(ctx: Context) -> Iterator[Hit]:
    """With only PTX for a card, the driver JIT-compiles every kernel at first use: minutes."""
    arch = build_architectures(ctx)
    if arch is None:
        return
    caps = ", ".join(arch.compute_capabilities)
    build = ctx.tf_build
    for gpu in gpu_capabilities(ctx):
        if support(ctx, arch, gpu.compute_capability) != "ptx":
            continue
        cc = gpu.compute_capability
        native = ctx.newest_release(gpu=True, accept=lambda b, cc=cc: support(ctx, b, cc) == "native")
        text = (
            "Let the first start compile once and keep the result: raise the CUDA JIT cache so the "
            "compiled kernels are not evicted."
        )
        commands = [ctx.shell_command("export CUDA_CACHE_MAXSIZE=4294967296", "$env:CUDA_CACHE_MAXSIZE = '4294967296'")]
        if native is not None and (build is None or native.tf > build.tf):
            install, python_note = install_release(ctx, native)
            text += f" TensorFlow {native.label} has native code for compute capability {cc}.{python_note}"
            commands.extend(install)
        yield Hit(
            title=f"{gpu.name} (compute capability {cc}) runs only through PTX: the first start JIT-compiles kernels (can take many minutes)",
            detail=f"The build carries native code for {caps}; for {cc} the driver compiles the PTX at start-up.",
            evidence=((gpu.source, f"compute capability {cc}"), ("TensorFlow build architectures", caps)),
            fix=Fix(text=text, commands=tuple(commands)),
            severity=Severity.WARNING,
        )
