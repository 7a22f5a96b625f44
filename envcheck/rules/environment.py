"""Link 8: environment variables that change what TensorFlow does with the GPUs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Optional

from envcheck.facts import OK
from envcheck.findings import Fix, Severity
from envcheck.rules.common import PRESENT, gpu_presence, shell_command
from envcheck.rules.engine import Context, Hit, rule

CUDA_ENV_DOCS = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"

EMPTY = "empty"
NEGATIVE = "negative"
MALFORMED = "malformed"
OUT_OF_RANGE = "out_of_range"
UNKNOWN_UUID = "unknown_uuid"


@dataclass(frozen=True)
class VisibleDevices:
    """How CUDA reads CUDA_VISIBLE_DEVICES: entries in order until the first invalid one, where it
    silently stops (so "0,abc,1" shows only GPU 0, and "abc" shows none)."""

    raw: str
    entries: tuple[str, ...]
    stopped_at: Optional[str] = None
    reason: Optional[str] = None  # EMPTY, NEGATIVE, MALFORMED, OUT_OF_RANGE, UNKNOWN_UUID

    @property
    def hides_all(self) -> bool:
        return not self.entries


def parse_visible_devices(value: str, gpu_count: Optional[int] = None, uuids: tuple[str, ...] = ()) -> VisibleDevices:
    if not value.strip():
        return VisibleDevices(value, (), None, EMPTY)
    accepted: list[str] = []
    for token in value.split(","):
        entry = token.strip()
        if re.fullmatch(r"[+-]?[0-9]+", entry):
            index = int(entry)
            if index < 0:
                return VisibleDevices(value, tuple(accepted), entry, NEGATIVE)
            if gpu_count is not None and index >= gpu_count:
                return VisibleDevices(value, tuple(accepted), entry, OUT_OF_RANGE)
        elif entry.upper().startswith(("GPU-", "MIG-")) and len(entry) > 4:
            if uuids and not any(u.lower().startswith(entry.lower()) for u in uuids):
                return VisibleDevices(value, tuple(accepted), entry, UNKNOWN_UUID)
        else:
            return VisibleDevices(value, tuple(accepted), entry, MALFORMED)
        accepted.append(entry)
    return VisibleDevices(value, tuple(accepted))


def visible_devices(ctx: Context) -> Optional[VisibleDevices]:
    value = ctx.facts.env_var("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    nvml = ctx.facts.nvml
    count = len(nvml.gpus) if nvml.status == OK and nvml.gpus else None
    uuids = tuple(g.uuid for g in nvml.gpus if g.uuid)
    return parse_visible_devices(value, count, uuids)


def hidden_by_environment(ctx: Context) -> Optional[str]:
    """The rule id that explains why CUDA sees no GPU at all, when CUDA_VISIBLE_DEVICES does."""
    seen = visible_devices(ctx)
    if seen is None or not seen.hides_all:
        return None
    return {EMPTY: "EC-ENV-003", NEGATIVE: "EC-ENV-003", MALFORMED: "EC-ENV-001"}.get(seen.reason, "EC-ENV-002")


def _unset(ctx: Context, name: str):
    return shell_command(ctx, f"unset {name}", f"Remove-Item Env:{name}")


def _severity(ctx: Context, seen: VisibleDevices) -> Severity:
    return Severity.ERROR if seen.hides_all and gpu_presence(ctx.facts) == PRESENT else Severity.WARNING


def _gpu_list(ctx: Context) -> str:
    gpus = ctx.facts.nvml.gpus
    return ", ".join(f"{g.index}: {g.name or '?'}" for g in gpus) or "unknown"


@rule("EC-ENV-001", "CUDA_VISIBLE_DEVICES malformed", "warning", "environment")
def visible_devices_malformed(ctx: Context) -> Iterator[Hit]:
    seen = visible_devices(ctx)
    if seen is None or seen.reason != MALFORMED:
        return
    shown = ",".join(seen.entries)
    result = f"only GPU {shown} stays visible" if seen.entries else "no GPU is visible at all"
    yield Hit(
        title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} is malformed: CUDA stops reading at {seen.stopped_at!r}, so {result}",
        detail="CUDA expects comma-separated GPU indices (0,1) or UUIDs (GPU-...) and silently ignores everything from the first entry it cannot read.",
        evidence=(("CUDA_VISIBLE_DEVICES", seen.raw), ("GPUs (nvidia-smi numbering)", _gpu_list(ctx))),
        fix=Fix(
            text="Write the indices separated by commas, without spaces or brackets, e.g. 0,1 (or unset the variable to use every GPU).",
            commands=(shell_command(ctx, "export CUDA_VISIBLE_DEVICES=0,1", '$env:CUDA_VISIBLE_DEVICES = "0,1"'), _unset(ctx, "CUDA_VISIBLE_DEVICES")),
            link=CUDA_ENV_DOCS,
        ),
        severity=_severity(ctx, seen),
    )


@rule("EC-ENV-002", "CUDA_VISIBLE_DEVICES out of range", "warning", "environment")
def visible_devices_out_of_range(ctx: Context) -> Iterator[Hit]:
    seen = visible_devices(ctx)
    if seen is None or seen.reason not in (OUT_OF_RANGE, UNKNOWN_UUID):
        return
    count = len(ctx.facts.nvml.gpus)
    what = f"there are only {count} GPU{'s' if count != 1 else ''} (0-{count - 1})" if seen.reason == OUT_OF_RANGE else "no GPU has that UUID"
    result = f"only {','.join(seen.entries)} stays visible" if seen.entries else "no GPU is visible at all"
    yield Hit(
        title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} names {seen.stopped_at}, but {what}: {result}",
        detail="CUDA stops reading the list at the first GPU that does not exist, silently.",
        evidence=(("CUDA_VISIBLE_DEVICES", seen.raw), ("GPUs (nvidia-smi numbering)", _gpu_list(ctx))),
        fix=Fix(
            text=f"Name GPUs that exist (0 to {count - 1}, as nvidia-smi lists them), or unset the variable.",
            commands=(_unset(ctx, "CUDA_VISIBLE_DEVICES"), shell_command(ctx, "nvidia-smi -L")),
            link=CUDA_ENV_DOCS,
        ),
        severity=_severity(ctx, seen),
    )


@rule("EC-ENV-003", "CUDA_VISIBLE_DEVICES empty or -1 (all GPUs hidden)", "error", "environment")
def visible_devices_hide_all(ctx: Context) -> Iterator[Hit]:
    """Often set on purpose to force the CPU, and then forgotten in a shell profile or a notebook."""
    seen = visible_devices(ctx)
    if seen is None or seen.reason not in (EMPTY, NEGATIVE) or seen.entries:
        return
    present = gpu_presence(ctx.facts) == PRESENT
    yield Hit(
        title=f"CUDA_VISIBLE_DEVICES={seen.raw!r} hides every GPU" + ("" if present else " (there is none here anyway)"),
        detail="With this value CUDA reports no device, so TensorFlow runs on the CPU. Fine if on purpose (the CPU path sets it); otherwise remove it.",
        evidence=(("CUDA_VISIBLE_DEVICES", seen.raw),),
        fix=Fix(
            text="If you want the GPU, remove the variable (check shell profiles, .env files and notebook cells that set it).",
            commands=(_unset(ctx, "CUDA_VISIBLE_DEVICES"),),
            link=CUDA_ENV_DOCS,
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
            commands=(shell_command(ctx, "export CUDA_DEVICE_ORDER=PCI_BUS_ID", '$env:CUDA_DEVICE_ORDER = "PCI_BUS_ID"'),),
            link=CUDA_ENV_DOCS,
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
        procs = ", ".join(f"{p.name or 'pid'} (pid {p.pid}{f', {p.used_memory_mb} MiB' if p.used_memory_mb is not None else ''})" for p in gpu.processes)
        yield Hit(
            title=f"GPU {gpu.index} ({gpu.name or '?'}): {gpu.memory_used_mb} of {gpu.memory_total_mb} MiB already in use" + (f" by {procs}" if procs else ""),
            detail="TensorFlow gets only what is left: expect out-of-memory errors (or CUDNN_STATUS_INTERNAL_ERROR) with normal batch sizes.",
            evidence=((f"nvml gpu {gpu.index} memory", f"{gpu.memory_used_mb}/{gpu.memory_total_mb} MiB"),)
            + tuple((f"process {p.pid}", f"{p.name or '?'}: {p.used_memory_mb} MiB") for p in gpu.processes),
            fix=Fix(
                text="Stop the other process, choose another GPU with CUDA_VISIBLE_DEVICES, or let TensorFlow grow its memory instead of reserving it all.",
                commands=(shell_command(ctx, "nvidia-smi"), shell_command(ctx, "export TF_FORCE_GPU_ALLOW_GROWTH=true", '$env:TF_FORCE_GPU_ALLOW_GROWTH = "true"')),
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
            commands=(shell_command(ctx, "export TF_FORCE_GPU_ALLOW_GROWTH=true", '$env:TF_FORCE_GPU_ALLOW_GROWTH = "true"'),),
        ),
    )


@rule("EC-ENV-007", "TF_CPP_MIN_LOG_LEVEL hides the messages that explain GPU failures", "info", "environment")
def log_level_hides(ctx: Context) -> Iterator[Hit]:
    """Level 2 drops warnings ("Could not load dynamic library ..."), level 3 errors too."""
    value = ctx.facts.env_var("TF_CPP_MIN_LOG_LEVEL")
    if value is None or not re.fullmatch(r"[0-9]+", value.strip()) or int(value) < 2:
        return
    yield Hit(
        title=f"TF_CPP_MIN_LOG_LEVEL={value} hides TensorFlow's {'warnings' if int(value) == 2 else 'warnings and errors'}, which name the missing GPU libraries",
        detail="Handy once everything works; while the GPU is not used it hides the reason.",
        evidence=(("TF_CPP_MIN_LOG_LEVEL", value),),
        fix=Fix(text="Unset it while you debug the GPU setup.", commands=(_unset(ctx, "TF_CPP_MIN_LOG_LEVEL"),)),
    )
