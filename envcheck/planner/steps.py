"""The exact steps of a plan, per platform, as data: what to do, the commands, why each line.

Nothing here runs anything. Commands create a virtual environment (``tf-env``) and install into
it; anything that changes the machine outside it (a driver, CUDA, PATH) is a download link or a
line the person runs on purpose, with a comment saying what it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from envcheck.matrix import requirement_text
from envcheck.planner.options import (
    CPU,
    DRIVER_INSTALL,
    DRIVER_OK,
    DRIVER_UNKNOWN,
    DRIVER_UPGRADE,
    Option,
)
from envcheck.planner.target import Target, TargetGpu
from envcheck.planner.worth import keep_settings
from envcheck.platform import LINUX, WINDOWS, platform_named
from envcheck.shell import BASH, POWERSHELL, Command, prepend_path, prepend_path_output, python_code, set_variable

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix

ENV_DIR = "tf-env"
DRIVER_PAGE = "https://www.nvidia.com/Download/index.aspx"
CUDA_ARCHIVE = "https://developer.nvidia.com/cuda-toolkit-archive"
CUDNN_ARCHIVE = "https://developer.nvidia.com/rdp/cudnn-archive"
PYTHON_WINDOWS = "https://www.python.org/downloads/windows/"
PYTHON_DOWNLOADS = "https://www.python.org/downloads/"
VC_REDIST = "https://aka.ms/vs/17/release/vc_redist.x64.exe"
WSL_CUDA_GUIDE = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"


def Line(text: str, why: str, shell: str) -> Command:
    """One line of a step: the command and what it is for."""
    return Command(text, shell=shell, why=why)


@dataclass(frozen=True)
class Step:
    title: str
    detail: str = ""
    lines: tuple[Command, ...] = ()
    url: Optional[str] = None
    side: str = ""  # under WSL2: "windows" (the host) or "wsl" (inside Linux); else ""

    def to_dict(self) -> dict:
        return {
            "title": self.title,
            "detail": self.detail,
            "side": self.side or None,
            "url": self.url,
            "commands": [c.to_dict() for c in self.lines],
        }


def shell_for(os: str) -> str:
    return platform_named(os).shell


def plan_steps(
    matrix: "Matrix", target: Target, option: Option, left_out: tuple[TargetGpu, ...] = ()
) -> tuple[Step, ...]:
    if option.os == "windows":
        steps = _windows(matrix, target, option)
    elif option.os == "wsl":
        steps = _wsl(matrix, target, option)
    else:
        steps = _posix(matrix, target, option)
    if left_out and option.kind != CPU:
        steps.insert(len(steps) - 1, leave_out_step(matrix, target, option, left_out))  # before the check
    return tuple(s for s in steps if s is not None)


def leave_out_step(matrix: "Matrix", target: Target, option: Option, left_out: tuple[TargetGpu, ...]) -> Step:
    """Hide the GPUs the release does not run on, so TensorFlow starts on the others."""
    shell = shell_for(option.os)
    names = ", ".join(f"{g.name} (compute capability {g.compute_capability})" for g in left_out)
    # A card whose architecture gets no driver as new as the plan's drops out of the driver's list
    # (and CUDA's) with the upgrade: nothing to hide, and it must not shift the others' numbers.
    floor = option.driver_floor
    gone = tuple(g for g in left_out if floor and matrix.supports_driver(str(g.compute_capability), floor) is False)
    left_out = tuple(g for g in left_out if g not in gone)
    why = {
        "CUDA_DEVICE_ORDER": "number the GPUs as nvidia-smi does, so the next line means the same GPUs everywhere",
        "CUDA_VISIBLE_DEVICES": "the GPUs TensorFlow uses (this shell only: add it to your profile or job script)",
    }
    lines = tuple(
        Line(set_variable(name, value, shell), why[name], shell)
        for name, value in keep_settings(target, target.gpus, left_out)
    )
    detail = (
        f"TensorFlow {option.tf} has no code for it (or no driver it can get runs it); hiding it keeps "
        "TensorFlow to the GPUs it runs on."
    )
    if gone:
        detail += f" The driver {option.tf} needs does not drive it at all, so TensorFlow will not see it."
    return Step(title=f"Leave out {names}", detail=detail, lines=lines, side="wsl" if option.os == "wsl" else "")


# --- pieces every platform uses ------------------------------------------------------------------


def _driver_step(target: Target, option: Option, shell: str, side: str = "") -> Optional[Step]:
    if option.kind == CPU or option.driver_status == DRIVER_OK or option.driver_floor is None:
        return None
    need = option.driver_floor
    windows_driver = platform_named(option.os).windows_driver
    title = {
        DRIVER_UPGRADE: f"Upgrade the NVIDIA driver from {target.driver} to {need} or newer",
        DRIVER_INSTALL: f"Install the NVIDIA driver, {need} or newer",
        DRIVER_UNKNOWN: f"Make sure the NVIDIA driver is {need} or newer",
    }[option.driver_status]
    if option.os == "wsl":
        detail = (
            "Install the ordinary Windows driver for the card on the Windows side; it also serves WSL2. "
            "Never install an NVIDIA Linux driver inside WSL2."
        )
    elif windows_driver:
        detail = "Download the driver for the card from NVIDIA (Game Ready or Studio both work) and restart."
    else:
        detail = (
            "Use the distribution's packages (Ubuntu: 'sudo ubuntu-drivers install') or NVIDIA's; "
            "reboot afterwards so the kernel module and the user-space library match."
        )
    check = _driver_check(need, POWERSHELL if windows_driver and side != "wsl" else BASH)
    return Step(title=title, detail=detail, lines=(check,), url=DRIVER_PAGE, side=side)


def _driver_check(need, shell: str) -> Command:
    why = f"stops here unless the driver is {need} or newer"
    if shell == POWERSHELL:
        return Line(
            "$driver = (nvidia-smi --query-gpu=driver_version --format=csv,noheader | Select-Object -First 1).Trim(); "
            f'if ([version]$driver -lt [version]"{need}") {{ throw "driver $driver is older than {need}: upgrade it first" }}',
            why,
            POWERSHELL,
        )
    return Line(
        "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1); "
        f'printf "%s\\n" "{need}" "$driver" | sort -V -C || {{ echo "driver $driver is older than {need}: upgrade it first"; exit 1; }}',
        why,
        BASH,
    )


def _python_step(target: Target, option: Option, shell: str, side: str = "") -> Optional[Step]:
    known_ok = target.python is not None and not option.python_change and target.python_bits in (None, 64)
    versions = option.python_range
    if shell == POWERSHELL:
        if known_ok and target.python_bits == 64:
            return None
        # 32-bit Python is the classic Windows trap: pip then finds no TensorFlow at all.
        return Step(
            title=f"Check that Python {option.python} is the 64-bit build"
            if known_ok
            else f"Install 64-bit Python {option.python}",
            detail=f"TensorFlow {option.tf} supports Python {versions}. Take the 'Windows installer (64-bit)'; "
            "the py launcher then finds it by version.",
            lines=(
                Line(
                    f"py -{option.python} -c \"import struct, sys; sys.exit(0 if struct.calcsize('P') == 8 else 'this Python is 32-bit')\"",
                    f"stops here unless Python {option.python} is installed and 64-bit",
                    POWERSHELL,
                ),
            ),
            url=PYTHON_WINDOWS,
            side=side,
        )
    if known_ok and side != "wsl":
        return None
    return Step(
        title=f"Install Python {option.python}",
        detail=f"TensorFlow {option.tf} supports Python {versions}. Use the distribution's python{option.python} and "
        f"python{option.python}-venv packages, pyenv, or conda; any 64-bit build will do.",
        lines=(Line(f"python{option.python} --version", f"must print Python {option.python}.x", BASH),),
        url=PYTHON_DOWNLOADS,
        side=side,
    )


def environment_steps(matrix: "Matrix", target: Target, option: Option) -> tuple[Step, ...]:
    """The Python the option needs and a virtual environment with the release in it: what any
    fix that moves to another release must do when this interpreter cannot run that release."""
    shell = shell_for(option.os)
    steps = [_python_step(target, option, shell), _install_step(matrix, option, shell)]
    return tuple(s for s in steps if s is not None)


def requirement(option: Option) -> str:
    """The pip requirement for an option, pinned to its release series (newest patch), or to the
    exact release asked for."""
    if option.kind == CPU:
        return requirement_text(option.cpu_distribution, None, option.build, option.exact)
    return requirement_text(option.build.distribution, option.cuda_extra, option.build, option.exact)


def _install_step(matrix: "Matrix", option: Option, shell: str, side: str = "", constraints: bool = False) -> Step:
    spec = requirement(option)
    if shell == POWERSHELL:
        py = rf".\{ENV_DIR}\Scripts\python.exe"
        create = Line(
            f"py -{option.python} -m venv {ENV_DIR}",
            "a fresh environment keeps TensorFlow's pinned dependencies apart from other projects",
            POWERSHELL,
        )
    else:
        py = f"{ENV_DIR}/bin/python"
        create = Line(
            f"python{option.python} -m venv {ENV_DIR}",
            "a fresh environment keeps TensorFlow's pinned dependencies apart from other projects",
            BASH,
        )
    lines = [
        create,
        Line(
            f"{py} -m pip install --upgrade pip",
            "TensorFlow's wheels need a recent pip (19.0 or newer; 20.3 on macOS)",
            shell,
        ),
    ]
    if constraints:
        lines.append(_constraints_line(option, shell))
        lines.append(
            Line(
                f'{py} -m pip install -c {CONSTRAINTS_FILE} "{spec}" '
                + " ".join(sorted(option.build.pip_cuda.packages)),
                "TensorFlow and the CUDA/cuDNN wheels, held to the versions it was tested with",
                shell,
            )
        )
    else:
        why = f"TensorFlow {option.tf}"
        if option.cuda_extra:
            why += f" with the CUDA {option.cuda} and cuDNN {option.cudnn} libraries as pip wheels (the '{option.cuda_extra}' extra)"
        if option.kind == CPU and option.cpu_distribution == "tensorflow-cpu":
            why += "; the CPU build carries no CUDA, so it prints no CUDA start-up errors on a machine without a GPU"
        lines.append(Line(f'{py} -m pip install "{spec}"', why, shell))
    detail = "Nothing outside the environment changes; delete the folder to undo."
    if shell == POWERSHELL:
        detail += (
            " If pip stops with an OSError about a path deep inside site-packages, Windows long paths "
            "are off: an administrator can enable them (Group Policy or the LongPathsEnabled registry value)."
        )
    return Step(
        title=f"Install TensorFlow {option.tf} into a virtual environment ({ENV_DIR})",
        detail=detail,
        lines=tuple(lines),
        side=side,
    )


CONSTRAINTS_FILE = "tf-constraints.txt"


def _constraints_line(option: Option, shell: str) -> Command:
    pins = [f"{name}{spec}" for name, spec in sorted(option.build.pip_cuda.packages.items())]
    if shell == POWERSHELL:
        text = f"Set-Content -Path {CONSTRAINTS_FILE} -Value @({', '.join(repr(p) for p in pins)})"
    else:
        text = f"printf '%s\\n' {' '.join(repr(p) for p in pins)} > {CONSTRAINTS_FILE}"
    return Line(
        text, f"writes {CONSTRAINTS_FILE}: the CUDA/cuDNN wheel versions TensorFlow {option.tf} was tested with", shell
    )


def _needs_constraints(option: Option) -> bool:
    """The CUDA extra pins the CUDA wheels itself; releases before it need the pins spelled out."""
    pip_cuda = option.build.pip_cuda
    return (
        option.kind != CPU and option.os != "windows" and not option.cuda_extra and bool(pip_cuda and pip_cuda.packages)
    )


def _verify_step(option: Option, shell: str, side: str = "") -> Step:
    py = rf".\{ENV_DIR}\Scripts\python.exe" if shell == POWERSHELL else f"{ENV_DIR}/bin/python"
    if option.kind == CPU and option.build.tf.release[:1] >= (2,):
        code = "import tensorflow as tf; print(tf.reduce_sum(tf.random.normal([1000, 1000])))"
        what = "prints a tf.Tensor: TensorFlow computes on the CPU"
    elif option.kind == CPU:
        # TensorFlow 1 builds a graph (no eager tensors, no tf.random.normal before 1.12): run it in a session.
        code = "import tensorflow as tf; print(tf.Session().run(tf.reduce_sum(tf.random_normal([1000, 1000]))))"
        what = "prints a number: TensorFlow computes on the CPU"
    elif option.build.tf.release[:2] >= (2, 1):
        code = (
            "import tensorflow as tf; gpus = tf.config.list_physical_devices('GPU'); print(gpus); assert gpus, 'no GPU'"
        )
        what = "lists the GPUs TensorFlow sees; fails when there are none"
    else:
        code = "import tensorflow as tf; assert tf.test.is_gpu_available(), 'no GPU'"
        what = "fails unless TensorFlow can use the GPU"
    return Step(
        title="Check it",
        detail="envcheck doctor --python checks that interpreter link by link and names the first broken one.",
        lines=(
            Line(f'{py} -c "{code}"', what, shell),
            _doctor_line(py, shell),
        ),
        side=side,
    )


def _doctor_line(py: str, shell: str) -> Command:
    why = "if envcheck is installed: the whole chain, with a matmul and a convolution on each GPU"
    if shell == POWERSHELL:
        return Line(
            f"if (Get-Command envcheck -ErrorAction SilentlyContinue) {{ envcheck doctor --python {py} }}", why, shell
        )
    return Line(f"if command -v envcheck >/dev/null; then envcheck doctor --python {py}; fi", why, shell)


def _library_note(option: Option) -> str:
    libraries = option.build.libraries
    return f" TensorFlow {option.tf} loads: {', '.join(libraries)}." if libraries else ""


# --- Linux and macOS -----------------------------------------------------------------------------


def _posix(matrix: "Matrix", target: Target, option: Option) -> list[Optional[Step]]:
    steps: list[Optional[Step]] = [_driver_step(target, option, BASH), _python_step(target, option, BASH)]
    steps.extend(_linux_cuda(matrix, option))
    steps.append(_verify_step(option, BASH))
    return steps


def _linux_cuda(matrix: "Matrix", option: Option, side: str = "") -> list[Step]:
    """CUDA through the pip extra, through pinned CUDA wheels, or from NVIDIA's downloads."""
    if option.kind == CPU or option.cuda_extra:
        return [_install_step(matrix, option, BASH, side=side)]
    if _needs_constraints(option):
        return [_install_step(matrix, option, BASH, side=side, constraints=True), _wheel_library_path(option, side)]
    return _linux_system_cuda(matrix, option, side) + [_install_step(matrix, option, BASH, side=side)]


