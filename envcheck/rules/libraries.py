"""Link 5: the CUDA and cuDNN libraries this TensorFlow build loads are found, loadable and the
right version; the copy the loader takes is the good one.

Which file names a release loads (``cudart64_100.dll``, ``libcudnn.so.9``...) comes from the
matrix; where copies are comes from the library probe (see ``envcheck.machine.libraries``).
"""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.findings import Fix, Severity
from envcheck.machine import ABSENT, minor, parse_version, telling_line
from envcheck.machine.libraries import (
    ALL,
    CUDA_RUNTIME,
    CUDNN,
    MATH,
    Needed,
    copy_problem,
    copy_version,
    libraries_apply,
    missing,
    needed,
    other_versions,
    same_file,
    state,
    toolkit_fits,
    toolkit_of,
)
from envcheck.matrix.libraries import FAMILY_TITLES, basename
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.evidence import matrix_evidence
from envcheck.rules.library_fixes import (
    add_to_loader_path,
    check_command,
    cuda_fix,
    cudnn_fix,
    search_where,
    tf_pip_reinstall,
)


def _evidence(ctx: Context, names: list[Needed]) -> tuple[tuple[str, str], ...]:
    build = ctx.tf_build
    out = [matrix_evidence(ctx, build), ("searched", search_where(ctx))]
    for n in names:
        found = ", ".join(
            f"{c.path} ({'loads' if c.loads else 'fails to load' if c.loads is False else 'not load-tested'}{'' if c.on_loader_path else ', off the loader path'})"
            for c in n.copies
        )
        out.append((n.name, found or "not found"))
    for line in ctx.facts.tensorflow.log_lines:
        if any(n.name in line for n in names):
            out.append(("tensorflow log", line))
    if ctx.facts.tensorflow.error and any(n.name in ctx.facts.tensorflow.error for n in names):
        out.append(("tensorflow import error", telling_line(ctx.facts.tensorflow.error)))
    return tuple(out)


@rule("EC-LIB-001", "CUDA runtime library that TensorFlow loads is missing", "error", "libraries")
def cuda_runtime_missing(ctx: Context) -> Iterator[Hit]:
    """TF dlopens the runtime by exact file name (cudart64_100.dll): another version does not do."""
    gone = missing(ctx, CUDA_RUNTIME)
    if not gone:
        return
    build = ctx.tf_build
    cuda = ctx.tf_cuda or str(build.cuda)
    n = gone[0]
    yield Hit(
        title=f"{n.name} (CUDA {minor(cuda)} runtime) {state(n)}: {ctx.tf_name} loads it"
        + ("" if tf_pip_reinstall(ctx) is not None else f"; install CUDA {minor(cuda)}"),
        detail=(
            f"{ctx.tf_name} was built with CUDA {minor(cuda)} and asks the loader for {n.name} by "
            "name; no other CUDA version's runtime satisfies it."
        ),
        evidence=_evidence(ctx, gone),
        fix=cuda_fix(ctx, gone),
    )


@rule("EC-LIB-002", "cuDNN library that TensorFlow loads is missing", "error", "libraries")
def cudnn_missing(ctx: Context) -> Iterator[Hit]:
    """Missing, or older than the build's cuDNN: cuDNN must match the major and not be older."""
    build = ctx.tf_build
    gone = missing(ctx, CUDNN)
    if gone:
        n = gone[0]
        yield Hit(
            title=f"{n.name} (cuDNN {build.cudnn}) {state(n)}: {ctx.tf_name} loads it",
            detail=(
                f"{ctx.tf_name} was built with cuDNN {build.cudnn}; without it convolutions "
                "(and with older releases TF's import) fail."
            ),
            evidence=_evidence(ctx, gone),
            fix=cudnn_fix(ctx, gone),
            # One pip reinstall with the CUDA extra brings cuDNN with the runtime; any other way
            # (a download, a copy into the CUDA folder) is a step of its own.
            caused_by="EC-LIB-001" if missing(ctx, CUDA_RUNTIME) and tf_pip_reinstall(ctx) is not None else None,
        )
        return
    if not libraries_apply(ctx) or build.cudnn is None:
        return
    for n in needed(ctx, CUDNN):
        have = parse_version(n.winner.reported_version) if n.winner is not None else None
        if have is None:
            yield from _cudnn_of_other_cuda(ctx, n)
            continue
        if have.release[:2] >= build.cudnn.release[:2]:
            continue
        if any(
            not copy_problem(c, n.family, build) for c in n.copies if c.on_loader_path and not same_file(c, n.winner)
        ):
            continue  # a good copy later on the path: EC-LIB-004 says how to reach it
        yield Hit(
            title=f"cuDNN {have} ({n.winner.path}) is older than the cuDNN {build.cudnn} {ctx.tf_name} was built with",
            detail="cuDNN must have the build's major version and an equal or newer minor version; TF refuses an older one at the first convolution.",
            evidence=_evidence(ctx, [n]),
            fix=cudnn_fix(ctx, [n]),
        )


