"""Link 6: the TensorFlow installation: one distribution, a CUDA build, a release with GPU support
on this platform, and a module that imports."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Optional

from packaging.version import Version

from envcheck.findings import Fix
from envcheck.machine import ABSENT, PRESENT, minor, parse_version, telling_line
from envcheck.machine.libraries import MATH, libraries_apply, library_named_in
from envcheck.matrix.libraries import basename, library_family
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.evidence import matrix_evidence
from envcheck.rules.recommendation import recommend
from envcheck.shell import Command

TF_PIP_PAGE = "https://www.tensorflow.org/install/pip"
WSL_PAGE = "https://www.tensorflow.org/install/pip#windows-wsl2"
APPLE_METAL_PAGE = "https://developer.apple.com/metal/tensorflow-plugin/"

# Library family named in an import error -> the rule that explains a missing one.
_LIBRARY_RULES = {"cudart": "EC-LIB-001", "cudnn": "EC-LIB-002"}
_MATH_FAMILIES = MATH


def _never_cuda(ctx: Context, name: str) -> bool:
    dist = ctx.matrix.tf_distribution(name)
    return dist is not None and dist.cuda == "never"


def gpu_install_steps(
    ctx: Context, build, exact: Optional[str] = None, remove: tuple[str, ...] = ()
) -> tuple[Command, ...]:
    """Uninstall what is in the way, then install the GPU build of ``build``'s release."""
    steps = []
    if remove:
        steps.append(ctx.pip_command("uninstall", "-y", *remove))
    steps.append(ctx.pip_command("install", ctx.pip_requirement(build, exact)))
    return tuple(steps)


def gpu_release_for_here(ctx: Context):
    """The newest release with a GPU build on this OS for the probed Python."""
    return ctx.newest_release(gpu=True, python=ctx.facts.python.version or None)


@rule("EC-TF-001", "TensorFlow not installed", "warning", "tensorflow")
def tensorflow_not_installed(ctx: Context) -> Iterator[Hit]:
    """Not an error: the state before the first install. The fix is the plan for this machine."""
    facts = ctx.facts
    if not ctx.tf_not_installed:
        return
    plan = recommend(ctx)
    if plan is not None:
        steps = plan.gpu_steps or plan.cpu_steps
        install = next((f for f in steps if f.text.startswith("Install TensorFlow")), steps[0])
        fix = Fix(
            text=f"{install.text} That is the plan for this machine (envcheck plan shows why and the alternatives).",
            commands=install.commands,
            url=TF_PIP_PAGE,
        )
    else:
        fix = Fix(
            text="Run envcheck plan for the TensorFlow, CUDA, cuDNN and Python versions that fit this machine.",
            url=TF_PIP_PAGE,
        )
    yield Hit(
        title=f"TensorFlow is not installed in {facts.python.executable or 'this Python'}",
        detail="No TensorFlow distribution is installed in the probed interpreter.",
        evidence=(
            (
                "installed distributions",
                ", ".join(f"{d.name} {d.version}" for d in facts.packages.distributions[:12]) or "none",
            ),
        ),
        fix=fix,
    )


@rule("EC-TF-002", "Several TensorFlow distributions installed together", "error", "tensorflow")
def several_distributions(ctx: Context) -> Iterator[Hit]:
    """tensorflow + tensorflow-gpu (or -cpu) write the same files: whichever came last wins, half-mixed."""
    clashing = ctx.independent_distributions
    if len(clashing) < 2:
        return
    keep, release = _what_to_keep(ctx, clashing)
    listed = ", ".join(f"{d.name} {d.version}" for d in clashing)
    commands = (ctx.pip_command("uninstall", "-y", *(d.name for d in clashing)), ctx.pip_command("install", keep))
    yield Hit(
        title=f"Several TensorFlow distributions are installed together: {listed}",
        detail=(
            "They all install the same tensorflow package folder, overwriting each other's files; the "
            "result is a mix of builds that may not import or may silently be the CPU build."
        ),
        evidence=tuple((d.name, f"{d.version} at {d.location or '?'}") for d in clashing),
        fix=Fix(
            text=f"Uninstall all of them, then install one: {keep}.",
            commands=commands,
            url=TF_PIP_PAGE,
            release=release,
        ),
    )