def _wheel_library_path(option: Option, side: str) -> Step:
    """Before the CUDA extra, TensorFlow did not look inside the nvidia-* wheels by itself."""
    finder = (
        "import glob, os, nvidia; "
        "print(':'.join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], '*', 'lib')))))"
    )
    return Step(
        title="Let TensorFlow find the CUDA wheels' libraries",
        detail=f"TensorFlow {option.tf} loads CUDA from the loader path only; put the export in tf-env/bin/activate to keep it.",
        lines=(
            Line(
                prepend_path_output(LINUX.loader_variable, python_code(f"{ENV_DIR}/bin/python", BASH, finder), BASH),
                "the lib folders of the nvidia-* wheels, on the loader path (this shell only)",
                BASH,
            ),
        ),
        side=side,
    )


def _linux_system_cuda(matrix: "Matrix", option: Option, side: str = "") -> list[Step]:
    """Releases without CUDA wheels on pip: the toolkit and cuDNN come from NVIDIA's downloads."""
    cuda = matrix.cuda(option.cuda) if option.cuda else None
    cudnn = matrix.cudnn(option.cudnn) if option.cudnn else None
    home = LINUX.cuda_home(option.cuda)
    libs = LINUX.cuda_libraries(option.cuda)
    wsl = side == "wsl"
    toolkit_detail = (
        "Pick 'WSL-Ubuntu' as the distribution and install only the toolkit package "
        f"(cuda-toolkit-{str(option.cuda).replace('.', '-')}); the 'cuda' and 'cuda-drivers' packages would "
        "put a Linux driver inside WSL2, which breaks GPU access."
        if wsl
        else "Install the toolkit only (runfile: --toolkit; deb: the cuda-toolkit package) when the driver is already new enough."
    )
    return [
        Step(
            title=f"Install the CUDA {option.cuda} toolkit",
            detail=toolkit_detail + _library_note(option),
            lines=(Line(f"ls {libs}/libcudart.so*", f"must list the CUDA {option.cuda} runtime", BASH),),
            url=(cuda.download_url if cuda and cuda.download_url else CUDA_ARCHIVE),
            side=side,
        ),
        Step(
            title=f"Install cuDNN {option.cudnn} for CUDA {option.cuda}",
            detail=(
                "Download the Linux archive (a free NVIDIA developer login is needed), unpack it, and copy "
                f"its include/ and lib64/ (lib/ in newer archives) folders into {home}."
            ),
            lines=(Line(f"ls {libs}/libcudnn.so*", f"must list cuDNN {option.cudnn}", BASH),),
            url=(cudnn.download_url if cudnn and cudnn.download_url else CUDNN_ARCHIVE),
            side=side,
        ),
        Step(
            title="Let TensorFlow find the libraries",
            detail="Put the export in ~/.bashrc to keep it for new shells.",
            lines=(
                Line(
                    prepend_path(LINUX.loader_variable, libs, BASH),
                    "TensorFlow looks for libcudart and libcudnn on the loader path (this shell only)",
                    BASH,
                ),
            ),
            side=side,
        ),
    ]