def _cudnn_of_other_cuda(ctx: Context, n: Needed) -> Iterator[Hit]:
    """cuDNN is built per CUDA release under one file name (cudnn64_7.dll); a copy that sits only in
    another CUDA version's folder is that version's build, the setup guides' "copy cuDNN into the
    CUDA folder" step done for the old CUDA."""
    cuda = ctx.tf_cuda
    reachable = [c for c in n.copies if c.on_loader_path]
    homes = [toolkit_of(ctx, c) for c in reachable]
    if not reachable or any(home is None or toolkit_fits(ctx, home.version, cuda) for home in homes):
        return
    build = ctx.tf_build
    other = homes[0]
    yield Hit(
        title=f"{n.name} is only in the CUDA {other.version} folder: that is the cuDNN for CUDA {other.version}; {ctx.tf_name} needs cuDNN {build.cudnn} for CUDA {minor(cuda)}",
        detail="NVIDIA builds cuDNN separately for each CUDA release under the same file name; the copy in an old CUDA folder belongs to that CUDA.",
        evidence=tuple((c.path, f"in {home.path} (CUDA {home.version})") for c, home in zip(reachable, homes))
        + (matrix_evidence(ctx, build),),
        fix=cudnn_fix(ctx, [n]),
    )


@rule("EC-LIB-003", "A CUDA/cuDNN library of the wrong version is installed instead", "error", "libraries")
def wrong_version_installed(ctx: Context) -> Iterator[Hit]:
    """The classic: CUDA 9.0 installed, TF 1.13 wants 10.0 (cudart64_90.dll is no cudart64_100.dll)."""
    build = ctx.tf_build
    for families, cause in ((CUDA_RUNTIME, "EC-LIB-001"), (CUDNN, "EC-LIB-002")):
        for n in missing(ctx, families):
            others = other_versions(ctx, n.family, n.name)
            if not others:
                continue
            listed = ", ".join(f"{basename(c.path)} ({copy_version(c)})" for c in others[:4])
            wanted = f"CUDA {minor(ctx.tf_cuda or build.cuda)}" if n.family == "cudart" else f"cuDNN {build.cudnn}"
            yield Hit(
                title=f"{FAMILY_TITLES.get(n.family, n.family)} of another version is installed ({listed}); {ctx.tf_name} needs {n.name} ({wanted})",
                detail="Each TensorFlow release loads the exact library version it was built with; other versions are ignored.",
                evidence=tuple((c.path, copy_version(c)) for c in others) + (matrix_evidence(ctx, build),),
                fix=Fix(
                    text=f"Install {wanted} beside the version you have (see the fix above); the other version can stay.",
                    release=ctx.installed_release,
                ),
                caused_by=cause,
            )


@rule("EC-LIB-004", "A shadowing copy earlier on the search path", "warning", "libraries")
def shadowing_copy(ctx: Context) -> Iterator[Hit]:
    """The loader takes the first copy it finds; an older or broken one earlier on the path wins."""
    if not libraries_apply(ctx):
        return
    build = ctx.tf_build
    for n in needed(ctx, ALL):
        if n.winner is None:
            continue
        reachable = [c for c in n.copies if c.on_loader_path and not same_file(c, n.winner)]
        if not reachable:
            continue
        bad = copy_problem(n.winner, n.family, build)
        good = next((c for c in reachable if not copy_problem(c, n.family, build)), None)
        if bad and good is not None:
            yield Hit(
                title=f"{n.winner.path} ({bad}) shadows the good {n.name} at {good.path}",
                detail=f"The loader takes the first {n.name} on its path; the copy in {good.directory} comes later and is never used.",
                evidence=tuple((c.path, f"{copy_version(c)}, {c.origin}") for c in (n.winner, *reachable)),
                fix=Fix(
                    text=f"Put {good.directory} before {n.winner.directory} on the search path, or remove the stale copy.",
                    release=ctx.installed_release,
                    commands=(add_to_loader_path(ctx, good.directory), check_command(ctx, n.name)),
                ),
                severity=Severity.ERROR,
            )
            continue
        won = parse_version(n.winner.reported_version)
        newer = [c for c in reachable if won is not None and (parse_version(c.reported_version) or won) > won]
        if newer:
            yield Hit(
                title=f"An older {n.name} ({copy_version(n.winner)}, {n.winner.path}) shadows a newer one ({copy_version(newer[0])}, {newer[0].path})",
                detail="The loader takes the first copy on its path; which one that is changes between shells, services and containers.",
                evidence=tuple((c.path, f"{copy_version(c)}, {c.origin}") for c in (n.winner, *newer)),
                fix=Fix(
                    text=f"Put {newer[0].directory} first on the search path, or remove the older copy.",
                    release=ctx.installed_release,
                    commands=(add_to_loader_path(ctx, newer[0].directory), check_command(ctx, n.name)),
                ),
            )


