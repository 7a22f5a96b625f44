"""The NVIDIA GPU a log names where a program prints its device, and that GPU's compute capability.

A capability the log prints itself comes first (TensorFlow's device lines, PyTorch's warnings and
device properties); otherwise a product name read in a device context is looked up in the
compatibility matrix's table of NVIDIA GPUs (compat_matrix.yaml ``gpus:``, from NVIDIA's CUDA GPUs
pages and pci.ids), which ``Matrix.gpu`` matches forgivingly (vendor words, memory sizes, board
forms, "Laptop GPU" and "Max-Q" do not change a capability). A name is read only where a program
prints a device, never from prose, paths or tensor names: "A10" in a model's path, "T4" in a
layer's name or "K80" in a sentence are no device. The matrix is loaded on the first name that needs
it, once per process.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from envcheck.explain.lines import lines_with

# A product name as programs print it: letters, digits, spaces and the joiners NVIDIA's names use
# ("A100-SXM4-40GB", "Quadro RTX 5000", "GeForce GTX 1060 6GB"), with the word in brackets some
# carry ("TITAN X (Pascal)")
_NAME = r"(?P<name>[A-Za-z][\w .+/-]{1,58}?(?: \([A-Za-z][\w ]{1,12}\))?)"

# (the lower-case strings one of which every match holds, the regex whose "name" group is the
# product); each is a line a program prints about a device it found
_DEVICE_LINES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (hints, re.compile(regex, re.I | re.M))
    for hints, regex in (
        # TensorFlow's device lines (core/common_runtime/gpu/gpu_device.cc): "Found device 0 with
        # properties: name: GeForce GTX 1080 major: 6 minor: 1", 2.x's "pciBusID: 0000:01:00.0 name:
        # GeForce 940MX computeCapability: 5.0", "(device: 0, name: Tesla T4, pci bus id: ...)"; a
        # name alone on its line (TensorFlow 1.0-1.4) only with NVIDIA's own words before it
        (
            ("name: ",),
            r"\bname: " + _NAME + r"(?:, pci bus id\b| major: \d| computeCapability: \d| pciBusID\b)",
        ),
        (("name: ",), r"\bname: (?=(?:NVIDIA|GeForce|Tesla|Quadro|TITAN|Tegra)\b)" + _NAME + r"\s*$"),
        # XLA's service.cc (TensorFlow, JAX): "StreamExecutor device (0): Tesla T4, Compute Capability 7.5"
        (("streamexecutor device",), r"StreamExecutor device \(\d{1,3}\): " + _NAME + r", Compute Capability\b"),
        # nvidia-smi's table: "|   0  Tesla K80           On   | 0000:00:1E.0 Off |", the Windows
        # driver model in the same column ("WDDM", "TCC"); a long name is cut and ends in "..."
        (
            ("|",),
            r"^\|\s{0,3}\d{1,2}\s{1,3}(?P<name>[A-Za-z][\w .+/()-]{1,60}?(?:\.\.\.)?)\s{1,30}(?:On|Off|WDDM|TCC|N/A)\s{0,4}\|",
        ),
        # nvidia-smi -L ("GPU 0: Tesla T4 (UUID: GPU-...)"), and PyTorch's collect_env, which prints
        # that list under "GPU models and configuration:" without the UUIDs
        (("gpu ",), r"^\s{0,4}GPU \d{1,2}: " + _NAME + r"\s{0,4}(?:\(UUID: GPU-|$)"),
        (("gpu models and configuration",), r"GPU models and configuration: {1,3}(?:GPU \d{1,2}: )?" + _NAME + r"\s*$"),
        # nvidia-smi -q: "    Product Name                          : Tesla K80"
        (("product name",), r"^\s{0,8}Product Name\s{0,40}: " + _NAME + r"\s*$"),
        # PyTorch's torch/cuda/__init__.py: "Found GPU0 GeForce GTX 770 which requires CUDA_VERSION >= 8000"
        # and "Found GPU0 Quadro K2200 which is of cuda capability 3.0"
        (("found gpu",), r"\bFound GPU\d{1,2} " + _NAME + r" which (?:is of|requires)\b"),
        # torch.cuda.get_device_name() answered at a prompt, or printed: "'Tesla K40c'"
        (
            ("get_device_name",),
            r"get_device_name\([^)\n]{0,20}\)[^\n]{0,40}\n[ \t]{0,8}(?:Out\[\d{1,4}\]: {0,2})?['\"]?"
            + _NAME
            + r"['\"]?\s*$",
        ),
        # the device properties PyTorch and TensorFlow print: _CudaDeviceProperties(name='...'),
        # tf.config.experimental.get_device_details: {'device_name': '...'}, JAX's device_kind
        (
            ("name=", "device_name", "device_kind"),
            r"(?:\bname=|device_name['\"]?: {0,2}|device_kind['\"]?[:=] {0,2})['\"]" + _NAME + r"['\"]",
        ),
        # the NVIDIA kernel module, X driver and installer on a GPU that a legacy branch supports:
        # "NVRM: The NVIDIA GeForce GT 730 GPU installed in this system is"
        (("installed in this system",), r"\bThe NVIDIA " + _NAME + r" GPU installed in this system is\b"),
        # lspci: "VGA compatible controller: NVIDIA Corporation GP107M [GeForce GTX 1050 Mobile] (rev a1)"
        (("nvidia corporation",), r"NVIDIA Corporation [\w ]{0,24}?\[" + _NAME + r"\]"),
        # the TensorFlow bug form's answer ("GPU model and memory: Tesla K80, 12 GB") and the lines
        # programs print for their device ("Device: Tesla V100-SXM2-16GB", Kaldi's "The active GPU
        # is [0]: Tesla K80"); a name and nothing else up to the end, a comma, a tab or "("
        (
            ("gpu model and memory",),
            r"\bGPU model and memory\b[ :*]{1,6}(?:\d{1,2} ?x {0,2})?" + _NAME + r" {0,2}(?:[,(\t;]|\d{1,3} ?GB\b|$)",
        ),
        (
            ("gpu", "device"),
            r"^[ \t]{0,4}(?:\[\w{1,10}\] {0,2})?(?:Using |Selected |Active )?(?:GPU|Device)(?: (?:name|model|type))?: {1,3}"
            + _NAME
            + r"\s*(?:[,(\t]|$)",
        ),
        (("the active gpu is",), r"\bThe active GPU is \[\d{1,2}\]: " + _NAME + r"\s{0,8}(?:\t|free:|$)"),
        # a Jetson's board, as /proc/device-tree/model and jetson_release print it
        (
            ("jetson",),
            r"^(?:\s{0,4}-? ?Model: )?(?P<name>NVIDIA Jetson [\w .+/-]{2,50}?)\s*(?:- Jetpack\b[^\n]{0,30})?$",
        ),
    )
)
# lspci -nn: "NVIDIA Corporation TU116 [GeForce GTX 1660 SUPER] [10de:21c4]": the PCI device id
_PCI_ID = re.compile(r"\[10de:(?P<id>[0-9a-f]{4})\]", re.I)

# A capability the log prints as numbers: PyTorch's "which is of cuda capability 3.0" and "with
# CUDA capability sm_120 is not compatible", its _CudaDeviceProperties(..., major=8, minor=6, ...),
# TensorFlow's get_device_details ({'compute_capability': (8, 6)}) and nvidia-smi's compute_cap
_PRINTED = (
    (("cuda capability",), re.compile(r"\bwhich is of cuda capability (\d{1,2})\.(\d)\b", re.I)),
    (("capability sm_",), re.compile(r"\bwith CUDA capabilit(?:y|ies) sm_(\d{1,2}?)(\d)a?\b", re.I)),
    (("major=",), re.compile(r"\bmajor=(\d{1,2}), minor=(\d)\b")),
    (("compute_capability",), re.compile(r"['\"]compute_capability['\"]: \((\d{1,2}), (\d)\)")),
)


def printed_capability(text: str, lowered: str) -> str:
    """The compute capability the text prints in one of the forms above (the last one), "" if none."""
    value = ""
    for hints, regex in _PRINTED:
        if not any(hint in lowered for hint in hints):
            continue
        for found in regex.finditer(text):
            value = f"{int(found.group(1))}.{found.group(2)}"
    return value


def read_device(text: str, lowered: str) -> Optional[tuple[str, str]]:
    """(the matrix's product name, its compute capability) for the last GPU the text names in a
    device context that the matrix knows; None when there is none."""
    found: list[tuple[int, str, bool]] = []  # (where, what, is a PCI id)
    for hints, regex in _DEVICE_LINES:
        for start, end in lines_with(hints, text, lowered, 1 if regex.pattern.startswith("get_device_name") else 0):
            for match in regex.finditer(text, start, end):
                found.append((match.start("name"), match.group("name"), False))
    if "[10de:" in lowered:
        found.extend((m.start(), m.group("id"), True) for m in _PCI_ID.finditer(text))
    for _at, what, pci in sorted(found, reverse=True):
        product = _by_pci_id(what.lower()) if pci else product_of(what)
        if product is not None:
            return product
    return None


def product_of(name: str) -> Optional[tuple[str, str]]:
    """(product, compute capability) of a name a program printed, or None. A name nvidia-smi cut
    ("NVIDIA GeForce RTX 3050 ...") counts when every product it can be the start of has one
    capability."""
    name = name.strip().strip("'\"")
    if name.endswith("..."):
        return _truncated(name[:-3].strip())
    return _lookup(name)


@lru_cache(maxsize=256)
def _lookup(name: str) -> Optional[tuple[str, str]]:
    matrix = _matrix()
    if matrix is None:
        return None
    product = matrix.gpu(name)
    return (product.name, str(product.compute_capability)) if product is not None else None


@lru_cache(maxsize=64)
def _by_pci_id(device_id: str) -> Optional[tuple[str, str]]:
    matrix = _matrix()
    product = matrix.gpu_by_pci_id(device_id) if matrix is not None else None
    return (product.name, str(product.compute_capability)) if product is not None else None


@lru_cache(maxsize=64)
def _truncated(start: str) -> Optional[tuple[str, str]]:
    """The product whose name nvidia-smi cut to ``start``: every product whose name begins with it
    (or, when none does, with it less its last word, which the cut may have split: "A100-PCI")."""
    matrix = _matrix()
    if matrix is None:
        return None
    for text in (start, re.sub(r"[\s-]*[^\s-]*$", "", start)):
        products = matrix.gpus_beginning(text)
        if products:
            capabilities = {str(gpu.compute_capability) for gpu in products}
            if len(capabilities) != 1:
                return None
            product = products[0].name if len(products) == 1 else f"{start}..."
            return _lookup(text) or (product, capabilities.pop())
    return None


def _matrix():  # the matrix, or None where it cannot load
    # lazy for speed: the matrix loads only when a log names a GPU and prints no capability
    from envcheck.matrix import load_matrix

    try:
        return load_matrix()
    except Exception:  # noqa: BLE001 - a matrix that cannot load leaves the fact out, not explain
        return None