# --- native Windows ------------------------------------------------------------------------------


def _windows(matrix: "Matrix", target: Target, option: Option) -> list[Optional[Step]]:
    steps: list[Optional[Step]] = [_driver_step(target, option, POWERSHELL), _python_step(target, option, POWERSHELL)]
    steps.append(
        Step(
            title="Install the Microsoft Visual C++ Redistributable (x64)",
            detail="TensorFlow's Windows wheels need its runtime DLLs (msvcp140.dll, and msvcp140_1.dll from 2.1 on); "
            "the current 2015-2022 package covers every release.",
            url=VC_REDIST,
        )
    )
    if option.kind != CPU:
        steps.extend(_windows_cuda(matrix, option))
    steps.append(_install_step(matrix, option, POWERSHELL))
    steps.append(_verify_step(option, POWERSHELL))
    return steps


def _windows_cuda(matrix: "Matrix", option: Option) -> list[Step]:
    """CUDA from NVIDIA's Windows installer, cuDNN copied into its folder, and the PATH entries."""
    cuda = matrix.cuda(option.cuda) if option.cuda else None
    cudnn = matrix.cudnn(option.cudnn) if option.cudnn else None
    folder = WINDOWS.cuda_home(option.cuda)
    dlls = [name for name in option.build.libraries if name.lower().endswith(".dll")]
    cudart = next((d for d in dlls if d.lower().startswith("cudart")), None)
    cudnn_dll = next((d for d in dlls if d.lower().startswith("cudnn")), None)
    set_cuda = Line(f'$cuda = "{folder}"', f"where the CUDA {option.cuda} installer puts the toolkit", POWERSHELL)
    toolkit_lines = [set_cuda]  # the later steps reuse $cuda
    if cudart:
        toolkit_lines.append(
            Line(
                f'if (-not (Test-Path "$cuda\\bin\\{cudart}")) {{ throw "CUDA {option.cuda} is not installed: {cudart} is missing" }}',
                f"TensorFlow {option.tf} loads {cudart} and nothing else will do",
                POWERSHELL,
            )
        )
    cudnn_lines = _cudnn_copy_lines(option, cudnn_dll)
    path_lines = _windows_path_lines()
    return [
        Step(
            title=f"Install CUDA {option.cuda}",
            detail=(
                f"Run the Windows installer from CUDA {option.cuda}'s archive page; it installs into {folder}. "
                "Choose 'Custom' and untick 'Display Driver' when your driver is already newer than the bundled one."
                + _library_note(option)
            ),
            lines=tuple(toolkit_lines),
            url=(cuda.download_url if cuda and cuda.download_url else CUDA_ARCHIVE),
        ),
        Step(
            title=f"Install cuDNN {option.cudnn} for CUDA {option.cuda}",
            detail=(
                f"Download 'cuDNN {option.cudnn} for CUDA {option.cuda}' for Windows (a free NVIDIA developer login is "
                f"needed) and unzip it. Copy its bin, include and lib folders' contents into the same folders under {folder}; "
                "or keep it in a folder of its own (e.g. C:\\tools\\cuda) and add that folder's bin to PATH."
            ),
            lines=tuple(cudnn_lines),
            url=(cudnn.download_url if cudnn and cudnn.download_url else CUDNN_ARCHIVE),
        ),
        Step(
            title="PATH entries",
            detail=(
                f"{folder}\\bin and {folder}\\libnvvp (the installer adds both), {folder}\\extras\\CUPTI\\lib64, "
                "and cuDNN's bin if you kept it in a folder of its own. Open a new terminal after installing."
            ),
            lines=path_lines,
        ),
    ]


