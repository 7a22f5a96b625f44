"""``envcheck matrix``'s answers as text: each renderer takes the answer (the same dict ``--json``
prints) and returns the text, each line wrapped to the width with its continuation lines under the
value; a command to copy and a URL stay whole."""

from __future__ import annotations

import re
from typing import Any, Optional

from envcheck.platform import platform_named
from envcheck.render.width import terminal_width, wrap
from envcheck.shell import BASH, quote

# Lines that are a command to copy stay whole whatever the width.
_UNWRAPPED = ("install ", "source: ")


def render_tf(answer: dict[str, Any], width: Optional[int] = None) -> str:
    a = answer
    where = "WSL2 (the Linux build)" if a.get("platform") == "wsl" else a["os"]
    head = f"TensorFlow {a['tf']} on {where}: " + (
        f"GPU build (CUDA {a['cuda']}, cuDNN {a['cudnn']})"
        if a["gpu"]
        else "CPU only (no CUDA build for this platform)"
    )
    pip_cuda = None
    if a["pip_cuda"]:
        packages = len(a["pip_cuda"]["packages"])
        pip_cuda = f"the [{a['pip_cuda']['extra']}] extra pulls {packages} packages: nvidia-* CUDA libraries"
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
    return _fit("\n".join([head, body, *_notes(a), *_history(a), *_sources(a)]), width)


def render_cuda(answer: dict[str, Any], width: Optional[int] = None) -> str:
    a = answer
    own, floor = a["min_driver"], a["minor_compat_floor"]
    body = _lines(
        [
            ("min driver", f"Linux {own['linux'] or 'unknown'}, Windows {own['windows'] or 'unknown'}"),
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
    return _fit("\n".join([f"CUDA {a['cuda']}", body, *_notes(a), *_sources(a)]), width)


def render_gpu(answer: dict[str, Any], releases_by_os: dict[str, list[str]], width: Optional[int] = None) -> str:
    """``releases_by_os``: every release the answer could list, in the matrix's order, per OS (so a
    run of consecutive releases prints as one range)."""
    a = answer
    lines = [f"{a['name']}: compute capability {a['compute_capability']} ({a['architecture']})"]
    if a.get("last_driver_branch"):
        lines.append(
            f"  last driver branch: {a['last_driver_branch']} (drivers after it do not support {a['architecture']} GPUs)"
        )
    for kind, label in (("native", "native code"), ("ptx", "PTX only (JIT-compiled at startup)")):
        for os, releases in a[kind].items():
            lines.append(f"  {label} on {os}: TensorFlow {release_ranges(releases, releases_by_os[os])}")
    for os, releases in a.get("beyond_last_driver", {}).items():
        lines.append(
            f"  code for it, but CUDA needs a driver after its last branch, on {os}: TensorFlow "
            + release_ranges(releases, releases_by_os[os])
        )
    for os, releases in a.get("older_ptx_isa", {}).items():
        lines.append(
            f"  PTX for it, but kernels compiled for it with an older CUDA's PTX ISA do not load, on {os}: TensorFlow "
            + release_ranges(releases, releases_by_os[os])
        )
    if not a["native"] and not a["ptx"]:
        lines.append("  no TensorFlow release in the matrix runs on it")
    return _fit("\n".join(lines + _notes(a) + _sources(a)), width)


def release_ranges(chosen: list[str], ordered: list[str]) -> str:
    """ "1.13-2.10, 2.15" from the chosen releases, contiguous in ``ordered`` (the matrix's order)."""
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


def _driver_text(driver: Optional[dict[str, Any]], platform: Optional[str]) -> Optional[str]:
    if driver is None:
        return None
    where = "the Windows driver (WSL2 runs on it)" if platform == "wsl" else platform_named(driver["os"]).short_title
    text = f"{driver['floor']} on {where}"
    if driver["minor_version_compatibility"]:
        text += (
            f" (CUDA's minor-version compatibility floor; {driver['min_driver']} for GPUs that run "
            "the build only through PTX)"
        )
    return text


def _fit(text: str, width: Optional[int]) -> str:
    """Each line wrapped to the width, continuations under the value (``key  value`` lines) or
    under the text after the label (``note: ...``)."""
    width = width or terminal_width()
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
    return "\n".join(out) + "\n"


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


def _notes(a: dict[str, Any]) -> list[str]:
    return [f"note: {n}" for n in a.get("notes", [])]


def _history(a: dict[str, Any]) -> list[str]:
    return [f"corrected: {c['field']} was once given as {c['was']}: {c['note']}" for c in a.get("history", [])]


def _sources(a: dict[str, Any]) -> list[str]:
    return [f"source: {s}" for s in a["sources"]]
