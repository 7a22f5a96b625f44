"""Commands envcheck prints: one type, and one way to quote what goes into them.

Every command a fix, a plan step or a script shows is built here, so that a value taken from a
machine (a folder, an interpreter path, a GPU name) can never turn into shell syntax: bash gets
POSIX single quotes (``'it'\\''s'``), PowerShell single quotes with ``''`` doubling, cmd double
quotes. A word made only of safe characters is left as it is, so ordinary commands read naturally.
Nothing here runs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from envcheck.printable import is_hidden

BASH = "bash"
POWERSHELL = "powershell"
CMD = "cmd"
ANY = "any"
SHELLS = (ANY, BASH, POWERSHELL, CMD)
SHELL_TITLES = {BASH: "bash", POWERSHELL: "PowerShell", CMD: "cmd", ANY: "any shell"}

# Characters no shell treats specially in a word. PowerShell: a ',' makes an array, a leading
# '@' splats and '--%' stops parsing, so those words are quoted there.
_SAFE = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")
# PowerShell ends a single-quoted string at any of these, not only at "'" (its grammar's
# single-quote-character), and reads two of them in a row as one literal quote: each is doubled.
_POWERSHELL_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")
_SAFE_POWERSHELL = re.compile(r"(?!--%)[A-Za-z0-9_./:=%+-][A-Za-z0-9_./:=@%+-]*")


@dataclass(frozen=True)
class Command:
    """One command line. ``shell`` is "bash", "powershell", "cmd", or "any" when every shell reads
    it the same; ``why`` says what the line is for (plan steps and scripts show it)."""

    line: str
    shell: str = ANY
    # pip steps are the only ones --apply runs: their arguments after "python -m pip".
    pip_args: Optional[tuple[str, ...]] = None
    why: Optional[str] = None

    def to_dict(self) -> dict:
        out: dict = {"shell": self.shell, "line": self.line}
        if self.pip_args:
            out["pip_args"] = list(self.pip_args)
        if self.why:
            out["why"] = self.why
        return out


# What exists only on Linux: its kernel's files and interfaces, its loader and package managers, its
# driver-module tools. macOS has none of them (its loader reads DYLD_*, its packages come from
# installers or Homebrew) and native Windows neither; a bash or "any shell" line that names one
# does not run there.
_LINUX_ONLY = re.compile(
    r"/proc/|/sys/|/dev/(?:nvidia|shm|dxg)|/etc/(?:os-release|ld\.so|modprobe|apt|default|X11|nvidia)|"
    r"/usr/local/cuda|/usr/lib/(?:x86_64|aarch64|wsl)|/usr/lib64|/lib/modules|\bLD_LIBRARY_PATH\b|"
    r"\b(?:ldconfig|ldd|apt|apt-get|apt-cache|dpkg|rpm|yum|dnf|zypper|pacman|snap|lsmod|modprobe|rmmod|"
    r"modinfo|insmod|dkms|mokutil|dmesg|lspci|systemctl|journalctl|update-initramfs|update-alternatives|"
    r"nvidia-modprobe|nvidia-ctk|nvidia-container-cli|nproc)\b"
)
# NVIDIA's tools and toolkit layout that no current macOS has (CUDA for macOS ended with 10.2).
_NO_NVIDIA_ON_MACOS = re.compile(r"\b(?:nvidia-smi|nvcc|cuobjdump|nvidia-debugdump)\b|\bCUDA_PATH\b")
_SHELLS_OF = {"windows": {POWERSHELL, CMD, ANY}, "macos": {BASH, ANY}, "linux": {BASH, ANY}}


def runs_on(shell: str, line: str, system: Optional[str]) -> bool:
    """Whether a command for ``shell`` runs as written on ``system`` (``windows``, ``macos``,
    ``linux``). WSL keeps every command (its fixes can need PowerShell on the Windows side, such as
    ``wsl --shutdown``), and so does a log whose system is unknown (each shell is shown labelled)."""
    shells = _SHELLS_OF.get(system or "")
    if shells is None:
        return True
    if shell not in shells:
        return False
    if system == "linux":
        return True
    return not (_LINUX_ONLY.search(line) or (system == "macos" and _NO_NVIDIA_ON_MACOS.search(line)))


def quote(word: str, shell: str) -> str:
    """``word`` as one literal word of ``shell`` ("any" quotes for bash and PowerShell alike)."""
    text = str(word)
    if shell == POWERSHELL:
        return text if _SAFE_POWERSHELL.fullmatch(text) else _powershell_literal(text)
    if shell == CMD:
        # cmd has no escape inside double quotes; '"' and '%' cannot be written literally there.
        return text if _SAFE.fullmatch(text) and "%" not in text else '"' + text.replace('"', "") + '"'
    if shell == ANY:
        # A form both bash and PowerShell read as one literal word: single quotes, no quote inside.
        if _SAFE.fullmatch(text):
            return text
        if not _POWERSHELL_QUOTES.search(text):
            return "'" + text + "'"
        raise ValueError(f"cannot quote {text!r} for every shell at once; pick bash or PowerShell")
    if _SAFE.fullmatch(text):
        return text
    return _bash_ansi_c(text) if any(map(is_hidden, text)) else "'" + text.replace("'", "'\\''") + "'"


def _bash_ansi_c(text: str) -> str:
    """``$'...'``, bash's ANSI-C quoting: the one form in which a control character (an escape, a
    newline, a bidi override) is written as an escape, so the printed line shows it harmlessly
    and, pasted, still names the file exactly, byte for byte."""
    return "$'" + "".join(_ansi_c(c) for c in text) + "'"


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if not is_hidden(char):
        return char
    code = ord(char)
    if char in "\n\t\r":
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char]
    # Bytes, not \u: bash reads \u by the locale (as text in the C locale), a byte the same in
    # every one. A surrogate is a byte that was not UTF-8, kept by surrogateescape.
    try:
        return "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # a surrogate no file name can hold: shown, not meant
        return f"\\u{code:04x}"


def join(words: tuple[str, ...] | list[str], shell: str) -> str:
    return " ".join(quote(w, shell) for w in words)


def program(path: str, shell: str) -> str:
    """A program to run, by path: PowerShell needs the call operator for a quoted path."""
    quoted = quote(path, shell)
    if shell == POWERSHELL and quoted != path:
        return "& " + quoted
    return quoted


def run(path: str, args: tuple[str, ...] | list[str], shell: str) -> str:
    """``path args...`` with every part quoted for ``shell``."""
    return " ".join([program(path, shell), *(quote(a, shell) for a in args)])


def pip_command(python: str, shell: str, *args: str, step: bool = True) -> Command:
    """``<python> -m pip ARGS`` for one interpreter. ``--apply`` runs exactly ``pip_args``, so an
    alternative (``step=False``: "or install TF 2.10 instead") carries none and is only shown."""
    return Command(run(python, ("-m", "pip", *args), shell), shell=shell, pip_args=tuple(args) if step else None)


def python_code(python: str, shell: str, code: str) -> str:
    """``<python> -c CODE`` with the code as one word for ``shell``: in double quotes when nothing
    in it is special there (code reads best so), else quoted like any other word."""
    return " ".join([program(python, shell), "-c", quote_code(code, shell)])


def quote_code(code: str, shell: str) -> str:
    # PowerShell's double-quoted strings also end at the typographic double quotes.
    special = {POWERSHELL: '"`$\u201c\u201d\u201e', CMD: '"%^&|<>'}.get(shell, '"$`\\!')
    if not any(ch in code for ch in special):
        return '"' + code + '"'
    return quote_always(code, shell)


def set_variable(name: str, value: str, shell: str) -> str:
    """The line that sets an environment variable for this shell session."""
    if shell == POWERSHELL:
        return f"$env:{name} = {quote_always(value, POWERSHELL)}"
    if shell == CMD:
        return f'set "{name}={value}"'
    return f"export {name}={quote(value, BASH)}"


def with_variable(name: str, value: str, command: str, shell: str) -> str:
    """``command`` run with one variable set: for that command only in bash (``NAME=value cmd``),
    for the session in PowerShell, which has no such prefix."""
    if shell == POWERSHELL:
        return f"{set_variable(name, value, shell)}; {command}"
    return f"{name}={quote(value, BASH)} {command}"


def unset_variable(name: str, shell: str) -> str:
    """The line that removes an environment variable from this shell session."""
    if shell == POWERSHELL:
        return f"Remove-Item Env:{name}"
    if shell == CMD:
        return f'set "{name}="'
    return f"unset {name}"


def prepend_path(variable: str, directory: str, shell: str) -> str:
    """Put ``directory`` first on a search-path variable (PATH, LD_LIBRARY_PATH) for this session,
    keeping what it held: the folder stays one literal word whatever characters it has."""
    if shell == POWERSHELL:
        return f"$env:{variable} = {quote_always(directory + ';', POWERSHELL)} + $env:{variable}"
    if shell == CMD:
        return f'set "{variable}={directory};%{variable}%"'
    return f"export {variable}={quote(directory, BASH)}${{{variable}:+:${variable}}}"


def prepend_path_under(variable: str, base: str, tail: str, shell: str) -> str:
    """Put ``$base/tail`` first on a search-path variable, ``base`` an environment variable the
    shell expands (CONDA_PREFIX): ``export LD_LIBRARY_PATH="$CONDA_PREFIX/lib${LD_LIBRARY_PATH:+:...}"``."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", base) or not _SAFE.fullmatch(tail):
        raise ValueError(f"not a variable and a plain folder name: {base!r}, {tail!r}")
    if shell == POWERSHELL:
        return f'$env:{variable} = "$env:{base}\\{tail};" + $env:{variable}'
    return f'export {variable}="${base}/{tail}${{{variable}:+:${variable}}}"'