@rule("EC-LIB-005", "A CUDA toolkit is present but not the version this TensorFlow wants", "warning", "libraries")
def toolkit_other_version(ctx: Context) -> Iterator[Hit]:
    """Installing "a" CUDA is not enough: TF uses the one it was built with (this machine: 13 vs 12.5)."""
    toolkits = [t for t in ctx.facts.libraries.toolkits if t.version]
    cuda = ctx.tf_cuda
    want = parse_version(cuda)
    if not toolkits or want is None:
        return
    if any(toolkit_fits(ctx, t.version, cuda) for t in toolkits):
        return
    runtime_missing = bool(missing(ctx, CUDA_RUNTIME))
    served_elsewhere = not runtime_missing and bool(needed(ctx, CUDA_RUNTIME)) and libraries_apply(ctx)
    listed = ", ".join(f"CUDA {t.version} at {t.path}" for t in toolkits)
    severity = Severity.WARNING
    if ctx.gpu_presence == ABSENT or served_elsewhere or ctx.tf_used_gpu:
        severity = Severity.INFO
    build = ctx.tf_build
    yield Hit(
        title=f"{listed} is installed, but this TensorFlow was built for CUDA {minor(cuda)}",
        detail=(
            "TensorFlow only loads the CUDA major version it was built with"
            + (
                "; its libraries come from elsewhere (pip wheels), so this toolkit is unused by TF."
                if served_elsewhere
                else "."
            )
        ),
        evidence=tuple((f"toolkit ({t.origin})", f"{t.path}: {t.version}") for t in toolkits)
        + ((matrix_evidence(ctx, build),) if build is not None else ()),
        fix=Fix(
            text=f"Nothing to remove: TensorFlow needs CUDA {minor(cuda)} libraries, which can sit beside this toolkit."
            + (" See the CUDA runtime finding for how to install them." if runtime_missing else ""),
            release=ctx.installed_release,
        ),
        severity=severity,
        caused_by="EC-LIB-001" if runtime_missing else None,
    )


# Where XLA looks for ptxas and libdevice when XLA_FLAGS names no --xla_gpu_cuda_data_dir: the CUDA
# root TensorFlow was configured with (/usr/local/cuda in the official wheels) and, from the
# releases with the [and-cuda] extra, the nvidia-cuda-nvcc wheel beside TensorFlow (TensorFlow's
# tsl/platform/default/cuda_root_path.cc, CandidateCudaRoots).
XLA_DEFAULT_ROOT = "/usr/local/cuda"
NVCC_WHEELS = ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc")
XLA_FLAGS_PAGE = "https://openxla.org/xla/flags_guidance"


@rule("EC-LIB-009", "ptxas and libdevice are where XLA does not look for them", "warning", "libraries")
def xla_cuda_dir(ctx: Context) -> Iterator[Hit]:
    """XLA (jit_compile=True, or auto-clustering) needs CUDA's ptxas and libdevice; a copy outside
    the folders it searches fails the compile ("libdevice not found", "Couldn't invoke ptxas")."""
    facts = ctx.facts
    tf = ctx.installed_tf
    if not ctx.platform.linux_wheels or tf is None or ctx.is_cuda_tf is False or ctx.gpu_presence == ABSENT:
        return
    flags = (facts.env_var("XLA_FLAGS") or "").strip()
    if "--xla_gpu_cuda_data_dir" in flags:
        return
    release = parse_version(tf.version)
    wheel = next((w for w in map(facts.distribution, NVCC_WHEELS) if w is not None and w.location), None)
    if wheel is not None:
        if release is None or release.release[:2] >= ctx.matrix.platform.and_cuda_first.release[:2]:
            return  # TensorFlow looks in the nvidia-cuda-nvcc wheel itself
        directory = f"{wheel.location.rstrip('/')}/nvidia/cuda_nvcc"
        where = f"the pip wheel {wheel.name} {wheel.version} ({directory})"
    else:
        toolkits = facts.libraries.toolkits if facts.libraries.status == "ok" else ()
        if not toolkits or any(t.path.rstrip("/").startswith(XLA_DEFAULT_ROOT) for t in toolkits):
            return
        directory = toolkits[0].path.rstrip("/")
        version = f" {toolkits[0].version}" if toolkits[0].version else ""
        where = f"the CUDA toolkit{version} at {directory}"
    yield Hit(
        title=f"XLA does not look for ptxas and libdevice in {where}",
        detail=(
            f"Without --xla_gpu_cuda_data_dir in XLA_FLAGS, {tf.distribution} {tf.version} searches {XLA_DEFAULT_ROOT}"
            + (
                f" and not the pip wheels (releases before {minor(str(ctx.matrix.platform.and_cuda_first))})"
                if wheel
                else ""
            )
            + ", so compiling with XLA fails (libdevice not found, ptxas not found)."
        ),
        evidence=(("XLA_FLAGS", flags or "not set"), ("ptxas and libdevice", directory)),
        fix=Fix(
            text="Point XLA at that folder.",
            commands=(ctx.set_variable("XLA_FLAGS", f"{flags} --xla_gpu_cuda_data_dir={directory}".strip()),),
            url=XLA_FLAGS_PAGE,
        ),
    )