def _what_to_keep(ctx: Context, dists) -> tuple[str, str]:
    """(the requirement, its release): the GPU build of the newest installed release when a GPU
    may be here, else the CPU one."""
    newest = max(dists, key=lambda d: parse_version(d.version) or parse_version("0"))
    build = ctx.build_for(newest.version)
    if build is not None and build.gpu and ctx.gpu_presence != ABSENT:
        exact = newest.version if not _is_dummy(ctx, newest.name, newest.version) else None
        return ctx.pip_requirement(build, exact), minor(build.tf)
    return f"tensorflow=={newest.version}", minor(newest.version)


def _is_dummy(ctx: Context, name: str, version: str) -> bool:
    # Start-up: packaging.specifiers is loaded only for a tensorflow-gpu install, the one it reads.
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    spec = ctx.matrix.platform.tensorflow_gpu_dummy
    v = parse_version(version)
    if name != "tensorflow-gpu" or not spec or v is None:
        return False
    try:
        return SpecifierSet(spec).contains(v, prereleases=True)
    except InvalidSpecifier:
        return False


@rule("EC-TF-003", "tensorflow-gpu at a release where it is a dummy", "error", "tensorflow")
def tensorflow_gpu_dummy(ctx: Context) -> Iterator[Hit]:
    dist = ctx.facts.distribution("tensorflow-gpu")
    if dist is None or not _is_dummy(ctx, dist.name, dist.version):
        return
    platform = ctx.matrix.platform
    target = gpu_release_for_here(ctx)
    commands: tuple[Command, ...] = (ctx.pip_command("uninstall", "-y", "tensorflow-gpu"),)
    if target is not None:
        commands += (ctx.pip_command("install", ctx.pip_requirement(target)),)
    yield Hit(
        title=f"tensorflow-gpu {dist.version} is an empty placeholder: it contains no TensorFlow",
        detail=(
            f"The tensorflow-gpu name was retired after {platform.tensorflow_gpu_last_real}; releases "
            f"{platform.tensorflow_gpu_dummy} are placeholders. The GPU build is in the 'tensorflow' "
            f"package since {platform.gpu_in_tensorflow_package_from}."
        ),
        evidence=(
            ("tensorflow-gpu", dist.version),
            ("matrix: tensorflow-gpu placeholder releases", str(platform.tensorflow_gpu_dummy)),
        ),
        fix=Fix(
            text="Uninstall tensorflow-gpu and install tensorflow" + (f" {target.label}" if target else "") + ".",
            commands=commands,
            url=TF_PIP_PAGE,
            release=minor(target.tf) if target else None,
        ),
    )


@rule(
    "EC-TF-004", "Native Windows with TensorFlow newer than the last native-Windows GPU release", "error", "tensorflow"
)
def windows_native_too_new(ctx: Context) -> Iterator[Hit]:
    """After 2.10, TF's Windows builds are CPU-only; the GPU needs WSL2."""
    if ctx.os != "windows" or ctx.gpu_presence == ABSENT:
        return
    tf = ctx.installed_tf
    version = parse_version(tf.version) if tf else None
    last = ctx.matrix.platform.windows_native_gpu_last
    if version is None or version.release[:2] <= last.release[:2]:
        return
    last_build = ctx.build_for(str(last))
    python = ctx.facts.python.version
    commands = [Command("wsl --install", shell="powershell")]
    text = (
        f"TensorFlow {minor(tf.version)} has no GPU support on native Windows. Three ways forward: "
        f"(1) run TensorFlow in WSL2 (Ubuntu), where the Linux GPU build works with the Windows driver; "
    )
    if last_build is not None and python and last_build.supports_python(python):
        text += (
            f"(2) install TensorFlow {minor(last)}, the last native-Windows GPU release (with CUDA "
            f"{last_build.cuda} and cuDNN {last_build.cudnn}); "
        )
        commands.append(ctx.pip_command("uninstall", "-y", tf.distribution, step=False))
        commands.append(ctx.pip_command("install", ctx.pip_requirement(last_build), step=False))
    elif last_build is not None:
        text += (
            f"(2) TensorFlow {minor(last)}, the last native-Windows GPU release, needs Python "
            f"{' or '.join(last_build.python)}; "
        )
    text += "(3) stay on the CPU (see the CPU path)."
    yield Hit(
        title=f"TensorFlow {tf.version} on native Windows cannot use the GPU (the last native-Windows GPU release is {minor(last)})",
        detail="TensorFlow stopped publishing GPU builds for native Windows after that release.",
        evidence=(
            ("platform", ctx.facts.platform.distro or "Windows"),
            ("tensorflow", tf.version),
            ("matrix: last native-Windows GPU release", str(last)),
        ),
        fix=Fix(text=text, commands=tuple(commands), url=WSL_PAGE),
    )


