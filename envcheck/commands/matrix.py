"""`envcheck matrix`: ask the compatibility matrix about a TensorFlow release, a CUDA release or a GPU."""

from __future__ import annotations

import argparse
from typing import Any

from envcheck.errors import NotFoundError, UsageError
from envcheck.matrix import BUILD_OSES, Matrix, TfBuild, as_version, load_matrix, unknown_gpu_message
from envcheck.matrix.model import code_for
from envcheck.matrix.runs import NATIVE, NONE, PTX, release_runs_on_gpu
from envcheck.platform import DRIVER_OSES, OSES, platform_named
from envcheck.printable import printable
from envcheck.render import emit, json_text
from envcheck.render.matrix import render_cuda, render_gpu, render_tf


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", metavar="FILE", help="use this compatibility matrix instead of the bundled one")
    sub = parser.add_subparsers(dest="query", metavar="QUERY", required=True, parser_class=type(parser))

    tf = sub.add_parser("tf", help="what a TensorFlow release was built with and needs")
    tf.add_argument("version", metavar="VERSION", help="a TensorFlow release, e.g. 2.15 or 1.13.1")
    tf.add_argument(
        "--os",
        choices=OSES,
        default="linux",
        help="the platform (default: linux; wsl means the Linux build)",
    )

    cuda = sub.add_parser("cuda", help="the minimum driver and GPU architectures of a CUDA release")
    cuda.add_argument("version", metavar="VERSION", help="a CUDA release, e.g. 11.2 or 12.5.1")

    gpu = sub.add_parser("gpu", help="a GPU's compute capability and which TensorFlow releases run on it")
    gpu.add_argument("name", metavar="NAME", nargs="+", help='the product name, e.g. "GTX 1060" or "A100"')

    for p in (tf, cuda, gpu):
        p.add_argument("--json", action="store_true", help="print JSON for scripts")
        p.add_argument(
            "--matrix",
            metavar="FILE",
            default=argparse.SUPPRESS,
            help="use this compatibility matrix instead of the bundled one",
        )


def run(args: argparse.Namespace) -> int:
    path = getattr(args, "matrix", None)
    if path is not None and not path.strip():
        raise UsageError("--matrix needs a path, got an empty string")
    matrix = load_matrix(path) if path else load_matrix()
    if args.query == "tf":
        answer = tf_answer(matrix, args.version, args.os)
        text = render_tf(shown(answer))
    elif args.query == "cuda":
        answer = cuda_answer(matrix, args.version)
        text = render_cuda(shown(answer))
    else:
        answer = gpu_answer(matrix, " ".join(args.name))
        text = render_gpu(shown(answer), shown(listed_releases(matrix)))
    emit(json_text("matrix", {"query": args.query, **answer}, 0) if args.json else text, is_json=args.json)
    return 0


# --------------------------------------------------------------------------------------------
# Answers as plain data (the JSON output); the text renderers below only format them.


def tf_answer(matrix: Matrix, version: str, os: str) -> dict[str, Any]:
    wanted = _parse_version(version, "TensorFlow")
    build = matrix.tf_build(wanted, os)
    if build is None:
        first, last = matrix.tf_range()
        if first <= _minor_of(wanted) <= last:
            oses = [o for o in BUILD_OSES if matrix.tf_build(wanted, o) is not None]
            if oses:
                raise NotFoundError(
                    f"TensorFlow {version} has no {platform_named(os).wheels_os} build in the matrix (it has: {', '.join(oses)})"
                )
        raise NotFoundError(f"TensorFlow {version} is not in the matrix (it covers TensorFlow {first} to {last})")
    return {
        "tf": str(build.tf),
        "os": build.os,
        "platform": os,
        "gpu": build.gpu,
        "distribution": build.distribution,
        "python": list(build.python),
        "cuda": _str(build.cuda),
        "cudnn": _str(build.cudnn),
        "compute_capabilities": list(build.compute_capabilities),
        "min_compute_capability": _str(build.min_compute_capability),
        "libraries": list(build.libraries),
        "compiler": build.compiler,
        "build_tool": build.build_tool,
        "pip_cuda": None
        if build.pip_cuda is None
        else {"extra": build.pip_cuda.extra, "packages": dict(build.pip_cuda.packages)},
        "driver_floor": _driver_floor(matrix, build, os),
        "driver": _driver(matrix, build, os),
        "install": matrix.pip_requirement(build, os) if build.gpu else matrix.pip_requirement(build, os, gpu=False),
        "notes": list(build.notes),
        "history": [
            {"field": c.field, "was": c.was, "note": c.note, "sources": list(c.sources)} for c in build.history
        ],
        "sources": list(build.sources),
    }