@rule("EC-LIB-006", "pip nvidia-* wheels installed but not found or not loadable", "error", "libraries")
def pip_wheels_not_loadable(ctx: Context) -> Iterator[Hit]:
    for wheel in ctx.broken_wheels:
        dist, family, broken = wheel.dist, wheel.family, wheel.broken
        blocks = libraries_apply(ctx) and any(not n.usable for n in needed(ctx, (family,)))
        if broken:
            title = f"{dist.name} {dist.version} is installed but {basename(broken[0].path)} fails to load: {broken[0].load_error or 'no reason given'}"
        else:
            title = f"{dist.name} {dist.version} is installed but no {FAMILY_TITLES.get(family, family)} library was found in it"
        yield Hit(
            title=title,
            detail="The wheel's files are damaged, incomplete or built for another CUDA major; reinstalling it usually fixes this.",
            evidence=((dist.name, f"{dist.version} at {dist.location or '?'}"),)
            + tuple((c.path, c.load_error or "not loadable") for c in broken),
            fix=Fix(
                text=f"Reinstall {dist.name}.",
                release=ctx.installed_release,
                commands=(
                    ctx.pip_command("install", "--force-reinstall", "--no-deps", f"{dist.name}=={dist.version}"),
                ),
            ),
            severity=Severity.ERROR if blocks else Severity.WARNING,
        )


@rule("EC-LIB-007", "pip nvidia-* wheels at versions outside TensorFlow's pins", "warning", "libraries")
def pip_wheels_outside_pins(ctx: Context) -> Iterator[Hit]:
    """``tensorflow[and-cuda]`` pins its CUDA wheels; another version (or CUDA major) may not load."""
    if ctx.is_cuda_tf is not True:
        return
    pins = ctx.cuda_pins
    if not pins:
        return
    # Start-up: packaging.specifiers is loaded only when there are pins to compare.
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    bad = []
    for dist in ctx.facts.packages.distributions:
        spec = pins.get(dist.name)
        version = parse_version(dist.version)
        if spec is None or version is None:
            continue
        try:
            if SpecifierSet(spec).contains(version, prereleases=True):
                continue
        except InvalidSpecifier:
            continue
        bad.append((dist, spec))
    if not bad:
        return
    build = ctx.tf_build
    listed = ", ".join(f"{d.name} {d.version} (needs {spec})" for d, spec in bad)
    yield Hit(
        title=f"CUDA wheels outside TensorFlow's pins: {listed}",
        detail="TensorFlow was tested with the pinned versions; others can fail to load or miss symbols.",
        evidence=tuple((d.name, f"{d.version}, pinned {spec}") for d, spec in bad)
        + ((matrix_evidence(ctx, build),) if build is not None else ()),
        fix=Fix(
            text="Install the pinned versions.",
            release=ctx.installed_release,
            commands=(ctx.pip_command("install", *(f"{d.name}{spec}" for d, spec in bad)),),
        ),
    )


@rule("EC-LIB-008", "Another CUDA library that TensorFlow loads is missing", "error", "libraries")
def math_library_missing(ctx: Context) -> Iterator[Hit]:
    """cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE ship with the toolkit (or as pip wheels)."""
    gone = missing(ctx, MATH)
    if not gone:
        return
    files = ", ".join(n.name for n in gone)
    yield Hit(
        title=f"CUDA libraries {ctx.tf_name} loads are missing: {files}",
        detail="They come with the CUDA release TF was built with; TF lists no GPU while any is missing.",
        evidence=_evidence(ctx, gone),
        fix=cuda_fix(ctx, gone),
        caused_by="EC-LIB-001" if missing(ctx, CUDA_RUNTIME) else None,
    )
