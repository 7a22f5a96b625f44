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
    GpuProduct,
    Matrix,
    MatrixVersion,
    PipCuda,
    PlatformRules,
    Source,
    TfBuild,
    as_version,
    normalize_gpu_name,
)

__all__ = [
    "BUILD_OSES",
    "Correction",
    "CudaMajor",
    "CudaRelease",
    "CudnnRelease",
    "GpuProduct",
    "Matrix",
    "MatrixVersion",
    "PipCuda",
    "PlatformRules",
    "SCHEMA_VERSION",
    "Source",
    "TfBuild",
    "as_version",
    "clear_cache",
    "default_matrix_path",
    "load_matrix",
    "normalize_gpu_name",
    "parse_matrix",
]