def cuda_answer(matrix: Matrix, version: str) -> dict[str, Any]:
    wanted = _parse_version(version, "CUDA")
    release = matrix.cuda(wanted)
    if release is None:
        known = matrix.cuda_releases()
        hint = " (give major.minor, e.g. 12.2)" if len(wanted.release) < 2 else ""
        raise NotFoundError(
            f"CUDA {version} is not in the matrix{hint}; it covers CUDA {known[0].version} to {known[-1].version}"
        )
    major = matrix.cuda_major(release.version.release[0])
    floors = {os: matrix.driver_requirement(release.version, os) for os in DRIVER_OSES}
    return {
        "cuda": str(release.version),
        "min_driver": {"linux": _str(release.min_driver_linux), "windows": _str(release.min_driver_windows)},
        "driver_floor": {os: _str(need.minimum) if need is not None else None for os, need in floors.items()},
        "minor_compat_floor": {
            "linux": _str(major.minor_compat_floor_linux if major else None),
            "windows": _str(major.minor_compat_floor_windows if major else None),
        },
        "supported_architectures": list(release.architectures),
        "download_url": release.download_url,
        "notes": list(release.notes) + (list(major.notes) if major else []),
        "sources": list(release.sources) + [s for s in (major.sources if major else ()) if s not in release.sources],
    }


def gpu_answer(matrix: Matrix, name: str) -> dict[str, Any]:
    if not name.strip():
        raise UsageError('give a GPU name, e.g. "GTX 1060" or "A100"')
    gpu = matrix.gpu(name)
    if gpu is None:
        raise NotFoundError(
            unknown_gpu_message(
                matrix,
                name,
                "look its compute capability up with "
                "`nvidia-smi --query-gpu=name,compute_cap --format=csv` or at https://developer.nvidia.com/cuda-gpus",
            )
        )
    support: dict[str, dict[str, list[str]]] = {NATIVE: {}, PTX: {}, "beyond_last_driver": {}, "older_ptx_isa": {}}
    for build in listed_rows(matrix):
        run = release_runs_on_gpu(matrix, build, gpu.compute_capability, build.os)
        kind = run.code if run.runs is not False else ("beyond_last_driver" if run.code != NONE else NONE)
        if kind == NONE and build.gpu and code_for(build.compute_capabilities, gpu.compute_capability)[0] == PTX:
            kind = "older_ptx_isa"  # PTX that would reach the card, in a release that compiles for it itself
        if kind in support:
            support[kind].setdefault(build.os, []).append(str(build.tf))
    return {
        "name": gpu.name,
        "compute_capability": str(gpu.compute_capability),
        "architecture": gpu.architecture,
        "last_driver_branch": matrix.last_driver_branch(gpu.architecture),
        "pci_ids": list(gpu.pci_ids),
        "native": support[NATIVE],
        "ptx": support[PTX],
        "beyond_last_driver": support["beyond_last_driver"],
        "older_ptx_isa": support["older_ptx_isa"],
        "notes": list(gpu.notes),
        "sources": list(gpu.sources),
    }


def _parse_version(text: str, what: str):
    try:
        return as_version(text)
    except UsageError:
        shown = repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text)} characters)"
        raise UsageError(
            f"{shown} is not a {what} version (expected something like {'2.15' if what == 'TensorFlow' else '12.2'})"
        ) from None


def _minor_of(version):
    release = (version.release + (0,))[:2]
    return as_version(".".join(str(p) for p in release))


def listed_rows(matrix: Matrix) -> list[TfBuild]:
    """The rows ``matrix gpu`` lists: every minor release, and a patch row (2.15.0) only where it
    answers differently from its minor's row for some GPU code list (it sits inside it otherwise)."""
    out = []
    for build in matrix.tf_releases():
        minor_row = (
            matrix.tf_build(".".join(str(p) for p in build.tf.release[:2]), build.os) if build.is_patch_row else None
        )
        if minor_row is not None and minor_row.compute_capabilities == build.compute_capabilities:
            continue
        out.append(build)
    return out


def listed_releases(matrix: Matrix) -> dict[str, list[str]]:
    """Per OS, the releases ``matrix gpu`` can list, in the matrix's order: a run of consecutive
    ones prints as one range (a patch row it skips does not break the run)."""
    rows = listed_rows(matrix)
    return {os: [str(b.tf) for b in rows if b.os == os] for os in BUILD_OSES}


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _driver_floor(matrix: Matrix, build: TfBuild, os: str) -> str | None:
    """The oldest driver that runs the build on ``os`` (under WSL2 the Windows driver), as
    ``envcheck plan`` gives it (its ``driver_floor``)."""
    need = matrix.driver_requirement(build.cuda, os) if build.cuda is not None else None
    return _str(need.minimum) if need is not None else None


def _driver(matrix: Matrix, build: TfBuild, os: str) -> dict[str, Any] | None:
    need = matrix.driver_requirement(build.cuda, os) if build.cuda is not None else None
    if need is None:
        return None
    return {
        "os": need.os,
        "floor": _str(need.minimum),
        "min_driver": _str(need.full),
        "minor_version_compatibility": need.minor_compat,
    }


def shown(answer: Any) -> Any:
    """An answer with every string as it may be printed: a --matrix file is anyone's text, and one
    value must stay one line (``printable``); the JSON output keeps the values exact."""
    if isinstance(answer, str):
        return printable(answer)
    if isinstance(answer, list):
        return [shown(v) for v in answer]
    if isinstance(answer, dict):
        return {k: shown(v) for k, v in answer.items()}
    return answer
