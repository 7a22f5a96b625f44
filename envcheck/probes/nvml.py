"""The driver's view of the GPUs, through NVML (the library behind nvidia-smi).

Every NVML failure becomes a status with its kind (``NVML_ERROR_KINDS``): globally when
``nvmlInit`` fails, per GPU when one card is lost or forbidden, per query when a single field
cannot be read. "Not Supported" is an answer, not a failure: GeForce cards have no serial and no MIG.

``nvmlInit`` can take a noticeable time on machines without persistence mode (the driver wakes
every GPU), so ``collect`` runs this probe on a thread beside the others.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any, Optional

from envcheck.facts import ERROR, MISSING, GpuPerformance, GpuProcess, NvmlFacts, NvmlGpu
from envcheck.probes.gpu_speed import guarded_performance, probe_pairs, probe_performance
from envcheck.probes.nvml_errors import FUNCTION_NOT_FOUND, LIBRARY_NOT_FOUND, NOT_SUPPORTED, error_kind
from envcheck.probes.nvml_errors import code_of as _code
from envcheck.probes.nvml_errors import describe as _describe

__all__ = ["FUNCTION_NOT_FOUND", "LIBRARY_NOT_FOUND", "NOT_SUPPORTED", "error_kind", "probe_nvml"]
_MIB = 1024 * 1024


def probe_nvml(nvml: Any = None) -> NvmlFacts:
    """Query NVML through ``nvml`` (the ``pynvml`` module, or a stand-in with its interface)."""
    if nvml is None:
        missing = _library_load_error()
        if missing is not None:
            return NvmlFacts(
                status=MISSING,
                error_kind="library_not_found",
                error_code=LIBRARY_NOT_FOUND,
                error=f"NVML Shared Library Not Found (NVML error {LIBRARY_NOT_FOUND}): {missing}",
            )
        try:
            # lazy for start-up: pynvml is heavy (or absent), imported only where it is used
            import pynvml as nvml
        except ImportError as exc:
            return NvmlFacts(
                status=ERROR,
                error_kind="unknown",
                error=f"the nvidia-ml-py package (module pynvml) cannot be imported: {exc}",
            )
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError, or OSError from a broken library
        code = _code(exc)
        kind = error_kind(code)
        return NvmlFacts(
            status=MISSING if kind == "library_not_found" else ERROR,
            error_kind=kind,
            error_code=code,
            error=_describe(exc),
            library=loaded_library_path(nvml),
        )
    try:
        return _query(nvml)
    except Exception as exc:  # noqa: BLE001 - probes never raise
        code = _code(exc)
        return NvmlFacts(
            status=ERROR,
            error_kind=error_kind(code),
            error_code=code,
            error=_describe(exc),
            library=loaded_library_path(nvml),
        )
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - nothing to do about a failed shutdown
            pass


def _library_load_error() -> Optional[str]:
    """Why libnvidia-ml.so.1 does not load, asked the way pynvml asks (Linux only), or None.

    Importing pynvml costs tens of milliseconds; a machine without the driver's library (most
    machines that end up on the CPU path) is told apart with one failed dlopen instead.
    """
    if not sys.platform.startswith("linux"):
        return None

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        return str(exc)
    return None


def _query(nvml: Any) -> NvmlFacts:
    errors: dict[str, str] = {}
    ask = _Asker(nvml, errors)
    driver_version = ask("driver_version", nvml.nvmlSystemGetDriverVersion)
    cuda = ask.first("cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion")
    nvml_version = ask("nvml_version", nvml.nvmlSystemGetNVMLVersion)
    try:
        count = nvml.nvmlDeviceGetCount()
    except Exception as exc:  # noqa: BLE001
        code = _code(exc)
        return NvmlFacts(
            status=ERROR,
            error_kind=error_kind(code),
            error_code=code,
            error=f"cannot count the GPUs: {_describe(exc)}",
            library=loaded_library_path(nvml),
            driver_version=_text(driver_version),
            cuda_driver_version=format_cuda_version(cuda),
            nvml_version=_text(nvml_version),
            query_errors=errors,
        )
    gpus = tuple(probe_gpu(nvml, index) for index in range(count))
    return NvmlFacts(
        library=loaded_library_path(nvml),
        driver_version=_text(driver_version),
        cuda_driver_version=format_cuda_version(cuda),
        nvml_version=_text(nvml_version),
        gpus=gpus,
        query_errors=errors,
        pairs=_pairs(nvml, gpus),
    )


def _pairs(nvml: Any, gpus: tuple[NvmlGpu, ...]) -> tuple:
    """How each two answering GPUs reach each other (probes/gpu_speed.py); never raises."""
    try:
        handles = {g.index: nvml.nvmlDeviceGetHandleByIndex(g.index) for g in gpus if g.status == "ok"}
        return probe_pairs(nvml, handles) if len(handles) > 1 else ()
    except Exception:  # noqa: BLE001 - probes never raise; the pairs are then unknown
        return ()


def probe_gpu(nvml: Any, index: int) -> NvmlGpu:
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:  # noqa: BLE001
        code = _code(exc)
        return NvmlGpu(index=index, status=ERROR, error_kind=error_kind(code), error_code=code, error=_describe(exc))
    errors: dict[str, str] = {}
    ask = _Asker(nvml, errors)
    name = ask("name", lambda: nvml.nvmlDeviceGetName(handle))
    uuid = ask("uuid", lambda: nvml.nvmlDeviceGetUUID(handle))
    serial = ask("serial", lambda: nvml.nvmlDeviceGetSerial(handle))
    pci = ask("pci_bus_id", lambda: nvml.nvmlDeviceGetPciInfo_v3(handle))
    cc = ask("compute_capability", lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle))
    memory = ask("memory", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    mig = ask("mig_mode", lambda: nvml.nvmlDeviceGetMigMode(handle))
    procs = ask.first(
        "processes",
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetComputeRunningProcesses_v2",
        args=(handle,),
    )
    lost = ask.fatal
    performance = None if lost is not None else _performance(nvml, handle)
    return NvmlGpu(
        index=index,
        name=_text(name),
        uuid=_text(uuid),
        serial=_text(serial),
        pci_bus_id=normalise_bus_id(_text(getattr(pci, "busId", None))) if pci is not None else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        memory_total_mb=int(memory.total) // _MIB if memory is not None else None,
        memory_used_mb=int(memory.used) // _MIB if memory is not None else None,
        mig_mode=bool(mig[0]) if mig else None,
        processes=tuple(_process(nvml, p) for p in procs or ()),
        status=ERROR if lost is not None else "ok",
        error_kind=error_kind(_code(lost)) if lost is not None else None,
        error_code=_code(lost) if lost is not None else None,
        error=_describe(lost) if lost is not None else None,
        query_errors=errors,
        performance=performance,
    )


def _performance(nvml: Any, handle: Any) -> Optional[GpuPerformance]:
    """The GPU's speed facts; None when the driver answered none of them."""
    performance = guarded_performance(lambda: probe_performance(nvml, handle))
    return None if performance == GpuPerformance() else performance


