"""Link 5: the CUDA and cuDNN libraries this TensorFlow build loads are found, loadable and the
right version; the copy the loader takes is the good one.

Which file names a release loads (``cudart64_100.dll``, ``libcudnn.so.9``...) comes from the
matrix; where copies are comes from the library probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from envcheck.facts import ERROR, SKIPPED, LibraryCopy
from envcheck.findings import Command, Fix, Severity
from envcheck.rules.common import (
    ABSENT,
    basename,
    copies_named,
    gpu_presence,
    installed_tf,
    is_cuda_tf,
    library_family,
    mapped_into_tf,
    matrix_evidence,
    memo,
    minor,
    parse_version,
    pip_command,
    shell_command,
    tf_build,
    tf_cuda,
    tf_name,
    tf_used_gpu,
    winner_for,
)
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.pip_cuda import cuda_pins, installed_cuda_wheels

CUDA_RUNTIME = ("cudart",)
CUDNN = ("cudnn",)
MATH = ("cublas", "cublaslt", "cufft", "curand", "cusolver", "cusparse")
FAMILY_TITLES = {
    "cudart": "CUDA runtime",
    "cudnn": "cuDNN",
    "cublas": "cuBLAS",
    "cublaslt": "cuBLASLt",
    "cufft": "cuFFT",
    "curand": "cuRAND",
    "cusolver": "cuSOLVER",
    "cusparse": "cuSPARSE",
}


@dataclass(frozen=True)
class Needed:
    """One library file the build loads and what the probe found for it."""

    name: str  # the file name TF asks the loader for
    family: str
    winner: Optional[LibraryCopy]  # the copy the loader takes
    copies: tuple[LibraryCopy, ...]  # every copy with that name, loader path or not

    @property
    def usable(self) -> bool:
        return self.winner is not None and self.winner.loads is not False

    @property
    def off_path(self) -> tuple[LibraryCopy, ...]:
        return tuple(c for c in self.copies if not c.on_loader_path)


def libraries_apply(ctx: Context) -> bool:
    """Library checks mean something for a CUDA build of a known release, where a GPU may be, with
    a library probe that ran, and unless TF already ran an op on the GPU (then they were found)."""
    facts = ctx.facts
    return (
        is_cuda_tf(ctx) is True
        and tf_build(ctx) is not None
        and gpu_presence(facts) != ABSENT
        and facts.libraries.status not in (SKIPPED, ERROR)
        and not tf_used_gpu(facts)
    )


def needed(ctx: Context, families: tuple[str, ...]) -> list[Needed]:
    def compute() -> list[Needed]:
        build = tf_build(ctx)
        return [
            Needed(name, library_family(name), winner_for(ctx, name), tuple(copies_named(ctx, name)))
            for name in (build.libraries if build is not None else ())
        ]

    return [n for n in memo(ctx, "needed_libraries", compute) if n.family in families]


def all_needed(ctx: Context) -> list[Needed]:
    return needed(ctx, CUDA_RUNTIME + CUDNN + MATH)


def missing(ctx: Context, families: tuple[str, ...]) -> list[Needed]:
    if not libraries_apply(ctx):
        return []
    return [
        n
        for n in needed(ctx, families)
        if not n.usable and not mapped_into_tf(ctx, n.name) and n.family not in broken_wheel_families(ctx)
    ]


def broken_wheel_families(ctx: Context) -> set[str]:
    """Families whose pip wheel is installed but gives no loadable copy: EC-LIB-006's finding
    (reinstall the wheel), more precise than "the library is missing"."""
    return {family for _dist, family, _broken in broken_wheels(ctx)}


def broken_wheels(ctx: Context) -> list[tuple]:
    def compute():
        facts = ctx.facts
        if facts.libraries.status in (SKIPPED, ERROR) or ctx.build_os != "linux":
            return []
        out = []
        for dist, family in installed_cuda_wheels(facts):
            lib = next((x for x in facts.libraries.libraries if x.family == family), None)
            pip_copies = [c for c in (lib.copies if lib else ()) if c.origin == "pip"]
            broken = [c for c in pip_copies if c.loads is False]
            if not pip_copies or broken:
                out.append((dist, family, broken))
        return out

    return memo(ctx, "broken_wheels", compute)


def other_versions(ctx: Context, family: str, name: str) -> list[LibraryCopy]:
    """Copies of the same library under another version's file name (cudart64_90.dll for _100)."""
    windows = ctx.build_os == "windows"
    out = []
    for lib in ctx.facts.libraries.libraries:
        if lib.family != family:
            continue
        for copy in lib.copies:
            if windows and basename(copy.path).lower() == name.lower():
                continue
            if not windows and (basename(copy.path) == name or basename(copy.path).startswith(name + ".")):
                continue
            out.append(copy)
    return out


