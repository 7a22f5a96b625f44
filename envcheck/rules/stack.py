"""The TensorFlow stack is coherent: what the installed TensorFlow distribution requires
(its own Requires-Dist: NumPy, protobuf, Keras, ml-dtypes, h5py, ...) is what is installed, as
``pip check`` would say, for TensorFlow's requirements only. Markers are evaluated for the probed
interpreter (its Python and platform from the snapshot), never for the machine envcheck runs on
(``Machine.stack_mismatches``)."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.findings import Fix, Severity
from envcheck.rules.engine import Context, Hit, rule


@rule("EC-TF-010", "Packages outside the installed TensorFlow's own requirements", "warning", "tensorflow")
def stack_incoherent(ctx: Context) -> Iterator[Hit]:
    """A NumPy 2 under a TensorFlow built for NumPy 1, a protobuf or Keras of another line: the
    import fails or misbehaves; the fix is the versions TensorFlow itself asks for."""
    bad = ctx.stack_mismatches
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
            release=ctx.installed_release,
            commands=(ctx.pip_command("install", *pins),),
        ),
        severity=Severity.ERROR if failed else None,
    )
