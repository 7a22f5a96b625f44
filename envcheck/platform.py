"""One record per operating system envcheck knows: everything that follows from "this is WSL2" or
"this is native Windows", written once.

The OS is otherwise only a word in the snapshot (``facts.platform.os``); every question a command
asks about it (whose driver table applies, whose TensorFlow wheels install, which shell a printed
command is for, which variable the loader searches, where NVIDIA's installer puts a CUDA toolkit)
is answered here. WSL2 is the case that makes this worth a type: it runs the Linux wheels on the
Windows driver, with bash inside and PowerShell on the Windows side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from envcheck.errors import UsageError
from envcheck.shell import BASH, POWERSHELL

# Where NVIDIA's Windows installer puts each CUDA release (one folder per release, v11.2 ...).
WINDOWS_CUDA_ROOT = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"


@dataclass(frozen=True)
class Platform:
    name: str  # "linux", "windows", "wsl", "macos": what facts.platform.os and --os say
    title: str  # in sentences and plans: "Windows (native)" tells it apart from WSL2
    short_title: str  # in tables and driver lines: "Windows"
    driver_os: Optional[str]  # whose NVIDIA driver (and its version table) serves it; None: no CUDA driver
    wheels_os: str  # whose TensorFlow wheels (the matrix's rows) it installs
    shell: str  # the shell its printed commands are written for
    shells: tuple[str, ...]  # every shell a person types into for it (WSL2: bash inside, PowerShell on Windows)
    loader_variable: str  # the variable the dynamic loader searches for CUDA's libraries
    loader_title: str  # how sentences name it ("PATH"; PowerShell's $env:Path is the same variable)
    path_separator: str
    python: str  # the interpreter's name on PATH when the snapshot does not give its path
    nvml_library: str  # the file NVML (the driver's management library) is loaded from
    cuda_root: Optional[str]  # where NVIDIA's installer puts CUDA toolkits; None where there is none
    cuda_library_dir: str  # the toolkit's folder that holds the libraries the loader takes

    @property
    def windows_driver(self) -> bool:
        """The GPU is driven by the Windows driver (native Windows and WSL2)."""
        return self.driver_os == "windows"

    @property
    def linux_wheels(self) -> bool:
        """TensorFlow's Linux wheels install here (Linux and WSL2): the ones with CUDA as pip wheels."""
        return self.wheels_os == "linux"

    @property
    def windows_libraries(self) -> bool:
        """The loader takes DLLs, by name and without case (native Windows); elsewhere sonames."""
        return self.wheels_os == "windows"

    def cuda_home(self, version: object) -> Optional[str]:
        """The folder NVIDIA's installer gives CUDA ``version`` (major.minor) here."""
        if self.cuda_root is None:
            return None
        release = ".".join(str(version).split(".")[:2])
        if self.shell == POWERSHELL:
            return f"{self.cuda_root}\\v{release}"
        return f"{self.cuda_root}/cuda-{release}"

    def cuda_libraries(self, version: object) -> Optional[str]:
        """The folder of CUDA ``version``'s libraries the loader must find (bin on Windows, lib64 on Linux)."""
        home = self.cuda_home(version)
        if home is None:
            return None
        return home + ("\\" if self.shell == POWERSHELL else "/") + self.cuda_library_dir


LINUX = Platform(
    name="linux",
    title="Linux",
    short_title="Linux",
    driver_os="linux",
    wheels_os="linux",
    shell=BASH,
    shells=(BASH,),
    loader_variable="LD_LIBRARY_PATH",
    loader_title="LD_LIBRARY_PATH",
    path_separator=":",
    python="python3",
    nvml_library="libnvidia-ml.so.1",
    cuda_root="/usr/local",
    cuda_library_dir="lib64",
)
WINDOWS = Platform(
    name="windows",
    title="Windows (native)",
    short_title="Windows",
    driver_os="windows",
    wheels_os="windows",
    shell=POWERSHELL,
    shells=(POWERSHELL,),
    loader_variable="Path",  # the name Windows gives it; PowerShell's $env: ignores case
    loader_title="PATH",
    path_separator=";",
    python="python",
    nvml_library="nvml.dll",
    cuda_root=WINDOWS_CUDA_ROOT,
    cuda_library_dir="bin",
)
# WSL2: Linux inside (its wheels, shell, loader and CUDA folder), on the Windows driver, whose
# libraries WSL maps into /usr/lib/wsl/lib; the Windows side is typed into with PowerShell.
WSL = replace(
    LINUX,
    name="wsl",
    title="Windows, under WSL2",
    short_title="WSL2",
    driver_os="windows",
    shells=(BASH, POWERSHELL),
)
# macOS: no NVIDIA driver since CUDA 10.2, so no driver table and no CUDA toolkit to install.
MACOS = Platform(
    name="macos",
    title="macOS",
    short_title="macOS",
    driver_os=None,
    wheels_os="macos",
    shell=BASH,
    shells=(BASH,),
    loader_variable="DYLD_LIBRARY_PATH",
    loader_title="DYLD_LIBRARY_PATH",
    path_separator=":",
    python="python3",
    nvml_library="libnvidia-ml.dylib",
    cuda_root=None,
    cuda_library_dir="lib",
)

PLATFORMS: dict[str, Platform] = {p.name: p for p in (LINUX, WINDOWS, WSL, MACOS)}
OSES = tuple(PLATFORMS)  # "linux", "windows", "wsl", "macos"
WHEEL_OSES = tuple(dict.fromkeys(p.wheels_os for p in PLATFORMS.values()))  # the matrix's row OSes
DRIVER_OSES = tuple(dict.fromkeys(p.driver_os for p in PLATFORMS.values() if p.driver_os))  # NVIDIA's driver tables


def platform_named(name: str) -> Platform:
    """The platform for an OS word (``facts.platform.os``, ``--os``); a usage error for any other."""
    found = PLATFORMS.get(str(name).lower())
    if found is None:
        raise UsageError(f"unknown OS {name!r} (expected one of: {', '.join(OSES)})")
    return found


__all__ = [
    "DRIVER_OSES",
    "LINUX",
    "MACOS",
    "OSES",
    "PLATFORMS",
    "WHEEL_OSES",
    "WINDOWS",
    "WSL",
    "Platform",
    "platform_named",
]
