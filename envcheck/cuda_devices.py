"""CUDA's own reading of ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER``: which GPUs a CUDA
program (TensorFlow) sees, and the number it gives each.

CUDA reads the variable more loosely and more strictly than people expect (the cases are the
ones PyTorch's ``TestVisibleDeviceParses`` pins down for its NVML-based device count):

- the list is split at commas; each ordinal entry is read like ``strtoul`` after its blanks are
  trimmed: leading digits (with one optional sign) count and the rest is ignored, so ``1gpu2``
  is GPU 1 and ``+3`` is 3;
- an entry that does not start with a number, or a negative one, ends the list there (``0,1,-1,3``
  shows GPUs 0 and 1; ``abc`` and ``-1`` show none);
- a list that starts with ``GPU-`` (or ``MIG-``) is a list of UUIDs, each a unique prefix of a
  GPU's UUID; it ends at the first entry without that prefix (``GPU-123, 2`` takes no ordinal),
  and an unknown or ambiguous prefix ends it too;
- naming the same GPU twice makes CUDA show no GPU at all;
- an ordinal past the last GPU ends the list;
- ordinals count in CUDA's device order: ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` is nvidia-smi's order,
  the default ``FASTEST_FIRST`` puts the most capable GPU first (the same as nvidia-smi's when
  every GPU is the same model).

This module only knows CUDA; what it means for one machine is ``envcheck.machine``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

# Why CUDA stopped reading the list, or read it as empty.
EMPTY = "empty"  # "" or blanks: no GPU
NEGATIVE = "negative"  # a negative number ends the list ("-1" hides every GPU)
MALFORMED = "malformed"  # an entry that does not start with a number ends the list
REPEATED = "repeated"  # the same GPU twice: CUDA shows none
OUT_OF_RANGE = "out_of_range"  # an ordinal past the last GPU ends the list
UNKNOWN_UUID = "unknown_uuid"  # a UUID prefix no GPU has ends the list
AMBIGUOUS_UUID = "ambiguous_uuid"  # a UUID prefix several GPUs share ends the list
MIXED = "mixed"  # a UUID list with an entry that is not a UUID ends there

UUID_PREFIXES = ("GPU-", "MIG-")
_NUMBER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Entry:
    text: str  # as written, blanks trimmed
    ordinal: Optional[int] = None  # for an ordinal entry
    ignored: str = ""  # what CUDA ignored after the number ("gpu2" in "1gpu2")


@dataclass(frozen=True)
class VisibleDevices:
    """The variable as CUDA reads it, before any GPU is known (``resolve`` adds the machine)."""

    raw: Optional[str]  # None when the variable is not set
    entries: tuple[Entry, ...] = ()  # accepted, in order
    uuids: bool = False  # a GPU-/MIG- list
    stopped_at: Optional[str] = None  # the entry where CUDA stopped reading
    reason: Optional[str] = None  # why it stopped (or EMPTY); None when it read everything

    @property
    def set(self) -> bool:
        return self.raw is not None

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(e.text for e in self.entries)

    @property
    def hides_all(self) -> bool:
        """True when CUDA sees no GPU whatever the machine has."""
        return self.raw is not None and (not self.entries or self.reason == REPEATED)

    @property
    def loosely_read(self) -> tuple[Entry, ...]:
        """Entries CUDA accepted only by ignoring part of them ("1gpu2")."""
        return tuple(e for e in self.entries if e.ignored)


_ULONG_MAX = 2**64 - 1


def _strtoul(digits: str) -> int:
    """An entry's number as strtoul gives it: past ULONG_MAX it saturates (so a run of 5,000
    digits is one number past any GPU, and int() never sees it); a minus keeps its sign here, as
    the list ends at it."""
    sign = -1 if digits.startswith("-") else 1
    magnitude = digits.lstrip("+-").lstrip("0")
    value = _ULONG_MAX if len(magnitude) > 20 else min(int(magnitude or "0"), _ULONG_MAX)
    return sign * value


def read_visible_devices(value: Optional[str]) -> VisibleDevices:
    """``CUDA_VISIBLE_DEVICES`` as CUDA parses it (no GPU list needed)."""
    if value is None:
        return VisibleDevices(None)
    if not value.strip():
        return VisibleDevices(value, reason=EMPTY)
    if value.startswith(UUID_PREFIXES):
        return _read_uuids(value)
    accepted: list[Entry] = []
    for part in value.split(","):
        text = part.strip()
        match = _NUMBER.match(text)
        if match is None:
            return VisibleDevices(value, tuple(accepted), stopped_at=text, reason=MALFORMED)
        number = _strtoul(match.group(0))
        if number < 0:
            return VisibleDevices(value, tuple(accepted), stopped_at=text, reason=NEGATIVE)
        if any(e.ordinal == number for e in accepted):
            return VisibleDevices(value, tuple(accepted), stopped_at=text, reason=REPEATED)
        accepted.append(Entry(text, number, text[match.end() :]))
    return VisibleDevices(value, tuple(accepted))


def _read_uuids(value: str) -> VisibleDevices:
    prefix = value[:4]
    accepted: list[Entry] = []
    for part in value.split(","):
        if not part.startswith(prefix):
            return VisibleDevices(value, tuple(accepted), uuids=True, stopped_at=part, reason=MIXED)
        if any(e.text == part for e in accepted):
            return VisibleDevices(value, tuple(accepted), uuids=True, stopped_at=part, reason=REPEATED)
        accepted.append(Entry(part))
    return VisibleDevices(value, tuple(accepted), uuids=True)


@dataclass(frozen=True)
class Gpu:
    """What ``resolve`` needs of one GPU, in nvidia-smi's (PCI bus) order."""

    index: int
    uuid: Optional[str] = None
    compute_capability: Optional[str] = None
    name: Optional[str] = None


