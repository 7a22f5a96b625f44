"""The TensorFlow stack is coherent: what the installed TensorFlow distribution requires
(its own Requires-Dist: NumPy, protobuf, Keras, ml-dtypes, h5py, ...) is what is installed, as
``pip check`` would say, for TensorFlow's requirements only. Markers are evaluated for the probed
interpreter (its Python and platform from the snapshot), never for the machine envcheck runs on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

from envcheck.findings import Fix, Severity
from envcheck.machine import parse_version
from envcheck.rules.engine import Context, Hit, rule


@dataclass(frozen=True)
class Mismatch:
    name: str
    wanted: str  # the specifier, "<2.0.0,>=1.23.5"
    installed: Optional[str]  # None: not installed at all


def _environment(ctx: Context) -> dict[str, str]:
    facts = ctx.facts
    version = facts.python.version or ""
    system = facts.platform.system or {"windows": "Windows", "macos": "Darwin"}.get(ctx.os, "Linux")
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


def stack_mismatches(ctx: Context) -> list[Mismatch]:
    """TensorFlow's requirements that the installed packages do not meet."""

    def compute() -> list[Mismatch]:
        from packaging.requirements import InvalidRequirement, Requirement

        tf = ctx.installed_tf
        dist = ctx.facts.distribution(tf.distribution) if tf is not None else None
        if dist is None or not dist.requires or ctx.facts.packages.status != "ok":
            return []
        env = _environment(ctx)
        out = []
        for text in dist.requires:
            try:
                req = Requirement(text)
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
            except (InvalidRequirement, Exception):  # noqa: BLE001 - an odd requirement is not ours to judge
                continue
            if req.name.lower().startswith("nvidia-"):
                continue  # the CUDA wheels are the library rules' (EC-LIB-007)
            installed = ctx.facts.distribution(req.name)
            if installed is None:
                if ctx.facts.packages.complete:  # else the snapshot just did not record it
                    out.append(Mismatch(req.name, str(req.specifier) or "any version", None))
                continue
            version = parse_version(installed.version)
            if version is not None and str(req.specifier) and not req.specifier.contains(version, prereleases=True):
                out.append(Mismatch(req.name, str(req.specifier), installed.version))
        return out

    return ctx.memo("stack_mismatches", compute)


@rule("EC-TF-010", "Packages outside the installed TensorFlow's own requirements", "warning", "tensorflow")
def stack_incoherent(ctx: Context) -> Iterator[Hit]:
    """A NumPy 2 under a TensorFlow built for NumPy 1, a protobuf or Keras of another line: the
    import fails or misbehaves; the fix is the versions TensorFlow itself asks for."""
    bad = stack_mismatches(ctx)
    if not bad:
        return
    tf = ctx.installed_tf
    listed = ", ".join(
        f"{m.name} {m.installed} (needs {m.wanted})" if m.installed else f"{m.name} missing (needs {m.wanted})"
        for m in bad
    )
    failed = ctx.facts.tensorflow.error_kind == "import_failed"
    pins = [f"{m.name}{m.wanted}" if m.wanted != "any version" else m.name for m in bad]
    yield Hit(
        title=f"{tf.distribution} {tf.version} requires other versions than are installed: {listed}",
        detail=(
            "Each TensorFlow release names the versions of NumPy, protobuf, Keras and the rest it was built and "
            "tested with; pip warned about this at install time, and another package may have upgraded them since."
        ),
        evidence=tuple(
            (m.name, f"installed {m.installed or 'nothing'}; {tf.distribution} {tf.version} requires {m.wanted}")
            for m in bad
        ),
        fix=Fix(
            text=f"Install the versions {tf.distribution} {tf.version} requires (this can downgrade what another package upgraded).",
            commands=(ctx.pip_command("install", *pins),),
        ),
        severity=Severity.ERROR if failed else None,
    )