@rule("EC-TF-005", "A CPU-only TensorFlow build is installed while an NVIDIA GPU is present", "error", "tensorflow")
def cpu_build_with_gpu(ctx: Context) -> Iterator[Hit]:
    facts = ctx.facts
    tf = ctx.installed_tf
    if tf is None or ctx.os == "macos" or ctx.is_cuda_tf is not False:
        return
    if ctx.gpu_presence != PRESENT:
        return
    build = ctx.tf_build
    if ctx.os == "windows" and build is not None and not build.gpu:
        return  # EC-TF-004 explains native Windows
    if _is_dummy(ctx, tf.distribution, tf.version):
        return  # EC-TF-003 explains the placeholder
    names = ", ".join(sorted(set(ctx.gpu_names))) or "an NVIDIA GPU"
    target = build if build is not None and build.gpu else gpu_release_for_here(ctx)
    remove = tuple(
        d
        for d in ctx.installed_tf_distributions
        if _never_cuda(ctx, d) or (target is not None and d != target.distribution)
    )
    exact = tf.version if target is build else None
    evidence = [
        ("tensorflow", f"{tf.distribution} {tf.version}"),
        (
            "is_cuda_build",
            str(facts.tensorflow.is_cuda_build)
            if facts.tensorflow.is_cuda_build is not None
            else "inferred from the distribution",
        ),
    ]
    if build is not None:
        evidence.append(matrix_evidence(ctx, build))
    fix = Fix(
        text="No GPU build is known for this release on this platform: see envcheck plan.",
        commands=(Command("envcheck plan", shell="any"),),
    )
    if target is not None:
        fix = Fix(
            text=f"Replace it by the GPU build of TensorFlow {target.label}: {ctx.pip_requirement(target, exact)}.",
            commands=gpu_install_steps(ctx, target, exact, remove),
            url=TF_PIP_PAGE,
            release=minor(target.tf),
        )
    yield Hit(
        title=f"{tf.distribution} {tf.version} is a CPU-only build, but this machine has {names}",
        detail="A CPU-only build never uses the GPU, whatever the driver and CUDA libraries.",
        evidence=tuple(evidence),
        fix=fix,
    )


@rule("EC-TF-006", "TensorFlow fails to import", "error", "tensorflow")
def import_failed(ctx: Context) -> Iterator[Hit]:
    tf = ctx.facts.tensorflow
    if tf.error_kind != "import_failed":
        return
    error = (tf.error or "").strip()
    last = first_sentence(telling_line(error)) if error else "no error text"
    installed = ctx.installed_tf
    what = f"TensorFlow {installed.version}" if installed else "TensorFlow"
    cause = None
    library = library_named_in(error)
    if ctx.missing_at_import and ctx.gpu_presence == ABSENT:
        cause = "EC-TF-011"  # an old GPU build, whose CUDA libraries a machine without a GPU lacks
    elif library:
        family = library_family(library)
        cause = _LIBRARY_RULES.get(family) or ("EC-LIB-008" if family in _MATH_FAMILIES else None)
    fix = dataclasses.replace(_import_fix(ctx, error, library), release=ctx.installed_release)
    if cause is None and ctx.stack_mismatches:
        cause = "EC-TF-010"  # a NumPy (or protobuf, ...) TensorFlow was not built for
    yield Hit(
        title=f"{what} fails to import: {last}",
        detail="Until the import works TensorFlow cannot run at all, on the GPU or the CPU.",
        evidence=(("tensorflow import error", error[-2000:] or "none"),),
        fix=fix,
        caused_by=cause,
    )