class _Asker:
    """Runs one NVML query; a failure lands in ``errors`` (or is ignored as Not Supported)."""

    # Kinds after which the GPU is unusable, not merely missing one field.
    FATAL = ("gpu_lost", "driver_not_loaded", "version_mismatch")

    def __init__(self, nvml: Any, errors: dict[str, str]):
        self.nvml = nvml
        self.errors = errors
        self.fatal: Optional[BaseException] = None

    def __call__(self, field: str, query: Callable[[], Any]) -> Any:
        try:
            return query()
        except Exception as exc:  # noqa: BLE001
            self.record(field, exc)
            return None

    def first(self, field: str, *names: str, args: tuple = ()) -> Any:
        """Try versioned entry points newest first: an old driver lacks the newer ones."""
        last: Optional[BaseException] = None
        for name in names:
            fn = getattr(self.nvml, name, None)
            if fn is None:
                continue
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001
                last = exc
                if _code(exc) != FUNCTION_NOT_FOUND:
                    break
        if last is not None:
            self.record(field, last)
        return None

    def record(self, field: str, exc: BaseException) -> None:
        code = _code(exc)
        if code == NOT_SUPPORTED:
            return
        kind = error_kind(code)
        self.errors[field] = f"{kind}: {_describe(exc)}"
        if kind in self.FATAL and self.fatal is None:
            self.fatal = exc


def _process(nvml: Any, info: Any) -> GpuProcess:
    pid = int(getattr(info, "pid", 0))
    used = getattr(info, "usedGpuMemory", None)
    try:
        name = _text(nvml.nvmlSystemGetProcessName(pid))
    except Exception:  # noqa: BLE001 - another user's process, or a process that just ended
        name = None
    return GpuProcess(pid=pid, name=name or None, used_memory_mb=int(used) // _MIB if used is not None else None)


def format_cuda_version(value: Any) -> Optional[str]:
    """NVML's integer CUDA version (12040) as "12.4"."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def normalise_bus_id(bus_id: Optional[str]) -> Optional[str]:
    """NVML's "00000000:07:00.0" in the sysfs form "0000:07:00.0", so PCI and NVML facts match."""
    if not bus_id:
        return None
    parts = bus_id.strip().lower().split(":")
    if len(parts) == 3:
        domain = parts[0][-4:].rjust(4, "0")
        return f"{domain}:{parts[1]}:{parts[2]}"
    return bus_id.strip().lower()


def loaded_library_path(nvml: Any) -> Optional[str]:
    """Where the NVML library that answered lives (from the process's own memory map on Linux)."""
    name = getattr(getattr(nvml, "nvmlLib", None), "_name", None)
    if isinstance(name, str) and ("/" in name or "\\" in name):
        return name
    if not sys.platform.startswith("linux") or name is None:
        return name
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "libnvidia-ml.so" in path:
                    return path
    except OSError:
        pass
    return name


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return str(value).strip() or None
