"""Which GPUs a plan is for, on a machine whose GPUs no one release serves.

An old GPU that no current release runs on must not drag the whole machine back to the release
that still supports it (TensorFlow 1.4 on a Python 3.6 for the sake of a GTX 680 next to an RTX
3090). The plan is for the GPUs worth using: those that the newest release any of them can take
runs on. The others are named and left out with CUDA_VISIBLE_DEVICES, in CUDA's own numbering; the
newest release that serves every GPU, where there is one, is an alternative.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from envcheck import cuda_devices
from envcheck.planner.options import Option, gpu_fit, gpu_options
from envcheck.planner.target import Target, TargetGpu

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix


def split_gpus(matrix: "Matrix", target: Target) -> tuple[Target, tuple[TargetGpu, ...]]:
    """(the target narrowed to the GPUs worth using, the GPUs left out). Unchanged when every
    GPU's capability is not known, or one release serves them all."""
    if len(target.capabilities) < 2 or any(g.compute_capability is None for g in target.gpus):
        return target, ()
    best: Optional[Option] = None
    for cc in target.capabilities:
        option = newest_for(matrix, only(target, cc))
        if option is not None and (best is None or option.build.tf > best.build.tf):
            best = option
    if best is None:
        return target, ()  # no GPU build runs on any of them: the plan is for the CPU
    used = tuple(g for g in target.gpus if _runs(matrix, best, only(target, g.compute_capability)))
    left = tuple(g for g in target.gpus if g not in used)
    if not left:
        return target, ()
    capabilities = [g.compute_capability for g in used if g.compute_capability is not None]
    return replace(target, gpus=used, gpu_names=tuple(g.name for g in used), compute_capability=min(capabilities)), left


def only(target: Target, cc) -> Target:
    """The target as if it had only GPUs of capability ``cc``."""
    return replace(target, gpus=(), gpu_names=(), compute_capability=cc)


def newest_for(matrix: "Matrix", target: Target) -> Optional[Option]:
    """The newest GPU option for the target, for its Python when one fits, else with another."""
    options = gpu_options(matrix, target, target.os) or gpu_options(matrix, target, target.os, python=False)
    return options[0] if options else None


def _runs(matrix: "Matrix", option: Option, target: Target) -> bool:
    support, _floor, reachable = gpu_fit(matrix, option.build, target, option.os)
    return support not in (None, "none") and reachable


def keep_settings(target: Target, used: tuple[TargetGpu, ...], left: tuple[TargetGpu, ...]) -> list[tuple[str, str]]:
    """The variables that keep ``used`` (``cuda_devices.keep_settings``) over the GPUs the driver
    lists (one it does not drive CUDA never sees); [] when nothing needs hiding or a listed GPU's
    nvidia-smi number is not known."""
    listed = [g for g in used + left if g.index is not None]
    if not any(g.index is not None for g in left):
        return []
    gpus = [cuda_devices.Gpu(g.index, g.uuid, str(g.compute_capability), g.name) for g in sorted(listed, key=_index)]
    return cuda_devices.keep_settings([g.index for g in used if g.index is not None], gpus, target.device_order)


def _index(gpu: TargetGpu) -> int:
    return gpu.index if gpu.index is not None else -1
