"""How a crashed process is reported, read into the status it names: the exception code a Windows
process exits with (an NTSTATUS, printed as hex, unsigned or signed decimal) and the signal a
POSIX process dies of (by number, name, the text the shells print, or as a shell's exit status
128+N). The tables are cuda_status.yaml's ``NTSTATUS`` and ``POSIX signals``.

Spellings of one value:

  0xC0000005, 3221225477, -1073741819   STATUS_ACCESS_VIOLATION (an IDE's "exit code", Python's
                                        faulthandler "code 0xc0000005")
  11, SIGSEGV, "Segmentation fault"     SIGSEGV; exit status 139 (bash: 128 + 11), Python's
                                        subprocess return code -11
"""

from __future__ import annotations

import re
from typing import Optional

NTSTATUS_TABLE = "NTSTATUS"
SIGNAL_TABLE = "POSIX signals"
_HEX = re.compile(r"0x([0-9a-f]{8})", re.I)
_DECIMAL = re.compile(r"-?\d{1,10}")
# The severity "error" (0xC0...) and "warning" (0x80...) codes of the system's own facility: the
# codes a process dies with (-1 is 0xFFFFFFFF, a program's own exit code, not one of them).
_NTSTATUS_TOP_BYTES = (0x80, 0xC0)


def ntstatus_value(spelling: str) -> Optional[int]:
    """The NTSTATUS a spelling names as an unsigned 32-bit number: "0xC0000005", "3221225477" and
    "-1073741819" all give 0xC0000005; None for a number outside the system's error and warning codes."""
    spelling = spelling.strip()
    hexadecimal = _HEX.fullmatch(spelling)
    if hexadecimal:
        value = int(hexadecimal.group(1), 16)
    elif _DECIMAL.fullmatch(spelling):
        value = int(spelling)
        if value < 0:
            value += 1 << 32  # the same 32 bits read as a signed int (PyCharm, PowerShell's $LASTEXITCODE)
    else:
        return None
    return value if 0 <= value < 1 << 32 and value >> 24 in _NTSTATUS_TOP_BYTES else None


def exit_status_value(spelling: str) -> Optional[tuple[str, int]]:
    """(table, value) that an exit status names, or None for an ordinary exit status.

    Over 128 and at most 128+31: a POSIX shell's report of death by signal N (bash, Docker,
    Kubernetes); -N: Python's return code of a child killed by signal N; a 32-bit code in the
    NTSTATUS ranges (any spelling): a Windows exception. 0 to 128 are the program's own exit
    status (1 after an ordinary Python error) and say nothing of a crash."""
    spelling = spelling.strip()
    if _DECIMAL.fullmatch(spelling):
        number = int(spelling)
        if 128 < number <= 128 + 31:
            return SIGNAL_TABLE, number - 128
        if -31 <= number < 0:
            return SIGNAL_TABLE, -number
    value = ntstatus_value(spelling)
    return (NTSTATUS_TABLE, value) if value is not None else None


def signal_number(spelling: str) -> Optional[int]:
    """A signal's number from "11" or "SIGSEGV"/"SEGV" (the name is looked up by the caller)."""
    spelling = spelling.strip()
    return int(spelling) if spelling.isdigit() and 0 < int(spelling) < 65 else None


def signal_name(spelling: str) -> str:
    """SIGSEGV from "SIGSEGV", "sigsegv" or "SEGV"."""
    name = spelling.strip().upper()
    return name if name.startswith("SIG") else "SIG" + name


# The variables a pattern's regex may capture for a crash, and what each holds.
CAPTURES = (
    "ntstatus",  # an NTSTATUS in any spelling
    "ntstatus_text",  # faulthandler's name of a Windows exception ("access violation")
    "exit_status",  # an exit status or code: 128+N, -N, or an NTSTATUS
    "signal_number",
    "signal_name",  # SIGSEGV
    "signal_text",  # what the shells and faulthandler print ("Segmentation fault", zsh's "bus error")
    "oom_killed",  # Kubernetes' OOMKilled, the kernel's "Out of memory: Killed process": SIGKILL
)


def crash_lookup(variables: dict[str, str]) -> Optional[tuple[str, str, object]]:
    """What the captures name: ("value", table, number), ("name", table, name) or ("text", table,
    text); None when they name no crash (an ordinary exit status)."""
    if variables.get("ntstatus"):
        value = ntstatus_value(variables["ntstatus"])
        return ("value", NTSTATUS_TABLE, value) if value is not None else None
    if variables.get("ntstatus_text"):
        return "text", NTSTATUS_TABLE, variables["ntstatus_text"]
    if variables.get("exit_status"):
        found = exit_status_value(variables["exit_status"])
        return ("value", *found) if found is not None else None
    if variables.get("signal_name"):
        return "name", SIGNAL_TABLE, signal_name(variables["signal_name"])
    if variables.get("signal_number"):
        number = signal_number(variables["signal_number"])
        return ("value", SIGNAL_TABLE, number) if number is not None else None
    if variables.get("signal_text"):
        return "text", SIGNAL_TABLE, variables["signal_text"]
    if variables.get("oom_killed"):
        return "name", SIGNAL_TABLE, "SIGKILL"
    return None


# The spellings no other message shares, read into a message's parts whatever pattern explains it:
# an NTSTATUS in hex next to an exit code or faulthandler's words, the signed/unsigned decimal of
# an IDE's "exit code", and a signal named with its number.
PART_SPELLINGS = re.compile(
    r"exit(?:ed)? (?:with )?(?:code|status)[ :=]{0,2}\(?(?P<exit_status>-\d{10}|\d{10}|0x[0-9a-f]{8}|1(?:29|3\d|4\d|5\d))\b|"
    r"Windows fatal exception: code (?P<ntstatus>0x[0-9a-f]{8})\b|"
    r"\bsignal (?P<signal_number>\d{1,2}):? \(?(?P<signal_name>SIG[A-Z]{2,6})\b",
    re.I,
)