def prepend_path_output(variable: str, command: str, shell: str) -> str:
    """Put the folders ``command`` prints first on a search-path variable. ``command`` is a line
    envcheck builds from its own constants (a python -c that lists the pip wheels' folders); the
    shell runs it, and its output stays one word."""
    if shell == POWERSHELL:
        return f"$env:{variable} = ({command}) + ';' + $env:{variable}"
    return f'export {variable}="$({command})${{{variable}:+:${variable}}}"'


def quote_always(word: str, shell: str) -> str:
    """Like ``quote``, but always quoted (for values whose quotes make the line read better)."""
    if shell == POWERSHELL:
        return _powershell_literal(str(word))
    if any(map(is_hidden, str(word))):
        return _bash_ansi_c(str(word))
    return "'" + str(word).replace("'", "'\\''") + "'"


def _powershell_literal(text: str) -> str:
    return "'" + _POWERSHELL_QUOTES.sub(lambda m: m.group() * 2, text) + "'"


def for_shell(shell: str, bash: str, powershell: Optional[str] = None) -> Command:
    """A non-pip command in the shell of the probed platform (PowerShell on native Windows)."""
    if shell == POWERSHELL:
        return Command(powershell if powershell is not None else bash, shell=POWERSHELL)
    return Command(bash, shell=BASH)