def _explain_import(ctx: Context) -> Command:
    """Import TensorFlow by hand and hand its whole output to envcheck explain."""
    code = "import tensorflow as tf; print(tf.config.list_physical_devices())"
    return ctx.shell_command(
        f"{ctx.python_line(code)} 2>&1 | envcheck explain -", f"{ctx.python_line(code)} 2>&1 | envcheck explain -"
    )


def first_sentence(line: str, limit: int = 160) -> str:
    """The error's first sentence: "ImportError: Could not find 'cudart64_100.dll'" of a long message."""
    head = re.split(r"(?<=[.!?'\"])\s+(?=[A-Z])", line.strip(), maxsplit=1)[0]
    return head if len(head) <= limit else head[: limit - 3] + "..."


def _import_fix(ctx: Context, error: str, library: Optional[str]) -> Fix:
    lowered = error.lower()
    if library and library_family(library) in ("cudart", "cudnn", *_MATH_FAMILIES):
        if libraries_apply(ctx):
            return Fix(text=f"TensorFlow cannot find {basename(library)}: see the library finding it is grouped under.")
        if ctx.gpu_presence == ABSENT:
            return Fix(
                text=(
                    f"{ctx.tf_name} is a GPU build that needs {basename(library)} (CUDA {ctx.tf_cuda or '?'}) just to "
                    "import, and this machine has no NVIDIA GPU: install the CPU build of the same release instead "
                    "(the CPU path below)."
                )
            )
        return Fix(
            text=(
                f"{ctx.tf_name} needs {basename(library)} from CUDA {ctx.tf_cuda or '?'} just to import: install that CUDA "
                "release's libraries and put their folder on the loader path (envcheck doctor without --quick checks each copy)."
            )
        )
    if "msvcp140" in lowered or ("dll load failed" in lowered and ctx.os == "windows"):
        return Fix(
            text=(
                "A Windows DLL TensorFlow needs is missing: install the latest Microsoft Visual C++ "
                "Redistributable (x64) and restart the terminal."
            ),
            url="https://learn.microsoft.com/cpp/windows/latest-supported-vc-redist",
        )
    if "numpy" in lowered:
        return Fix(
            text="TensorFlow was compiled against another NumPy major version: install the NumPy it expects.",
            commands=(ctx.pip_command("install", "numpy<2"),),
        )
    tf = ctx.installed_tf
    if tf is None:
        return Fix(text="Reinstall TensorFlow (see envcheck plan).", commands=(Command("envcheck plan", shell="any"),))
    return Fix(
        text=f"Reinstall {tf.distribution} {tf.version}; if the error stays, paste it into `envcheck explain`.",
        commands=(
            ctx.pip_command("install", "--force-reinstall", f"{tf.distribution}=={tf.version}"),
            _explain_import(ctx),
        ),
    )


