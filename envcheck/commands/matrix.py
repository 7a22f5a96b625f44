"""`envcheck matrix`: ask the compatibility matrix about a TensorFlow release, a CUDA release or a GPU."""

from __future__ import annotations

import argparse
from typing import Any

from envcheck.errors import NotFoundError, UsageError
from envcheck.matrix import BUILD_OSES, Matrix, TfBuild, as_version, load_matrix, unknown_gpu_message
from envcheck.printable import printable
from envcheck.shell import BASH, quote


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", metavar="FILE", help="use this compatibility matrix instead of the bundled one")
    sub = parser.add_subparsers(dest="query", metavar="QUERY", required=True, parser_class=type(parser))

    tf = sub.add_parser("tf", help="what a TensorFlow release was built with and needs")
    tf.add_argument("version", metavar="VERSION", help="a TensorFlow release, e.g. 2.15 or 1.13.1")
    tf.add_argument(
        "--os",
        choices=("linux", "windows", "macos", "wsl"),
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
        text = _tf_text(shown(answer))
    elif args.query == "cuda":
        answer = cuda_answer(matrix, args.version)
        text = _cuda_text(shown(answer))
    else:
        answer = gpu_answer(matrix, " ".join(args.name))
        releases = {os: [printable(str(b.tf)) for b in matrix.tf_releases(os)] for os in BUILD_OSES}
        text = _gpu_text(shown(answer), releases)
    from envcheck.render import emit, json_text

    emit(json_text("matrix", {"query": args.query, **answer}, 0) if args.json else _fit(text) + "\n", is_json=args.json)
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
                    f"TensorFlow {version} has no {_build_os(os)} build in the matrix (it has: {', '.join(oses)})"
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
        "min_driver": _min_driver(matrix, build, os),
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
    return {
        "cuda": str(release.version),
        "min_driver": {"linux": _str(release.min_driver_linux), "windows": _str(release.min_driver_windows)},
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
    support: dict[str, dict[str, list[str]]] = {"native": {}, "ptx": {}}
    for build in matrix.tf_releases():
        kind = matrix.support(build, gpu.compute_capability)
        if build.is_patch_row:
            # A patch row (2.15.0) sits inside its minor's row (2.15): list it only where it differs.
            minor = matrix.tf_build(".".join(str(p) for p in build.tf.release[:2]), build.os)
            if minor is not None and matrix.support(minor, gpu.compute_capability) == kind:
                continue
        if kind in support:
            support[kind].setdefault(build.os, []).append(str(build.tf))
    return {
        "name": gpu.name,
        "compute_capability": str(gpu.compute_capability),
        "architecture": gpu.architecture,
        "last_driver_branch": matrix.last_driver_branch(gpu.architecture),
        "pci_ids": list(gpu.pci_ids),
        "native": support["native"],
        "ptx": support["ptx"],
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


def _build_os(os: str) -> str:
    return "linux" if os == "wsl" else os


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _min_driver(matrix: Matrix, build: TfBuild, os: str) -> str | None:
    """The oldest driver that runs the build on ``os`` (under WSL2 the Windows driver), as
    ``envcheck plan`` gives it."""
    need = matrix.driver_requirement(build.cuda, os) if build.cuda is not None else None
    return _str(need.minimum) if need is not None else None


def _driver(matrix: Matrix, build: TfBuild, os: str) -> dict[str, Any] | None:
    need = matrix.driver_requirement(build.cuda, os) if build.cuda is not None else None
    if need is None:
        return None
    return {
        "os": need.os,
        "minimum": _str(need.minimum),
        "cuda_release_minimum": _str(need.full),
        "minor_version_compatibility": need.minor_compat,
    }


# --------------------------------------------------------------------------------------------
# Text output


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


# Lines that are a command to copy stay whole whatever the width.
_UNWRAPPED = ("install ", "source: ")


def _fit(text: str) -> str:
    """Each line wrapped to the terminal, continuations under the value (``key  value`` lines) or
    under the text after the label (``note: ...``)."""
    import re

    from envcheck.render.width import terminal_width, wrap

    width = terminal_width()
    out = []
    for line in text.splitlines():
        if line.startswith(_UNWRAPPED):
            out.append(line)
            continue
        key = re.match(r"(\S[^:]*?  +|[a-z]+: |  )", line)
        label = key.group(1) if key else ""
        if " " not in line[len(label) :].strip():
            out.append(line)  # one word after the label (a URL): nothing to wrap at
            continue
        out.append(wrap(line, width, len(label) + 2 if label == "  " else len(label) or 2))
    return "\n".join(out)


def _lines(pairs: list[tuple[str, object]]) -> str:
    width = max(len(k) for k, _ in pairs)
    out = []
    for key, value in pairs:
        if value in (None, [], {}, ""):
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        out.append(f"{key.ljust(width)}  {value}")
    return "\n".join(out)


def _tf_text(a: dict[str, Any]) -> str:
    where = "WSL2 (the Linux build)" if a.get("platform") == "wsl" else a["os"]
    head = f"TensorFlow {a['tf']} on {where}: " + (
        f"GPU build (CUDA {a['cuda']}, cuDNN {a['cudnn']})"
        if a["gpu"]
        else "CPU only (no CUDA build for this platform)"
    )
    pip_cuda = None
    if a["pip_cuda"]:
        pip_cuda = f"the [{a['pip_cuda']['extra']}] extra pulls {len(a['pip_cuda']['packages'])} packages: nvidia-* CUDA libraries"
    body = _lines(
        [
            ("package", a["distribution"]),
            ("install", "pip install " + quote(a["install"], BASH)),
            ("python", a["python"]),
            ("cuda", a["cuda"]),
            ("cudnn", a["cudnn"]),
            ("min driver", _driver_text(a["driver"], a.get("platform"))),
            ("built for", a["compute_capabilities"]),
            ("min compute", a["min_compute_capability"]),
            ("loads", a["libraries"]),
            ("pip CUDA", pip_cuda),
            ("compiler", a["compiler"]),
            ("build tool", a["build_tool"]),
        ]
    )
    return "\n".join([head, body, *_notes(a), *_history(a), *_sources(a)])


def _driver_text(driver: dict[str, Any] | None, platform: str | None) -> str | None:
    if driver is None:
        return None
    where = (
        "the Windows driver (WSL2 runs on it)"
        if platform == "wsl"
        else "Windows"
        if driver["os"] == "windows"
        else "Linux"
    )
    text = f"{driver['minimum']} on {where}"
    if driver["minor_version_compatibility"]:
        text += (
            f" (CUDA's minor-version compatibility floor; {driver['cuda_release_minimum']} for GPUs that run "
            "the build only through PTX)"
        )
    return text


def _cuda_text(a: dict[str, Any]) -> str:
    floor = a["minor_compat_floor"]
    body = _lines(
        [
            (
                "min driver",
                f"Linux {a['min_driver']['linux'] or 'unknown'}, Windows {a['min_driver']['windows'] or 'unknown'}",
            ),
            (
                "minor compat",
                f"Linux {floor['linux'] or 'unknown'}, Windows {floor['windows'] or 'unknown'}"
                if floor["linux"] or floor["windows"]
                else None,
            ),
            ("builds for", a["supported_architectures"]),
            ("download", a["download_url"]),
        ]
    )
    return "\n".join([f"CUDA {a['cuda']}", body, *_notes(a), *_sources(a)])


def _gpu_text(a: dict[str, Any], releases_by_os: dict[str, list[str]]) -> str:
    lines = [f"{a['name']}: compute capability {a['compute_capability']} ({a['architecture']})"]
    if a.get("last_driver_branch"):
        lines.append(
            f"  last driver branch: {a['last_driver_branch']} (drivers after it do not support {a['architecture']} GPUs)"
        )
    for kind, label in (("native", "native code"), ("ptx", "PTX only (JIT-compiled at startup)")):
        for os, releases in a[kind].items():
            lines.append(f"  {label} on {os}: TensorFlow {_runs(releases, releases_by_os[os])}")
    if not a["native"] and not a["ptx"]:
        lines.append("  no TensorFlow release in the matrix has GPU code for it")
    return "\n".join(lines + _notes(a) + _sources(a))


def _runs(chosen: list[str], ordered: list[str]) -> str:
    """'1.13-2.10, 2.15' from the chosen releases, contiguous in the matrix's own order."""
    picked = set(chosen)
    runs: list[list[str]] = []
    previous_picked = False
    for release in ordered:
        if release in picked:
            if previous_picked:
                runs[-1].append(release)
            else:
                runs.append([release])
        previous_picked = release in picked
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _notes(a: dict[str, Any]) -> list[str]:
    return [f"note: {n}" for n in a.get("notes", [])]


def _history(a: dict[str, Any]) -> list[str]:
    return [f"corrected: {c['field']} was once given as {c['was']}: {c['note']}" for c in a.get("history", [])]


def _sources(a: dict[str, Any]) -> list[str]:
    return [f"source: {s}" for s in a["sources"]]