@dataclass(frozen=True)
class Resolution:
    """The variable read against a machine's GPUs."""

    visible: VisibleDevices
    cuda_index: dict[int, int]  # nvidia-smi index -> the number CUDA gives that GPU
    stopped_at: Optional[str]  # where reading stopped (the parse's stop, or one only the GPUs tell)
    reason: Optional[str]
    order: str  # "PCI_BUS_ID" or "FASTEST_FIRST"
    order_guessed: bool  # FASTEST_FIRST over GPUs of different capability: CUDA's own heuristic decides
    mig: bool = False  # MIG instances are named: CUDA numbers instances, not GPUs

    @property
    def hides_all(self) -> bool:
        return not self.cuda_index and not self.mig

    @property
    def count(self) -> int:
        return len(self.visible.entries) if self.mig else len(self.cuda_index)

    def hidden(self, gpus: Sequence[Gpu]) -> list[Gpu]:
        return [g for g in gpus if g.index not in self.cuda_index]


def cuda_order(gpus: Sequence[Gpu], order: Optional[str]) -> tuple[list[Gpu], bool]:
    """The GPUs in CUDA's enumeration order, and whether that order is a guess."""
    pci = sorted(gpus, key=lambda g: g.index)
    if (order or "").strip().upper() == "PCI_BUS_ID":
        return pci, False
    capabilities = {g.compute_capability for g in pci}
    if len(capabilities) <= 1 and len({g.name for g in pci}) <= 1:
        return pci, False
    ranked = sorted(pci, key=lambda g: _capability_key(g.compute_capability), reverse=True)
    # Python's sort is stable, so equal capabilities keep their PCI order.
    return ranked, ranked != pci or len(capabilities) > 1


def _capability_key(cc: Optional[str]) -> tuple[int, int]:
    match = re.fullmatch(r"(\d{1,9})\.(\d{1,9})", cc or "")  # int(): never past 9 digits
    return (int(match.group(1)), int(match.group(2))) if match else (-1, -1)


def resolve(visible: VisibleDevices, gpus: Sequence[Gpu], order: Optional[str] = None) -> Resolution:
    """Which of ``gpus`` (nvidia-smi order) CUDA shows, and the number it gives each."""
    enumerated, guessed = cuda_order(gpus, order)
    order_name = "PCI_BUS_ID" if (order or "").strip().upper() == "PCI_BUS_ID" else "FASTEST_FIRST"
    if not visible.set:
        mapping = {g.index: position for position, g in enumerate(enumerated)}
        return Resolution(visible, mapping, None, None, order_name, guessed)
    if visible.reason == REPEATED:
        return Resolution(visible, {}, visible.stopped_at, REPEATED, order_name, guessed)
    mapping: dict[int, int] = {}
    stopped_at, reason = visible.stopped_at, visible.reason
    if visible.uuids and visible.entries and visible.entries[0].text.startswith("MIG-"):
        return Resolution(visible, {}, stopped_at, reason, order_name, guessed, mig=True)
    for entry in visible.entries:
        if visible.uuids:
            matches = [g for g in gpus if g.uuid and g.uuid.startswith(entry.text)]
            if not matches:
                stopped_at, reason = entry.text, UNKNOWN_UUID
                break
            if len(matches) > 1:
                stopped_at, reason = entry.text, AMBIGUOUS_UUID
                break
            gpu = matches[0]
        else:
            if entry.ordinal is None or entry.ordinal >= len(enumerated):
                stopped_at, reason = entry.text, OUT_OF_RANGE
                break
            gpu = enumerated[entry.ordinal]
        if gpu.index in mapping:
            return Resolution(visible, {}, entry.text, REPEATED, order_name, guessed)
        mapping[gpu.index] = len(mapping)
    return Resolution(visible, mapping, stopped_at, reason, order_name, guessed)


def keep_settings(keep: Sequence[int], gpus: Sequence[Gpu], order: Optional[str] = None) -> list[tuple[str, str]]:
    """The variables that leave CUDA only the GPUs ``keep`` (nvidia-smi indices), as (name, value)
    pairs. By UUID where every kept GPU has one: CUDA reads a UUID list whatever the device order and
    whichever other GPUs a driver still lists. Else by number, with CUDA_DEVICE_ORDER=PCI_BUS_ID
    first where CUDA's own order would be a guess (GPUs of different models), so the numbers are
    nvidia-smi's and stay so."""
    wanted = sorted((g for g in gpus if g.index in set(keep)), key=lambda g: g.index)
    if not wanted:
        return [("CUDA_VISIBLE_DEVICES", "")]
    if all(g.uuid and g.uuid.startswith("GPU-") for g in wanted):
        return [("CUDA_VISIBLE_DEVICES", ",".join(g.uuid for g in wanted if g.uuid))]
    _ordered, guessed = cuda_order(gpus, order)
    if guessed:
        return [("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), ("CUDA_VISIBLE_DEVICES", visible_value(keep, gpus, "PCI_BUS_ID"))]
    return [("CUDA_VISIBLE_DEVICES", visible_value(keep, gpus, order))]


def visible_value(keep: Sequence[int], gpus: Sequence[Gpu], order: Optional[str] = None) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value that leaves CUDA only the GPUs ``keep`` (nvidia-smi
    indices): their numbers in CUDA's enumeration under ``order``, in that order (``resolve`` read
    back gives the same GPUs, numbered 0..n-1); "" when none is kept."""
    enumerated, _guessed = cuda_order(gpus, order)
    wanted = set(keep)
    return ",".join(str(position) for position, g in enumerate(enumerated) if g.index in wanted)
