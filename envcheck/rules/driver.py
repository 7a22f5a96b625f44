"""Link 3: the NVIDIA driver: kernel module loaded, NVML answering and matching it, new enough."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from envcheck.findings import Fix, Severity
from envcheck.machine import ABSENT, minor, parse_version
from envcheck.rules.compute import known_capabilities
from envcheck.rules.engine import Context, Hit, rule
from envcheck.rules.evidence import matrix_evidence
from envcheck.rules.gpu import (
    CONTAINER_TOOLKIT_PAGE,
    NVIDIA_DRIVER_PAGE,
    install_driver_fix,
    predating_driver,
    unbound_cards,
)
from envcheck.rules.installs import install_release

if TYPE_CHECKING:
    from envcheck.matrix.model import DriverRequirement

CUDA_COMPAT_PAGE = "https://docs.nvidia.com/deploy/cuda-compatibility/"


@rule("EC-DRV-001", "Driver too old for the CUDA version TensorFlow was built with", "error", "driver")
def driver_too_old(ctx: Context) -> Iterator[Hit]:
    """Each CUDA release needs a minimum driver (NVIDIA's release notes); CUDA 11+ also runs on the
    major's minor-version-compatibility floor, with reduced features."""
    cuda = ctx.tf_cuda
    drv = ctx.driver_version
    have = parse_version(drv)
    if cuda is None or have is None:
        return
    need = ctx.driver_requirement(cuda)
    if need is None or need.minimum is None:
        return  # the matrix does not know this CUDA release: unknown, not a guess
    runs, full = need.minimum, need.full
    if have >= (full or runs):
        return
    evidence = _too_old_evidence(ctx, cuda, need)
    release = minor(ctx.installed_tf.version) if ctx.installed_tf else None
    if have >= runs:
        yield _minor_compat_only(ctx, cuda, need, evidence, release)
        return
    python = ctx.facts.python.version or None
    older = ctx.newest_release(
        gpu=True,
        python=python,
        accept=lambda b: b.cuda is not None and _minimum(ctx, b.cuda, have) <= have and _runs_on_the_gpus(ctx, b),
    )
    fix = install_driver_fix(ctx, "Update the NVIDIA driver")
    # A GPU whose architecture gets no driver new enough (Kepler after 470): the upgrade is no
    # fix, EC-CC-003 is the cause.
    stuck = any(ctx.matrix.supports_driver(cc, runs) is False for _gpu, cc in known_capabilities(ctx))
    # Where the build has no code for any GPU, a newer driver changes nothing: the move to another
    # release (EC-CC-001) is the cause, and its plan says which driver that release needs.
    no_code = bool(known_capabilities(ctx)) and all(
        ctx.gpu_run(cc).code == "none" for _gpu, cc in known_capabilities(ctx)
    )
    commands = fix.commands
    text = fix.text
    if older is not None:
        install, python_note = install_release(ctx, older)
        text += (
            f" Or keep driver {drv} and install TensorFlow {older.label} (built for CUDA {older.cuda}), "
            f"the newest release this driver runs.{python_note}"
        )
        commands = commands + install
    yield Hit(
        title=f"Driver {drv} is too old for CUDA {minor(cuda)}, which TensorFlow was built with (needs {runs} or newer)",
        detail=(
            f"CUDA {cuda} needs driver {runs} or newer on {need.os_title}; "
            "with an older driver cuInit fails and TensorFlow lists no GPU."
        ),
        evidence=tuple(evidence),
        fix=Fix(text=text, commands=commands, url=fix.url, release=release),
        caused_by="EC-CC-003" if stuck else "EC-CC-001" if no_code else None,
    )


def _too_old_evidence(ctx: Context, cuda: str, need: "DriverRequirement") -> list[tuple[str, str]]:
    """The driver, what it supports, what the matrix asks of it, and the build's row."""
    runs, full = need.minimum, need.full
    evidence = [("driver version", str(ctx.driver_version))]
    if ctx.facts.nvml.cuda_driver_version:
        evidence.append(("highest CUDA the driver supports", ctx.facts.nvml.cuda_driver_version))
    evidence.append(
        (
            f"matrix: CUDA {minor(cuda)} minimum driver ({need.os_title})",
            f"{full}" + (f", minor-version-compatibility floor {runs}" if runs != full else ""),
        )
    )
    if ctx.tf_build is not None:
        evidence.append(matrix_evidence(ctx, ctx.tf_build))
    return evidence


def _minor_compat_only(
    ctx: Context, cuda: str, need: "DriverRequirement", evidence: list[tuple[str, str]], release: Optional[str]
) -> Hit:
    """A driver between the major's floor and the release's own minimum: it runs, with reduced features."""
    drv, runs, full = ctx.driver_version, need.minimum, need.full
    return Hit(
        title=f"Driver {drv} is older than CUDA {minor(cuda)} asks for ({full}); it runs only through minor-version compatibility",
        detail=(
            f"TensorFlow was built with CUDA {cuda}. Driver {drv} runs it (it is above the CUDA "
            f"{cuda.split('.')[0]}.x floor {runs}), but kernels that must be JIT-compiled from newer PTX "
            "fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION, which hits new GPUs and XLA."
        ),
        evidence=tuple(evidence),
        fix=Fix(
            text=f"Update the NVIDIA driver to {full} or newer when you can.", url=NVIDIA_DRIVER_PAGE, release=release
        ),
        severity=Severity.WARNING,
    )


def _runs_on_the_gpus(ctx: Context, build) -> bool:
    """The build has code (native or PTX) for every GPU whose capability is known."""
    return all(ctx.matrix.support(build, cc) != "none" for _gpu, cc in known_capabilities(ctx))


def _minimum(ctx: Context, cuda, default):
    need = ctx.driver_requirement(cuda)
    return need.minimum if need is not None and need.minimum is not None else default


@rule("EC-DRV-002", "NVML and kernel module at different versions (reboot needed)", "error", "driver")
def driver_version_mismatch(ctx: Context) -> Iterator[Hit]:
    """A driver upgraded without a reboot: new user-space libraries talk to the old kernel module."""
    facts = ctx.facts
    kernel = facts.driver.version if facts.driver.loaded else None
    library = facts.nvml.driver_version
    mismatch = facts.nvml.error_kind == "version_mismatch"
    if not mismatch and not (kernel and library and kernel != library):
        return
    evidence = [("nvml", facts.nvml.error or f"driver {library}")]
    if kernel:
        evidence.append(("kernel module (/proc/driver/nvidia/version)", kernel))
    versions = f" (kernel module {kernel}" + (f", libraries {library})" if library else ")") if kernel else ""
    on_disk = facts.driver.module_file_version
    if on_disk and library and on_disk != library:
        # The module installed on disk is not the libraries' version either: a reboot loads it and
        # still mismatches. The two halves come from different installs.
        yield Hit(
            title=f"Driver libraries ({library}) and kernel module ({on_disk} on disk) are installed at different versions: a reboot will not help",
            detail=(
                "The user-space part and the kernel module come from different driver installs (a package upgrade "
                "next to a .run install, or a held package). NVML and CUDA refuse a module of another version."
            ),
            evidence=tuple(evidence) + (("module file version", on_disk),),
            fix=Fix(
                text="Remove the driver completely and install one version of it, from one source (the distribution's packages or NVIDIA's installer), then reboot.",
                commands=(
                    ctx.shell_command("dpkg -l | grep -i nvidia | grep -E 'libnvidia|nvidia-(driver|kernel|dkms)'"),
                    ctx.shell_command("sudo ubuntu-drivers install"),
                    ctx.shell_command("sudo reboot"),
                ),
                url=NVIDIA_DRIVER_PAGE,
            ),
        )
        return
    yield Hit(
        title=f"Driver libraries and kernel module differ{versions}: the driver was updated without a reboot",
        detail=(
            "NVML and CUDA refuse to talk to a kernel module of another version "
            "(Driver/library version mismatch), so every CUDA program fails until the new module loads."
        ),
        evidence=tuple(evidence),
        fix=Fix(
            text=(
                "Reboot. (Without a display running on the GPU you can instead unload the old "
                "modules and load the new ones.)"
            ),
            commands=(
                ctx.shell_command("sudo reboot", "Restart-Computer"),
                *(
                    (
                        ctx.shell_command(
                            "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"
                        ),
                    )
                    if ctx.platform.driver_os == "linux"  # a Linux kernel module; WSL2's driver is Windows'
                    else ()
                ),
            ),
        ),
    )


@rule("EC-DRV-003", "NVML library not found", "error", "driver")
def nvml_library_not_found(ctx: Context) -> Iterator[Hit]:
    """libnvidia-ml / nvml.dll ships with the driver: missing means no driver, or only its kernel
    half (a container started without the NVIDIA runtime, a partial install)."""
    facts = ctx.facts
    if facts.nvml.error_kind != "library_not_found" or ctx.gpu_presence == ABSENT:
        return
    lib = ctx.platform.nvml_library
    evidence = [("nvml", facts.nvml.error or "library not found")]
    driver = facts.driver
    if driver.loaded or driver.module_files or driver.dkms:
        state = "is loaded" if driver.loaded else "is installed but not loaded"
        version = driver.version or driver.module_file_version
        if driver.module_files:
            evidence.append(("module files", ", ".join(driver.module_files[:3])))
        title = f"The nvidia kernel module {state}, but the driver's user-space library {lib} is missing"
        detail = (
            "The driver has two halves, the kernel module and its user-space libraries (libnvidia-ml, libcuda) "
            "of the same version; only the module is here: a container started without the NVIDIA runtime, or "
            "a driver install that did not finish."
        )
        fix = Fix(
            text=(
                f"Install the driver's user-space libraries of the same version as the kernel module "
                f"({version or 'see nvidia-smi'}), or start the container with --gpus all (NVIDIA Container Toolkit)."
            ),
            commands=(ctx.shell_command("ldconfig -p | grep -E 'libnvidia-ml|libcuda'"),),
            url=CONTAINER_TOOLKIT_PAGE,
        )
    else:
        title = f"{lib} not found: no NVIDIA driver is installed" + (
            " (or there is no NVIDIA GPU)" if ctx.platform.driver_os != "linux" else ""
        )
        detail = f"{lib} is installed with the NVIDIA driver; without it neither nvidia-smi nor CUDA can reach a GPU."
        fix = install_driver_fix(ctx, "Install the NVIDIA driver")
    yield Hit(title=title, detail=detail, evidence=tuple(evidence), fix=fix)


@rule("EC-DRV-004", "NVIDIA driver installed but not loaded", "error", "driver")
def nvml_driver_not_loaded(ctx: Context) -> Iterator[Hit]:
    """The driver is installed (NVML says "driver not loaded", or its module is on disk or built by
    DKMS) but its kernel module is not running: load it, or find out why it does not load."""
    facts = ctx.facts
    driver = facts.driver
    said_so = facts.nvml.error_kind == "driver_not_loaded"
    on_disk = (
        not driver.loaded and (driver.module_files or driver.dkms) and any(not d.driver for d in facts.pci.devices)
    )
    if not said_so and not on_disk:
        return
    evidence = [("nvml", facts.nvml.error or facts.nvml.error_kind or "not asked")]
    evidence.append(("kernel module", driver.error or "not loaded"))
    if driver.module_files:
        evidence.append(
            (
                "module files",
                ", ".join(driver.module_files[:3])
                + (f" (version {driver.module_file_version})" if driver.module_file_version else ""),
            )
        )
    if driver.dkms:
        evidence.append(("dkms", ", ".join(driver.dkms[:4])))
    built_elsewhere = [d for d in driver.dkms if driver.kernel_release and not d.endswith("/" + driver.kernel_release)]
    if ctx.platform.windows_driver:  # WSL2's kernel driver is the Windows one too
        fix = install_driver_fix(ctx, "Reinstall the NVIDIA driver (Device Manager shows the card with an error)")
        detail = "NVML answered NVML_ERROR_DRIVER_NOT_LOADED: the user-space libraries are there, the kernel driver is not running."
    elif not driver.module_files and built_elsewhere:
        fix = Fix(
            text=(
                f"The module was built for other kernels ({', '.join(built_elsewhere[:3])}) but not for the running one "
                f"({driver.kernel_release}): build it for this kernel (its headers must be installed), then load it."
            ),
            commands=(
                ctx.shell_command("sudo dkms autoinstall"),
                ctx.shell_command("sudo modprobe nvidia"),
                ctx.shell_command("dkms status"),
            ),
            url=NVIDIA_DRIVER_PAGE,
        )
        detail = "After a kernel update the module has to be rebuilt for the new kernel; until then it cannot load."
    else:
        fix = Fix(
            text=(
                "Load the module. If that fails, the kernel log says why: not built for the running kernel "
                "(rebuild it with dkms or reinstall the driver), Secure Boot refusing an unsigned module "
                "(enrol the key or disable Secure Boot), or nouveau holding the card."
            ),
            commands=(
                ctx.shell_command("sudo modprobe nvidia"),
                ctx.shell_command("sudo dmesg | grep -i -E 'nvidia|nvrm' | tail -n 20"),
                ctx.shell_command("mokutil --sb-state"),
                ctx.shell_command("dkms status"),
            ),
            url=NVIDIA_DRIVER_PAGE,
        )
        detail = "The driver's files are installed, but its kernel module is not running, so neither nvidia-smi nor CUDA can reach the GPU."
    yield Hit(title="The NVIDIA driver is installed but not loaded", detail=detail, evidence=tuple(evidence), fix=fix)


@rule("EC-DRV-005", "NVML: no permission", "error", "driver")
def nvml_no_permission(ctx: Context) -> Iterator[Hit]:
    failures = ctx.nvml_errors("no_permission")
    if not failures:
        return
    yield Hit(
        gpus=_keys(ctx, failures),
        title=f"No permission to use the GPU ({', '.join(where for where, _ in failures)})",
        detail="The device files (/dev/nvidia*) are not accessible to this user, so CUDA cannot open the GPU.",
        evidence=tuple(failures),
        fix=Fix(
            text=(
                "Give this user access to the GPU device files (usually membership of the video or "
                "render group, then log in again), or start the container with --gpus all."
            ),
            commands=(
                ctx.shell_command("ls -l /dev/nvidia*"),
                ctx.shell_command('sudo usermod -aG video,render "$USER"'),
            )
            if ctx.platform.driver_os == "linux"  # /dev/nvidia* exist where the Linux driver runs
            else (),
        ),
    )


@rule("EC-DRV-006", "NVML: GPU lost (fallen off the bus)", "error", "driver")
def nvml_gpu_lost(ctx: Context) -> Iterator[Hit]:
    failures = ctx.nvml_errors("gpu_lost")
    if not failures:
        return
    yield Hit(
        gpus=_keys(ctx, failures),
        title=f"GPU lost: it stopped responding ({', '.join(where for where, _ in failures)})",
        detail=(
            "The driver reports the GPU has fallen off the bus (Xid 79): a hardware, power or "
            "overheating fault. Nothing can use it until the machine restarts."
        ),
        evidence=tuple(failures),
        fix=Fix(
            text="Read the kernel log for Xid errors, reboot, and check the power supply, cooling and seating of the card.",
            commands=(
                ctx.shell_command(
                    "sudo dmesg | grep -i xid",
                    "Get-WinEvent -LogName System -MaxEvents 200 | Where-Object Message -match 'nvlddmkm'",
                ),
                ctx.shell_command("sudo reboot", "Restart-Computer"),
            ),
        ),
    )


@rule("EC-DRV-007", "NVML: function not found (driver too old for NVML calls)", "warning", "driver")
def nvml_function_not_found(ctx: Context) -> Iterator[Hit]:
    failures = ctx.nvml_errors("function_not_found")
    if not failures:
        return
    yield Hit(
        title="The driver is too old for some NVML calls (function not found)",
        detail=(
            "nvidia-ml-py asked the driver's NVML for a function it does not have: the driver "
            f"({ctx.driver_version or 'version unknown'}) predates it. Some facts could not be read."
        ),
        evidence=tuple(failures),
        fix=install_driver_fix(ctx, "Update the NVIDIA driver"),
    )


@rule("EC-DRV-008", "NVML: unknown error", "warning", "driver")
def nvml_unknown_error(ctx: Context) -> Iterator[Hit]:
    failures = ctx.nvml_errors("unknown")
    if not failures:
        return
    whole = ctx.facts.nvml.error_kind == "unknown"
    yield Hit(
        title=f"NVML failed: {failures[0][1]}" + ("" if whole else f" ({', '.join(where for where, _ in failures)})"),
        detail="NVML returned an error envcheck does not know; the driver may be in a bad state.",
        evidence=tuple(failures),
        fix=Fix(
            text="Run nvidia-smi: if it fails too, reboot; if it keeps failing, reinstall the driver.",
            commands=(ctx.shell_command("nvidia-smi"),),
            url=NVIDIA_DRIVER_PAGE,
        ),
        # NVML not starting at all leaves no GPU reachable; one GPU's query failing does not.
        severity=Severity.ERROR if whole else None,
    )


def _keys(ctx: Context, failures: list[tuple[str, str]]) -> tuple[str, ...]:
    """The GPUs named in ``nvml_errors``' answers (all of them when NVML failed as a whole)."""
    if any(where == "nvml" for where, _ in failures):
        return ()
    named = {where.split()[2] for where, _ in failures}  # "nvml gpu 2 (name)"
    return tuple(g.key for g in ctx.gpus if str(g.index) in named)


@rule("EC-DRV-009", "A driver older than the GPU's architecture", "error", "driver")
def driver_predates_gpu(ctx: Context) -> Iterator[Hit]:
    """A card is driven only by the driver branches from the one released with the first CUDA
    that lists its compute capability (CUDA's release notes); a GPU reported with an older driver
    (a snapshot's NVML list, a driver number read off Windows) cannot run CUDA code, whatever
    code the build has. A card left unbound for that reason is EC-GPU-004."""
    version = ctx.driver_version
    unbound = {g.key for g, _ in unbound_cards(ctx)}
    for gpu, cc in known_capabilities(ctx):  # a GPU hidden on purpose is nobody's problem
        if gpu.key in unbound:
            continue
        first = predating_driver(ctx, cc, version)
        if first is None:
            continue
        release, floor = first
        build = ctx.tf_build
        cuda_need = ctx.driver_requirement(build.cuda) if build is not None and build.cuda is not None else None
        cuda_floor = cuda_need.minimum if cuda_need is not None else None
        if cuda_floor is not None and floor <= cuda_floor:
            continue  # the build's CUDA asks for as much: EC-DRV-001
        # Below the CUDA floor as well, EC-DRV-001's update (to this card's floor: install_driver_fix)
        # clears this too.
        below_cuda = cuda_floor is not None and parse_version(str(version)) < cuda_floor
        fix = install_driver_fix(ctx, "Update the NVIDIA driver")
        yield Hit(
            title=f"{gpu.label}: driver {version} is older than the card (compute capability {gpu.compute_capability} needs {floor} or newer)",
            detail=(
                f"The first CUDA release for compute capability {gpu.compute_capability}, {minor(release.version)}, came "
                f"with driver {floor}; drivers of older branches do not drive the card."
            ),
            evidence=(
                (f"gpu {gpu.key}", f"{gpu.name}: compute capability {gpu.compute_capability}"),
                ("driver version", str(version)),
                (f"matrix: CUDA {minor(release.version)} minimum driver ({ctx.os})", str(floor)),
            ),
            fix=fix,
            caused_by="EC-DRV-001" if below_cuda else None,
            gpus=(gpu.key,),
        )
