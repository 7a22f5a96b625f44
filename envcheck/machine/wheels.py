"""The installed packages around TensorFlow: the CUDA libraries that come as pip wheels
(``nvidia-*-cu12``) and the versions TensorFlow pins for them, and TensorFlow's own requirements
(NumPy, protobuf, Keras ...) against what is installed, as ``pip check`` would read them.

Markers are evaluated for the probed interpreter (its Python and platform from the snapshot),
never for the machine envcheck runs on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from envcheck.facts import ERROR, OK, SKIPPED, Distribution, Facts, LibraryCopy
from envcheck.machine.values import parse_version

if TYPE_CHECKING:  # pragma: no cover
    from packaging.requirements import Requirement

    from envcheck.machine.view import Machine

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


@dataclass(frozen=True)
class BrokenWheel:
    """An installed nvidia-* wheel that gives no loadable copy of its library."""

    dist: Distribution
    family: str
    broken: tuple[LibraryCopy, ...]  # its copies that fail to load (empty: none found at all)


@dataclass(frozen=True)
class Mismatch:
    name: str
    wanted: str  # the specifier, "<2.0.0,>=1.23.5"
    installed: Optional[str]  # None: not installed at all


def installed_cuda_wheels(facts: Facts) -> list[tuple[Distribution, str]]:
    """(distribution, library family) for every installed nvidia-* wheel that carries a library TF loads."""
    out = []
    for dist in facts.packages.distributions:
        match = _WHEEL.match(dist.name)
        if match and match.group(1) in WHEEL_FAMILIES:
            out.append((dist, WHEEL_FAMILIES[match.group(1)]))
    return out


def read_broken_wheels(m: "Machine") -> tuple[BrokenWheel, ...]:
    facts = m.facts
    if facts.libraries.status in (SKIPPED, ERROR) or not m.platform.linux_wheels:
        return ()
    major = m.tf_cuda.split(".")[0] if m.tf_cuda else None
    out = []
    for dist, family in installed_cuda_wheels(facts):
        if major is not None and not dist.name.endswith(f"-cu{major}"):
            continue  # a wheel of another CUDA major: this TensorFlow never loads it
        lib = next((x for x in facts.libraries.libraries if x.family == family), None)
        pip_copies = [c for c in (lib.copies if lib else ()) if c.origin == "pip"]
        broken = tuple(c for c in pip_copies if c.loads is False)
        if not pip_copies or broken:
            out.append(BrokenWheel(dist, family, broken))
    return tuple(out)


def read_cuda_pins(m: "Machine") -> dict[str, str]:
    """Wheel name -> version specifier TF's CUDA extra asks for: from the installed TF's own
    metadata when the probe recorded it (a fact of this install), else from the matrix row."""
    build = m.tf_build
    extra = build.pip_cuda.extra if build is not None and build.pip_cuda is not None else "and-cuda"
    pins: dict[str, str] = {}
    for req in m.tf_requirements:
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


def read_stack_mismatches(m: "Machine") -> tuple[Mismatch, ...]:
    """TensorFlow's requirements (other than the CUDA wheels) that the installed packages do not meet."""
    facts = m.facts
    if facts.packages.status != OK:
        return ()
    requirements = m.tf_requirements
    if not requirements:
        return ()
    # Start-up: imported here, beside _requirements' import, only when there is something to read.
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName

    env = marker_environment(m)
    out = []
    for req in requirements:
        try:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
        except (UndefinedComparison, UndefinedEnvironmentName, ValueError):
            # an odd requirement is not ours to judge, nor one whose marker needs a version the
            # snapshot does not hold as a number (a 5,000-digit part is past int()'s limit)
            continue
        if req.name.lower().startswith("nvidia-"):
            continue  # the CUDA wheels are the library rules' (EC-LIB-007)
        installed = facts.distribution(req.name)
        if installed is None:
            if facts.packages.complete:  # else the snapshot just did not record it
                out.append(Mismatch(req.name, str(req.specifier) or "any version", None))
            continue
        version = parse_version(installed.version)
        if version is not None and str(req.specifier) and not req.specifier.contains(version, prereleases=True):
            out.append(Mismatch(req.name, str(req.specifier), installed.version))
    return tuple(out)


def read_requirements(m: "Machine") -> tuple["Requirement", ...]:
    """The installed TensorFlow distribution's own Requires-Dist lines that parse."""
    tf = m.installed_tf
    dist = m.facts.distribution(tf.distribution) if tf is not None else None
    if dist is None or not dist.requires:
        return ()
    # Start-up: packaging.requirements pulls in packaging.markers and packaging.tags (tens of ms),
    # so it is imported only for a snapshot that lists TensorFlow's requirements.
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in dist.requires:
        try:
            out.append(Requirement(text))
        except InvalidRequirement:
            continue
    return tuple(out)


def marker_environment(m: "Machine") -> dict[str, str]:
    """PEP 508 marker values for the probed interpreter, from the snapshot."""
    facts = m.facts
    version = facts.python.version or ""
    system = facts.platform.system or {"windows": "Windows", "macos": "Darwin"}.get(m.os, "Linux")
    return {
        "python_version": ".".join(version.split(".")[:2]),
        "python_full_version": version,
        "implementation_name": (facts.python.implementation or "CPython").lower(),
        "platform_python_implementation": facts.python.implementation or "CPython",
        "sys_platform": {"Windows": "win32", "Darwin": "darwin"}.get(system, "linux"),
        "platform_system": system,
        "platform_machine": facts.python.machine or facts.platform.machine or "x86_64",
        "os_name": "nt" if system == "Windows" else "posix",
        "platform_release": facts.platform.release or "",
        "platform_version": facts.platform.version or "",
        "extra": "",
    }