def copy_version(copy: LibraryCopy) -> str:
    return copy.reported_version or copy.file_version or "unknown version"


def search_where(ctx: Context) -> str:
    return "PATH" if ctx.build_os == "windows" else "the loader's path (LD_LIBRARY_PATH, the ldconfig cache, pip wheels)"


def cuda_dir(ctx: Context, cuda: object) -> str:
    if ctx.os == "windows":
        return f"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v{minor(cuda)}"
    return f"/usr/local/cuda-{minor(cuda)}"


def add_to_loader_path(ctx: Context, directory: str) -> Command:
    return shell_command(
        ctx,
        f"export LD_LIBRARY_PATH={directory}" + "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
        f'$env:Path = "{directory};" + $env:Path',
    )


def check_command(ctx: Context, name: str) -> Command:
    return shell_command(ctx, f"ldconfig -p | grep {name}", f"where.exe {name}")


def tf_pip_reinstall(ctx: Context) -> Optional[Command]:
    """``pip install tensorflow[and-cuda]==X``: the pip wheels carry every CUDA library TF loads."""
    build = tf_build(ctx)
    if build is None or build.pip_cuda is None or ctx.build_os != "linux":
        return None
    tf = installed_tf(ctx)
    version = tf.version if tf is not None else f"{minor(build.tf)}.*"
    dist = "tensorflow" if tf is None or tf.distribution in ("tensorflow-gpu", "tensorflow-cpu") else tf.distribution
    return pip_command(ctx, "install", f"{dist}[{build.pip_cuda.extra}]=={version}")


def cuda_fix(ctx: Context, names: list[Needed]) -> Fix:
    """Install the CUDA release TF was built with (or its pip wheels), and make its folder reachable."""
    build = tf_build(ctx)
    cuda = tf_cuda(ctx) or str(build.cuda)
    release = ctx.matrix.cuda(minor(cuda)) if cuda else None
    link = release.download_url if release is not None else None
    files = ", ".join(n.name for n in names)
    off_path = [c for n in names for c in n.off_path]
    if off_path:
        directory = off_path[0].directory
        return Fix(
            text=f"{files} is in {directory}, where the loader does not look: add that folder to {'PATH' if ctx.os == 'windows' else 'LD_LIBRARY_PATH'} (for good: in your shell profile).",
            commands=(add_to_loader_path(ctx, directory), check_command(ctx, names[0].name)),
            link=link,
        )
    pip_step = tf_pip_reinstall(ctx)
    if pip_step is not None:
        return Fix(
            text=(
                f"Install the CUDA {minor(cuda)} libraries TensorFlow loads as pip wheels (no system "
                f"toolkit needed): reinstall TensorFlow with its [{build.pip_cuda.extra}] extra."
            ),
            commands=(pip_step,),
            link=link,
        )
    directory = cuda_dir(ctx, cuda)
    bin_dir = directory + ("\\bin" if ctx.os == "windows" else "/lib64")
    return Fix(
        text=(
            f"Install CUDA {minor(cuda)} ({tf_name(ctx)} was built against it and loads {files}) "
            f"from its download page, then make sure {bin_dir} is on {'PATH' if ctx.os == 'windows' else 'LD_LIBRARY_PATH'} "
            "and open a new terminal. Other CUDA versions can stay installed beside it."
        ),
        commands=(add_to_loader_path(ctx, bin_dir), check_command(ctx, names[0].name)),
        link=link,
    )


