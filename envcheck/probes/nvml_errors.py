"""NVML's return codes as the probes tell them apart, and an NVMLError as one line."""

from __future__ import annotations

from typing import Optional

# NVML return codes (nvml.h) the doctor tells apart; everything else is "unknown".
_KIND_BY_CODE = {
    12: "library_not_found",  # NVML_ERROR_LIBRARY_NOT_FOUND
    9: "driver_not_loaded",  # NVML_ERROR_DRIVER_NOT_LOADED
    18: "version_mismatch",  # NVML_ERROR_LIB_RM_VERSION_MISMATCH: upgraded without a reboot
    15: "gpu_lost",  # NVML_ERROR_GPU_IS_LOST
    4: "no_permission",  # NVML_ERROR_NO_PERMISSION
    13: "function_not_found",  # NVML_ERROR_FUNCTION_NOT_FOUND: a driver older than the binding
}
NOT_SUPPORTED = 3
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13


def error_kind(code: Optional[int]) -> str:
    return _KIND_BY_CODE.get(code, "unknown") if code is not None else "unknown"


def code_of(exc: Optional[BaseException]) -> Optional[int]:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def describe(exc: Optional[BaseException]) -> Optional[str]:
    if exc is None:
        return None
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - pynvml formats messages by calling into the library
        text = ""
    code = code_of(exc)
    text = text or type(exc).__name__
    return f"{text} (NVML error {code})" if code is not None else f"{type(exc).__name__}: {text}"
