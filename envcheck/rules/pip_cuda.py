"""The CUDA libraries that come as pip wheels (``nvidia-*-cu12``) and the versions TF pins for them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from envcheck.facts import Distribution, Facts

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.rules.engine import Context

# Wheel name (without the -cuXX suffix) -> the library family the probe files its copies under.
WHEEL_FAMILIES = {
    "nvidia-cuda-runtime": "cudart",
    "nvidia-cudnn": "cudnn",
    "nvidia-cublas": "cublas",
    "nvidia-cufft": "cufft",
    "nvidia-curand": "curand",
    "nvidia-cusolver": "cusolver",
    "nvidia-cusparse": "cusparse",
}
_WHEEL = re.compile(r"^(nvidia-[a-z-]+?)-cu(\d+)$")


def installed_cuda_wheels(facts: Facts) -> list[tuple[Distribution, str]]:
    """(distribution, library family) for every installed nvidia-* wheel that carries a library TF loads."""
    out = []
    for dist in facts.packages.distributions:
        match = _WHEEL.match(dist.name)
        if match and match.group(1) in WHEEL_FAMILIES:
            out.append((dist, WHEEL_FAMILIES[match.group(1)]))
    return out


def cuda_pins(ctx: "Context") -> dict[str, str]:
    """Wheel name -> version specifier TF's CUDA extra asks for: from the installed TF's own
    metadata when the probe recorded it (a fact of this install), else from the matrix row."""
    return ctx.memo("cuda_pins", lambda: _cuda_pins(ctx))


def _cuda_pins(ctx: "Context") -> dict[str, str]:
    from packaging.requirements import InvalidRequirement, Requirement

    build = ctx.tf_build
    extra = build.pip_cuda.extra if build is not None and build.pip_cuda is not None else "and-cuda"
    tf = ctx.installed_tf
    dist = ctx.facts.distribution(tf.distribution) if tf is not None else None
    pins: dict[str, str] = {}
    for text in dist.requires if dist is not None else ():
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        # Only the extra's own markers: evaluating platform markers here would judge this machine,
        # not the snapshot's.
        if req.marker is None or not re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", str(req.marker)):
            continue
        if req.name.lower().startswith("nvidia-") and str(req.specifier):
            pins[req.name.lower()] = str(req.specifier)
    if pins:
        return pins
    if build is not None and build.pip_cuda is not None:
        return {name.lower(): spec for name, spec in build.pip_cuda.packages.items()}
    return {}
