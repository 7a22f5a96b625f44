"""Link 7: TensorFlow lists the GPUs and really runs ops on them (a matmul and a convolution), on
every GPU it lists. Each GPU's result is its own: a GPU whose ops fail is named, whatever the
others do."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envcheck import shell
from envcheck.facts import OK
from envcheck.findings import Fix
from envcheck.machine import PRESENT, GpuView, short_device
from envcheck.machine.gpus import BROKEN, BUSY_MARKERS, ran_on
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.environment import allow_growth_command, hidden_by_environment
from envcheck.rules.tensorflow import first_sentence
from envcheck.words import counted

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
    listing = f"{ctx.python_line(_LIST_GPUS)} 2>&1 | envcheck explain -"
    return Fix(
        text=text + " Paste TensorFlow's log into `envcheck explain` for the fix of each message.",
        commands=(ctx.shell_command(shell.with_variable("TF_CPP_MIN_LOG_LEVEL", "0", listing, ctx.shell)),),
    )


def _on_device(ctx: Context, gpu: GpuView) -> list:
    if not gpu.tf_device:
        return []
    device = short_device(gpu.tf_device)
    return [p for p in ctx.facts.tensorflow.placement if short_device(p.requested) == device]


@rule("EC-PLC-001", "TensorFlow lists no GPU although the links before look right", "error", "placement")
def tf_lists_no_gpu(ctx: Context) -> Iterator[Hit]:
    facts = ctx.facts
    tf = facts.tensorflow
    if tf.status != OK or ctx.is_cuda_tf is not True or ctx.tf_gpu_count > 0 or ctx.gpu_presence != PRESENT:
        return
    if (ctx.gpus and not ctx.visible_gpus) or (ctx.visibility is not None and ctx.visibility.hides_all):
        return  # CUDA_VISIBLE_DEVICES hides them all: the environment's finding says so
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
        gpus=tuple(g.key for g in ctx.gpus if not g.hidden),
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
    devices = {short_device(p.requested) for p in wrong}
    shown = ", ".join(f"{p.op} asked for {short_device(p.requested)} ran on {short_device(p.device)}" for p in wrong)
    yield Hit(
        title=f"TensorFlow lists the GPU but ran the test on the CPU ({shown})",
        detail="With soft placement TensorFlow moves ops it cannot run on the GPU to the CPU without an error; the GPU is not doing the work.",
        evidence=tuple((f"{p.op} on {p.requested}", f"ran on {p.device}") for p in wrong) + _why_lines(ctx),
        fix=_explain_fix(
            ctx, "Find out why the GPU kernel was not used (usually a missing CUDA library or an unsupported GPU)."
        ),
        gpus=tuple(g.key for g in ctx.gpus if g.tf_device and short_device(g.tf_device) in devices),
    )


def _conv_failed_alone(ctx: Context, gpu: GpuView) -> bool:
    """The matmul ran on this GPU and the convolution failed there: cuDNN, not the GPU."""
    results = _on_device(ctx, gpu)
    matmul = next((p for p in results if p.op == "matmul"), None)
    conv = next((p for p in results if p.op == "conv2d"), None)
    return matmul is not None and ran_on(matmul, gpu.tf_device) and conv is not None and not conv.ok


@rule("EC-PLC-003", "The convolution failed while the matmul passed (cuDNN)", "error", "placement")
def conv_failed(ctx: Context) -> Iterator[Hit]:
    """A matmul needs cuBLAS; a convolution needs cuDNN: only the second failing points at cuDNN."""
    gpus = [g for g in ctx.gpus if g.tf_device and _conv_failed_alone(ctx, g)]
    if not gpus:
        return
    conv = next(p for p in _on_device(ctx, gpus[0]) if p.op == "conv2d")
    build = ctx.tf_build
    cudnn = ctx.facts.tensorflow.cudnn_version or (str(build.cudnn) if build is not None and build.cudnn else None)
    release = ctx.matrix.cudnn(cudnn) if cudnn and "." in cudnn else None
    error = conv.error or "wrong result"
    text = f"Install the cuDNN TensorFlow was built with ({cudnn or 'see envcheck matrix tf'})."
    commands: tuple = ()
    if "CUDNN_STATUS_INTERNAL_ERROR" in error or "convolution algorithm" in error or "out of memory" in error.lower():
        text += " If it is installed, TensorFlow may have run out of GPU memory while creating the cuDNN handle: let it grow memory instead of reserving it all."
        commands = (allow_growth_command(ctx),)
    where = gpus[0].tf_device if len(gpus) == 1 else ", ".join(g.tf_device for g in gpus if g.tf_device)
    yield Hit(
        title=f"The matmul ran on {short_device(where)} but the convolution failed: {first_sentence(error.splitlines()[-1]) if error else 'wrong result'}",
        detail="The GPU and cuBLAS work; cuDNN (convolutions) does not: missing, another version, or no memory left to initialise it.",
        evidence=tuple(("matmul", f"ok on {g.tf_device}") for g in gpus) + (("conv2d", error),) + _why_lines(ctx),
        fix=Fix(
            text=text,
            commands=commands,
            url=release.download_url if release is not None else None,
            release=ctx.installed_release,
        ),
        gpus=tuple(g.key for g in gpus),
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
    missing = [g for g in ctx.gpus if not g.hidden and g.tf_device is None]
    no_code = any(g.link("code") is not None and g.link("code").status == BROKEN for g in missing)
    yield Hit(
        title=f"TensorFlow uses {listed} of the {expected} visible GPUs",
        detail="TensorFlow skips GPUs it cannot use (an unsupported compute capability, too few multiprocessors) and says so in its log.",
        evidence=(("visible to CUDA", str(expected)), ("listed by TensorFlow", str(listed))) + _why_lines(ctx),
        fix=_explain_fix(ctx, "The log lines above name each skipped GPU and why."),
        caused_by="EC-CC-001" if no_code else None,
        gpus=tuple(g.key for g in missing),
    )


def _ops_failed(ctx: Context, gpu: GpuView) -> list:
    """This GPU's failed ops, unless only its convolution failed (EC-PLC-003) or an op ran elsewhere (EC-PLC-002)."""
    results = _on_device(ctx, gpu)
    failed = [p for p in results if not p.ok]
    if not failed or _conv_failed_alone(ctx, gpu) or any(p.ok and not ran_on(p, gpu.tf_device) for p in results):
        return []
    return failed