def cudnn_fix(ctx: Context, names: list[Needed]) -> Fix:
    build = tf_build(ctx)
    cuda = tf_cuda(ctx) or str(build.cuda)
    version = build.cudnn
    release = ctx.matrix.cudnn(version) if version is not None else None
    link = release.download_url if release is not None else None
    files = ", ".join(n.name for n in names)
    off_path = [c for n in names for c in n.off_path]
    if off_path:
        return Fix(
            text=f"{files} is in {off_path[0].directory}, where the loader does not look: add that folder to the search path.",
            commands=(add_to_loader_path(ctx, off_path[0].directory), check_command(ctx, names[0].name)),
            link=link,
        )
    pins = cuda_pins(ctx)
    pinned = [f"{name}{spec}" for name, spec in sorted(pins.items()) if name.startswith("nvidia-cudnn")]
    if pinned and ctx.build_os == "linux":
        return Fix(
            text=f"Install the cuDNN {version} wheel that {tf_name(ctx)} pins.",
            commands=(pip_command(ctx, "install", *pinned),),
            link=link,
        )
    directory = cuda_dir(ctx, cuda)
    if ctx.os == "windows":
        source = ".\\cuda\\*" if version is not None and version.major <= 7 else ".\\cudnn-windows-x86_64-*\\*"
        commands = (
            Command(f"Copy-Item -Recurse -Force {source} '{directory}\\'", shell="powershell"),
            check_command(ctx, names[0].name),
        )
        where = f"copy its bin, include and lib folders into {directory} (whose bin folder is on PATH)"
    else:
        commands = (
            Command(
                f"sudo cp -P cudnn-*-archive/include/cudnn*.h {directory}/include/ && "
                f"sudo cp -P cudnn-*-archive/lib/libcudnn* {directory}/lib64/ && sudo ldconfig",
                shell="bash",
            ),
            check_command(ctx, names[0].name),
        )
        where = f"copy its include and lib files into {directory}"
    return Fix(
        text=(
            f"Download cuDNN {version} for CUDA {minor(cuda)} (a free NVIDIA developer account is "
            f"needed), unzip it and {where}."
        ),
        commands=commands,
        link=link,
    )


def _evidence(ctx: Context, names: list[Needed]) -> tuple[tuple[str, str], ...]:
    build = tf_build(ctx)
    out = [matrix_evidence(ctx, build), ("searched", search_where(ctx))]
    for n in names:
        found = ", ".join(f"{c.path} ({'loads' if c.loads else 'fails to load' if c.loads is False else 'not load-tested'}{'' if c.on_loader_path else ', off the loader path'})" for c in n.copies)
        out.append((n.name, found or "not found"))
    for line in ctx.facts.tensorflow.log_lines:
        if any(n.name in line for n in names):
            out.append(("tensorflow log", line))
    if ctx.facts.tensorflow.error and any(n.name in ctx.facts.tensorflow.error for n in names):
        out.append(("tensorflow import error", ctx.facts.tensorflow.error.strip().splitlines()[-1]))
    return tuple(out)


def _state(n: Needed) -> str:
    if n.winner is not None and n.winner.loads is False:
        return f"fails to load ({n.winner.load_error or 'no reason given'})"
    if n.off_path:
        return "is not on the loader's path"
    return "is missing"


@rule("EC-LIB-001", "CUDA runtime library that TensorFlow loads is missing", "error", "libraries")
def cuda_runtime_missing(ctx: Context) -> Iterator[Hit]:
    """TF dlopens the runtime by exact file name (cudart64_100.dll): another version does not do."""
    gone = missing(ctx, CUDA_RUNTIME)
    if not gone:
        return
    build = tf_build(ctx)
    cuda = tf_cuda(ctx) or str(build.cuda)
    n = gone[0]
    yield Hit(
        title=f"{n.name} (CUDA {minor(cuda)} runtime) {_state(n)}: {tf_name(ctx)} loads it"
        + ("" if tf_pip_reinstall(ctx) is not None else f"; install CUDA {minor(cuda)}"),
        detail=(
            f"{tf_name(ctx)} was built with CUDA {minor(cuda)} and asks the loader for {n.name} by "
            "name; no other CUDA version's runtime satisfies it."
        ),
        evidence=_evidence(ctx, gone),
        fix=cuda_fix(ctx, gone),
    )


