"""Secure Boot's state in the log (mokutil --sb-state, the kernel's "secureboot:" line) moves the
unsigned-module cause of the driver-not-loaded messages first (enabled) or last (disabled)."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()

SMI = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)
FALLBACK = "NVIDIA kernel module missing. Falling back to nouveau"


def _causes(text: str, pattern_id: str) -> list[str]:
    (found,) = [e for e in explain(CATALOGUE.scan_text(text)) if e.id == pattern_id]
    return [c.id for c in found.causes]


@pytest.mark.parametrize(
    "line, state",
    [
        ("SecureBoot enabled", "enabled"),
        ("[    0.000000] secureboot: Secure boot enabled", "enabled"),
        ("$ mokutil --sb-state\nSecureBoot disabled", "disabled"),
        # the kernel's line comes twice at boot; the last one the log shows counts
        ("secureboot: Secure boot disabled\nsecureboot: Secure boot enabled", "enabled"),
    ],
)
def test_the_state_is_read_from_mokutil_and_the_kernel(line, state):
    assert read_context(line)["log_secure_boot"] == state


def test_a_log_without_it_has_no_state():
    assert "log_secure_boot" not in read_context("Secure Boot settings are in the firmware menu\n" + SMI)


def test_enabled_puts_the_unsigned_module_first():
    assert _causes(SMI + "\nSecureBoot enabled", "nvidia-smi-no-driver")[0] == "secure-boot-unsigned-module"


def test_disabled_puts_it_last():
    for text, pattern_id in ((SMI, "nvidia-smi-no-driver"), (FALLBACK, "nvidia-fallback-nouveau")):
        causes = _causes(text + "\nSecureBoot disabled", pattern_id)
        assert causes[-1] == "secure-boot-unsigned-module"


def test_without_it_the_order_stays():
    assert _causes(SMI, "nvidia-smi-no-driver")[0] != "secure-boot-unsigned-module"
    assert _causes(FALLBACK, "nvidia-fallback-nouveau")[0] == "secure-boot-unsigned-module"