@rule("EC-TF-007", "The TensorFlow probe crashed or timed out", "error", "tensorflow")
def probe_crashed(ctx: Context) -> Iterator[Hit]:
    tf = ctx.facts.tensorflow
    kind = tf.error_kind
    if kind not in ("timeout", "crashed", "bad_output", "worker_failed"):
        return
    flags = ctx.facts.platform.cpu_flags
    stage = f" during {tf.failed_stage}" if tf.failed_stage else ""
    cause = None
    if kind == "timeout":
        title = f"TensorFlow did not finish{stage} within the time limit"
        fix = Fix(
            text=(
                "A first GPU start can take minutes while the driver JIT-compiles kernels; rerun with a "
                "longer limit. If it hangs again, another process may hold the GPU."
            ),
            commands=(Command("envcheck doctor --tf-timeout 600", shell="any"), ctx.shell_command("nvidia-smi")),
        )
        severity = None
    elif (
        kind == "crashed"
        and (tf.signal == "SIGILL" or tf.returncode in (-4, 132, 3221225501))
        and "avx" not in flags
        and ctx.facts.platform.status == "ok"
        and flags
    ):
        title = f"TensorFlow crashed{stage} with an illegal instruction: this CPU has no AVX"
        fix = Fix(
            text="TensorFlow's pip wheels are compiled for CPUs with AVX. Use a machine with AVX, or a TensorFlow built from source without it.",
            url="https://www.tensorflow.org/install/source",
        )
        severity = None
        cause = "EC-TF-012"  # the CPU finding says why, whatever TensorFlow was doing
    else:
        why = tf.signal or (f"exit code {tf.returncode}" if tf.returncode is not None else kind.replace("_", " "))
        title = f"TensorFlow {'crashed' if kind == 'crashed' else 'failed'}{stage} ({why})"
        fix = Fix(
            text="Run TensorFlow by hand to see the whole error, then paste it into `envcheck explain`.",
            commands=(_explain_import(ctx),),
        )
        severity = None
    evidence = [("tensorflow probe", f"{kind}: {tf.error or ''}".strip())]
    evidence.extend(("tensorflow log", line) for line in tf.log_lines[-5:])
    yield Hit(title=title, detail=tf.error or "", evidence=tuple(evidence), fix=fix, severity=severity, caused_by=cause)


# TensorFlow's release notes for 1.6.0: "Prebuilt binaries are now built against CUDA 9.0 and cuDNN 7.
# Prebuilt binaries will use AVX instructions. This may break TF on older CPUs."
AVX_REQUIRED_FROM = Version("1.6")
ROSETTA_PAGE = "https://developer.apple.com/documentation/apple-silicon/about-the-rosetta-translation-environment"


@rule("EC-TF-012", "The CPU lacks the AVX instructions TensorFlow's wheels are built with", "error", "tensorflow")
def cpu_without_avx(ctx: Context) -> Iterator[Hit]:
    """TensorFlow's official x86 wheels have required AVX since 1.6: without it ``import tensorflow``
    dies with an illegal instruction. Said from /proc/cpuinfo on Linux and WSL (where the probe reads
    the flags), and for an x86_64 Python under Rosetta on Apple silicon, which has no AVX."""
    platform, python = ctx.facts.platform, ctx.facts.python
    if platform.status != "ok" or ctx.tf_runs:
        return  # TensorFlow imported and ran here: whatever build it is, it runs on this CPU
    installed = parse_version(ctx.installed_tf.version) if ctx.installed_tf else None
    if installed is not None and installed < AVX_REQUIRED_FROM:
        return  # wheels before 1.6 were built without AVX
    if ctx.os == "macos" and python.machine == "x86_64" and platform.machine == "arm64":
        yield Hit(
            title="This Python is an x86_64 build running under Rosetta on Apple silicon, which has no AVX: x86 TensorFlow wheels crash",
            detail="Rosetta translates x86_64 code but not the AVX instructions TensorFlow's x86 wheels are built with.",
            evidence=(("python.machine", python.machine), ("platform.machine", platform.machine)),
            fix=Fix(
                text="Install an arm64 (native) Python and TensorFlow into it.",
                commands=(ctx.shell_command('python3 -c "import platform; print(platform.machine())"'),),
                url=ROSETTA_PAGE,
            ),
        )
        return
    flags = platform.cpu_flags
    # No flags at all: /proc/cpuinfo was not read (or lists none TensorFlow cares about): unknown.
    if ctx.os not in ("linux", "wsl") or not flags or "avx" in flags:
        return
    yield Hit(
        title=f"{platform.cpu or 'This CPU'} has no AVX instructions, which TensorFlow's official wheels have required since 1.6",
        detail="A wheel built with AVX dies on `import tensorflow` with an illegal instruction (SIGILL) on this CPU.",
        evidence=(("platform.cpu_flags", " ".join(flags)),),
        fix=Fix(
            text="Use TensorFlow built from source for this CPU, or run on a machine whose CPU has AVX.",
            url="https://www.tensorflow.org/install/source",
        ),
    )