@rule("EC-LIB-002", "cuDNN library that TensorFlow loads is missing", "error", "libraries")
def cudnn_missing(ctx: Context) -> Iterator[Hit]:
    """Missing, or older than the build's cuDNN: cuDNN must match the major and not be older."""
    build = tf_build(ctx)
    gone = missing(ctx, CUDNN)
    if gone:
        n = gone[0]
        yield Hit(
            title=f"{n.name} (cuDNN {build.cudnn}) {_state(n)}: {tf_name(ctx)} loads it",
            detail=(
                f"{tf_name(ctx)} was built with cuDNN {build.cudnn}; without it convolutions "
                "(and with older releases TF's import) fail."
            ),
            evidence=_evidence(ctx, gone),
            fix=cudnn_fix(ctx, gone),
            caused_by="EC-LIB-001" if missing(ctx, CUDA_RUNTIME) else None,
        )
        return
    if not libraries_apply(ctx) or build.cudnn is None:
        return
    for n in needed(ctx, CUDNN):
        have = parse_version(n.winner.reported_version) if n.winner is not None else None
        if have is None or have.release[:2] >= build.cudnn.release[:2]:
            continue
        if any(not _unusable(c, n.family, build) for c in n.copies if c.on_loader_path and not _same_file(c, n.winner)):
            continue  # a good copy later on the path: EC-LIB-004 says how to reach it
        yield Hit(
            title=f"cuDNN {have} ({n.winner.path}) is older than the cuDNN {build.cudnn} {tf_name(ctx)} was built with",
            detail="cuDNN must have the build's major version and an equal or newer minor version; TF refuses an older one at the first convolution.",
            evidence=_evidence(ctx, [n]),
            fix=cudnn_fix(ctx, [n]),
        )


@rule("EC-LIB-003", "A CUDA/cuDNN library of the wrong version is installed instead", "error", "libraries")
def wrong_version_installed(ctx: Context) -> Iterator[Hit]:
    """The classic: CUDA 9.0 installed, TF 1.13 wants 10.0 (cudart64_90.dll is no cudart64_100.dll)."""
    build = tf_build(ctx)
    for families, cause in ((CUDA_RUNTIME, "EC-LIB-001"), (CUDNN, "EC-LIB-002")):
        for n in missing(ctx, families):
            others = other_versions(ctx, n.family, n.name)
            if not others:
                continue
            listed = ", ".join(f"{basename(c.path)} ({copy_version(c)})" for c in others[:4])
            wanted = f"CUDA {minor(tf_cuda(ctx) or build.cuda)}" if n.family == "cudart" else f"cuDNN {build.cudnn}"
            yield Hit(
                title=f"{FAMILY_TITLES.get(n.family, n.family)} of another version is installed ({listed}); {tf_name(ctx)} needs {n.name} ({wanted})",
                detail="Each TensorFlow release loads the exact library version it was built with; other versions are ignored.",
                evidence=tuple((c.path, copy_version(c)) for c in others) + (matrix_evidence(ctx, build),),
                fix=Fix(text=f"Install {wanted} beside the version you have (see the fix above); the other version can stay."),
                caused_by=cause,
            )


@rule("EC-LIB-004", "A shadowing copy earlier on the search path", "warning", "libraries")
def shadowing_copy(ctx: Context) -> Iterator[Hit]:
    """The loader takes the first copy it finds; an older or broken one earlier on the path wins."""
    if not libraries_apply(ctx):
        return
    build = tf_build(ctx)
    for n in needed(ctx, CUDA_RUNTIME + CUDNN + MATH):
        if n.winner is None:
            continue
        reachable = [c for c in n.copies if c.on_loader_path and not _same_file(c, n.winner)]
        if not reachable:
            continue
        bad = _unusable(n.winner, n.family, build)
        good = next((c for c in reachable if not _unusable(c, n.family, build)), None)
        if bad and good is not None:
            yield Hit(
                title=f"{n.winner.path} ({bad}) shadows the good {n.name} at {good.path}",
                detail=f"The loader takes the first {n.name} on its path; the copy in {good.directory} comes later and is never used.",
                evidence=tuple((c.path, f"{copy_version(c)}, {c.origin}") for c in (n.winner, *reachable)),
                fix=Fix(
                    text=f"Put {good.directory} before {n.winner.directory} on the search path, or remove the stale copy.",
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
                    commands=(add_to_loader_path(ctx, newer[0].directory), check_command(ctx, n.name)),
                ),
            )


def _same_file(a: LibraryCopy, b: LibraryCopy) -> bool:
    return a.path == b.path or (a.realpath is not None and a.realpath == b.realpath)


def _unusable(copy: LibraryCopy, family: str, build) -> Optional[str]:
    if copy.loads is False:
        return "fails to load"
    if family == "cudnn" and build is not None and build.cudnn is not None:
        have = parse_version(copy.reported_version)
        if have is not None and have.release[:2] < build.cudnn.release[:2]:
            return f"cuDNN {have}, older than {build.cudnn}"
    return None


