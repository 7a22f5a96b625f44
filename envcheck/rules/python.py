"""Link 1: the interpreter. TensorFlow ships 64-bit wheels only."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.findings import Fix
from envcheck.machine import ABSENT, minor, parse_version
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.evidence import matrix_evidence
from envcheck.rules.installs import install_release


@rule("EC-PY-001", "32-bit Python", "error", "python")
def python_32bit(ctx: Context) -> Iterator[Hit]:
    """TensorFlow publishes no 32-bit wheels; pip reports 'no matching distribution'."""
    py = ctx.facts.python
    if not py.bits or py.bits == 64:
        return
    yield Hit(
        title=f"Python {py.version} is {py.bits}-bit; TensorFlow needs a 64-bit Python",
        detail=(
            "TensorFlow is only built for 64-bit interpreters, so pip finds no matching "
            "distribution and no GPU (or CPU) build can be installed into this one."
        ),
        evidence=(("python.bits", str(py.bits)), ("python.executable", py.executable)),
        fix=Fix(
            text=(
                "Install a 64-bit Python (on Windows the 'Windows installer (64-bit)', x86-64), "
                "create a fresh virtual environment with it, and install TensorFlow there."
            ),
            commands=(
                ctx.shell_command("python3 -m venv tf-env", "py -3-64 -m venv tf-env"),
                ctx.shell_command(
                    "tf-env/bin/python -c \"import struct; print(struct.calcsize('P') * 8)\"",
                    "py -3-64 -c \"import struct; print(struct.calcsize('P') * 8)\"",
                ),
            ),
            url="https://www.python.org/downloads/",
        ),
    )


@rule("EC-PY-002", "Python version not supported by the TensorFlow release", "error", "python")
def python_version_unsupported(ctx: Context) -> Iterator[Hit]:
    """pip refuses (or TF fails to import) when no wheel of the release was built for this Python."""
    py = ctx.facts.python
    if not py.version or (py.bits and py.bits != 64):
        return
    pyminor = minor(py.version)
    tf = ctx.installed_tf
    if tf is not None:
        build = ctx.tf_build
        if build is None or not build.python or build.supports_python(py.version):
            return  # an uncovered release is EC-TF-008's "unknown", never a guess
        what = f"{tf.distribution} {tf.version}"
        wheels = f"it has wheels for Python {', '.join(build.python)}"
    else:
        # Nothing installed yet: is there any release this interpreter can install?
        build = ctx.newest_release(gpu=False)
        if (
            build is None
            or not build.python
            or any(b.supports_python(py.version) for b in ctx.matrix.tf_releases(ctx.build_os))
        ):
            return
        what = f"any TensorFlow release up to {build.label}"
        wheels = f"the newest has wheels for Python {', '.join(build.python)}"
    alternative = ctx.newest_release(gpu=False, python=py.version)
    commands = [ctx.shell_command(f"python{build.python[-1]} -m venv tf-env", f"py -{build.python[-1]} -m venv tf-env")]
    text = (
        f"Use a Python that {what} supports ({', '.join(build.python)}): install it, create a virtual "
        "environment with it and install TensorFlow there."
    )
    if alternative is not None and tf is not None:
        text += (
            f" Or keep Python {pyminor} and move to TensorFlow {alternative.label}, the newest release built for it."
        )
        commands.append(ctx.pip_command("install", ctx.pip_requirement(alternative, gpu=False), step=False))
    yield Hit(
        title=f"Python {pyminor} is not supported by {what} ({wheels})",
        detail=(
            f"TensorFlow publishes wheels per Python version; {what} has none for Python {pyminor}, "
            "so pip finds no matching distribution or the installed copy cannot import."
        ),
        evidence=(("python.version", py.version), matrix_evidence(ctx, build)),
        fix=Fix(text=text, commands=tuple(commands), url="https://www.python.org/downloads/"),
    )


@rule("EC-PY-003", "Python too old for current TensorFlow (and for envcheck's package probe)", "error", "python")
def python_too_old(ctx: Context) -> Iterator[Hit]:
    """Python 2.7 and 3.5 and older: the last TensorFlow releases for them are years old, and the
    doctor can read only the interpreter there, not its packages or TensorFlow."""
    py = ctx.facts.python
    version = parse_version(py.version)
    if version is None or version.release[:2] >= (3, 6):
        return
    pyminor = minor(py.version)
    last = ctx.newest_release(gpu=False, python=pyminor)
    gpu = ctx.gpu_presence != ABSENT
    newest = ctx.newest_release(gpu=gpu)
    commands, python_note = install_release(ctx, newest, gpu=gpu) if newest is not None else ((), "")
    last_text = (
        f"the last TensorFlow release with wheels for it is {last.label}"
        if last is not None
        else "no TensorFlow release in the matrix supports it"
    )
    yield Hit(
        title=f"Python {pyminor} is too old: {last_text}; use a Python 3 environment",
        detail=(
            f"Python {pyminor} is past its end of life and TensorFlow dropped it long ago; envcheck can read only the "
            "interpreter itself there (its packages and TensorFlow need Python 3.6 or later to be checked)."
        ),
        evidence=(("python.version", py.version), ("python.executable", py.executable)),
        fix=Fix(
            text=(
                f"Create an environment with a current Python and install TensorFlow {newest.label} in it."
                if newest
                else "Create an environment with a current Python."
            )
            + python_note,
            commands=commands,
            url="https://www.python.org/downloads/",
        ),
    )
