"""The compatibility matrix: ``compat_matrix.yaml`` validated into typed, frozen records.

``load_matrix()`` gives the bundled matrix (cached); ``load_matrix(path)`` a user's ``--matrix``
file, validated the same way.
"""

from __future__ import annotations

from envcheck.matrix.loader import SCHEMA_VERSION, clear_cache, default_matrix_path, load_matrix, parse_matrix
from envcheck.matrix.model import (
    BUILD_OSES,
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
    normalize_gpu_name,
    requirement_text,
)

__all__ = [
    "BUILD_OSES",
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
    "normalize_gpu_name",
    "parse_matrix",
    "requirement_text",
]