def _cudnn_copy_lines(option: Option, cudnn_dll: Optional[str]) -> list[Command]:
    """Copy an unzipped cuDNN into the CUDA folder ($cuda), then check the DLL TensorFlow loads is there."""
    lines = [
        Line(
            '$cudnn = "$HOME\\Downloads\\cudnn\\cuda"',
            "EDIT: the folder you unzipped cuDNN into (it holds bin, include and lib)",
            POWERSHELL,
        ),
        Line(
            'Copy-Item "$cudnn\\bin\\*" "$cuda\\bin"',
            "the cuDNN DLLs next to the CUDA ones, where TensorFlow looks (needs an administrator shell)",
            POWERSHELL,
        ),
        Line('Copy-Item "$cudnn\\include\\*" "$cuda\\include"', "the headers (only compilers need them)", POWERSHELL),
        Line(
            'Copy-Item "$cudnn\\lib\\x64\\*" "$cuda\\lib\\x64"',
            "the import libraries (only compilers need them)",
            POWERSHELL,
        ),
    ]
    if cudnn_dll:
        lines.append(
            Line(
                f'if (-not (Test-Path "$cuda\\bin\\{cudnn_dll}")) {{ throw "{cudnn_dll} is not in $cuda\\bin" }}',
                f"TensorFlow {option.tf} loads {cudnn_dll}",
                POWERSHELL,
            )
        )
    return lines


