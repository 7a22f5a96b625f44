"""What a training script imports instead of copying TF1 snippets: choose GPUs, limit their
memory, and fall back to the CPU with the doctor's reason when no GPU is usable.

    from envcheck import runtime
    devices = runtime.configure(gpus=[0, 1], memory_growth=True)

Call ``configure`` at the top of the script, before any TensorFlow op, model or device query:
TensorFlow fixes its devices the first time it initialises them. GPU indices are those
``nvidia-smi`` shows (PCI bus order). docs/runtime.md maps each TF1 knob to its argument here.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from envcheck import cuda_devices
from envcheck.tfquiet import quiet_tensorflow

FALLBACKS = ("cpu", "error")
_TOO_LATE_MARKERS = ("cannot be modified after being initialized", "after being initialized")


class RuntimeConfigError(RuntimeError):
    """envcheck.runtime could not configure TensorFlow as asked."""


class GpuUnavailableError(RuntimeConfigError):
    """No GPU is usable and ``fallback="error"`` was asked for."""


class ConfigureTooLateError(RuntimeConfigError):
    """TensorFlow had already initialised its devices when ``configure`` was called."""


class GpuFallbackWarning(RuntimeWarning):
    """No GPU is usable: the script runs on the CPU."""


@dataclass(frozen=True)
class Settings:
    gpus: Optional[tuple[int, ...]]
    memory_growth: Optional[bool]
    memory_limit_mb: Optional[int]
    memory_fraction: Optional[float]
    soft_placement: Optional[bool]
    log_placement: Optional[bool]
    fallback: str
    cpu_replicas: Optional[int]


@dataclass
class _State:
    settings: Optional[Settings] = None
    devices: tuple = ()
    warned: bool = False


_state = _State()


def configure(
    gpus: Union[int, Sequence[int], None] = None,
    memory_growth: Optional[bool] = None,
    memory_limit_mb: Optional[int] = None,
    memory_fraction: Optional[float] = None,
    soft_placement: Optional[bool] = None,
    log_placement: Optional[bool] = None,
    fallback: str = "cpu",
    cpu_replicas: Optional[int] = None,
    facts: Any = None,
    quiet: bool = True,
) -> list:
    """Configure TensorFlow's devices and return the logical devices to train on.

    gpus: an index or a list of indices in nvidia-smi's (PCI bus) order; None for all; [] for none
        (the CPU on purpose, without a warning: TF1's CUDA_VISIBLE_DEVICES="").
    memory_growth: allocate GPU memory as needed instead of (almost) all of it at start.
    memory_limit_mb / memory_fraction: cap each chosen GPU's memory, in MiB or as a share of its
        total (the TF1 ``per_process_gpu_memory_fraction``); at most one of them.
    soft_placement: let ops without a GPU kernel run on the CPU instead of failing.
    log_placement: log the device of every op.
    fallback: "cpu" runs on the CPU with one warning saying why when no GPU is usable; "error"
        raises GpuUnavailableError instead.
    cpu_replicas: split the CPU into this many logical devices (multi-replica runs without GPUs).
    facts: a facts snapshot (``Facts`` or a JSON path) to read GPU memory from instead of NVML.
    quiet: keep TensorFlow's start-up log lines and warnings (oneDNN, cuInit on a machine without
        a GPU) out of the script's output; False shows them.

    Calling it again with the same arguments returns the same devices; with other arguments after
    TensorFlow initialised, it raises ConfigureTooLateError.
    """
    settings = validate(
        gpus=gpus,
        memory_growth=memory_growth,
        memory_limit_mb=memory_limit_mb,
        memory_fraction=memory_fraction,
        soft_placement=soft_placement,
        log_placement=log_placement,
        fallback=fallback,
        cpu_replicas=cpu_replicas,
    )
    if _state.settings == settings:
        return list(_state.devices)
    # CUDA reads this when it initialises (TF's first device query), so nvidia-smi's numbering holds
    # even when TensorFlow is already imported, as long as no device was touched yet.
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    with quiet_tensorflow(verbose=not quiet):
        import tensorflow as tf  # start-up: TensorFlow itself is imported when the script configures it

        physical = tf.config.list_physical_devices("GPU")
    if settings.gpus == ():
        devices = _configure_cpu(tf, settings)
    elif physical:
        devices = _configure_gpus(tf, settings, physical, facts)
    else:
        devices = _configure_cpu_fallback(tf, settings)
    _state.settings = settings
    _state.devices = tuple(devices)
    return list(devices)


def validate(**kw: Any) -> Settings:
    """Check every argument before TensorFlow is touched; ValueError/TypeError name the argument."""
    gpus = kw["gpus"]
    if gpus is not None:
        items = [gpus] if isinstance(gpus, int) and not isinstance(gpus, bool) else gpus
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise TypeError(f"gpus must be an index or a list of indices, not {gpus!r}")
        items = list(items)
        for index in items:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"gpus: {index!r} is not a GPU index (an int as nvidia-smi numbers them)")
            if index < 0:
                raise ValueError(
                    f"gpus: {index} is negative; GPU indices start at 0 (use fallback or CUDA_VISIBLE_DEVICES='' for the CPU)"
                )
        if len(set(items)) != len(items):
            raise ValueError(f"gpus: {items} names a GPU twice")
        gpus = tuple(items)
    for name in ("memory_growth", "soft_placement", "log_placement"):
        if kw[name] is not None and not isinstance(kw[name], bool):
            raise TypeError(f"{name} must be True, False or None, not {kw[name]!r}")
    limit = kw["memory_limit_mb"]
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            raise TypeError(f"memory_limit_mb must be a number of MiB, not {limit!r}")
        if not 0 < limit < float("inf"):
            raise ValueError(f"memory_limit_mb must be a positive number of MiB, not {limit}")
        if int(limit) < 1:
            raise ValueError(f"memory_limit_mb must be at least 1 MiB, not {limit}")
        limit = int(limit)
    fraction = kw["memory_fraction"]
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
            raise TypeError(f"memory_fraction must be a number, not {fraction!r}")
        if not 0 < fraction <= 1:
            raise ValueError(f"memory_fraction must be in (0, 1], not {fraction}")
        fraction = float(fraction)
    if limit is not None and fraction is not None:
        raise ValueError("give memory_limit_mb or memory_fraction, not both")
    if kw["memory_growth"] and (limit is not None or fraction is not None):
        raise ValueError("memory_growth cannot be combined with a memory limit (TensorFlow supports one or the other)")
    if kw["fallback"] not in FALLBACKS:
        raise ValueError(f"fallback must be 'cpu' or 'error', not {kw['fallback']!r}")
    replicas = kw["cpu_replicas"]
    if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1):
        raise ValueError(f"cpu_replicas must be a whole number of at least 1, not {replicas!r}")
    return Settings(
        gpus=gpus,
        memory_growth=kw["memory_growth"],
        memory_limit_mb=limit,
        memory_fraction=fraction,
        soft_placement=kw["soft_placement"],
        log_placement=kw["log_placement"],
        fallback=kw["fallback"],
        cpu_replicas=replicas,
    )


def memory_limit_from_fraction(fraction: float, total_mb: int) -> int:
    """TF1's per_process_gpu_memory_fraction as the MiB limit TF2's logical devices take."""
    if not 0 < fraction <= 1:
        raise ValueError(f"memory_fraction must be in (0, 1], not {fraction}")
    if total_mb <= 0:
        raise ValueError(f"total GPU memory must be positive, not {total_mb}")
    return max(1, int(total_mb * fraction))


def select_gpus(physical: Sequence[Any], wanted: Optional[tuple[int, ...]]) -> list:
    """The physical GPUs for the wanted indices, in the order asked; a clear error for a bad index."""
    if wanted is None:
        return list(physical)
    count = len(physical)
    for index in wanted:
        if index >= count:
            seen = f"indices 0 to {count - 1}" if count > 1 else "index 0"
            raise ValueError(
                f"gpus: there is no GPU {index}; TensorFlow sees {count} GPU{'s' if count != 1 else ''} ({seen}, in nvidia-smi's order)"
            )
    return [physical[i] for i in wanted]


def split_cpu(replicas: int) -> list:
    """Split the CPU into ``replicas`` logical devices (for MirroredStrategy without GPUs).
    Like ``configure``, it must run before TensorFlow initialises its devices."""
    validate(
        gpus=None,
        memory_growth=None,
        memory_limit_mb=None,
        memory_fraction=None,
        soft_placement=None,
        log_placement=None,
        fallback="cpu",
        cpu_replicas=replicas,
    )
    import tensorflow as tf  # start-up: TensorFlow itself is imported when the script asks for it

    _split_cpu(tf, replicas)
    return tf.config.list_logical_devices("CPU")


def gpu_unavailable_reason(tf: Any = None) -> str:
    """The doctor's one-line reason why no GPU is usable: the quick probes and the rules, with TF's
    own view of itself from this process (no TensorFlow subprocess)."""
    return _diagnosis(tf)[0]


def _diagnosis(tf: Any = None) -> tuple[str, bool]:
    """(the reason, whether there is something to fix): a machine without an NVIDIA GPU is a
    finished state, where the CPU is the answer and the doctor has nothing to add."""
    try:
        # Start-up: a training script imports this module; the doctor (the matrix, the rules, the
        # probes) is loaded only when no GPU is usable and its reason is needed.
        from envcheck.findings import CPU_ONLY, DEGRADED, GPU_READY

        # lazy for start-up: keeps probes, verdict out of every import of runtime
        from envcheck.probes import ProbeOptions, collect
        from envcheck.verdict import judge

        facts = collect(ProbeOptions(quick=True))
        if tf is not None:
            facts = dataclasses.replace(facts, tensorflow=_tensorflow_facts(tf))
        verdict = judge(facts).verdict
        if verdict.status in (GPU_READY, DEGRADED):
            return (
                "TensorFlow lists no GPU, though the quick checks found nothing wrong; run `envcheck doctor` for the full check",
                True,
            )
        if verdict.status == CPU_ONLY and verdict.finished:
            # A finished state: the CPU is the answer (no NVIDIA GPU, or the user hid them).
            return verdict.reason.split(";")[0], False
        return verdict.reason, True
    except Exception as exc:  # noqa: BLE001 - a failing check must not stop the training script
        return f"TensorFlow lists no GPU (envcheck's own checks failed: {type(exc).__name__}: {exc})", True


# --- internals -----------------------------------------------------------------------------------


def _configure_cpu_fallback(tf: Any, settings: Settings) -> list:
    reason, fixable = _diagnosis(tf)
    if settings.fallback == "error":
        advice = (
            "Run `envcheck doctor` for the fix, or pass fallback='cpu'."
            if fixable
            else "Pass fallback='cpu' to run on the CPU."
        )
        raise GpuUnavailableError(f"no GPU usable by TensorFlow: {reason}. {advice}")
    devices = _configure_cpu(tf, settings)
    if not _state.warned:
        _state.warned = True
        asked = f" (gpus={list(settings.gpus)} asked for)" if settings.gpus else ""
        warnings.warn(f"no GPU usable{asked}, running on the CPU: {reason}", GpuFallbackWarning, stacklevel=3)
    return devices


def _configure_cpu(tf: Any, settings: Settings) -> list:
    _too_late_guard(lambda: tf.config.set_visible_devices([], "GPU"))
    if settings.cpu_replicas:
        _split_cpu(tf, settings.cpu_replicas)
    _placement_options(tf, settings)
    return tf.config.list_logical_devices("CPU")


def _configure_gpus(tf: Any, settings: Settings, physical: list, facts: Any) -> list:
    ordered = _pci_order(tf, physical)
    chosen = select_gpus(ordered, settings.gpus)
    _too_late_guard(lambda: tf.config.set_visible_devices(chosen, "GPU"))
    if settings.memory_growth is not None:
        for gpu in chosen:
            _too_late_guard(lambda gpu=gpu: tf.config.experimental.set_memory_growth(gpu, settings.memory_growth))
    limits = {}
    if settings.memory_limit_mb is not None:
        limits = {id(gpu): settings.memory_limit_mb for gpu in chosen}
    elif settings.memory_fraction is not None:
        totals = _total_memory_mb(facts)
        for position, gpu in zip(settings.gpus or range(len(chosen)), chosen):
            total = totals.get(position)
            if not total:
                raise RuntimeConfigError(
                    f"memory_fraction needs GPU {position}'s total memory, which NVML did not report; pass memory_limit_mb instead"
                )
            limits[id(gpu)] = memory_limit_from_fraction(settings.memory_fraction, total)
    for gpu in chosen:
        if id(gpu) in limits:
            config = [tf.config.LogicalDeviceConfiguration(memory_limit=limits[id(gpu)])]
            _too_late_guard(lambda gpu=gpu, config=config: tf.config.set_logical_device_configuration(gpu, config))
    if settings.cpu_replicas:
        _split_cpu(tf, settings.cpu_replicas)
    _placement_options(tf, settings)
    return tf.config.list_logical_devices("GPU")


def _split_cpu(tf: Any, replicas: int) -> None:
    cpu = tf.config.list_physical_devices("CPU")[0]
    config = [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
    _too_late_guard(lambda: tf.config.set_logical_device_configuration(cpu, config))


def _placement_options(tf: Any, settings: Settings) -> None:
    if settings.soft_placement is not None:
        tf.config.set_soft_device_placement(settings.soft_placement)
    if settings.log_placement is not None:
        tf.debugging.set_log_device_placement(settings.log_placement)


def _too_late_guard(change) -> None:
    try:
        change()
    except RuntimeError as exc:
        if any(marker in str(exc) for marker in _TOO_LATE_MARKERS):
            raise ConfigureTooLateError(
                "envcheck.runtime.configure() was called after TensorFlow initialised its devices "
                f"({exc}). Call it at the top of the script, before any TensorFlow op, model, dataset "
                "or tf.config.list_logical_devices() call."
            ) from None
        raise


def _pci_order(tf: Any, physical: list) -> list:
    """GPUs in PCI bus order. CUDA_DEVICE_ORDER=PCI_BUS_ID already gives that when it was set before
    CUDA started; when TF reports bus ids in the device details, sort by them to be sure."""
    keys = []
    for gpu in physical:
        try:
            details = tf.config.experimental.get_device_details(gpu)
        except Exception:  # noqa: BLE001 - details are optional
            return list(physical)
        bus = details.get("pci_bus_id") if isinstance(details, dict) else None
        if not bus:
            return list(physical)
        keys.append(str(bus).lower())
    return [gpu for _, gpu in sorted(zip(keys, physical), key=lambda pair: pair[0])]


def _total_memory_mb(facts: Any) -> dict[int, int]:
    """Total memory per GPU as TensorFlow numbers them (CUDA's reading of CUDA_VISIBLE_DEVICES and
    CUDA_DEVICE_ORDER), in MiB."""
    nvml_gpus = _nvml_gpus(facts)
    gpus = [
        cuda_devices.Gpu(index=g.index, uuid=g.uuid, compute_capability=g.compute_capability, name=g.name)
        for g in nvml_gpus
    ]
    visible = cuda_devices.read_visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"))
    resolution = cuda_devices.resolve(visible, gpus, os.environ.get("CUDA_DEVICE_ORDER"))
    totals = {g.index: g.memory_total_mb for g in nvml_gpus if g.memory_total_mb}
    return {position: totals[index] for index, position in resolution.cuda_index.items() if index in totals}


def _nvml_gpus(facts: Any) -> tuple:
    if facts is not None:
        from envcheck.facts import Facts, load_facts  # start-up: see the note on _diagnosis

        snapshot = facts if isinstance(facts, Facts) else load_facts(Path(facts))
        return snapshot.nvml.gpus
    from envcheck.probes.nvml import probe_nvml  # start-up: see the note on _diagnosis

    return probe_nvml().gpus


def _tensorflow_facts(tf: Any):
    """What this process's TensorFlow says about itself, as the TF probe would record it."""
    from envcheck.facts import TensorflowFacts, TfDevice  # start-up: see the note on _diagnosis

    try:
        info = dict(tf.sysconfig.get_build_info())
    except Exception:  # noqa: BLE001
        info = {}
    devices = tuple(TfDevice(name=d.name, device_type=d.device_type) for d in tf.config.list_physical_devices())
    return TensorflowFacts(
        version=getattr(tf, "__version__", None),
        is_cuda_build=bool(info.get("is_cuda_build")) if "is_cuda_build" in info else None,
        is_rocm_build=bool(info.get("is_rocm_build")) if "is_rocm_build" in info else None,
        cuda_version=info.get("cuda_version"),
        cudnn_version=info.get("cudnn_version"),
        compute_capabilities=tuple(info.get("cuda_compute_capabilities") or ()),
        physical_devices=devices,
        distribution=_tf_distribution(),
    )


def _tf_distribution() -> Optional[str]:
    from importlib import metadata  # start-up: see the note on _diagnosis

    # lazy for start-up: keeps matrix out of every import of runtime
    from envcheck.matrix import load_matrix

    for name in load_matrix().tf_distribution_names():
        try:
            metadata.version(name)
            return name
        except metadata.PackageNotFoundError:
            continue
    return None


__all__ = [
    "ConfigureTooLateError",
    "GpuFallbackWarning",
    "GpuUnavailableError",
    "RuntimeConfigError",
    "configure",
    "gpu_unavailable_reason",
    "memory_limit_from_fraction",
    "select_gpus",
    "split_cpu",
]
