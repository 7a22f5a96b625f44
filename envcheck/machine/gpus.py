"""Each NVIDIA GPU of a machine and its own chain: on the bus, its driver bound, NVML answering for
it, CUDA starting on it, code for it in the build, the libraries, TensorFlow listing it, its ops
running. Every link is ok, broken, unknown (the facts do not say) or hidden (CUDA_VISIBLE_DEVICES
leaves it out), with the evidence. A GPU is usable when no link is broken and it is not hidden;
its reason is its first broken link. The verdict composes these chains; it never re-reads facts.

The GPUs are the union of what NVML lists, what the PCI bus shows (a card the driver does not
drive is still on the bus) and, where neither could be read (a container without NVML), what
TensorFlow lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from envcheck.facts import OK, SKIPPED, NvmlGpu, PciDevice
from envcheck.machine import libraries
from envcheck.machine.values import capability, minor, parse_version, pci_product_name, short_device
from envcheck.probes.nvml import normalise_bus_id

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.machine.view import Machine

# Link statuses.
OK_LINK = "ok"
BROKEN = "broken"
UNKNOWN = "unknown"
HIDDEN = "hidden"

# (name, title, the links of the machine's chain whose findings can explain a break here).
GPU_LINKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("bus", "on the bus", ("gpu",)),
    ("driver", "driver bound", ("gpu", "driver")),
    ("nvml", "NVML answers", ("driver",)),
    ("cuda", "CUDA starts on it", ("driver", "environment")),
    ("code", "the build has code for it", ("compute", "tensorflow", "driver")),
    ("libraries", "its libraries load", ("libraries", "tensorflow")),
    ("listed", "TensorFlow lists it", ("tensorflow", "placement", "python")),
    ("ops", "its ops run", ("placement",)),
)
GPU_LINK_NAMES = tuple(name for name, _, _ in GPU_LINKS)
GPU_LINK_TITLES = {name: title for name, title, _ in GPU_LINKS}
EXPLAINED_BY = {name: links for name, _, links in GPU_LINKS}

# TF placement errors that say another process holds the GPU (exclusive-process compute mode) or
# that it cannot be used now: CUDA_ERROR_DEVICE_UNAVAILABLE's text and the runtime's.
BUSY_MARKERS = ("busy or unavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE", "cudaErrorDevicesUnavailable")


@dataclass(frozen=True)
class GpuLink:
    name: str  # one of GPU_LINK_NAMES
    status: str  # OK_LINK / BROKEN / UNKNOWN / HIDDEN
    evidence: str  # what was seen, one line

    @property
    def title(self) -> str:
        return GPU_LINK_TITLES[self.name]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "status": self.status, "evidence": self.evidence}


@dataclass(frozen=True)
class GpuView:
    """One NVIDIA GPU as every command should describe it (``doctor --json``'s ``gpus`` entries)."""

    index: Optional[int]  # nvidia-smi's number (PCI bus order); None for a GPU NVML does not list
    name: str
    uuid: Optional[str]
    compute_capability: Optional[str]
    pci_bus_id: Optional[str]
    cuda_index: Optional[int]  # the number CUDA gives it; None when CUDA_VISIBLE_DEVICES hides it
    tf_device: Optional[str]  # "/GPU:0" in the placement test, or None
    usable: bool
    reason: Optional[str]  # why it is not usable (or what is unknown about it), one line
    tested: bool  # TensorFlow ran and checked ops on it
    source: str  # "nvml", "pci" or "tensorflow": where envcheck saw it
    links: tuple[GpuLink, ...] = ()
    hidden: bool = False  # CUDA_VISIBLE_DEVICES leaves it out
    finding: Optional[str] = None  # the finding that explains why it is not usable (set by the verdict)

    @property
    def key(self) -> str:
        """What names this GPU in a finding: its bus id, else its UUID, else its TensorFlow device."""
        return self.pci_bus_id or self.uuid or self.tf_device or f"GPU {self.index}"

    @property
    def label(self) -> str:
        """ "GPU 2 (Tesla V100-SXM2-32GB, 0000:03:00.0)": the way findings name it."""
        where = ", ".join(x for x in (self.name, self.pci_bus_id) if x)
        return f"GPU {self.index} ({where})" if self.index is not None else where

    @property
    def first_broken(self) -> Optional[GpuLink]:
        return next((link for link in self.links if link.status == BROKEN), None)

    def link(self, name: str) -> Optional[GpuLink]:
        return next((link for link in self.links if link.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "compute_capability": self.compute_capability,
            "pci_bus_id": self.pci_bus_id,
            "cuda_index": self.cuda_index,
            "tf_device": self.tf_device,
            "usable": self.usable,
            "hidden": self.hidden,
            "reason": self.reason,
            "finding": self.finding,
            "tested": self.tested,
            "source": self.source,
            "links": [link.to_dict() for link in self.links],
        }


@dataclass(frozen=True)
class _Seen:
    """One GPU as the probes saw it: NVML's record, the bus's, TensorFlow's position."""

    nvml: Optional[NvmlGpu] = None
    pci: Optional[PciDevice] = None
    tf_position: Optional[int] = None


def read_gpus(m: "Machine") -> tuple[GpuView, ...]:
    seen = _seen_gpus(m)
    numbered = not any(s.nvml for s in seen)  # no NVML list: number the bus's cards in bus order
    tf_devices = _tf_devices_by_cuda_index(m)
    return tuple(_view(m, s, position if numbered else None, tf_devices) for position, s in enumerate(seen))


def _seen_gpus(m: "Machine") -> list[_Seen]:
    facts = m.facts
    nvml = sorted(facts.nvml.gpus, key=lambda g: g.index) if facts.nvml.status == OK else []
    by_bus = {normalise_bus_id(d.address): d for d in facts.pci.devices}
    taken: set[str] = set()
    out: list[_Seen] = []
    for gpu in nvml:
        device = by_bus.get(normalise_bus_id(gpu.pci_bus_id) or "")
        if device is not None:
            taken.add(device.address)
        out.append(_Seen(nvml=gpu, pci=device))
    # NVML GPUs without a bus id (the query failed) take the driver's unclaimed cards, in order.
    spare = [d for d in facts.pci.devices if d.address not in taken and d.driver == "nvidia"]
    for position, entry in enumerate(out):
        if entry.pci is None and entry.nvml is not None and not entry.nvml.pci_bus_id and spare:
            device = spare.pop(0)
            taken.add(device.address)
            out[position] = _Seen(nvml=entry.nvml, pci=device)
    out.extend(_Seen(pci=d) for d in facts.pci.devices if d.address not in taken)
    if out:
        return out
    # Neither NVML nor the bus shows a GPU, but TensorFlow does (a container without NVML).
    return [_Seen(tf_position=position) for position in range(_tf_gpu_positions(m))]


# More GPUs than one process can see (CUDA's own limit is far below this).
MAX_GPU_INDEX = 1023


def _tf_gpu_positions(m: "Machine") -> int:
    tf = m.facts.tensorflow
    tested = [short_device(p.requested) for p in tf.placement]
    # A device number no machine has (past MAX_GPU_INDEX, or past int()'s digit limit) is no GPU
    # position: it would otherwise make as many GPUs as it says.
    numbers = [int(d[4:]) for d in tested if d.startswith("GPU:") and d[4:].isdigit() and len(d[4:]) <= 4]
    numbers = [n for n in numbers if n <= MAX_GPU_INDEX]
    return max(m.tf_gpu_count, max(numbers) + 1 if numbers else 0)


def _view(m: "Machine", s: _Seen, number: Optional[int], tf_devices: dict[int, str]) -> GpuView:
    details = _tf_details(m, s.tf_position)
    name = (s.nvml.name if s.nvml else None) or (pci_name(m, s.pci) if s.pci else None) or details.get("device_name")
    index = s.nvml.index if s.nvml is not None else number
    name = name or f"GPU {index if index is not None else s.tf_position}"
    reported = capability((s.nvml.compute_capability if s.nvml else None) or details.get("compute_capability"))
    product = m.matrix.gpu_by_pci_id(s.pci.device_id) if s.pci is not None and not reported else None
    cc = str(product.compute_capability) if product is not None else m.capability_of(reported, name)
    resolution = m.visibility
    # CUDA_VISIBLE_DEVICES="" (or -1) leaves out every GPU, driven or not: the CPU on purpose.
    cuda_index, hidden = s.tf_position, m.hidden_on_purpose
    if s.nvml is not None and resolution is not None:
        cuda_index = None if resolution.mig else resolution.cuda_index.get(s.nvml.index)
        hidden = not resolution.mig and cuda_index is None
    tf_device = f"/GPU:{s.tf_position}" if s.tf_position is not None else tf_devices.get(cuda_index, None)
    links = _chain(m, s, cc, hidden, tf_device)
    usable, reason, tested = _usability(m, links, hidden, tf_device)
    bus_id = (normalise_bus_id(s.nvml.pci_bus_id) if s.nvml else None) or (s.pci.address if s.pci else None)
    return GpuView(
        index=index,
        name=name,
        uuid=s.nvml.uuid if s.nvml else None,
        compute_capability=cc,
        pci_bus_id=bus_id,
        cuda_index=cuda_index,
        tf_device=tf_device,
        usable=usable,
        reason=reason,
        tested=tested,
        source="nvml" if s.nvml else "pci" if s.pci else "tensorflow",
        links=links,
        hidden=hidden,
    )


def _chain(m: "Machine", s: _Seen, cc: Optional[str], hidden: bool, tf_device: Optional[str]) -> tuple[GpuLink, ...]:
    return (
        _bus(m, s),
        _driver(m, s, cc),
        _nvml(m, s),
        _cuda(m, s, hidden),
        _code(m, cc),
        _libraries(m),
        _listed(m, tf_device),
        _ops(m, tf_device),
    )


def _usability(
    m: "Machine", links: tuple[GpuLink, ...], hidden: bool, tf_device: Optional[str]
) -> tuple[bool, Optional[str], bool]:
    """(usable, why not, tested) from the chain."""
    by_name = {link.name: link for link in links}
    tested = by_name["ops"].status in (OK_LINK, BROKEN)
    if hidden:
        return False, by_name["cuda"].evidence, False
    broken = next((link for link in links if link.status == BROKEN), None)
    if broken is not None:
        return False, broken.evidence, tested
    if by_name["ops"].status == OK_LINK:
        return True, None, True
    tf = m.facts.tensorflow
    if tf.status == SKIPPED and m.installed_tf is not None:
        return True, "not tested: TensorFlow was not run (--quick)", False
    if by_name["listed"].status == OK_LINK:
        return True, f"listed by TensorFlow as {tf_device}; the placement test did not run there", False
    return False, by_name["listed"].evidence, False


# --- the links -----------------------------------------------------------------------------------


def _ok(name: str, evidence: str) -> GpuLink:
    return GpuLink(name, OK_LINK, evidence)


def _broken(name: str, evidence: str) -> GpuLink:
    return GpuLink(name, BROKEN, evidence)


def _unknown(name: str, evidence: str) -> GpuLink:
    return GpuLink(name, UNKNOWN, evidence)


def _bus(m: "Machine", s: _Seen) -> GpuLink:
    if s.pci is not None:
        return _ok("bus", f"on the PCI bus at {s.pci.address} ({s.pci.vendor_id}:{s.pci.device_id})")
    if s.nvml is not None:
        where = " (WSL2 shows no PCI bus)" if m.os == "wsl" else ""
        return _ok("bus", f"listed by the NVIDIA driver{where}")
    return _ok("bus", "listed by TensorFlow")


def _driver(m: "Machine", s: _Seen, cc: Optional[str]) -> GpuLink:
    facts = m.facts
    module = f" {facts.driver.version}" if facts.driver.version else ""
    if s.nvml is not None:
        version = facts.nvml.driver_version
        return _ok("driver", f"driver {version}" if version else "the NVIDIA driver lists it")
    if s.pci is None:
        return _ok("driver", "TensorFlow reaches it through the driver")
    bound = s.pci.driver
    if bound and bound != "nvidia":
        return _broken("driver", f"driven by {bound}, not the NVIDIA driver")
    kind = facts.nvml.error_kind
    if bound == "nvidia":
        if kind == "version_mismatch":
            return _broken("driver", "the driver's libraries and its kernel module are of different versions")
        if kind == "library_not_found":
            lib = m.platform.nvml_library
            return _broken(
                "driver", f"the nvidia kernel module{module} drives it, but the driver's user-space {lib} is missing"
            )
        return _ok("driver", f"bound to the nvidia kernel module{module}")
    if facts.driver.loaded:
        return _broken("driver", _not_bound(m, cc, facts.driver.version))
    return _unbound(m)


def _not_bound(m: "Machine", cc: Optional[str], version: Optional[str]) -> str:
    """Why the loaded nvidia module does not drive this card: its architecture ended before it."""
    arch = m.matrix.architecture(cc) if cc else None
    if arch is not None and version and arch.supports_driver(version) is False:
        return f"the loaded driver {version} does not support {arch.name} GPUs (their last branch is {arch.last_driver_branch})"
    return f"the nvidia kernel module {version or ''} is loaded but does not drive it".replace("  ", " ")


def _unbound(m: "Machine") -> GpuLink:
    facts = m.facts
    installed = m.driver_installed
    on_disk = f" ({facts.driver.module_file_version})" if facts.driver.module_file_version else ""
    if installed and facts.nvml.error_kind == "library_not_found":
        lib = m.platform.nvml_library
        return _broken(
            "driver",
            f"the driver's kernel module is installed{on_disk} but not loaded, and its user-space {lib} is missing",
        )
    if installed:
        return _broken("driver", f"the NVIDIA driver is installed{on_disk} but its kernel module is not loaded")
    if installed is False:
        return _broken("driver", "no NVIDIA driver is installed")
    return _unknown("driver", "no NVIDIA driver answered")


def _nvml(m: "Machine", s: _Seen) -> GpuLink:
    nvml = m.facts.nvml
    gpu = s.nvml
    if gpu is not None:
        if gpu.status != OK:
            what = f"NVML: {gpu.error or gpu.error_kind or 'error'}"
            return _broken("nvml", what) if gpu.error_kind in ("gpu_lost", "no_permission") else _unknown("nvml", what)
        if all_queries_denied(gpu):
            return _broken("nvml", "no permission to use it (every NVML query was refused)")
        cc = f", compute capability {gpu.compute_capability}" if gpu.compute_capability else ""
        return _ok("nvml", f"NVML answers ({gpu.name or 'name unknown'}{cc})")
    if nvml.status == SKIPPED:
        return _unknown("nvml", "NVML was not asked")
    if nvml.status == OK:
        return _unknown("nvml", "NVML does not list it")
    what = f"NVML: {nvml.error or nvml.error_kind or 'error'}"
    if nvml.error_kind in ("no_permission", "unknown", "gpu_lost"):
        return _broken("nvml", what)
    return _unknown("nvml", what)


def _cuda(m: "Machine", s: _Seen, hidden: bool) -> GpuLink:
    if hidden:
        return GpuLink("cuda", HIDDEN, f"hidden by CUDA_VISIBLE_DEVICES={m.facts.env_var('CUDA_VISIBLE_DEVICES')!r}")
    if m.is_cuda_tf is False:
        return _unknown("cuda", "a CPU-only TensorFlow does not start CUDA")
    cuda, driver = m.tf_cuda, m.driver_version
    need = m.driver_requirement(cuda) if cuda else None
    have = parse_version(driver)
    if need is not None and need.minimum is not None and have is not None:
        if have < need.minimum:
            return _broken(
                "cuda",
                f"driver {driver} is older than {need.minimum}, the oldest that runs CUDA {minor(cuda)} "
                f"({need.os_title}): cuInit fails",
            )
        return _ok("cuda", f"driver {driver} runs CUDA {minor(cuda)}")
    if s.tf_position is not None:
        return _ok("cuda", "TensorFlow started CUDA on it")
    return _unknown("cuda", "not known (the driver or TensorFlow's CUDA version is not known)")


def _code(m: "Machine", cc: Optional[str]) -> GpuLink:
    if m.is_cuda_tf is False:
        return _broken("code", f"{m.tf_name} is a CPU-only build: it has no GPU code")
    if m.installed_tf is None:
        return _unknown("code", "TensorFlow is not installed")
    run = m.gpu_run(cc)
    return GpuLink("code", OK_LINK if run.runs else BROKEN if run.runs is False else UNKNOWN, run.reason)


def _libraries(m: "Machine") -> GpuLink:
    if m.is_cuda_tf is not True:
        return _unknown("libraries", "not needed" if m.is_cuda_tf is False else "TensorFlow's build is not known")
    if m.tf_gpu_ops_all_passed:
        return _ok("libraries", "TensorFlow loaded them (its ops ran on a GPU)")
    failed = libraries.library_in_import_error(m)
    if failed is not None:
        return _broken("libraries", f"TensorFlow cannot load {failed}")
    if not libraries.libraries_apply(m):
        return _unknown("libraries", "not checked")
    gone = libraries.unusable(m)
    if gone:
        more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
        return _broken("libraries", f"{gone[0].name} {libraries.state(gone[0], m.tf_build)}{more}")
    return _ok("libraries", f"all {len(m.needed_libraries)} libraries TensorFlow loads found")


def _listed(m: "Machine", tf_device: Optional[str]) -> GpuLink:
    tf = m.facts.tensorflow
    if m.installed_tf is None and tf.status != OK:
        return _unknown("listed", "TensorFlow is not installed")
    if tf.status == SKIPPED:
        return _unknown("listed", "not tested: TensorFlow was not run (--quick)")
    if tf.status != OK:
        return _broken("listed", "TensorFlow does not run (see the verdict)")
    if m.is_cuda_tf is False:
        return _unknown("listed", "a CPU-only build lists no GPU")
    if tf_device is not None:
        return _ok("listed", f"TensorFlow lists it as {tf_device}")
    return _broken("listed", "TensorFlow does not list it")


def _ops(m: "Machine", tf_device: Optional[str]) -> GpuLink:
    if tf_device is None:
        return _unknown("ops", "not run")
    device = short_device(tf_device)
    results = [p for p in m.facts.tensorflow.placement if short_device(p.requested) == device]
    if not results:
        return _unknown("ops", f"not tested on {tf_device}")
    if all(ran_on(p, tf_device) for p in results):
        ops = " and ".join(dict.fromkeys(p.op for p in results))
        return _ok("ops", f"{ops} ran on {tf_device}")
    return _broken("ops", placement_reason(results, tf_device))


# --- helpers -------------------------------------------------------------------------------------


def pci_name(m: "Machine", device: PciDevice) -> str:
    """A PCI device's product name: pci.ids' bracketed name, else the matrix's entry for its
    device id, else the id itself."""
    name = pci_product_name(device.name)
    if name:
        return name
    product = m.matrix.gpu_by_pci_id(device.device_id)
    return product.name if product is not None else f"NVIDIA device {device.device_id}"


def all_queries_denied(gpu: NvmlGpu) -> bool:
    """Every per-GPU query answered NoPermission: the device nodes are closed to this user."""
    errors = list(gpu.query_errors.values())
    return len(errors) >= 3 and all(e.startswith("no_permission") for e in errors)


def ran_on(result, tf_device: str) -> bool:
    """The op ran, on that very GPU, and its result was right."""
    return bool(result.ok and result.device and short_device(result.device) == short_device(tf_device))


def placement_reason(results, tf_device: str) -> str:
    failed = [p for p in results if not ran_on(p, tf_device)]
    first = failed[0]
    if first.device and short_device(first.device) != short_device(tf_device):
        return f"{first.op} asked for {tf_device} ran on {short_device(first.device)}"
    text = (first.error or "").strip()
    error = text.splitlines()[-1] if text else "wrong result"
    if any(marker in text for marker in BUSY_MARKERS):
        error = "busy or unavailable: another process holds it (exclusive-process compute mode) or it is in use"
    return f"{first.op} failed on {tf_device}: {error[:160]}"


def _tf_details(m: "Machine", position: Optional[int]) -> dict[str, str]:
    if position is None:
        return {}
    listed = [d for d in m.facts.tensorflow.physical_devices if d.device_type.upper() == "GPU"]
    return dict(listed[position].details) if position < len(listed) else {}


def _tf_devices_by_cuda_index(m: "Machine") -> dict[int, str]:
    """CUDA number -> TensorFlow's "/GPU:N". TensorFlow numbers the CUDA devices it accepts in CUDA's
    order and skips the ones its build has no code for, so the two differ after a skipped GPU."""
    resolution = m.visibility
    if resolution is None or not m.tf_runs:
        return {}
    by_cuda = sorted((cuda_index, index) for index, cuda_index in resolution.cuda_index.items())
    gpus = {g.index: g for g in m.cuda_gpus}
    out: dict[int, str] = {}
    position = 0
    for cuda_index, index in by_cuda:
        if m.build_support(gpus[index].compute_capability) == "none":
            continue
        if position >= m.tf_gpu_count:
            break
        out[cuda_index] = f"/GPU:{position}"
        position += 1
    return out
