"""Link 7: TensorFlow lists the GPUs and really runs ops on them (a matmul and a convolution)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envcheck.facts import OK
from envcheck.findings import Fix
from envcheck.machine import PRESENT, short_device
from envcheck.rules.compute import build_architectures, gpu_capabilities, support
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.environment import hidden_by_environment
from envcheck.rules.tensorflow import first_sentence
from envcheck.shell import Command

# Lines of TF's log that say why a GPU was not used; the probe keeps them, the rules show them.
_WHY = (
    "Could not load dynamic library",
    "Cannot dlopen",
    "cuInit",
    "CUDA_ERROR",
    "Ignoring visible gpu",
    "cudnn",
    "CUDNN",
    "driver version",
    "Skipping registering GPU",
)


def log_message(line: str) -> str:
    """The message of a TF log line, without "2024-05-14 ... W tensorflow/.../dso_loader.cc:64] "."""
    match = re.search(r"\.cc:\d+\]\s*", line)
    return line[match.end() :] if match else line


def _why_lines(ctx: Context, limit: int = 8) -> tuple[tuple[str, str], ...]:
    lines = [line for line in ctx.facts.tensorflow.log_lines if any(w in line for w in _WHY)]
    return tuple(("tensorflow log", line) for line in lines[:limit])


_LIST_GPUS = "import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))"


def _explain_fix(ctx: Context, text: str) -> Fix:
    return Fix(
        text=text + " Paste TensorFlow's log into `envcheck explain` for the fix of each message.",
        commands=(
            ctx.shell_command(
                f"TF_CPP_MIN_LOG_LEVEL=0 {ctx.python_line(_LIST_GPUS)} 2>&1 | envcheck explain -",
                f"$env:TF_CPP_MIN_LOG_LEVEL = '0'; {ctx.python_line(_LIST_GPUS)} 2>&1 | envcheck explain -",
            ),
        ),
    )


@rule("EC-PLC-001", "TensorFlow lists no GPU although the links before look right", "error", "placement")
def tf_lists_no_gpu(ctx: Context) -> Iterator[Hit]:
    facts = ctx.facts
    tf = facts.tensorflow
    if tf.status != OK or ctx.is_cuda_tf is not True or ctx.tf_gpu_count > 0 or ctx.gpu_presence != PRESENT:
        return
    why = _why_lines(ctx)
    yield Hit(
        title="TensorFlow lists no GPU" + (f": {first_sentence(log_message(why[0][1]))}" if why else ""),
        detail=(
            "The GPU, the driver and the libraries were found, yet TensorFlow's device list has no GPU. "
            "Its log lines below say why."
            if why
            else "TensorFlow's device list has no GPU and its log gave no reason (TF_CPP_MIN_LOG_LEVEL may hide it)."
        ),
        evidence=why or (("tensorflow log", "no message about the GPU"),),
        fix=_explain_fix(ctx, "Read the log lines above: each names the missing library or the failing driver call."),
        caused_by=hidden_by_environment(ctx),
    )


@rule("EC-PLC-002", "The placement test ran on the CPU", "error", "placement")
def placed_on_cpu(ctx: Context) -> Iterator[Hit]:
    wrong = [
        p
        for p in ctx.facts.tensorflow.placement
        if "GPU" in p.requested.upper() and p.device and "GPU" not in p.device.upper()
    ]
    if not wrong:
        return
    shown = ", ".join(f"{p.op} asked for {short_device(p.requested)} ran on {short_device(p.device)}" for p in wrong)
    yield Hit(
        title=f"TensorFlow lists the GPU but ran the test on the CPU ({shown})",
        detail="With soft placement TensorFlow moves ops it cannot run on the GPU to the CPU without an error; the GPU is not doing the work.",
        evidence=tuple((f"{p.op} on {p.requested}", f"ran on {p.device}") for p in wrong) + _why_lines(ctx),
        fix=_explain_fix(
            ctx, "Find out why the GPU kernel was not used (usually a missing CUDA library or an unsupported GPU)."
        ),
    )


@rule("EC-PLC-003", "The convolution failed while the matmul passed (cuDNN)", "error", "placement")
def conv_failed(ctx: Context) -> Iterator[Hit]:
    """A matmul needs cuBLAS; a convolution needs cuDNN: only the second failing points at cuDNN."""
    placement = ctx.facts.tensorflow.placement
    for p in placement:
        if p.op != "matmul" or not p.ok or "GPU" not in (p.device or "").upper():
            continue
        conv = next((c for c in placement if c.op == "conv2d" and c.requested == p.requested), None)
        if conv is None or conv.ok:
            continue
        build = ctx.tf_build
        cudnn = ctx.facts.tensorflow.cudnn_version or (str(build.cudnn) if build is not None and build.cudnn else None)
        release = ctx.matrix.cudnn(cudnn) if cudnn and "." in cudnn else None
        error = conv.error or "wrong result"
        text = f"Install the cuDNN TensorFlow was built with ({cudnn or 'see envcheck matrix tf'})."
        commands: tuple[Command, ...] = ()
        if (
            "CUDNN_STATUS_INTERNAL_ERROR" in error
            or "convolution algorithm" in error
            or "out of memory" in error.lower()
        ):
            text += " If it is installed, TensorFlow may have run out of GPU memory while creating the cuDNN handle: let it grow memory instead of reserving it all."
            commands = (
                ctx.shell_command("export TF_FORCE_GPU_ALLOW_GROWTH=true", '$env:TF_FORCE_GPU_ALLOW_GROWTH = "true"'),
            )
        yield Hit(
            title=f"The matmul ran on {short_device(p.device)} but the convolution failed: {first_sentence(error.splitlines()[-1]) if error else 'wrong result'}",
            detail="The GPU and cuBLAS work; cuDNN (convolutions) does not: missing, another version, or no memory left to initialise it.",
            evidence=(("matmul", f"ok on {p.device}"), ("conv2d", error)) + _why_lines(ctx),
            fix=Fix(text=text, commands=commands, url=release.download_url if release is not None else None),
        )


@rule("EC-PLC-004", "TensorFlow uses fewer GPUs than are visible", "warning", "placement")
def fewer_gpus(ctx: Context) -> Iterator[Hit]:
    facts = ctx.facts
    listed = ctx.tf_gpu_count
    if facts.tensorflow.status != OK or listed == 0 or facts.nvml.status != OK:
        return
    resolution = ctx.visibility
    expected = resolution.count if resolution is not None else len(facts.nvml.gpus)
    if listed >= expected:
        return
    arch = build_architectures(ctx)
    unsupported = arch is not None and any(
        support(ctx, arch, g.compute_capability) == "none" for g in gpu_capabilities(ctx)
    )
    yield Hit(
        title=f"TensorFlow uses {listed} of the {expected} visible GPUs",
        detail="TensorFlow skips GPUs it cannot use (an unsupported compute capability, too few multiprocessors) and says so in its log.",
        evidence=(("visible to CUDA", str(expected)), ("listed by TensorFlow", str(listed))) + _why_lines(ctx),
        fix=_explain_fix(ctx, "The log lines above name each skipped GPU and why."),
        caused_by="EC-CC-001" if unsupported else None,
    )