def _windows_path_lines() -> tuple[Command, ...]:
    """The CUDA folders on PATH for this session, and (commented out) for good."""
    return (
        Line(
            '$env:Path = "$cuda\\bin;$cuda\\libnvvp;$cuda\\extras\\CUPTI\\lib64;$env:Path"',
            "this PowerShell session only: the installer adds bin and libnvvp to PATH for new windows; CUPTI serves TensorFlow's profiler",
            POWERSHELL,
        ),
        Line(
            '# [Environment]::SetEnvironmentVariable("Path", "$cuda\\extras\\CUPTI\\lib64;" + [Environment]::GetEnvironmentVariable("Path", "User"), "User")',
            "remove the leading '# ' to add CUPTI to your user PATH for good (changes your environment)",
            POWERSHELL,
        ),
    )


# --- WSL2 ----------------------------------------------------------------------------------------


def _wsl(matrix: "Matrix", target: Target, option: Option) -> list[Optional[Step]]:
    steps: list[Optional[Step]] = [
        Step(
            title="Windows 10 21H2 (build 19044) or newer, or Windows 11",
            detail="WSL2 passes the GPU through from these builds on; 'winver' shows yours.",
            lines=(Line("[System.Environment]::OSVersion.Version", "Build must be 19044 or higher", POWERSHELL),),
            side="windows",
        ),
    ]
    if option.kind != CPU:
        steps.append(_driver_step(target, option, POWERSHELL, side="windows"))
    steps.append(
        Step(
            title="Install WSL2 with a Linux distribution",
            detail="In an administrator PowerShell. An existing WSL1 distribution converts with 'wsl --set-version <name> 2'.",
            lines=(
                Line("wsl --install -d Ubuntu", "installs WSL2 and Ubuntu (restart when asked)", POWERSHELL),
                Line("wsl --update", "the WSL kernel that carries GPU support", POWERSHELL),
            ),
            url="https://learn.microsoft.com/windows/wsl/install",
            side="windows",
        )
    )
    if option.kind != CPU:
        steps.append(
            Step(
                title="Check that the GPU is visible",
                detail="The driver's Linux side comes from Windows through /usr/lib/wsl/lib; install no NVIDIA driver "
                "inside WSL2, and CUDA only as pip wheels (or the WSL-Ubuntu toolkit package for older releases).",
                lines=(
                    Line(
                        "ls /usr/lib/wsl/lib/libcuda.so.1", "the Windows driver's CUDA library, as WSL2 sees it", BASH
                    ),
                    Line("nvidia-smi", "must list the GPU and the Windows driver version", BASH),
                ),
                url=WSL_CUDA_GUIDE,
                side="wsl",
            )
        )
    steps.append(_python_step(target, option, BASH, side="wsl"))
    steps.extend(_linux_cuda(matrix, option, side="wsl"))
    steps.append(_verify_step(option, BASH, side="wsl"))
    return steps
