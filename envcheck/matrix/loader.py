"""Read ``compat_matrix.yaml`` (or a user's ``--matrix`` file) into a validated ``Matrix``.

The YAML is walked as nodes (``yaml.compose``), not loaded into Python objects, for two reasons:
every error can name its line, and versions are read as written (``cuda: 11.10`` stays "11.10"
instead of becoming the float 11.1). Loading runs on every doctor call, so the parsed matrix is
cached per (path, mtime, size) and libyaml's parser is used when PyYAML has it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envcheck.errors import MatrixError
from envcheck.fsutil import MATRIX_FILE, read_user_text
from envcheck.matrix.model import (
    BUILD_OSES,
    DISTRIBUTION_CUDA,
    Architecture,
    Correction,
    CudaMajor,
    CudaRelease,
    CudnnRelease,
    GpuProduct,
    Matrix,
    MatrixVersion,
    PipCuda,
    PlatformRules,
    Source,
    TfBuild,
    TfDistribution,
    normalize_gpu_name,
)
from envcheck.resources import data_file

SCHEMA_VERSION = 2

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
# Every number in a version is at most 9 digits, every integer at most 18: a value past Python's
# 4,300-digit limit (or merely absurd) is a line-numbered error, never a ValueError from int().
_MAJOR_MINOR = re.compile(r"^\d{1,9}\.\d{1,9}$")
_DOTTED = re.compile(r"^\d{1,9}(\.\d{1,9})*$")
_TF_VERSION = re.compile(r"^\d{1,9}\.\d{1,9}(\.\d{1,9})?$")
_ARCH = re.compile(r"^(sm|compute)_\d{1,8}\d$")
_INTEGER = re.compile(r"^[-+]?\d{1,18}$")
# A user's --matrix is checked for shape before it is composed: nesting deeper than any matrix
# needs, and aliases (which a matrix never uses, and which let a small file stand for a huge
# one), are refused.
MAX_DEPTH = 32
_URL = re.compile(r"^https?://\S+$")
_SOURCE_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_PCI_DEVICE_ID = re.compile(r"^[0-9a-f]{4}$")
_DRIVER_BRANCH = re.compile(r"^\d{2,4}$")
# PEP 508 project names; packaging.requirements would do, but importing it costs more than the parse.
_PROJECT_NAME = re.compile(r"^([a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$", re.IGNORECASE)

T = TypeVar("T")
Node = yaml.Node


class _Reader:
    """Turns nodes into values, raising MatrixError that names file, line, field and expectation."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.source_keys: dict[str, Source] = {}

    def fail(self, node: Node, where: str, message: str) -> MatrixError:
        return MatrixError(f"{self.filename}, line {node.start_mark.line + 1}: {where}: {message}")

    def mapping(
        self, node: Node, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
    ) -> dict[str, Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node, where, f"expected a mapping with keys {', '.join(required + optional)}, got {_describe(node)}"
            )
        allowed = set(required) | set(optional)
        seen: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is None:
                raise self.fail(key_node, where, "expected a plain key")
            if key in seen:
                raise self.fail(
                    key_node, f"{where}.{key}", f"duplicate key (first given on line {seen[key].start_mark.line + 1})"
                )
            if key not in allowed:
                raise self.fail(
                    key_node, f"{where}.{key}", f"unknown key (expected one of: {', '.join(sorted(allowed))})"
                )
            seen[key] = value_node
        missing = [k for k in required if k not in seen]
        if missing:
            raise self.fail(node, where, f"missing key {missing[0]!r}")
        return seen

    def sequence(self, node: Node, where: str, what: str) -> list[Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, where, f"expected a list of {what}, got {_describe(node)}")
        return list(node.value)

    def text(self, node: Node, where: str, what: str = "a string") -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL or not node.value.strip():
            raise self.fail(node, where, f"expected {what}, got {_describe(node)}")
        return node.value.strip()

    def optional(self, node: Node | None, where: str, read: Callable[[Node, str], T]) -> T | None:
        if node is None or _is_null(node):
            return None
        return read(node, where)

    def version(self, node: Node, where: str, pattern: re.Pattern[str] = _DOTTED, example: str = "12.2") -> Version:
        text = self.text(node, where, f"a version like {example!r}")
        if not pattern.match(text):
            raise self.fail(node, where, f"expected a version like {example!r}, got {_clip(text)}")
        return MatrixVersion(text)

    def major_minor(self, node: Node, where: str) -> Version:
        return self.version(node, where, _MAJOR_MINOR, "3.10")

    def boolean(self, node: Node, where: str) -> bool:
        if not isinstance(node, yaml.ScalarNode) or node.tag != _BOOL:
            raise self.fail(node, where, f"expected true or false, got {_describe(node)}")
        return node.value.lower() in ("true", "yes", "on")

    def integer(self, node: Node, where: str) -> int:
        if not isinstance(node, yaml.ScalarNode) or node.tag != _INT:
            raise self.fail(node, where, f"expected an integer, got {_describe(node)}")
        text = node.value.replace("_", "")
        if not _INTEGER.match(text):
            raise self.fail(node, where, f"expected a decimal integer of at most 18 digits, got {_clip(node.value)}")
        return int(text)

    def url(self, node: Node, where: str) -> str:
        text = self.text(node, where, "a URL")
        if not _URL.match(text):
            raise self.fail(node, where, f"expected an http(s) URL, got {text!r}")
        return text

    def texts(
        self, node: Node, where: str, read: Callable[[Node, str], T] | None = None, what: str = "strings"
    ) -> tuple[T, ...]:
        read = read or self.text  # type: ignore[assignment]
        return tuple(read(item, f"{where}[{i}]") for i, item in enumerate(self.sequence(node, where, what)))  # type: ignore[misc]

    def sources(self, node: Node, where: str) -> tuple[str, ...]:
        """A non-empty list of URLs or keys of the top-level ``sources`` table, resolved to URLs."""
        resolved = []
        for i, item in enumerate(self.sequence(node, where, "source keys or URLs")):
            text = self.text(item, f"{where}[{i}]", "a source key or URL")
            if _URL.match(text):
                resolved.append(text)
            elif text in self.source_keys:
                resolved.append(self.source_keys[text].url)
            else:
                raise self.fail(
                    item, f"{where}[{i}]", f"unknown source {text!r} (not a URL and not a key of 'sources')"
                )
        if not resolved:
            raise self.fail(node, where, "expected at least one source")
        return tuple(resolved)

    def per_os(self, node: Node, where: str) -> tuple[Version | None, Version | None]:
        fields = self.mapping(node, where, ("linux", "windows"))
        linux = self.optional(fields["linux"], f"{where}.linux", self.version)
        windows = self.optional(fields["windows"], f"{where}.windows", self.version)
        return linux, windows


