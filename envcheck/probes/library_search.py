"""Where the CUDA and cuDNN libraries are, in the order a loader would find them: pure functions.

The search takes its inputs (directory lists, the environment, a directory lister) as arguments,
so Windows layouts are tested on any machine and Linux layouts with built trees. ``libraries.py``
feeds it this machine's real state.

A *location* is one directory with its origin (``PATH``, ``LD_LIBRARY_PATH``, ``ldconfig``,
``pip``, ``system``, ``conda``, ``CUDA_HOME``, ``CUDA_PATH``, ``cuda-dir``) and whether the loader
searches it. Copies in directories no loader searches are still recorded: "cuDNN is in your conda
env but not on LD_LIBRARY_PATH" is a finding the rules can only make if the probe saw it.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from envcheck.facts import CudaToolkit, LibraryCopy, LibraryFacts


@dataclass(frozen=True)
class Family:
    name: str
    linux_stem: Optional[str]  # "libcudart" matches libcudart.so, libcudart.so.12, libcudart.so.12.4.127
    windows: Optional[str]  # a regex for the DLL name; its group is the version digits


FAMILIES: tuple[Family, ...] = (
    Family("cudart", "libcudart", r"cudart64_(\d+)\.dll"),
    Family("cudnn", "libcudnn", r"cudnn64_(\d+)\.dll"),
    Family("cublas", "libcublas", r"cublas64_(\d+)\.dll"),
    Family("cublaslt", "libcublasLt", r"cublasLt64_(\d+)\.dll"),
    Family("cufft", "libcufft", r"cufft64_(\d+)\.dll"),
    Family("curand", "libcurand", r"curand64_(\d+)\.dll"),
    Family("cusolver", "libcusolver", r"cusolver64_(\d+)\.dll"),
    Family("cusparse", "libcusparse", r"cusparse64_(\d+)\.dll"),
    Family("nvjitlink", "libnvJitLink", r"nvJitLink_(\d+)_\d+\.dll"),
    Family("nccl", "libnccl", None),
    # The driver's own CUDA library: nvcuda.dll on Windows, libcuda.so.1 on Linux.
    Family("nvcuda", "libcuda", r"nvcuda\.dll"),
    # TF's Windows wheels need the Visual C++ runtime; cuDNN 8.3+ on Windows needs zlibwapi.dll.
    Family("msvcp140", None, r"msvcp140\.dll"),
    Family("zlibwapi", None, r"zlibwapi\.dll"),
)

_LINUX_PATTERNS = {
    f.name: re.compile(rf"^{re.escape(f.linux_stem)}\.so((?:\.\d+)*)$") for f in FAMILIES if f.linux_stem
}
_WINDOWS_PATTERNS = {f.name: re.compile(rf"^{f.windows}$", re.IGNORECASE) for f in FAMILIES if f.windows}


def families_for(os_name: str) -> tuple[str, ...]:
    patterns = _WINDOWS_PATTERNS if os_name == "windows" else _LINUX_PATTERNS
    return tuple(f.name for f in FAMILIES if f.name in patterns)


# --- versions from file names --------------------------------------------------------------------


def windows_file_version(digits: str) -> str:
    """The version a DLL name encodes.

    cudart64_100.dll -> 10.0, cudart64_101.dll -> 10.1, cudart64_65.dll -> 6.5, cudart64_90.dll ->
    9.0; from CUDA 11 most libraries carry their own major alone: cudart64_12.dll -> 12,
    cublas64_11.dll -> 11, cufft64_10.dll -> 10, cudnn64_8.dll -> 8.
    """
    if len(digits) == 3:
        return f"{int(digits[:2])}.{digits[2]}"
    if len(digits) == 2 and not 10 <= int(digits) < 20:
        return f"{digits[0]}.{digits[1]}"
    return str(int(digits)) if digits.isdigit() else digits


def match_library(name: str, os_name: str) -> Optional[tuple[str, Optional[str]]]:
    """(family, version from the file name) when ``name`` is one of the libraries searched for."""
    if os_name == "windows":
        for family, pattern in _WINDOWS_PATTERNS.items():
            m = pattern.match(name)
            if m:
                digits = m.group(1) if m.groups() else None
                return family, windows_file_version(digits) if digits else None
        return None
    for family, pattern in _LINUX_PATTERNS.items():
        m = pattern.match(name)
        if m:
            return family, m.group(1)[1:] or None
    return None


def version_key(version: Optional[str]) -> tuple[int, ...]:
    if not version:
        return ()
    return tuple(int(p) for p in re.findall(r"\d+", version))


# --- the search ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    directory: str
    origin: str
    on_loader_path: bool = True
    # (name, realpath) pairs when the location's contents are already known (the ldconfig cache
    # lists names, not directories); None means "list the directory".
    entries: Optional[tuple[tuple[str, str], ...]] = None


# A directory lister (raises OSError when it cannot list) and what a name in a directory really is.
Lister = Callable[[str], Iterable[str]]
Resolver = Callable[[str, str], str]


def find_libraries(
    locations: Sequence[Location], listdir: Lister, resolve: Resolver, os_name: str
) -> tuple[tuple[LibraryFacts, ...], tuple[str, ...]]:
    """Every copy of every family, in location order, and the directories that could not be read.

    One file reached twice (``lib64`` is a link to ``lib``; the ldconfig cache lists a directory
    that is also on LD_LIBRARY_PATH) is one copy, kept where the loader meets it first.
    """
    join = ntpath.join if os_name == "windows" else posixpath.join
    copies: dict[str, list[LibraryCopy]] = {f: [] for f in families_for(os_name)}
    seen: set[str] = set()
    unreadable: list[str] = []
    for location in locations:
        if location.entries is not None:
            entries = list(location.entries)
        else:
            try:
                names = list(listdir(location.directory))
            except OSError:
                unreadable.append(location.directory)
                continue
            # Resolve only the few names that match: /usr/lib holds thousands of files.
            entries = [(n, resolve(location.directory, n)) for n in names if match_library(n, os_name)]
        groups: dict[tuple[str, str], list[tuple[str, Optional[str]]]] = {}
        for name, realpath in entries:
            hit = match_library(name, os_name)
            if hit is None:
                continue
            family, file_version = hit
            groups.setdefault((family, realpath), []).append((name, file_version))
        for (family, realpath), names in groups.items():
            key = realpath.lower() if os_name == "windows" else realpath
            if key in seen:
                continue
            seen.add(key)
            loader_name = _loader_name(names)
            # The file behind the links often carries the full version (libcudnn.so.8 -> .so.8.9.7).
            target = match_library(_basename(realpath, os_name), os_name)
            versions = [v for _, v in names if v] + (
                [target[1]] if target and target[0] == family and target[1] else []
            )
            copies[family].append(
                LibraryCopy(
                    path=join(location.directory, loader_name),
                    directory=location.directory,
                    origin=location.origin,
                    file_version=max(versions, key=version_key, default=None),
                    realpath=realpath,
                    names=tuple(sorted(n for n, _ in names)),
                    on_loader_path=location.on_loader_path,
                )
            )
    facts = tuple(_family_facts(family, tuple(found), os_name) for family, found in copies.items())
    return facts, tuple(unreadable)


def _loader_name(names: list[tuple[str, Optional[str]]]) -> str:
    """The name a loader asks for: the fewest version parts, libcudart.so.12 over .so.12.4.127 and .so."""

    def rank(item: tuple[str, Optional[str]]) -> tuple[int, str]:
        parts = len(version_key(item[1]))
        return (parts if parts else 99, item[0])  # CUDA 11's cudart soname is libcudart.so.11.0

    return min(names, key=rank)[0]


def _family_facts(family: str, copies: tuple[LibraryCopy, ...], os_name: str) -> LibraryFacts:
    winners: dict[str, str] = {}
    versions: dict[str, tuple[int, ...]] = {}
    for copy in copies:
        if not copy.on_loader_path:
            continue
        name = _basename(copy.path, os_name)
        key = name.lower() if os_name == "windows" else name
        if key not in winners:
            winners[key] = copy.path
            hit = match_library(name, os_name)
            versions[key] = version_key(hit[1]) if hit else ()
    newest = max(winners, key=lambda k: versions[k], default=None)
    return LibraryFacts(family=family, copies=copies, winner=winners.get(newest) if newest else None, winners=winners)


def _basename(path: str, os_name: str) -> str:
    return ntpath.basename(path) if os_name == "windows" else posixpath.basename(path)


# --- Windows -------------------------------------------------------------------------------------


def env_get(env: Mapping[str, str], name: str) -> Optional[str]:
    """Windows variable names ignore case."""
    if name in env:
        return env[name]
    lowered = name.lower()
    return next((v for k, v in env.items() if k.lower() == lowered), None)


def windows_toolkits(env: Mapping[str, str]) -> tuple[CudaToolkit, ...]:
    """CUDA_PATH and every CUDA_PATH_V<major>_<minor> the installers set, newest first."""
    found: list[CudaToolkit] = []
    seen: set[str] = set()
    current = env_get(env, "CUDA_PATH")
    versioned = []
    for key, value in env.items():
        m = re.fullmatch(r"CUDA_PATH_V(\d{1,3})_(\d{1,3})", key, re.IGNORECASE)  # as probes.system records them
        if m and value:
            versioned.append(((int(m.group(1)), int(m.group(2))), key.upper(), value))
    versioned.sort(reverse=True)
    if current:
        from_path = re.search(r"[\\/]v(\d+\.\d+)[\\/]*$", current.strip())
        same = next((v for v in versioned if _same_windows_path(v[2], current)), None)
        if same:
            version, source = f"{same[0][0]}.{same[0][1]}", same[1]
        elif from_path:
            version, source = from_path.group(1), "directory name"
        else:
            version, source = None, None
        found.append(CudaToolkit(path=current.strip(), version=version, origin="CUDA_PATH", version_source=source))
        seen.add(_windows_key(current))
    for (major, minor), key, value in versioned:
        if _windows_key(value) in seen:
            continue
        seen.add(_windows_key(value))
        found.append(
            CudaToolkit(path=value.strip(), version=f"{major}.{minor}", origin="CUDA_PATH", version_source=key)
        )
    return tuple(found)


def _windows_key(path: str) -> str:
    return ntpath.normcase(ntpath.normpath(path.strip().strip('"')))


def _same_windows_path(a: str, b: str) -> bool:
    return _windows_key(a) == _windows_key(b)


@dataclass(frozen=True)
class SearchResult:
    search_path: tuple[str, ...]
    libraries: tuple[LibraryFacts, ...]
    toolkits: tuple[CudaToolkit, ...]
    unreadable: tuple[str, ...]


def search_windows(
    path_entries: Sequence[str], env: Mapping[str, str], listdir: Callable[[str], Iterable[str]]
) -> SearchResult:
    """Where Windows finds each DLL: System32, then every PATH entry in order.

    ``CUDA_PATH\\bin`` directories not on PATH are searched too but marked off the loader path:
    the installer sets CUDA_PATH, yet only PATH makes the DLLs loadable.
    """
    locations: list[Location] = []
    system_root = env_get(env, "SystemRoot") or env_get(env, "windir")
    if system_root:
        locations.append(Location(ntpath.join(system_root, "System32"), "system"))
    for entry in path_entries:
        entry = entry.strip().strip('"')
        if entry:
            locations.append(Location(entry, "PATH"))
    toolkits = windows_toolkits(env)
    for toolkit in toolkits:
        locations.append(Location(ntpath.join(toolkit.path, "bin"), toolkit.origin, on_loader_path=False))
    unique: list[Location] = []
    seen: set[str] = set()
    for location in locations:
        key = _windows_key(location.directory)
        if key not in seen:
            seen.add(key)
            unique.append(location)

    libraries, unreadable = find_libraries(unique, listdir, ntpath.join, "windows")
    return SearchResult(
        search_path=tuple(loc.directory for loc in unique),
        libraries=libraries,
        toolkits=toolkits,
        unreadable=unreadable,
    )


# --- Linux ---------------------------------------------------------------------------------------

# The path ends at its last non-blank: "(\S.*?)\s*$" would try every split of a run of blanks.
_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S(?:.*\S)?)\s*$")


def parse_ldconfig(text: str, want_64bit: bool = True) -> list[tuple[str, str]]:
    """(name, path) pairs from ``ldconfig -p``, in cache order, for the interpreter's word size.

    Lines look like ``libcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12``;
    32-bit entries say ``(libc6)`` and are of no use to a 64-bit Python.
    """
    out = []
    for line in text.splitlines():
        m = _LDCONFIG_LINE.match(line)
        if not m:
            continue
        name, flags, path = m.groups()
        is_64 = "64" in flags
        if is_64 == want_64bit:
            out.append((name, path))
    return out


def ldconfig_locations(entries: Sequence[tuple[str, str]], realpath: Callable[[str], str]) -> list[Location]:
    """One location per directory of the cache, in order of first appearance, holding only the
    names the cache lists: a file copied in without rerunning ldconfig is not found by the loader."""
    by_dir: dict[str, list[tuple[str, str]]] = {}
    for name, path in entries:
        if match_library(name, "linux") is None:
            continue
        by_dir.setdefault(posixpath.dirname(path), []).append((name, realpath(path)))
    return [Location(directory, "ldconfig", True, tuple(items)) for directory, items in by_dir.items()]
