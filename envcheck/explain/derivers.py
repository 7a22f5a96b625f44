"""Derived variables: a pattern's regex captures what the message says (a file name); a deriver
turns it into what a fix needs. Each deriver declares the names it provides so templates can be
checked when the catalogue loads. Some names need the compatibility matrix (which TensorFlow
releases load a file and what they were built with): those are filled when the explanation is
made (``explanations.LATE_DERIVERS``), not while scanning, so a scan never reads the matrix.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Optional


def cuda_library_version(name: str) -> tuple[str, str]:
    """(family, version digits as written) from a CUDA/cuDNN library file name.

    ``cudart64_100.dll`` gives ("cudart", "10.0"), ``cudart64_110.dll`` ("cudart", "11.0"),
    ``libcudnn.so.8`` ("cudnn", "8"). The digits are what the name says, not a CUDA release:
    cudart64_110.dll serves every CUDA 11.x. What a name means is what the matrix says about the
    builds that load it (``Matrix.library_use``, filled in as ``{cuda_generation}``)."""
    lowered = name.lower()
    windows = re.fullmatch(r"([a-z_]+?)(?:lt)?64_(\d{1,4})(?:_\d{1,2})?\.dll", lowered)
    if windows:
        family, digits = windows.groups()
        family = "cudnn" if family.startswith("cudnn") else family
        if len(digits) >= 3:
            version = f"{digits[:-1]}.{digits[-1]}"
        elif len(digits) == 2 and int(digits) >= 70:  # cudart64_75 .. cudart64_92: CUDA 7.5 .. 9.2
            version = f"{digits[0]}.{digits[1]}"
        else:
            version = digits
        return family, version
    linux = re.fullmatch(r"lib([a-z_]+?)(?:lt)?\.so((?:\.\d+)*)", lowered)
    if linux:
        family, suffix = linux.groups()
        family = "cudnn" if family.startswith("cudnn") else family
        return family, suffix.lstrip(".")
    return "", ""


def _derive_library(variables: dict[str, str]) -> dict[str, str]:
    library = variables.get("library", "")
    family, version = cuda_library_version(library)
    return {
        "family": family,
        "lib_version": version,
        "cuda_version": version if family == "cudart" else "",
        "cudnn_version": version.split(".")[0] if family == "cudnn" else "",
        "library_os": "windows" if library.lower().endswith(".dll") else "linux",
    }


def cudnn_version_text(raw: str) -> tuple[Optional[tuple[int, int, int]], str]:
    """A cuDNN version as TensorFlow prints it, parsed: "8.0.5", or the integer form of TF 1.x
    ("7301" is 7.3.1, "5110" 5.1.10, cuDNN 9's "90100" 9.1.0)."""
    raw = raw.strip()
    if raw.isdigit():
        value = int(raw)
        parts = (
            (value // 10000, (value % 10000) // 100, value % 100)
            if value >= 10000
            else (value // 1000, (value % 1000) // 100, value % 100)
        )
    else:
        numbers = [int(p) for p in re.findall(r"\d+", raw)][:3]
        if not numbers:
            return None, raw
        parts = tuple((numbers + [0, 0])[:3])  # type: ignore[assignment]
    return parts, ".".join(str(p) for p in parts)  # type: ignore[return-value]


def _derive_cudnn_versions(variables: dict[str, str]) -> dict[str, str]:
    loaded, loaded_text = cudnn_version_text(variables.get("loaded", ""))
    compiled, compiled_text = cudnn_version_text(variables.get("compiled", ""))
    relation = ""
    if loaded and compiled:
        if loaded[0] != compiled[0]:
            relation = "other-major"
        elif loaded[:2] < compiled[:2] or (loaded[:2] == compiled[:2] and loaded < compiled):
            relation = "older"
        else:
            relation = "newer-minor"
    return {"loaded_version": loaded_text, "compiled_version": compiled_text, "relation": relation}


def _derive_status(variables: dict[str, str]) -> Optional[dict[str, str]]:
    # Imported here: the status tables are read only when a message names a status.
    from envcheck.explain.statuses import status_variables

    return status_variables(variables)


def _derive_xid(variables: dict[str, str]) -> Optional[dict[str, str]]:
    """An Xid's meaning and class from the table (cuda_status.yaml's NVIDIA Xid: every number of
    nverror.h): ``xid_class`` ranks the pattern's causes, ``xid_name`` is the header's name."""
    # Imported here: the status tables are read only when a message names an Xid.
    from envcheck.explain.statuses import load_statuses

    number = "79" if variables.get("xid_text") else variables.get("xid_number", "")
    named = _derive_status({"xid_number": number})
    if named is None:  # a number newer than the table: still the driver's fault record
        named = {"status_name": f"Xid {number}", "status_meaning": "an Xid newer than the header envcheck's table was read from",
                 "status_value": number, "status_library": "the NVIDIA kernel driver", "status_source": "", "status_enum": "NVIDIA Xid"}  # fmt: skip
    found = load_statuses().by_value("xid", int(number)) if number.isdigit() else ()
    mnemonic = found[0].mnemonic if found and found[0].mnemonic else "not named"
    kind = {"xid_class": found[0].kind if found else "", "xid_name": mnemonic}
    # the driver's three-line "fallen off the bus" names the GPU's address on its first line only
    where = {} if variables.get("pci") else {"pci": "the address an earlier line names"}
    return {"xid": number, **named, **kind, **where}


def _derive_needed_version(variables: dict[str, str]) -> dict[str, str]:
    needed = variables.get("needed", "")
    by = variables.get("by", "")
    return {
        "needed_version_family": "C library (glibc)" if needed.startswith("GLIBC_") else "C++ library (libstdc++)",
        "library_file": re.split(r"[/\\]", by)[-1] if by else "a library",
        # the system library that is too old sits in a conda environment (its own libstdc++)
        "in_conda": "yes" if re.search(r"conda|mamba|miniforge", variables.get("lib", "")) else "",
    }


_SIZE_UNITS = {"b": 1, "bytes": 1, "kb": 2**10, "kib": 2**10, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30, "tb": 2**40, "tib": 2**40}  # fmt: skip


def memory_size(text: str) -> Optional[float]:
    """Bytes in a size as PyTorch's allocator prints it ("10.76 GiB", "26.12 MiB", "0 bytes")."""
    found = re.fullmatch(r"\s{0,3}(\d{1,9}(?:\.\d{1,6})?) ?([KMGT]?i?B|bytes)\s{0,3}", text, re.I)
    return float(found.group(1)) * _SIZE_UNITS[found.group(2).lower()] if found else None


def _derive_allocator_memory(variables: dict[str, str]) -> dict[str, str]:
    """From an allocator's out-of-memory message: ``held_elsewhere`` is "yes" when the GPU is all
    but full and this process (PyTorch's reserved memory, or all this process uses) holds under
    half of it, the rest being held outside it (another process); ``held_here`` is "yes" when
    PyTorch itself holds four fifths of the GPU or more (its model and batch), or holds most of it
    and asked for more than the GPU had left free (the next allocation of the same model and
    batch)."""
    total, free = memory_size(variables.get("total", "")), memory_size(variables.get("free", ""))
    if not total or free is None:
        return {"held_elsewhere": "", "held_here": ""}
    by_pytorch = memory_size(variables.get("reserved", ""))
    if by_pytorch is None and variables.get("by_pytorch"):
        allocated, cached = memory_size(variables["by_pytorch"]), memory_size(variables.get("unallocated", ""))
        by_pytorch = (allocated or 0.0) + (cached or 0.0)
    if free >= 0.1 * total:
        asked = memory_size(variables.get("asked", ""))
        past_free = asked is not None and asked > free and by_pytorch is not None and by_pytorch >= 0.5 * total
        return {"held_elsewhere": "", "held_here": "yes" if past_free else ""}
    here = by_pytorch if by_pytorch is not None else memory_size(variables.get("this_process", ""))
    return {
        "held_elsewhere": "yes" if here is not None and here < 0.5 * total else "",
        "held_here": "yes" if by_pytorch is not None and by_pytorch >= 0.8 * total else "",
    }


# ml_dtypes' names by the release that added or removed them (its CHANGELOG.md): a module asking
# for a name the installed ml_dtypes lacks was written for a newer ml_dtypes (a name added later)
# or an older one (a name removed since).
_ML_DTYPES_ADDED = {
    "int4": "0.2.0", "uint4": "0.2.0", "float8_e4m3b11fnuz": "0.2.0",
    "float8_e4m3": "0.5.0", "float8_e3m4": "0.5.0", "float8_e8m0fnu": "0.5.0",
    "float4_e2m1fn": "0.5.0", "float6_e2m3fn": "0.5.0", "float6_e3m2fn": "0.5.0",
    "complex32": "0.6.0", "bcomplex32": "0.6.0", "int1": "0.6.0", "uint1": "0.6.0",
}  # fmt: skip
_ML_DTYPES_REMOVED = {"float8_e4m3b11": ("0.3.0", "float8_e4m3b11fnuz")}


def _derive_ml_dtypes_name(variables: dict[str, str]) -> dict[str, str]:
    name = variables.get("name", "")
    removed, renamed = _ML_DTYPES_REMOVED.get(name, ("", ""))
    added = _ML_DTYPES_ADDED.get(name, "")
    note = f"ml_dtypes {added} added {name}" if added else f"its changelog names no release that added {name}"
    return {
        "ml_dtypes_removed_in": removed,
        "ml_dtypes_renamed": renamed,
        "ml_dtypes_added_in": added,
        "ml_dtypes_added_note": note,
    }


def _version_numbers(text: str) -> tuple[int, ...]:
    """The leading numbers of a version ("5.29.5" -> (5, 29, 5); "4.26.0-rc3" -> (4, 26, 0))."""
    out = []
    for part in re.findall(r"\d{1,6}", text.split("-")[0])[:3]:
        out.append(int(part))
    return tuple(out)


def _derive_protobuf_versions(variables: dict[str, str]) -> dict[str, str]:
    """How the protobuf runtime stands to the protoc that generated the code (runtime_version.py:
    the runtime may not be older than the gencode, and each runtime accepts gencode of its own major
    or, with a warning, of the major before)."""
    gencode, runtime = variables.get("gencode", ""), variables.get("runtime", "")
    gen, run = _version_numbers(gencode), _version_numbers(runtime)
    relation = ""
    if gen and run:
        if run < gen:
            relation = "runtime-older"
        elif run[0] > gen[0]:
            relation = "gencode-older-major"
        elif gencode.split("-")[1:] != runtime.split("-")[1:]:
            relation = "suffix"
    return {
        "protobuf_relation": relation,
        "gencode_major": str(gen[0]) if gen else "",
        "gencode_next_major": str(gen[0] + 1) if gen else "",
    }


# A wheel's file name carries its compatibility tags (PEP 425, PEP 600): {python tag}-{abi tag}-
# {platform tag}; pip installs it only where the interpreter supports all three.
def _derive_wheel_tags(variables: dict[str, str]) -> dict[str, str]:
    tag, platform = variables.get("pytag", "").lower(), variables.get("plat", "").lower()
    python = re.fullmatch(r"cp(\d)(\d{1,2})", tag)
    system = (
        "windows" if platform.startswith("win") else "macos" if platform.startswith("macosx")
        else "linux" if "linux" in platform else ""
    )  # fmt: skip
    arch = next((a for a in ("x86_64", "amd64", "aarch64", "arm64", "universal2", "intel", "i686", "win32", "armv7l") if platform.endswith(a)), "")  # fmt: skip
    return {
        "wheel_python": f"{python.group(1)}.{python.group(2)}" if python else "",
        "wheel_os": system,
        "wheel_arch": {"amd64": "x86_64", "arm64": "arm64"}.get(arch, arch),
        "wheel_bits": "32" if arch in ("i686", "win32", "armv7l") else "64" if arch else "",
        "wheel_manylinux": "yes" if platform.startswith("manylinux") else "",
    }


def _derive_tfp_pair(variables: dict[str, str]) -> dict[str, str]:
    """The TensorFlow Probability release made for the TensorFlow found: from TFP 0.9 (TensorFlow
    2.1) to 0.24 (TensorFlow 2.16) each TFP minor release requires the TensorFlow minor eight
    below it (TFP's release notes: 0.10 needs 2.2, 0.14 needs 2.6, 0.17 needs 2.9)."""
    found = _version_numbers(variables.get("detected", ""))
    if len(found) >= 2 and found[0] == 2 and 1 <= found[1] <= 16:
        return {"tfp_for_detected": f"0.{found[1] + 8}"}
    return {"tfp_for_detected": ""}


# typing_extensions' names by the release that added them (its CHANGELOG.md, which starts at 4.0.0)
_TYPING_EXTENSIONS_ADDED = {
    "Self": "4.0.0", "Required": "4.0.0", "NotRequired": "4.0.0",
    "TypeVarTuple": "4.1.0", "Unpack": "4.1.0", "LiteralString": "4.1.0", "Never": "4.1.0",
    "assert_never": "4.1.0", "reveal_type": "4.1.0", "dataclass_transform": "4.1.0", "is_typeddict": "4.1.0",
    "get_overloads": "4.2.0", "clear_overloads": "4.2.0", "assert_type": "4.2.0",
    "override": "4.4.0", "deprecated": "4.5.0", "Buffer": "4.6.0", "TypeAliasType": "4.6.0",
    "get_protocol_members": "4.7.0", "is_protocol": "4.7.0", "Doc": "4.8.0", "ReadOnly": "4.9.0",
    "TypeIs": "4.10.0", "NoDefault": "4.12.0", "CapsuleType": "4.12.0",
}  # fmt: skip


def _derive_typing_extensions_name(variables: dict[str, str]) -> dict[str, str]:
    added = _TYPING_EXTENSIONS_ADDED.get(variables.get("name", ""), "")
    note = (
        f"typing_extensions {added} added {variables.get('name', '')}"
        if added
        else "its changelog, which starts at 4.0.0, does not name it"
    )
    return {
        "te_added_in": added,
        "te_after_4_6": "yes" if added and _version_numbers(added) >= (4, 6) else "",
        "te_added_note": note,
    }


# The architecture FlashAttention's GPU check names, as the compute capability it starts at
# (flash-attention's csrc: FlashAttention 1 checked sm75, 2 checks sm80 and newer, 3 sm90)
_FLASH_ATTN_ARCH = {"turing": "7.5", "ampere": "8.0", "hopper": "9.0"}


def _derive_flash_attn_arch(variables: dict[str, str]) -> dict[str, str]:
    arch = variables.get("arch", "")
    return {"arch": arch.capitalize(), "min_capability": _FLASH_ATTN_ARCH.get(arch.lower(), "")}


def _derive_cxx11_abi(variables: dict[str, str]) -> dict[str, str]:
    """``cxx11`` is "yes" when a mangled symbol names libstdc++'s new-ABI types (std::__cxx11::
    basic_string, list): only a library compiled with _GLIBCXX_USE_CXX11_ABI=1 asks for those."""
    return {"cxx11": "yes" if "__cxx11" in variables.get("symbol", "") else ""}


Deriver = Callable[[dict[str, str]], Optional[dict[str, str]]]
# name -> (scan-time function, names it provides, names the explanation fills from the matrix)
DERIVERS: dict[str, tuple[Deriver, tuple[str, ...], tuple[str, ...]]] = {
    "library": (
        _derive_library,
        ("family", "lib_version", "cuda_version", "cudnn_version", "library_os"),
        ("cuda_generation", "releases", "cuda_folder", "newest_cuda", "install_gpu"),
    ),
    "cudnn_versions": (_derive_cudnn_versions, ("loaded_version", "compiled_version", "relation"), ()),
    # an Xid of the kernel driver (NVRM), by number or by its text: its meaning from cuda_status.yaml
    "xid": (
        _derive_xid,
        (
            "xid",
            "xid_class",
            "xid_name",
            "status_name",
            "status_meaning",
            "status_value",
            "status_library",
            "status_source",
            "status_enum",
        ),
        (),
    ),
    "needed_version": (_derive_needed_version, ("needed_version_family", "library_file", "in_conda"), ()),
    # an allocator's out-of-memory message with the GPU's total, free and this process's share
    "allocator_memory": (_derive_allocator_memory, ("held_elsewhere", "held_here"), ()),
    # a name ml_dtypes lacks: the release that added it, or that removed it (and its new name)
    "ml_dtypes_name": (
        _derive_ml_dtypes_name,
        ("ml_dtypes_removed_in", "ml_dtypes_renamed", "ml_dtypes_added_in", "ml_dtypes_added_note"),
        (),
    ),
    # protobuf's gencode and runtime versions: which one is behind
    "protobuf_versions": (_derive_protobuf_versions, ("protobuf_relation", "gencode_major", "gencode_next_major"), ()),
    # a wheel file's compatibility tags
    "wheel_tags": (_derive_wheel_tags, ("wheel_python", "wheel_os", "wheel_arch", "wheel_bits", "wheel_manylinux"), ()),
    # a name typing_extensions lacks: the release that added it
    "typing_extensions_name": (_derive_typing_extensions_name, ("te_added_in", "te_after_4_6", "te_added_note"), ()),
    # a mangled C++ symbol of libstdc++'s new ABI (the _GLIBCXX_USE_CXX11_ABI flag it was built with)
    "cxx11_abi": (_derive_cxx11_abi, ("cxx11",), ()),
    # FlashAttention's architecture check: the compute capability its architecture starts at
    "flash_attn_arch": (_derive_flash_attn_arch, ("min_capability",), ()),
    # the TensorFlow Probability release for the TensorFlow found
    "tfp_pair": (_derive_tfp_pair, ("tfp_for_detected",), ()),
    # A status of the CUDA stack, by name, number or printed text: its meaning from cuda_status.yaml.
    # The pattern matches only when the status is known (a deriver may answer None: no match).
    "status": (
        _derive_status,
        ("status_name", "status_value", "status_enum", "status_library", "status_meaning", "status_source"),
        (),
    ),
}
