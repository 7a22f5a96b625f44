"""The compatibility matrix: ``compat_matrix.yaml`` validated into typed, frozen records.

``load_matrix()`` gives the bundled matrix (cached); ``load_matrix(path)`` a user's ``--matrix``
file, validated the same way.
"""

from __future__ import annotations

from envcheck.matrix.loader import SCHEMA_VERSION, clear_cache, default_matrix_path, load_matrix, parse_matrix
from envcheck.matrix.model import (
    BUILD_OSES,
    Architecture,
    Correction,
    CudaMajor,
    CudaRelease,
    CudnnRelease,
    DriverRequirement,
    GpuProduct,
    Matrix,
    MatrixVersion,
    PipCuda,
    PlatformRules,
    Source,
    TfBuild,
    TfDistribution,
    as_version,
    driver_os,
    gpu_name_key,
    normalize_gpu_name,
    parse_pci_device_id,
    requirement_text,
    unknown_gpu_message,
)

__all__ = [
    "BUILD_OSES",
    "Architecture",
    "Correction",
    "CudaMajor",
    "CudaRelease",
    "CudnnRelease",
    "DriverRequirement",
    "GpuProduct",
    "Matrix",
    "MatrixVersion",
    "PipCuda",
    "PlatformRules",
    "SCHEMA_VERSION",
    "Source",
    "TfBuild",
    "TfDistribution",
    "as_version",
    "driver_os",
    "clear_cache",
    "default_matrix_path",
    "load_matrix",
    "gpu_name_key",
    "normalize_gpu_name",
    "parse_matrix",
    "parse_pci_device_id",
    "requirement_text",
    "unknown_gpu_message",
]
