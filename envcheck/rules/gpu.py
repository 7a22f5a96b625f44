"""Link 2: an NVIDIA GPU is present, and the NVIDIA kernel driver (not another one) drives it.

The GPUs are the machine view's (``ctx.gpus``): the union of NVML's list and the PCI bus, so a card
the driver does not drive is seen and named (by pci.ids, else by the matrix's PCI ids)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

from packaging.version import Version

from envcheck import shell
from envcheck.facts import PciDevice
from envcheck.findings import Fix
from envcheck.machine import ABSENT, GpuView, minor, parse_version
from envcheck.probes.nvml import normalise_bus_id
from envcheck.rules.engine import Context, Hit, rule
from envcheck.words import counted

NVIDIA_DRIVER_PAGE = "https://www.nvidia.com/Download/index.aspx"
CONTAINER_TOOLKIT_PAGE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"


@rule("EC-GPU-001", "No NVIDIA GPU found", "info", "gpu")
def no_nvidia_gpu(ctx: Context) -> Iterator[Hit]:
    """The probes that can see a GPU without a driver (the PCI bus) or with one (NVML) saw none.
    Information, not an error: TensorFlow runs on the CPU and there is nothing to fix here
    (``--require-gpu`` makes it exit 1 for a gate that needs a GPU)."""
    facts = ctx.facts
    if ctx.os == "macos" or ctx.gpu_presence != ABSENT:
        return
    looked = []
    if facts.pci.status != "skipped":
        looked.append(("pci.devices", "no NVIDIA display or 3D controller on the PCI bus"))
    looked.append(("nvml", facts.nvml.error or f"{len(facts.nvml.gpus)} GPUs"))
    yield Hit(
        title="no NVIDIA GPU on this machine: TensorFlow runs on the CPU",
        detail=(
            "CUDA needs an NVIDIA GPU and none is visible to this system (not even one without a "
            "driver). In a virtual machine or container the GPU has to be passed through first."
        ),
        evidence=tuple(looked),
        fix=Fix(
            text=(
                "Nothing to fix for the CPU. For a GPU: use a machine with an NVIDIA GPU (a cloud GPU "
                "instance), or pass the GPU into the container (docker run --gpus all, with the NVIDIA "
                "Container Toolkit) or the VM (PCI passthrough)."
            ),
            url=CONTAINER_TOOLKIT_PAGE,
        ),
    )


def unbound_cards(ctx: Context) -> list[tuple[GpuView, PciDevice]]:
    """The GPUs on the bus that no driver drives, with their PCI records."""
    by_bus = {normalise_bus_id(d.address): d for d in ctx.facts.pci.devices}
    out = []
    for gpu in ctx.gpus:
        device = by_bus.get(gpu.pci_bus_id or "")
        if device is not None and gpu.source == "pci" and not device.driver:
            out.append((gpu, device))
    return out


def _names(gpus: list[GpuView]) -> str:
    return ", ".join(counted(g.name for g in gpus))


@rule("EC-GPU-002", "NVIDIA GPU without an NVIDIA driver", "error", "gpu")
def gpu_without_driver(ctx: Context) -> Iterator[Hit]:
    """The PCI bus shows the card but no driver is bound to it and none is installed."""
    facts = ctx.facts
    unbound = unbound_cards(ctx)
    if not unbound or facts.driver.loaded or ctx.driver_installed:
        return  # an installed driver whose module is not loaded is EC-DRV-004; a loaded one EC-GPU-004
    gpus = [g for g, _ in unbound]
    yield Hit(
        title=f"{_names(gpus)}: no NVIDIA driver installed",
        detail=(
            "The GPU is on the PCI bus, but no kernel driver is bound to it and the nvidia "
            "module is not loaded, so CUDA (and TensorFlow) cannot see it."
        ),
        evidence=tuple((f"pci {d.address}", f"{g.name}: {d.vendor_id}:{d.device_id} driver=none") for g, d in unbound)
        + (("driver", facts.driver.error or "not loaded"),),
        fix=install_driver_fix(ctx, "Install the NVIDIA driver"),
        gpus=tuple(g.key for g in gpus),
    )


@rule("EC-GPU-003", "GPU bound to another kernel driver", "error", "gpu")
def gpu_other_driver(ctx: Context) -> Iterator[Hit]:
    """nouveau (the open-source driver) or vfio-pci (VM passthrough) holds the card; CUDA needs nvidia."""
    by_bus = {normalise_bus_id(d.address): d for d in ctx.facts.pci.devices}
    by_driver: dict[str, list[GpuView]] = {}
    for gpu in ctx.gpus:
        device = by_bus.get(gpu.pci_bus_id or "")
        if device is not None and device.driver and device.driver != "nvidia":
            by_driver.setdefault(device.driver, []).append(gpu)
    for driver, gpus in by_driver.items():
        fix, detail = _other_driver_fix(ctx, driver)
        yield Hit(
            title=f"{_names(gpus)} {'is' if len(gpus) == 1 else 'are'} driven by {driver}, not the NVIDIA driver",
            detail=detail,
            evidence=tuple((f"pci {g.pci_bus_id}.driver", driver) for g in gpus),
            fix=fix,
            gpus=tuple(g.key for g in gpus),
        )


def _other_driver_fix(ctx: Context, driver: str) -> tuple[Fix, str]:
    if driver == "nouveau":
        blacklist = "blacklist nouveau\\noptions nouveau modeset=0\\n"
        fix = install_driver_fix(
            ctx,
            "Replace nouveau by the NVIDIA driver: install the driver (its installer blacklists nouveau), then reboot",
            after_install=(
                ctx.shell_command(
                    f"printf {shell.quote(blacklist, shell.BASH)} | sudo tee /etc/modprobe.d/blacklist-nouveau.conf"
                    " && sudo update-initramfs -u"
                ),
                ctx.shell_command("sudo reboot"),
            ),
        )
        return fix, "The open-source nouveau driver drives the card; CUDA only works with NVIDIA's driver."
    if driver == "vfio-pci":
        fix = Fix(
            text=(
                "The card is reserved for a virtual machine (vfio-pci passthrough). Use it inside that VM, or "
                "remove its id from the vfio-pci configuration (vfio-pci.ids= on the kernel command line or "
                "/etc/modprobe.d) and reboot."
            ),
            commands=(ctx.shell_command("grep -r vfio /etc/modprobe.d /proc/cmdline"),),
        )
        return fix, "vfio-pci holds the card so that a virtual machine can use it; the host cannot."
    fix = install_driver_fix(ctx, f"Unbind {driver} and install the NVIDIA driver")
    return fix, f"The {driver} driver holds the card; CUDA needs NVIDIA's driver."


@rule("EC-GPU-004", "A GPU on the bus that the loaded NVIDIA driver does not drive", "error", "gpu")
def gpu_not_driven(ctx: Context) -> Iterator[Hit]:
    """The nvidia module is loaded, but a card on the bus has no driver bound: most often an
    architecture that branch no longer supports (Kepler after 470), next to a newer GPU it drives,
    or one newer than the branch (a compute capability 12.0 card on a 535 driver)."""
    facts = ctx.facts
    if not facts.driver.loaded:
        return
    version = facts.driver.version or ctx.driver_version
    for gpu, device in unbound_cards(ctx):
        arch = ctx.matrix.architecture(gpu.compute_capability) if gpu.compute_capability else None
        retired = arch is not None and version is not None and arch.supports_driver(version) is False
        first = predating_driver(ctx, gpu.compute_capability, version)
        others = [g for g in ctx.gpus if g.source == "nvml"]
        if first is not None:
            release, floor = first
            fix = install_driver_fix(ctx, "Update the NVIDIA driver")
            commands = fix.commands
            text = (
                f"{fix.text} Driver {version} is older than {arch.name if arch else 'these'} GPUs of compute "
                f"capability {gpu.compute_capability}: the first CUDA release for them, {minor(release.version)}, came "
                f"with the {floor.release[0]} driver branch ({floor} or newer), and an older branch leaves the card "
                "without a driver."
            )
        elif retired:
            text = (
                f"{arch.name} GPUs get no driver after the {arch.last_driver_branch} branch, so driver {version} cannot "
                f"use this card. "
                + (
                    "TensorFlow runs on the other GPUs as they are; remove the card, or accept that it stays idle."
                    if others
                    else f"Install the {arch.last_driver_branch}-branch driver (it supports no GPU newer than its branch), or use another GPU."
                )
            )
            commands = (ctx.shell_command("nvidia-smi -L"),)
        else:
            text = "Read the kernel log for the driver's reason (NVRM lines), then reboot."
            commands = (
                ctx.shell_command("sudo dmesg | grep -i -E 'nvrm|nvidia' | tail -n 20"),
                ctx.shell_command("sudo reboot"),
            )
        yield Hit(
            title=f"{gpu.label}: the loaded NVIDIA driver {version or ''} does not drive it".replace("  ", " ")
            + (f" ({arch.name}: last driver branch {arch.last_driver_branch})" if retired else "")
            + (f" (it predates the card, which needs {first[1]} or newer)" if first else ""),
            detail="The card is on the PCI bus with no driver bound, while the nvidia module drives "
            + ("the other GPUs." if others else "nothing."),
            evidence=(
                (f"pci {device.address}", f"{device.vendor_id}:{device.device_id} driver=none"),
                ("kernel module", f"nvidia {version or 'loaded'}"),
            ),
            fix=Fix(text=text, commands=commands, url=NVIDIA_DRIVER_PAGE),
            gpus=(gpu.key,),
        )


def predating_driver(ctx: Context, compute_capability, driver) -> Optional[tuple[Any, Version]]:
    """(the first CUDA release for this GPU, the driver it came with) when ``driver`` is older than
    that one: the driver predates the card (matrix.first_driver)."""
    if not compute_capability or not driver:
        return None
    first = ctx.matrix.first_driver(compute_capability, ctx.os)
    have = parse_version(str(driver))
    if first is None or have is None or have >= first[1]:
        return None
    return first


def _newest_first_driver(ctx: Context) -> Optional[tuple[Any, Version, str]]:
    """The newest of the machine's GPUs' first drivers: (CUDA release, driver, GPU name)."""
    found = None
    for gpu in ctx.gpus:
        first = ctx.matrix.first_driver(gpu.compute_capability, ctx.os) if gpu.compute_capability else None
        if first is not None and (found is None or first[1] > found[1]):
            found = (first[0], first[1], gpu.name)
    return found


def install_driver_fix(ctx: Context, what: str, after_install=()) -> Fix:
    """Install a driver new enough for the CUDA that the installed TF needs and for the machine's
    GPUs (a card newer than that CUDA needs the driver branch of its own first CUDA), on this
    platform."""
    build = ctx.tf_build
    need = ctx.driver_requirement(build.cuda) if build is not None and build.cuda is not None else None
    minimum = need.minimum if need is not None else None
    need = f" (version {minimum} or newer, for CUDA {build.cuda})" if minimum and build else ""
    card = _newest_first_driver(ctx)
    if card is not None and (minimum is None or card[1] > minimum):
        need = f" (version {card[1]} or newer: {card[2]} needs the driver branch of CUDA {minor(card[0].version)}, its first)"
    commands = []
    if ctx.os == "wsl":
        text = f"{what} on Windows, not inside WSL{need}: WSL2 uses the Windows driver."
    elif ctx.platform.windows_driver:
        text = f"{what} from NVIDIA's download page{need}, then restart."
    else:
        distro = (ctx.facts.platform.distro or "").lower()
        text = f"{what}{need}, then reboot."
        if "ubuntu" in distro or "mint" in distro:
            commands.append(ctx.shell_command("sudo ubuntu-drivers install"))
        elif "debian" in distro:
            commands.append(ctx.shell_command("sudo apt install nvidia-driver"))
        elif "fedora" in distro:
            commands.append(ctx.shell_command("sudo dnf install akmod-nvidia"))
    commands.extend(after_install)
    commands.append(ctx.shell_command("nvidia-smi"))
    return Fix(text=text, commands=tuple(commands), url=NVIDIA_DRIVER_PAGE)