@rule("EC-TF-008", "TensorFlow release not covered by the matrix", "warning", "tensorflow")
def release_not_in_matrix(ctx: Context) -> Iterator[Hit]:
    """Version checks need the release's row; without it envcheck says "unknown", never guesses."""
    tf = ctx.installed_tf
    if tf is None or ctx.tf_build is not None:
        return
    low, high = ctx.matrix.tf_range()
    yield Hit(
        title=f"TensorFlow {tf.version} is not in envcheck's compatibility matrix (it covers {minor(low)} to {minor(high)}): its CUDA, cuDNN, Python and driver needs are unknown",
        detail="Checks that depend on the release's requirements were skipped rather than guessed.",
        evidence=(("tensorflow", f"{tf.distribution} {tf.version}"), ("matrix range", f"{low} to {high}")),
        fix=Fix(
            # No pip command: envcheck is installed from its repository, and the interpreter probed
            # here (--python) need not be the one envcheck runs in.
            text=(
                "Update envcheck (pull its repository and reinstall it) for a newer matrix, or add the "
                "release to a copy of compat_matrix.yaml and pass it with --matrix FILE."
            ),
        ),
    )


@rule("EC-TF-009", "macOS: no CUDA GPU support", "error", "tensorflow")
def macos_no_cuda(ctx: Context) -> Iterator[Hit]:
    if ctx.os != "macos" or ctx.matrix.platform.macos_gpu:
        return
    yield Hit(
        title="TensorFlow has no CUDA GPU support on macOS",
        detail="NVIDIA and Apple dropped CUDA on macOS; TensorFlow runs on the CPU there (Apple GPUs only through Apple's Metal plugin).",
        evidence=(("platform", ctx.facts.platform.distro or "macOS"), ("matrix: CUDA GPU on macOS", "no")),
        fix=Fix(
            text="Run on the CPU, or on Apple silicon try Apple's tensorflow-metal plugin; for CUDA use a Linux machine.",
            commands=(ctx.pip_command("install", "tensorflow-metal", step=False),),
            url=APPLE_METAL_PAGE,
        ),
    )


@rule(
    "EC-TF-011", "An old GPU build of TensorFlow without the CUDA libraries it needs to import", "error", "tensorflow"
)
def gpu_build_cannot_import(ctx: Context) -> Iterator[Hit]:
    """GPU builds before TensorFlow 2.1 link the CUDA libraries at import: without them not even the
    CPU runs. Said before TensorFlow is imported (--quick), on a machine without a GPU too; where
    a GPU is there, the library findings say which file is missing."""
    missing = ctx.missing_at_import
    if not missing or ctx.gpu_presence != ABSENT:
        return  # where a GPU may be, the library findings name the missing files
    tf = ctx.installed_tf
    platform = ctx.matrix.platform
    listed = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    yield Hit(
        title=f"{tf.distribution} {tf.version} is a GPU build that needs CUDA {minor(ctx.tf_cuda or '?')}'s libraries just to import ({listed} missing), and this machine has no NVIDIA GPU",
        detail=(
            f"Before {platform.gpu_in_tensorflow_package_from}, TensorFlow's GPU build linked the CUDA libraries when it was "
            "imported; from then on it loads them when a GPU is used, so one package runs with and without a GPU."
        ),
        evidence=(("tensorflow", f"{tf.distribution} {tf.version} (CUDA {ctx.tf_cuda or '?'})"),)
        + tuple((name, "not found") for name in missing),
        fix=Fix(
            text=f"Install the CPU build of TensorFlow {minor(tf.version)} instead (the CPU path below).",
            url=TF_PIP_PAGE,
            release=ctx.installed_release,
        ),
    )
