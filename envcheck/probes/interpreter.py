"""Facts about one Python interpreter: itself and its TensorFlow-family distributions.

This file is also run as a standalone script inside another interpreter (``--python PATH``): it
imports only the standard library and prints one JSON object. Keep it that way.
"""

from __future__ import annotations

import json
import os
import platform
import re
import struct
import sys
import time

# Distributions the doctor cares about; every "nvidia-*" wheel is recorded too.
TF_FAMILY = (
    "tensorflow",
    "tensorflow-gpu",
    "tensorflow-cpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-metal",
    "tensorflow-io-gcs-filesystem",
    "tf-nightly",
    "tf-nightly-gpu",
    "tf-nightly-cpu",
    "tensorflow-rocm",
    "keras",
    "tf-keras",
    "jax",
    "jaxlib",
    "torch",
)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_facts() -> dict:
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    conda_prefix = os.environ.get("CONDA_PREFIX")
    in_conda = os.path.isdir(os.path.join(sys.prefix, "conda-meta"))
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "bits": struct.calcsize("P") * 8,
        "machine": platform.machine(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "in_virtualenv": in_venv,
        "in_conda": in_conda,
        "conda_prefix": sys.prefix if in_conda else conda_prefix,
        "pip_version": _pip_version(),
    }


def _pip_version() -> str | None:
    try:
        from importlib import metadata

        return metadata.version("pip")
    except Exception:  # noqa: BLE001 - no pip is a fact, not an error
        return None


def distributions() -> list[dict]:
    """Installed distributions of the TF family and every nvidia-* wheel, sorted by name."""
    from importlib import metadata

    found: dict[str, dict] = {}
    for dist in metadata.distributions():
        try:
            raw = dist.metadata["Name"]
        except Exception:  # noqa: BLE001 - a broken METADATA file must not stop the probe
            continue
        if not raw:
            continue
        name = _normalize(raw)
        if name not in TF_FAMILY and not name.startswith("nvidia-"):
            continue
        if name in found:  # two copies of one distribution: keep the first, it is the one imported
            continue
        try:
            location = str(dist.locate_file(""))
        except Exception:  # noqa: BLE001
            location = None
        requires = tuple(dist.requires or ()) if name in TF_FAMILY else ()
        found[name] = {
            "name": name,
            "version": dist.version or "",
            "location": location,
            "requires": list(requires),
        }
    return [found[k] for k in sorted(found)]


def collect() -> dict:
    started = time.perf_counter()
    out: dict = {"python": python_facts()}
    out["python"]["seconds"] = round(time.perf_counter() - started, 4)
    started = time.perf_counter()
    try:
        dists = distributions()
        out["packages"] = {"status": "ok", "distributions": dists}
    except Exception as exc:  # noqa: BLE001 - probes never raise
        out["packages"] = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "distributions": []}
    out["packages"]["seconds"] = round(time.perf_counter() - started, 4)
    try:
        out["library_dirs"] = {"pip": nvidia_lib_dirs()}
    except Exception as exc:  # noqa: BLE001
        out["library_dirs"] = {"pip": [], "error": f"{type(exc).__name__}: {exc}"}
    return out


# --- CUDA libraries as this interpreter sees them ------------------------------------------------


def _site_dirs() -> list:
    """Import roots this interpreter uses when run normally (this script may run with -I)."""
    dirs = []
    if sys.flags.ignore_environment:
        dirs.extend(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    dirs.extend(p for p in sys.path if p)
    if sys.flags.no_user_site and not os.environ.get("PYTHONNOUSERSITE"):
        try:
            import site

            dirs.append(site.getusersitepackages())
        except Exception:  # noqa: BLE001 - no user site on this platform
            pass
    return dirs


def nvidia_lib_dirs() -> list:
    """The lib (or bin, on Windows) folders of the pip nvidia-* wheels: site-packages/nvidia/*/lib."""
    found = []
    seen = set()
    for root in _site_dirs():
        base = os.path.join(root, "nvidia")
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            for sub in ("lib", "bin"):
                candidate = os.path.join(base, name, sub)
                key = os.path.normcase(os.path.realpath(candidate))
                if key not in seen and os.path.isdir(candidate):
                    seen.add(key)
                    found.append(candidate)
    return found


def _ctypes_version(lib, family: str):
    """The version a loaded CUDA library reports about itself, or None when it has no such call."""
    import ctypes

    if family in ("cudart", "nvcuda"):
        fn = getattr(lib, "cudaRuntimeGetVersion" if family == "cudart" else "cuDriverGetVersion")
        value = ctypes.c_int(0)
        if fn(ctypes.byref(value)) != 0 or value.value <= 0:
            return None
        return "%d.%d" % (value.value // 1000, (value.value % 1000) // 10)
    if family in ("cudnn", "nccl"):
        if family == "cudnn":
            fn = lib.cudnnGetVersion
            fn.restype = ctypes.c_size_t
            v = int(fn())
            nine_or_later = v >= 90000
        else:
            value = ctypes.c_int(0)
            if lib.ncclGetVersion(ctypes.byref(value)) != 0:
                return None
            v = value.value
            nine_or_later = v >= 20900  # NCCL 2.9 widened the minor field
        if nine_or_later:
            return "%d.%d.%d" % (v // 10000, (v % 10000) // 100, v % 100)
        return "%d.%d.%d" % (v // 1000, (v % 1000) // 100, v % 100)
    if family == "nvjitlink":
        major, minor = ctypes.c_uint(0), ctypes.c_uint(0)
        if lib.nvJitLinkVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
            return None
        return "%d.%d" % (major.value, minor.value)
    getter = _PROPERTY_GETTERS.get(family)
    if getter is None:
        return None
    fn = getattr(lib, getter)
    parts = []
    for kind in (0, 1, 2):  # libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int(0)
        if fn(kind, ctypes.byref(value)) != 0:
            return None
        parts.append(str(value.value))
    return ".".join(parts)


_PROPERTY_GETTERS = {
    "cublas": "cublasGetProperty",
    "cublaslt": "cublasLtGetProperty",
    "cufft": "cufftGetProperty",
    "curand": "curandGetProperty",
    "cusolver": "cusolverGetProperty",
    "cusparse": "cusparseGetProperty",
}


def load_library(path: str, family: str) -> dict:
    """Load one library by its full path and ask its version; failures are results, not errors."""
    import ctypes

    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return {"loads": False, "load_error": str(exc)[:500]}
    try:
        version = _ctypes_version(lib, family)
    except Exception:  # noqa: BLE001 - a library without the call (a stub) still loaded
        version = None
    return {"loads": True, "reported_version": version}


def load_libraries_main(stdin, stdout) -> None:
    """Read [{"path", "family"}, ...]; print a line before each attempt and one after it.

    The line before lets the caller name the library when loading it kills this process.
    """
    requests = json.load(stdin)
    for index, request in enumerate(requests):
        stdout.write(json.dumps({"index": index, "trying": True}) + "\n")
        stdout.flush()
        result = load_library(request["path"], request.get("family", ""))
        result["index"] = index
        stdout.write(json.dumps(result) + "\n")
        stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--load-libraries"]:
        load_libraries_main(sys.stdin, sys.stdout)
    else:
        json.dump(collect(), sys.stdout)
