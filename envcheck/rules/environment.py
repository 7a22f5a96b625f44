"""Link 8: environment variables that change what TensorFlow does with the GPUs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Optional

from envcheck import cuda_devices as cd
from envcheck.findings import Fix, Severity
from envcheck.machine import PRESENT
from envcheck.rules.engine import Context, Hit, rule

CUDA_ENV_DOCS = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"


def visible_devices(ctx: Context) -> Optional[cd.VisibleDevices]:
    """CUDA_VISIBLE_DEVICES as CUDA reads it; None when it is not set."""
    seen = ctx.visible_devices
    return seen if seen.set else None


def _stop(ctx: Context) -> tuple[Optional[str], Optional[str], tuple[str, ...], bool]:
    """(where CUDA stopped, why, the entries it kept, whether no GPU is left) with the machine's
    GPUs when NVML listed them, else from the value alone."""
    seen = ctx.visible_devices
    resolution = ctx.visibility
    if resolution is not None:
        kept = tuple(seen.texts[: resolution.count]) if not resolution.mig else seen.texts
        return resolution.stopped_at, resolution.reason, kept, resolution.hides_all
    return seen.stopped_at, seen.reason, seen.texts, seen.hides_all


def hidden_by_environment(ctx: Context) -> Optional[str]:
    """The rule id that explains why CUDA sees no GPU at all, when CUDA_VISIBLE_DEVICES does."""
    if visible_devices(ctx) is None:
        return None
    _at, reason, kept, hides_all = _stop(ctx)
    if not hides_all:
        return None
    if reason == cd.REPEATED:
        return "EC-ENV-008"
    if reason in (cd.EMPTY, cd.NEGATIVE) and not kept:
        return "EC-ENV-003"
    if reason in (cd.OUT_OF_RANGE, cd.UNKNOWN_UUID, cd.AMBIGUOUS_UUID):
        return "EC-ENV-002"
    return "EC-ENV-001"


def _unset(ctx: Context, name: str):
    return ctx.unset_variable(name)


def allow_growth_command(ctx: Context):
    """TensorFlow allocates GPU memory as it needs it instead of (almost) all of it at start."""
    return ctx.set_variable("TF_FORCE_GPU_ALLOW_GROWTH", "true")


def _severity(ctx: Context) -> Severity:
    return Severity.ERROR if _stop(ctx)[3] and ctx.gpu_presence == PRESENT else Severity.WARNING


def _gpu_list(ctx: Context) -> str:
    gpus = ctx.facts.nvml.gpus
    return ", ".join(f"{g.index}: {g.name or '?'}" for g in gpus) or "unknown"


def _kept(kept: tuple[str, ...]) -> str:
    if not kept:
        return "no GPU is visible at all"
    return f"only {', '.join(kept)} stay{'s' if len(kept) == 1 else ''} visible"


def _visible_evidence(ctx: Context) -> tuple[tuple[str, str], ...]:
    out = [("CUDA_VISIBLE_DEVICES", repr(ctx.visible_devices.raw)), ("GPUs (nvidia-smi numbering)", _gpu_list(ctx))]
    resolution = ctx.visibility
    if resolution is not None and resolution.order_guessed:
        out.append(
            (
                "CUDA_DEVICE_ORDER",
                f"{ctx.facts.env_var('CUDA_DEVICE_ORDER') or 'unset'}: CUDA numbers the most capable GPU first",
            )
        )
    return tuple(out)


_STOPS = {
    cd.MALFORMED: "is not a number",
    cd.NEGATIVE: "is negative",
    cd.MIXED: "is not a UUID (a UUID list takes no GPU numbers)",
}


@rule("EC-ENV-001", "CUDA_VISIBLE_DEVICES malformed", "warning", "environment")
def visible_devices_malformed(ctx: Context) -> Iterator[Hit]:
    """CUDA reads each entry like strtoul and stops at the first it cannot read: "0,abc,1" shows only
    GPU 0, "0,1,-1,3" hides GPU 3, "1gpu2" means GPU 1."""
    seen = visible_devices(ctx)
    if seen is None:
        return
    at, reason, kept, _none_left = _stop(ctx)
    first_is_negative = reason == cd.NEGATIVE and not kept
    fix = Fix(
        text="Write GPU numbers (as nvidia-smi lists them, with CUDA_DEVICE_ORDER=PCI_BUS_ID) or UUIDs separated by commas, nothing else; or unset the variable to use every GPU.",
        commands=(
            ctx.set_variable("CUDA_VISIBLE_DEVICES", "0,1"),
            _unset(ctx, "CUDA_VISIBLE_DEVICES"),
        ),
        url=CUDA_ENV_DOCS,
    )
    if reason in _STOPS and not first_is_negative:
        yield Hit(
            title=f"CUDA_VISIBLE_DEVICES={seen.raw!r}: CUDA stops reading at {at!r}, which {_STOPS[reason]}, so {_kept(kept)}",
            detail="CUDA silently ignores everything from the first entry it cannot read as a GPU number or UUID.",
            evidence=_visible_evidence(ctx),
            fix=fix,
            severity=_severity(ctx),
        )
        return
    loose = seen.loosely_read
    if loose and reason is None:
        meant = ", ".join(f"{e.text!r} as {e.ordinal}" for e in loose)
        yield Hit(
            title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} is read loosely: CUDA takes {meant} and ignores the rest of the entry",
            detail="Each entry is read like strtoul: the leading number counts and whatever follows it is dropped without a word.",
            evidence=_visible_evidence(ctx),
            fix=fix,
            severity=Severity.WARNING,
        )


@rule("EC-ENV-002", "CUDA_VISIBLE_DEVICES out of range", "warning", "environment")
def visible_devices_out_of_range(ctx: Context) -> Iterator[Hit]:
    seen = visible_devices(ctx)
    if seen is None:
        return
    at, reason, kept, _none_left = _stop(ctx)
    if reason not in (cd.OUT_OF_RANGE, cd.UNKNOWN_UUID, cd.AMBIGUOUS_UUID):
        return
    count = len(ctx.cuda_gpus)
    what = {
        cd.OUT_OF_RANGE: f"there {'is' if count == 1 else 'are'} only {count} GPU{'s' if count != 1 else ''} (0-{count - 1})",
        cd.UNKNOWN_UUID: "no GPU's UUID starts with it",
        cd.AMBIGUOUS_UUID: "several GPUs' UUIDs start with it",
    }[reason]
    yield Hit(
        title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} names {at}, but {what}: {_kept(kept)}",
        detail="CUDA stops reading the list at the first GPU that does not exist (or that a UUID prefix does not pin down), silently.",
        evidence=_visible_evidence(ctx),
        fix=Fix(
            text=f"Name GPUs that exist (0 to {count - 1}, as nvidia-smi -L lists them) or a unique UUID prefix, or unset the variable.",
            commands=(_unset(ctx, "CUDA_VISIBLE_DEVICES"), ctx.shell_command("nvidia-smi -L")),
            url=CUDA_ENV_DOCS,
        ),
        severity=_severity(ctx),
    )


@rule("EC-ENV-003", "CUDA_VISIBLE_DEVICES empty or -1 (all GPUs hidden)", "warning", "environment")
def visible_devices_hide_all(ctx: Context) -> Iterator[Hit]:
    """The idiom that runs TensorFlow on the CPU on purpose (TF1's ``CUDA_VISIBLE_DEVICES=""``): the
    verdict is then "CPU only", said as such, and exit 0. A warning, because the same value is also
    often forgotten in a shell profile or a notebook."""
    seen = visible_devices(ctx)
    if seen is None or seen.reason not in (cd.EMPTY, cd.NEGATIVE) or seen.entries:
        return
    present = ctx.gpu_presence == PRESENT
    yield Hit(
        title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} hides every GPU"
        + ("" if present else " (there is none here anyway)"),
        detail="With this value CUDA reports no device, so TensorFlow runs on the CPU. Fine if on purpose; otherwise remove it.",
        gpus=tuple(g.key for g in ctx.gpus if g.hidden),
        evidence=(("CUDA_VISIBLE_DEVICES", repr(seen.raw)),),
        fix=Fix(
            text="If you want the GPU, remove the variable (check shell profiles, .env files and notebook cells that set it).",
            commands=(_unset(ctx, "CUDA_VISIBLE_DEVICES"),),
            url=CUDA_ENV_DOCS,
        ),
        severity=None if present else Severity.INFO,
    )


@rule("EC-ENV-004", "Several GPU models with CUDA_DEVICE_ORDER unset", "warning", "environment")
def device_order_unset(ctx: Context) -> Iterator[Hit]:
    """CUDA numbers the fastest GPU 0; nvidia-smi numbers by PCI bus: "GPU 1" is not the same card."""
    names = [g.name for g in ctx.facts.nvml.gpus if g.name]
    order = ctx.facts.env_var("CUDA_DEVICE_ORDER")
    if len(set(names)) < 2 or order == "PCI_BUS_ID":
        return
    yield Hit(
        title=f"GPUs of different models ({', '.join(sorted(set(names)))}) and CUDA_DEVICE_ORDER is {order or 'unset'}: CUDA's GPU numbers differ from nvidia-smi's",
        detail="CUDA's default order is fastest first; nvidia-smi orders by PCI bus. CUDA_VISIBLE_DEVICES=1 or tf.device('/gpu:1') then picks another card than nvidia-smi shows as 1.",
        evidence=(("CUDA_DEVICE_ORDER", order or "unset"), ("GPUs (nvidia-smi numbering)", _gpu_list(ctx))),
        fix=Fix(
            text="Number GPUs the way nvidia-smi does (set it in the shell profile, or before importing TensorFlow).",
            commands=(ctx.set_variable("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),),
            url=CUDA_ENV_DOCS,
        ),
    )


# "Most" of a GPU's memory: above this share another program leaves too little for training.
BUSY_SHARE = 0.5


@rule("EC-ENV-005", "Another process holds most of a GPU's memory", "warning", "environment")
def gpu_memory_taken(ctx: Context) -> Iterator[Hit]:
    for gpu in ctx.facts.nvml.gpus:
        if not gpu.memory_total_mb or gpu.memory_used_mb is None:
            continue
        share = gpu.memory_used_mb / gpu.memory_total_mb
        if share <= BUSY_SHARE:
            continue
        procs = ", ".join(
            f"{p.name or 'pid'} (pid {p.pid}{f', {p.used_memory_mb} MiB' if p.used_memory_mb is not None else ''})"
            for p in gpu.processes
        )
        yield Hit(
            title=f"GPU {gpu.index} ({gpu.name or '?'}): {gpu.memory_used_mb} of {gpu.memory_total_mb} MiB already in use"
            + (f" by {procs}" if procs else ""),
            detail="TensorFlow gets only what is left: expect out-of-memory errors (or CUDNN_STATUS_INTERNAL_ERROR) with normal batch sizes.",
            evidence=((f"nvml gpu {gpu.index} memory", f"{gpu.memory_used_mb}/{gpu.memory_total_mb} MiB"),)
            + tuple((f"process {p.pid}", f"{p.name or '?'}: {p.used_memory_mb} MiB") for p in gpu.processes),
            fix=Fix(
                text="Stop the other process, choose another GPU with CUDA_VISIBLE_DEVICES, or let TensorFlow grow its memory instead of reserving it all.",
                commands=(
                    ctx.shell_command("nvidia-smi"),
                    allow_growth_command(ctx),
                ),
            ),
        )


@rule(
    "EC-ENV-009",
    "A GPU shared with another process while TensorFlow would reserve all its memory",
    "warning",
    "environment",
)
def gpu_shared_without_growth(ctx: Context) -> Iterator[Hit]:
    """Without TF_FORCE_GPU_ALLOW_GROWTH each TensorFlow process reserves nearly all of a GPU's free
    memory when it starts, so a second process on that GPU (another training run, a notebook) runs
    out of memory. Where another process already holds most of the memory EC-ENV-005 says so."""
    if ctx.facts.env_var("TF_FORCE_GPU_ALLOW_GROWTH") is not None:
        return  # set: EC-ENV-006 judges a value TensorFlow rejects
    if ctx.is_cuda_tf is False:
        return  # a CPU-only build (tensorflow-cpu) reserves no GPU memory
    shared = [
        gpu
        for gpu in ctx.facts.nvml.gpus
        if gpu.processes
        and not (
            gpu.memory_total_mb
            and gpu.memory_used_mb is not None
            and gpu.memory_used_mb / gpu.memory_total_mb > BUSY_SHARE
        )
    ]
    if not shared:
        return
    names = "; ".join(
        f"GPU {gpu.index} ({gpu.name or '?'}) with "
        + ", ".join(f"{p.name or 'pid'} (pid {p.pid})" for p in gpu.processes)
        for gpu in shared
    )
    yield Hit(
        title=f"TF_FORCE_GPU_ALLOW_GROWTH is not set, and other processes use the GPU: {names}",
        detail=(
            "Each TensorFlow process reserves nearly all of a GPU's free memory when it starts, so the "
            "process that comes second on a shared GPU runs out of memory."
        ),
        evidence=(("TF_FORCE_GPU_ALLOW_GROWTH", "not set"),)
        + tuple((f"nvml gpu {gpu.index} processes", str(len(gpu.processes))) for gpu in shared),
        fix=Fix(
            text="Let TensorFlow grow its memory as it needs it instead of reserving it all at start.",
            commands=(allow_growth_command(ctx),),
            url="https://www.tensorflow.org/guide/gpu#limiting_gpu_memory_growth",
        ),
    )


@rule("EC-ENV-006", "TF_FORCE_GPU_ALLOW_GROWTH set to a value TensorFlow rejects", "warning", "environment")
def allow_growth_value(ctx: Context) -> Iterator[Hit]:
    """TensorFlow accepts exactly "true" or "false"; anything else is logged and ignored."""
    value = ctx.facts.env_var("TF_FORCE_GPU_ALLOW_GROWTH")
    if value is None or value in ("true", "false"):
        return
    yield Hit(
        title=f"TF_FORCE_GPU_ALLOW_GROWTH={value!r} is ignored: TensorFlow only accepts true or false",
        detail="TensorFlow logs that it could not parse the value and reserves (almost) all GPU memory as if it were unset.",
        evidence=(("TF_FORCE_GPU_ALLOW_GROWTH", value),),
        fix=Fix(
            text="Use the lower-case word.",
            commands=(allow_growth_command(ctx),),
        ),
    )


@rule("EC-ENV-007", "TF_CPP_MIN_LOG_LEVEL hides the messages that explain GPU failures", "info", "environment")
def log_level_hides(ctx: Context) -> Iterator[Hit]:
    """Level 2 drops warnings ("Could not load dynamic library ..."), level 3 errors too."""
    value = ctx.facts.env_var("TF_CPP_MIN_LOG_LEVEL")
    # TensorFlow reads it into an int64 and takes 0 when that fails (LogLevelStrToInt in tsl's
    # platform/default/logging.cc): 19 digits or more hide nothing.
    if value is None or not re.fullmatch(r"0*[0-9]{1,18}", value.strip()) or int(value) < 2:
        return
    yield Hit(
        title=f"TF_CPP_MIN_LOG_LEVEL={value} hides TensorFlow's {'warnings' if int(value) == 2 else 'warnings and errors'}, which name the missing GPU libraries",
        detail="Handy once everything works; while the GPU is not used it hides the reason.",
        evidence=(("TF_CPP_MIN_LOG_LEVEL", value),),
        fix=Fix(text="Unset it while you debug the GPU setup.", commands=(_unset(ctx, "TF_CPP_MIN_LOG_LEVEL"),)),
    )


@rule("EC-ENV-008", "CUDA_VISIBLE_DEVICES names a GPU twice (CUDA then shows none)", "error", "environment")
def visible_devices_repeated(ctx: Context) -> Iterator[Hit]:
    """A repeated number or UUID makes CUDA's device list empty, not shorter."""
    seen = visible_devices(ctx)
    if seen is None:
        return
    at, reason, _kept_entries, _none_left = _stop(ctx)
    if reason != cd.REPEATED:
        return
    present = ctx.gpu_presence == PRESENT
    yield Hit(
        title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} names {at} twice: CUDA then shows no GPU at all",
        detail="Naming the same GPU twice (by number or by UUID) does not give it twice; CUDA's device list comes out empty.",
        evidence=_visible_evidence(ctx),
        fix=Fix(
            text="Name each GPU once, or unset the variable to use every GPU.",
            commands=(_unset(ctx, "CUDA_VISIBLE_DEVICES"), ctx.shell_command("nvidia-smi -L")),
            url=CUDA_ENV_DOCS,
        ),
        severity=None if present else Severity.INFO,
    )
