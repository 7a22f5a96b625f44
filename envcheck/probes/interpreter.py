"""Facts about one Python interpreter: itself and its installed distributions.

This file is also run as a standalone script inside another interpreter (``--python PATH``): it
imports only the standard library, runs on Python 3.6 and later, and prints one JSON object. Keep
it that way (``vermin`` checks it in the tests). Every distribution is recorded with its version;
the requirement strings only for the distributions named with ``--requires-of`` (TensorFlow's, as
the matrix lists them) and the nvidia-* wheels, so the snapshot stays small.
"""

import json
import os
import platform
import re
import struct
import sys
import time


def _normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def python_facts():
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


def _pip_version():
    for dist in _installed():
        if dist[0] == "pip":
            return dist[1]
    return None


_FOUND = []


def _installed():
    """(normalised name, version, location, requirement strings) of every installed distribution,
    in import order: the .dist-info / .egg-info folders on sys.path, their headers read directly
    (what importlib.metadata finds, without parsing every long description: ten times faster)."""
    if _FOUND:
        return list(_FOUND)
    for root in _site_dirs():
        try:
            entries = sorted(os.listdir(root))
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info"):
                meta = os.path.join(root, entry, "METADATA")
            elif entry.endswith(".egg-info"):
                folder = os.path.join(root, entry)
                meta = os.path.join(folder, "PKG-INFO") if os.path.isdir(folder) else folder
            else:
                continue
            parsed = _read_metadata(meta)
            if parsed is not None:
                _FOUND.append((parsed[0], parsed[1], root, parsed[2]))
    return list(_FOUND)


def _read_metadata(path):
    """Name, version and Requires-Dist lines of one METADATA / PKG-INFO file (its header only)."""
    name = version = None
    requires = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the body (the long description) starts after the first blank line
                key, _, value = line.partition(":")
                key, value = key.strip().lower(), value.strip()
                if key == "name" and name is None:
                    name = value
                elif key == "version" and version is None:
                    version = value
                elif key == "requires-dist":
                    requires.append(value)
    except OSError:
        return None
    if not name:
        return None
    return _normalize(name), version or "", tuple(requires)


def distributions(requires_of=()):
    """Every installed distribution, sorted by name; requirement strings for ``requires_of`` and
    the nvidia-* wheels only."""
    wanted = {_normalize(n) for n in requires_of}
    found = {}
    for name, version, location, requires in _installed():
        if name in found:  # two copies of one distribution: keep the first, it is the one imported
            continue
        keep = name in wanted or name.startswith("nvidia-")
        found[name] = {
            "name": name,
            "version": version,
            "location": location,
            "requires": list(requires) if keep else [],
        }
    return [found[k] for k in sorted(found)]


def collect(requires_of=()):
    started = time.perf_counter()
    out = {"python": python_facts()}
    out["python"]["seconds"] = round(time.perf_counter() - started, 4)
    started = time.perf_counter()
    try:
        dists = distributions(requires_of)
        out["packages"] = {"status": "ok", "distributions": dists, "complete": True}
    except Exception as exc:  # noqa: BLE001 - probes never raise
        out["packages"] = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "distributions": []}
    out["packages"]["seconds"] = round(time.perf_counter() - started, 4)
    try:
        out["library_dirs"] = {"pip": nvidia_lib_dirs()}
    except Exception as exc:  # noqa: BLE001
        out["library_dirs"] = {"pip": [], "error": f"{type(exc).__name__}: {exc}"}
    return out


# --- CUDA libraries as this interpreter sees them ------------------------------------------------


def _site_dirs():
    """Import roots this interpreter uses when run normally (this script may run with -I)."""
    dirs = []
    if sys.flags.ignore_environment:
        dirs.extend(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    dirs.extend(p for p in sys.path if p)
    if sys.flags.no_user_site and not os.environ.get("PYTHONNOUSERSITE"):
        try:
            # lazy: ctypes can be missing from the probed interpreter's build; only the load test needs it
            import site

            dirs.append(site.getusersitepackages())
        except Exception:  # noqa: BLE001 - no user site on this platform
            pass
    return dirs


def nvidia_lib_dirs():
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


def _ctypes_version(lib, family):
    """The version a loaded CUDA library reports about itself, or None when it has no such call."""
    # lazy: ctypes can be missing from the probed interpreter's build; only the load test needs it
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


def load_library(path, family):
    """Load one library by its full path and ask its version; failures are results, not errors."""
    # lazy: ctypes can be missing from the probed interpreter's build; only the load test needs it
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


def load_libraries_main(stdin, stdout):
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
        names = sys.argv[2].split(",") if sys.argv[1:2] == ["--requires-of"] and len(sys.argv) > 2 else ()
        json.dump(collect(names), sys.stdout)
