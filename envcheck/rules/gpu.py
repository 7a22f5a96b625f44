"""Link 2: an NVIDIA GPU is present, and the NVIDIA kernel driver (not another one) drives it."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.findings import Fix
from envcheck.machine import ABSENT, counted, pci_product_name
from envcheck.rules.engine import Context, Hit, rule

NVIDIA_DRIVER_PAGE = "https://www.nvidia.com/Download/index.aspx"


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
            url="https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html",
        ),
    )


@rule("EC-GPU-002", "NVIDIA GPU without an NVIDIA driver", "error", "gpu")
def gpu_without_driver(ctx: Context) -> Iterator[Hit]:
    """The PCI bus shows the card but no driver is bound to it and the nvidia module is not loaded."""
    facts = ctx.facts
    unbound = [d for d in facts.pci.devices if not d.driver]
    if not unbound or facts.driver.loaded or facts.nvml.gpus or ctx.driver_installed:
        return  # an installed driver whose module is not loaded is EC-DRV-004
    names = ", ".join(counted(pci_product_name(d.name) or f"device {d.device_id}" for d in unbound))
    yield Hit(
        title=f"{names}: no NVIDIA driver installed",
        detail=(
            "The GPU is on the PCI bus, but no kernel driver is bound to it and the nvidia "
            "module is not loaded, so CUDA (and TensorFlow) cannot see it."
        ),
        evidence=tuple((f"pci {d.address}", f"{d.vendor_id}:{d.device_id} driver=none") for d in unbound)
        + (("driver", facts.driver.error or "not loaded"),),
        fix=install_driver_fix(ctx, "Install the NVIDIA driver"),
    )


@rule("EC-GPU-003", "GPU bound to another kernel driver", "error", "gpu")
def gpu_other_driver(ctx: Context) -> Iterator[Hit]:
    """nouveau (the open-source driver) or vfio-pci (VM passthrough) holds the card; CUDA needs nvidia."""
    by_driver: dict[str, list] = {}
    for dev in ctx.facts.pci.devices:
        if dev.driver and dev.driver != "nvidia":
            by_driver.setdefault(dev.driver, []).append(dev)
    for driver, devices in by_driver.items():
        dev = devices[0]
        name = ", ".join(counted(pci_product_name(d.name) or f"device {d.device_id}" for d in devices))
        evidence = tuple((f"pci {d.address}.driver", d.driver) for d in devices)
        if dev.driver == "nouveau":
            fix = install_driver_fix(
                ctx,
                "Replace nouveau by the NVIDIA driver: install the driver (its installer blacklists "
                "nouveau), then reboot",
                after_install=(
                    ctx.shell_command(
                        "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | "
                        "sudo tee /etc/modprobe.d/blacklist-nouveau.conf && sudo update-initramfs -u",
                    ),
                    ctx.shell_command("sudo reboot"),
                ),
            )
            detail = "The open-source nouveau driver drives the card; CUDA only works with NVIDIA's driver."
        elif dev.driver == "vfio-pci":
            fix = Fix(
                text=(
                    "The card is reserved for a virtual machine (vfio-pci passthrough). Use it "
                    "inside that VM, or remove its id from the vfio-pci configuration "
                    "(vfio-pci.ids= on the kernel command line or /etc/modprobe.d) and reboot."
                ),
                commands=(ctx.shell_command("grep -r vfio /etc/modprobe.d /proc/cmdline"),),
            )
            detail = "vfio-pci holds the card so that a virtual machine can use it; the host cannot."
        else:
            fix = install_driver_fix(ctx, f"Unbind {dev.driver} and install the NVIDIA driver")
            detail = f"The {dev.driver} driver holds the card; CUDA needs NVIDIA's driver."
        yield Hit(
            title=f"{name} {'is' if len(devices) == 1 else 'are'} driven by {driver}, not the NVIDIA driver",
            detail=detail,
            evidence=evidence,
            fix=fix,
        )


def install_driver_fix(ctx: Context, what: str, after_install=()) -> Fix:
    """Install a driver new enough for the CUDA that the installed TF needs, on this platform."""
    build = ctx.tf_build
    need = ctx.driver_requirement(build.cuda) if build is not None and build.cuda is not None else None
    minimum = need.minimum if need is not None else None
    need = f" (version {minimum} or newer, for CUDA {build.cuda})" if minimum and build else ""
    commands = []
    if ctx.os == "wsl":
        text = f"{what} on Windows, not inside WSL{need}: WSL2 uses the Windows driver."
    elif ctx.os == "windows":
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
