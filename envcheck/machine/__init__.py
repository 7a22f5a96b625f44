"""The one reader of one machine's facts (``Machine``): its platform, its TensorFlow, its GPUs
each with its own chain (``gpus``), its libraries (``libraries``) and wheels (``wheels``), and the
commands for its interpreter. Every command asks it and the matrix; none re-reads the facts.

  view        Machine: the questions, each answered once per machine
  gpus        every GPU and its chain of links
  libraries   what the build loads and which copy the loader takes
  wheels      the CUDA pip wheels and TensorFlow's own requirements
  values      reading versions, device names and error texts
"""

from __future__ import annotations

from envcheck.machine.gpus import GpuLink, GpuView
from envcheck.machine.values import (
    ABSENT,
    PRESENT,
    UNKNOWN,
    minor,
    parse_version,
    pci_product_name,
    short_device,
    telling_line,
)
from envcheck.machine.view import GPU_VARIABLES, InstalledTf, Machine
from envcheck.words import counted

__all__ = [
    "ABSENT",
    "GPU_VARIABLES",
    "PRESENT",
    "UNKNOWN",
    "GpuLink",
    "GpuView",
    "InstalledTf",
    "Machine",
    "counted",
    "minor",
    "parse_version",
    "pci_product_name",
    "short_device",
    "telling_line",
]