@rule("EC-PLC-005", "Ops fail on a GPU that TensorFlow lists", "error", "placement")
def ops_fail_on_gpu(ctx: Context) -> Iterator[Hit]:
    """TensorFlow lists the GPU, but a matmul placed on it fails: the GPU is held by another process
    in exclusive-process mode ("busy or unavailable"), out of memory, or faulty. The GPUs are named
    by index, name and bus id, one finding for each way of failing; the GPUs that work are kept."""
    by_failure: dict[tuple[bool, str, str], list[GpuView]] = {}
    for gpu in ctx.gpus:
        failed = _ops_failed(ctx, gpu) if gpu.tf_device else []
        if failed:
            error = (failed[0].error or "wrong result").strip()
            busy = any(marker in error for marker in BUSY_MARKERS)
            line = "" if busy else first_sentence(error.splitlines()[-1] if error else "wrong result")
            by_failure.setdefault((busy, failed[0].op, line), []).append(gpu)
    working = [g for g in ctx.gpus if g.usable]
    for (busy, op, line), gpus in by_failure.items():
        named = gpus[0].label if len(gpus) == 1 else _several(gpus)
        yield Hit(
            title=f"{named}: " + ("busy or unavailable, another process holds it" if busy else f"{op} failed: {line}"),
            detail=(
                "CUDA could not create a context on it: another process has it in exclusive-process compute mode, "
                "or it is reserved (nvidia-smi shows the compute mode and the processes)."
                if busy
                else "TensorFlow lists the GPU but the op placed on it did not run or gave a wrong result."
            ),
            evidence=tuple(
                (f"{p.op} on {p.requested}", (p.error or "wrong result").strip()[-300:])
                for g in gpus
                for p in _ops_failed(ctx, g)
            ),
            fix=_failing_gpu_fix(ctx, gpus, busy, working),
            gpus=tuple(g.key for g in gpus),
        )


def _several(gpus: list[GpuView]) -> str:
    """ "GPUs 0, 1 (2x Tesla V100, 0000:15:00.0, 0000:2f:00.0)"."""
    numbers = ", ".join(str(g.index) for g in gpus if g.index is not None)
    where = ", ".join([*counted(g.name for g in gpus), *(g.pci_bus_id for g in gpus if g.pci_bus_id)])
    return f"GPUs {numbers} ({where})" if numbers else where


def _failing_gpu_fix(ctx: Context, gpus: list[GpuView], busy: bool, working: list[GpuView]) -> Fix:
    commands = []
    gpu = gpus[0]
    if busy:
        text = (
            "Find the process that holds it and stop it, or ask an administrator to set its compute mode "
            "back to Default (sudo nvidia-smi -i N -c DEFAULT)."
        )
        commands.append(ctx.shell_command("nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id --format=csv"))
        commands.append(ctx.shell_command("nvidia-smi --query-gpu=index,compute_mode --format=csv"))
    else:
        text = f"Run TensorFlow on {gpu.tf_device} alone to see the whole error, and paste it into `envcheck explain`."
    keep = ctx.keep_only([g.index for g in working if g.index is not None]) if working else ()
    if keep:
        text += f" Meanwhile keep TensorFlow on the GPUs that work ({', '.join(counted(g.name for g in working))})."
        commands.extend(keep)
    return Fix(text=text, commands=tuple(commands))