@rule("EC-LIB-005", "A CUDA toolkit is present but not the version this TensorFlow wants", "warning", "libraries")
def toolkit_other_version(ctx: Context) -> Iterator[Hit]:
    """Installing "a" CUDA is not enough: TF uses the one it was built with (this machine: 13 vs 12.5)."""
    toolkits = [t for t in ctx.facts.libraries.toolkits if t.version]
    cuda = tf_cuda(ctx)
    want = parse_version(cuda)
    if not toolkits or want is None:
        return
    compat_by_major = ctx.matrix.minor_compat_floor(want.release[0], "linux") is not None

    def matches(version: str) -> bool:
        have = parse_version(version)
        if have is None:
            return True  # unknown is not a mismatch
        if compat_by_major and have.release[0] == want.release[0]:
            return True
        return have.release[:2] == want.release[:2]

    if any(matches(t.version) for t in toolkits):
        return
    runtime_missing = bool(missing(ctx, CUDA_RUNTIME))
    served_elsewhere = not runtime_missing and bool(needed(ctx, CUDA_RUNTIME)) and libraries_apply(ctx)
    listed = ", ".join(f"CUDA {t.version} at {t.path}" for t in toolkits)
    severity = Severity.WARNING
    if gpu_presence(ctx.facts) == ABSENT or served_elsewhere or tf_used_gpu(ctx.facts):
        severity = Severity.INFO
    build = tf_build(ctx)
    yield Hit(
        title=f"{listed} is installed, but this TensorFlow was built for CUDA {minor(cuda)}",
        detail=(
            "TensorFlow only loads the CUDA major version it was built with"
            + ("; its libraries come from elsewhere (pip wheels), so this toolkit is unused by TF." if served_elsewhere else ".")
        ),
        evidence=tuple((f"toolkit ({t.origin})", f"{t.path}: {t.version}") for t in toolkits)
        + ((matrix_evidence(ctx, build),) if build is not None else ()),
        fix=Fix(
            text=f"Nothing to remove: TensorFlow needs CUDA {minor(cuda)} libraries, which can sit beside this toolkit."
            + (" See the CUDA runtime finding for how to install them." if runtime_missing else ""),
        ),
        severity=severity,
        caused_by="EC-LIB-001" if runtime_missing else None,
    )


@rule("EC-LIB-006", "pip nvidia-* wheels installed but not found or not loadable", "error", "libraries")
def pip_wheels_not_loadable(ctx: Context) -> Iterator[Hit]:
    for dist, family, broken in broken_wheels(ctx):
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
                commands=(pip_command(ctx, "install", "--force-reinstall", "--no-deps", f"{dist.name}=={dist.version}"),),
            ),
            severity=Severity.ERROR if blocks else Severity.WARNING,
        )


@rule("EC-LIB-007", "pip nvidia-* wheels at versions outside TensorFlow's pins", "warning", "libraries")
def pip_wheels_outside_pins(ctx: Context) -> Iterator[Hit]:
    """``tensorflow[and-cuda]`` pins its CUDA wheels; another version (or CUDA major) may not load."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if is_cuda_tf(ctx) is not True:
        return
    pins = cuda_pins(ctx)
    if not pins:
        return
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
    build = tf_build(ctx)
    listed = ", ".join(f"{d.name} {d.version} (needs {spec})" for d, spec in bad)
    yield Hit(
        title=f"CUDA wheels outside TensorFlow's pins: {listed}",
        detail="TensorFlow was tested with the pinned versions; others can fail to load or miss symbols.",
        evidence=tuple((d.name, f"{d.version}, pinned {spec}") for d, spec in bad)
        + ((matrix_evidence(ctx, build),) if build is not None else ()),
        fix=Fix(
            text="Install the pinned versions.",
            commands=(pip_command(ctx, "install", *(f"{d.name}{spec}" for d, spec in bad)),),
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
        title=f"CUDA libraries {tf_name(ctx)} loads are missing: {files}",
        detail="They come with the CUDA release TF was built with; TF lists no GPU while any is missing.",
        evidence=_evidence(ctx, gone),
        fix=cuda_fix(ctx, gone),
        caused_by="EC-LIB-001" if missing(ctx, CUDA_RUNTIME) else None,
    )