def _is_null(node: Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL


def _describe(node: Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == _NULL:
        return "nothing"
    return _clip(node.value)


def _clip(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message, cut short when long (a message stays one readable line)."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} characters)"


# --------------------------------------------------------------------------------------------
# Sections


def _read_sources(r: _Reader, node: Node) -> dict[str, Source]:
    if not isinstance(node, yaml.MappingNode):
        raise r.fail(node, "sources", f"expected a mapping of source keys, got {_describe(node)}")
    keys = tuple(k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode))
    sources: dict[str, Source] = {}
    for key, value in r.mapping(node, "sources", (), keys).items():
        where = f"sources.{key}"
        if not _SOURCE_KEY.match(key):
            raise r.fail(value, where, "expected a key of lowercase letters, digits, '.', '-' or '_'")
        fields = r.mapping(value, where, ("url", "title"))
        sources[key] = Source(
            key=key, url=r.url(fields["url"], f"{where}.url"), title=r.text(fields["title"], f"{where}.title")
        )
    return sources


_OS_KEYS_REQUIRED = ("python", "cuda", "sources")
_OS_KEYS_OPTIONAL = (
    "cudnn",
    "compiler",
    "build_tool",
    "compute_capabilities",
    "libraries",
    "pip_cuda",
    "distribution",
    "notes",
    "history",
)
_CORRECTABLE = set(_OS_KEYS_REQUIRED + _OS_KEYS_OPTIONAL) - {"sources", "notes", "history"}


def _read_tf(r: _Reader, node: Node, where: str, cuda: dict, cudnn: dict) -> list[TfBuild]:
    fields = r.mapping(node, where, ("tf", "distribution"), ("notes",) + BUILD_OSES)
    tf = r.version(fields["tf"], f"{where}.tf", _TF_VERSION, "2.15")
    distribution = r.text(fields["distribution"], f"{where}.distribution")
    release_notes = r.texts(fields["notes"], f"{where}.notes") if "notes" in fields else ()
    oses = [os for os in BUILD_OSES if os in fields]
    if not oses:
        raise r.fail(node, where, f"expected at least one of {', '.join(BUILD_OSES)}")
    return [
        _read_tf_os(r, fields[os], f"{where}.{os}", tf, os, distribution, release_notes, cuda, cudnn) for os in oses
    ]


def _read_tf_os(
    r: _Reader,
    node: Node,
    where: str,
    tf: Version,
    os: str,
    distribution: str,
    release_notes: tuple[str, ...],
    cuda_rows: dict,
    cudnn_rows: dict,
) -> TfBuild:
    f = r.mapping(node, where, _OS_KEYS_REQUIRED, _OS_KEYS_OPTIONAL)
    python = r.texts(f["python"], f"{where}.python", lambda n, w: str(r.major_minor(n, w)), "Python versions")
    if not python:
        raise r.fail(f["python"], f"{where}.python", "expected at least one Python version")
    cuda = r.optional(f["cuda"], f"{where}.cuda", r.version)
    cudnn = r.optional(f.get("cudnn"), f"{where}.cudnn", r.version)
    archs: tuple[str, ...] = ()
    if "compute_capabilities" in f:
        archs = r.texts(
            f["compute_capabilities"],
            f"{where}.compute_capabilities",
            lambda n, w: _arch(r, n, w),
            "sm_XY/compute_XY entries",
        )
    if cuda is None:
        gpu_only = {
            "cudnn": cudnn,
            "compute_capabilities": archs,
            "pip_cuda": "pip_cuda" in f and not _is_null(f["pip_cuda"]),
        }
        for key, given in gpu_only.items():
            if given:
                raise r.fail(f[key], f"{where}.{key}", "expected nothing for a CPU-only build (cuda is null)")
    else:
        if cuda.release[:2] not in cuda_rows:
            raise r.fail(f["cuda"], f"{where}.cuda", f"CUDA {cuda} has no row in the 'cuda' table")
        if cudnn is None:
            raise r.fail(node, where, "missing key 'cudnn' (required for a CUDA build)")
        if cudnn.release[:2] not in cudnn_rows:
            raise r.fail(f["cudnn"], f"{where}.cudnn", f"cuDNN {cudnn} has no row in the 'cudnn' table")
        if not archs:
            raise r.fail(node, where, "missing key 'compute_capabilities' (required for a CUDA build)")
    history = ()
    if "history" in f:
        history = tuple(
            _read_correction(r, item, f"{where}.history[{i}]")
            for i, item in enumerate(r.sequence(f["history"], f"{where}.history", "corrections"))
        )
    return TfBuild(
        tf=tf,
        os=os,
        gpu=cuda is not None,
        python=python,
        cuda=cuda,
        cudnn=cudnn,
        compiler=r.optional(f.get("compiler"), f"{where}.compiler", r.text),
        build_tool=r.optional(f.get("build_tool"), f"{where}.build_tool", r.text),
        compute_capabilities=archs,
        min_compute_capability=_min_capability(archs),
        libraries=r.texts(f["libraries"], f"{where}.libraries") if "libraries" in f else (),
        pip_cuda=r.optional(f.get("pip_cuda"), f"{where}.pip_cuda", lambda n, w: _read_pip_cuda(r, n, w)),
        distribution=r.text(f["distribution"], f"{where}.distribution") if "distribution" in f else distribution,
        sources=r.sources(f["sources"], f"{where}.sources"),
        notes=release_notes + (r.texts(f["notes"], f"{where}.notes") if "notes" in f else ()),
        history=history,
    )


def _arch(r: _Reader, node: Node, where: str) -> str:
    text = r.text(node, where, "an architecture like 'sm_70' or 'compute_80'")
    if not _ARCH.match(text):
        raise r.fail(node, where, f"expected an architecture like 'sm_70' or 'compute_80', got {text!r}")
    return text


def _min_capability(archs: tuple[str, ...]) -> Version | None:
    if not archs:
        return None
    digits = min((int(a.split("_")[1][:-1]), int(a[-1])) for a in archs)
    return MatrixVersion(f"{digits[0]}.{digits[1]}")


def _read_correction(r: _Reader, node: Node, where: str) -> Correction:
    f = r.mapping(node, where, ("field", "was", "note", "sources"))
    name = r.text(f["field"], f"{where}.field")
    if name not in _CORRECTABLE:
        raise r.fail(f["field"], f"{where}.field", f"expected one of {', '.join(sorted(_CORRECTABLE))}, got {name!r}")
    return Correction(
        field=name,
        was=r.text(f["was"], f"{where}.was"),
        note=r.text(f["note"], f"{where}.note"),
        sources=r.sources(f["sources"], f"{where}.sources"),
    )


def _read_pip_cuda(r: _Reader, node: Node, where: str) -> PipCuda:
    f = r.mapping(node, where, ("extra", "packages"))
    packages_node = f["packages"]
    if not isinstance(packages_node, yaml.MappingNode) or not packages_node.value:
        raise r.fail(
            packages_node,
            f"{where}.packages",
            f"expected a mapping of package name to version specifier, got {_describe(packages_node)}",
        )
    names = tuple(k.value for k, _ in packages_node.value if isinstance(k, yaml.ScalarNode))
    packages = {}
    for name, spec_node in r.mapping(packages_node, f"{where}.packages", (), names).items():
        spec = r.text(spec_node, f"{where}.packages.{name}", "a version specifier like '==12.3.2'")
        try:
            if not _PROJECT_NAME.match(name):
                raise InvalidSpecifier(name)
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise r.fail(
                spec_node,
                f"{where}.packages.{name}",
                f"expected a package name and a PEP 440 specifier, got {name!r}: {spec!r}",
            ) from None
        packages[name] = spec
    return PipCuda(extra=r.text(f["extra"], f"{where}.extra"), packages=packages)


def _read_cuda(r: _Reader, node: Node, where: str) -> CudaRelease:
    f = r.mapping(node, where, ("version", "min_driver", "architectures", "sources"), ("download_url", "notes"))
    linux, windows = r.per_os(f["min_driver"], f"{where}.min_driver")
    return CudaRelease(
        version=r.major_minor(f["version"], f"{where}.version"),
        min_driver_linux=linux,
        min_driver_windows=windows,
        architectures=r.texts(
            f["architectures"], f"{where}.architectures", lambda n, w: str(r.major_minor(n, w)), "compute capabilities"
        ),
        download_url=r.optional(f.get("download_url"), f"{where}.download_url", r.url),
        sources=r.sources(f["sources"], f"{where}.sources"),
        notes=r.texts(f["notes"], f"{where}.notes") if "notes" in f else (),
    )


def _read_cuda_major(r: _Reader, node: Node, where: str) -> CudaMajor:
    f = r.mapping(node, where, ("major", "minor_compat_floor", "sources"), ("notes",))
    linux, windows = r.per_os(f["minor_compat_floor"], f"{where}.minor_compat_floor")
    return CudaMajor(
        major=r.integer(f["major"], f"{where}.major"),
        minor_compat_floor_linux=linux,
        minor_compat_floor_windows=windows,
        sources=r.sources(f["sources"], f"{where}.sources"),
        notes=r.texts(f["notes"], f"{where}.notes") if "notes" in f else (),
    )


def _read_cudnn(r: _Reader, node: Node, where: str) -> CudnnRelease:
    f = r.mapping(node, where, ("version", "cuda", "sources"), ("download_url",))
    return CudnnRelease(
        version=r.major_minor(f["version"], f"{where}.version"),
        cuda=r.texts(f["cuda"], f"{where}.cuda", lambda n, w: str(r.major_minor(n, w)), "CUDA versions"),
        download_url=r.optional(f.get("download_url"), f"{where}.download_url", r.url),
        sources=r.sources(f["sources"], f"{where}.sources"),
    )


def _read_gpu_group(
    r: _Reader, node: Node, where: str, architectures: dict[str, Architecture]
) -> list[tuple[GpuProduct, Node]]:
    f = r.mapping(node, where, ("architecture", "compute_capability", "products", "sources"), ("notes",))
    architecture = r.text(f["architecture"], f"{where}.architecture")
    capability = r.major_minor(f["compute_capability"], f"{where}.compute_capability")
    arch = architectures.get(architecture)
    if arch is None:
        raise r.fail(
            f["architecture"],
            f"{where}.architecture",
            f"unknown architecture {architecture!r} (expected one of: {', '.join(architectures)})",
        )
    if str(capability) not in arch.compute_capabilities:
        raise r.fail(
            f["compute_capability"],
            f"{where}.compute_capability",
            f"{capability} is not a compute capability of {arch.name} ({', '.join(arch.compute_capabilities)})",
        )
    sources = r.sources(f["sources"], f"{where}.sources")
    notes = r.texts(f["notes"], f"{where}.notes") if "notes" in f else ()
    products = []
    for i, item in enumerate(r.sequence(f["products"], f"{where}.products", "product names")):
        item_where = f"{where}.products[{i}]"
        pci_ids: tuple[str, ...] = ()
        if isinstance(item, yaml.MappingNode):
            pf = r.mapping(item, item_where, ("name",), ("aliases", "pci_ids"))
            name = r.text(pf["name"], f"{item_where}.name")
            aliases = r.texts(pf["aliases"], f"{item_where}.aliases") if "aliases" in pf else ()
            if "pci_ids" in pf:
                pci_ids = r.texts(
                    pf["pci_ids"], f"{item_where}.pci_ids", lambda n, w: _pci_id(r, n, w), "PCI device ids"
                )
        else:
            name, aliases = r.text(item, item_where, "a product name or a mapping with name and aliases"), ()
        product = GpuProduct(
            name=name,
            compute_capability=capability,
            architecture=architecture,
            aliases=aliases,
            sources=sources,
            pci_ids=pci_ids,
            notes=notes,
        )
        products.append((product, item))
    return products


def _pci_id(r: _Reader, node: Node, where: str) -> str:
    text = r.text(node, where, "a PCI device id like '1c03'")
    if not _PCI_DEVICE_ID.match(text):
        raise r.fail(node, where, f"expected a PCI device id of 4 lower-case hex digits like '1c03', got {text!r}")
    return text


def _read_architecture(r: _Reader, node: Node, where: str) -> Architecture:
    f = r.mapping(node, where, ("name", "compute_capabilities", "last_driver_branch", "sources"), ("aliases", "notes"))
    capabilities = r.texts(
        f["compute_capabilities"],
        f"{where}.compute_capabilities",
        lambda n, w: str(r.major_minor(n, w)),
        "compute capabilities",
    )
    if not capabilities:
        raise r.fail(
            f["compute_capabilities"], f"{where}.compute_capabilities", "expected at least one compute capability"
        )
    branch = r.optional(f["last_driver_branch"], f"{where}.last_driver_branch", r.text)
    if branch is not None and not _DRIVER_BRANCH.match(branch):
        raise r.fail(
            f["last_driver_branch"],
            f"{where}.last_driver_branch",
            f"expected a driver branch like '470' (or null while supported), got {branch!r}",
        )
    return Architecture(
        name=r.text(f["name"], f"{where}.name"),
        compute_capabilities=capabilities,
        last_driver_branch=branch,
        sources=r.sources(f["sources"], f"{where}.sources"),
        aliases=r.texts(f["aliases"], f"{where}.aliases") if "aliases" in f else (),
        notes=r.texts(f["notes"], f"{where}.notes") if "notes" in f else (),
    )


def _read_architectures(r: _Reader, top: dict[str, Node]) -> dict[str, Architecture]:
    """The architectures by name; a name or a compute capability is given once."""
    found: dict[str, Architecture] = {}
    names: dict[str, tuple[str, int]] = {}
    capabilities: dict[str, tuple[str, int]] = {}
    for i, item in enumerate(r.sequence(top["architectures"], "architectures", "architectures")):
        where = f"architectures[{i}]"
        arch = _read_architecture(r, item, where)
        line = item.start_mark.line + 1
        for name in (arch.name, *arch.aliases):
            if name.lower() in names:
                raise r.fail(
                    item,
                    where,
                    f"duplicate row: architecture name {name!r} is already given on line {names[name.lower()][1]}",
                )
            names[name.lower()] = (arch.name, line)
        for capability in arch.compute_capabilities:
            if capability in capabilities:
                other, other_line = capabilities[capability]
                raise r.fail(
                    item,
                    f"{where}.compute_capabilities",
                    f"compute capability {capability} is already {other}'s (line {other_line})",
                )
            capabilities[capability] = (arch.name, line)
        found[arch.name] = arch
    if not found:
        raise r.fail(top["architectures"], "architectures", "expected at least one architecture")
    return found


def _read_platform(r: _Reader, node: Node) -> PlatformRules:
    w = "platform"
    f = r.mapping(
        node,
        w,
        (
            "windows_native_gpu_last",
            "tensorflow_gpu_last_real",
            "tensorflow_gpu_dummy",
            "and_cuda_first",
            "gpu_in_tensorflow_package_from",
            "macos_gpu",
            "sources",
        ),
        ("tensorflow_cpu_first", "notes"),
    )
    dummy = r.optional(f["tensorflow_gpu_dummy"], f"{w}.tensorflow_gpu_dummy", r.text)
    if dummy is not None:
        try:
            SpecifierSet(dummy)
        except InvalidSpecifier:
            raise r.fail(
                f["tensorflow_gpu_dummy"],
                f"{w}.tensorflow_gpu_dummy",
                f"expected a PEP 440 specifier like '>=2.12', got {dummy!r}",
            ) from None
    cpu_first: dict[str, Version] = {}
    if "tensorflow_cpu_first" in f:
        for os, value in r.mapping(f["tensorflow_cpu_first"], f"{w}.tensorflow_cpu_first", (), BUILD_OSES).items():
            cpu_first[os] = r.version(value, f"{w}.tensorflow_cpu_first.{os}", _TF_VERSION, "2.1")
    return PlatformRules(
        windows_native_gpu_last=r.version(
            f["windows_native_gpu_last"], f"{w}.windows_native_gpu_last", _TF_VERSION, "2.10"
        ),
        tensorflow_gpu_last_real=r.version(
            f["tensorflow_gpu_last_real"], f"{w}.tensorflow_gpu_last_real", _TF_VERSION, "2.11"
        ),
        tensorflow_gpu_dummy=dummy,
        and_cuda_first=r.version(f["and_cuda_first"], f"{w}.and_cuda_first", _TF_VERSION, "2.14"),
        gpu_in_tensorflow_package_from=r.version(
            f["gpu_in_tensorflow_package_from"], f"{w}.gpu_in_tensorflow_package_from", _TF_VERSION, "2.1"
        ),
        macos_gpu=r.boolean(f["macos_gpu"], f"{w}.macos_gpu"),
        sources=r.sources(f["sources"], f"{w}.sources"),
        tensorflow_cpu_first=cpu_first,
        notes=r.texts(f["notes"], f"{w}.notes") if "notes" in f else (),
    )


def _read_distribution(r: _Reader, node: Node, where: str) -> TfDistribution:
    f = r.mapping(node, where, ("name", "cuda", "sources"), ("nightly", "notes"))
    name = r.text(f["name"], f"{where}.name")
    if not _PROJECT_NAME.match(name) or name != name.lower():
        raise r.fail(f["name"], f"{where}.name", f"expected a normalised PyPI name (lower case, '-'), got {name!r}")
    cuda = r.text(f["cuda"], f"{where}.cuda")
    if cuda not in DISTRIBUTION_CUDA:
        raise r.fail(f["cuda"], f"{where}.cuda", f"expected one of {', '.join(DISTRIBUTION_CUDA)}, got {cuda!r}")
    return TfDistribution(
        name=name,
        cuda=cuda,
        nightly=r.boolean(f["nightly"], f"{where}.nightly") if "nightly" in f else False,
        sources=r.sources(f["sources"], f"{where}.sources"),
        notes=r.texts(f["notes"], f"{where}.notes") if "notes" in f else (),
    )


def _rows(
    r: _Reader,
    top: dict[str, Node],
    key: str,
    read: Callable[[_Reader, Node, str], T],
    identity: Callable[[T], object],
    label: Callable[[T], str],
) -> list[T]:
    rows: list[T] = []
    first_line: dict[object, int] = {}
    for i, item in enumerate(r.sequence(top[key], key, "rows")):
        row = read(r, item, f"{key}[{i}]")
        ident = identity(row)
        if ident in first_line:
            raise r.fail(
                item, f"{key}[{i}]", f"duplicate row: {label(row)} is already given on line {first_line[ident]}"
            )
        first_line[ident] = item.start_mark.line + 1
        rows.append(row)
    return rows


def _check_shape(text: str, filename: str) -> None:
    """Refuse, from the event stream (no recursion, nothing built), what no matrix file needs."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            line = event.start_mark.line + 1 if event.start_mark is not None else "?"
            raise MatrixError(
                f"{filename}, line {line}: aliases (*{event.anchor}) are not allowed in a matrix file; write the value out"
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                raise MatrixError(
                    f"{filename}, line {line}: nested deeper than {MAX_DEPTH} levels; no matrix file needs that"
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


_TOP_KEYS = (
    "schema",
    "sources",
    "platform",
    "distributions",
    "tensorflow",
    "cuda",
    "cuda_majors",
    "cudnn",
    "architectures",
    "gpus",
)


def parse_matrix(text: str, path: Path) -> Matrix:
    """Validate the YAML text of a matrix file; ``path`` is only used for messages and ``Matrix.path``."""
    bundled = path == default_matrix_path()
    r = _Reader(path.name if bundled else str(path))
    top = r.mapping(_compose(r, text, bundled), "(top level)", _TOP_KEYS)
    schema = r.integer(top["schema"], "schema")
    if schema != SCHEMA_VERSION:
        raise r.fail(
            top["schema"],
            "schema",
            f"expected {SCHEMA_VERSION} (this envcheck reads matrix schema {SCHEMA_VERSION}), got {schema}",
        )
    r.source_keys = _read_sources(r, top["sources"])
    distributions = _rows(
        r, top, "distributions", _read_distribution, lambda d: d.name, lambda d: f"distribution {d.name}"
    )
    if not distributions:
        raise r.fail(top["distributions"], "distributions", "expected at least one distribution")
    cuda = _rows(r, top, "cuda", _read_cuda, lambda c: c.version.release, lambda c: f"CUDA {c.version}")
    majors = _rows(r, top, "cuda_majors", _read_cuda_major, lambda m: m.major, lambda m: f"CUDA major {m.major}")
    cudnn = _rows(r, top, "cudnn", _read_cudnn, lambda c: c.version.release, lambda c: f"cuDNN {c.version}")
    builds = _read_builds(r, top, {c.version.release[:2]: c for c in cuda}, {c.version.release[:2]: c for c in cudnn})
    architectures = _read_architectures(r, top)
    return Matrix(
        path=path,
        tf_builds=builds,
        cuda_releases=cuda,
        cuda_majors=majors,
        cudnn_releases=cudnn,
        gpus=_read_gpus(r, top, architectures),
        platform=_read_platform(r, top["platform"]),
        sources=r.source_keys,
        distributions=distributions,
        architectures=architectures.values(),
    )


def _compose(r: _Reader, text: str, bundled: bool) -> Node:
    """The YAML's node tree; every YAML error is one line naming the file (and the line)."""
    try:
        if not bundled:
            _check_shape(text, r.filename)
        root = yaml.compose(text, Loader=_Loader)
    except RecursionError:
        raise MatrixError(f"{r.filename}: nested too deeply") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise MatrixError(f"{r.filename}{line}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise MatrixError(f"{r.filename}: not valid YAML: {exc}") from None
    if root is None:
        raise MatrixError(f"{r.filename}: the file is empty")
    return root


def _read_builds(r: _Reader, top: dict[str, Node], cuda_index: dict, cudnn_index: dict) -> list[TfBuild]:
    """Every TensorFlow release's rows, one per OS; a release and OS are given once."""
    builds: list[TfBuild] = []
    seen_builds: dict[tuple, int] = {}
    for i, item in enumerate(r.sequence(top["tensorflow"], "tensorflow", "TensorFlow releases")):
        for build in _read_tf(r, item, f"tensorflow[{i}]", cuda_index, cudnn_index):
            ident = (build.tf.release, build.os)
            if ident in seen_builds:
                raise r.fail(
                    item,
                    f"tensorflow[{i}]",
                    f"duplicate row: TensorFlow {build.tf} {build.os} is already given on line {seen_builds[ident]}",
                )
            seen_builds[ident] = item.start_mark.line + 1
            builds.append(build)
    if not builds:
        raise r.fail(top["tensorflow"], "tensorflow", "expected at least one TensorFlow release")
    return builds


def _read_gpus(r: _Reader, top: dict[str, Node], architectures: dict[str, Architecture]) -> list[GpuProduct]:
    """Every GPU product; a name (as it is matched) and a PCI device id are given once."""
    gpus: list[GpuProduct] = []
    seen_names: dict[str, int] = {}
    seen_pci: dict[str, tuple[str, int]] = {}
    for i, group in enumerate(r.sequence(top["gpus"], "gpus", "GPU groups")):
        for gpu, item in _read_gpu_group(r, group, f"gpus[{i}]", architectures):
            _check_names(r, gpu, item, f"gpus[{i}]", seen_names)
            line = item.start_mark.line + 1
            for device_id in gpu.pci_ids:
                if device_id in seen_pci:
                    other, other_line = seen_pci[device_id]
                    where = "the same product" if other == gpu.name else other
                    raise r.fail(
                        item,
                        f"gpus[{i}]",
                        f"PCI device id {device_id!r} of {gpu.name} is already given to {where} on line {other_line}",
                    )
                seen_pci[device_id] = (gpu.name, line)
            gpus.append(gpu)
    return gpus


def _check_names(r: _Reader, gpu: GpuProduct, item: Node, where: str, seen: dict[str, int]) -> None:
    own: set[str] = set()
    for name in (gpu.name, *gpu.aliases):
        key = normalize_gpu_name(name)
        if not key:
            raise r.fail(item, where, f"{name!r} leaves nothing to match once vendor words are removed")
        if key in own:
            continue
        own.add(key)
        if key in seen:
            raise r.fail(item, where, f"duplicate row: GPU name {name!r} is already given on line {seen[key]}")
        seen[key] = item.start_mark.line + 1


# --------------------------------------------------------------------------------------------
# Cached entry point

_cache: dict[tuple[str, int, int], Matrix] = {}


def default_matrix_path() -> Path:
    return data_file("compat_matrix.yaml")


def load_matrix(path: str | Path | None = None) -> Matrix:
    """Load and validate a matrix file (the bundled one by default). Raises MatrixError."""
    if path is not None and str(path) == "-":
        return parse_matrix(_read(path), Path("<standard input>"))
    resolved = Path(path) if path is not None else default_matrix_path()
    key = None
    try:
        stat = resolved.stat()
        key = (str(resolved.resolve()), stat.st_mtime_ns, stat.st_size)
        cached = _cache.get(key)
        if cached is not None:
            return cached
    except OSError:
        pass  # the bounded reader says what is wrong with it
    matrix = parse_matrix(_read(resolved), resolved)
    if key is not None:
        _cache[key] = matrix
    return matrix


def _read(path: str | Path) -> str:
    """The matrix file's text through the bounded reader: a regular file (or '-') of at most
    16 MiB; a FIFO or a device is refused before anything is read."""
    return read_user_text(
        path,
        MATRIX_FILE,
        MatrixError,
        label=str(path),
        message=lambda name, reason: f"{name}: cannot read the matrix file ({reason})",
    )


def clear_cache() -> None:
    _cache.clear()
