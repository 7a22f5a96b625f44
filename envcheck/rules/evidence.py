"""Evidence lines rules attach to findings: the matrix row a verdict rests on, with its source."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.machine import Machine
    from envcheck.matrix import TfBuild


def source_url(ctx: "Machine", key: str) -> str:
    source = getattr(ctx.matrix, "sources", {}).get(key)
    return getattr(source, "url", None) or key


def matrix_evidence(ctx: "Machine", build: "TfBuild") -> tuple[str, str]:
    parts = [f"GPU build: {'yes' if build.gpu else 'no'}"]
    if build.cuda:
        parts.append(f"CUDA {build.cuda}")
    if build.cudnn:
        parts.append(f"cuDNN {build.cudnn}")
    if build.python:
        parts.append("Python " + ", ".join(build.python))
    if build.sources:
        parts.append("source: " + source_url(ctx, build.sources[0]))
    return (f"matrix: TensorFlow {build.label} on {build.os}", "; ".join(parts))
