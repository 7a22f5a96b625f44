"""Link 9, Multi-GPU: what slows working GPUs down. A degraded PCIe link, lowered clocks, mixed
models (a synchronous step waits for the slowest), pairs that talk across CPU sockets or without
P2P, another process on a GPU, compute and persistence modes, NCCL settings that close the fast
paths, memory errors, and a process pinned to CPUs far from its GPUs.

Only what changes training speed is reported, and never as an error: the verdict stays about
whether the GPUs work. A link or clock read while the GPU was idle is said to be idle (GPUs train
their link down and lower their clocks when idle), and weighs less. The meaning of each clock
event bit and topology level is nvml.h's; the per-lane rates are PCI-SIG's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from envcheck import shell
from envcheck.findings import Fix, Severity
from envcheck.machine.speed import (
    UNDER_LOAD,
    GpuSpeed,
    below_maximum,
    link_text,
    others_share,
    p2p_works,
    visible_pairs,
    visible_speed_gpus,
)
from envcheck.probes.gpu_speed import parse_cpu_list
from envcheck.rules.engine import Context, Hit, rule
from envcheck.words import plural

NVSMI_DOCS = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
NCCL_ENV_DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
RETIREMENT_DOCS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
# GB/s per lane after line coding (PCI-SIG: 8b/10b to Gen2, 128b/130b from Gen3; Gen6 FLIT ~ 242/256).
LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
# Another process holding this share of a GPU's memory competes for it (TensorFlow maps nearly all
# of a GPU's memory for itself by default, so a share this size also shrinks what it can take).
SHARED_MEMORY_SHARE = 0.10
# A power limit this far below the board's default was lowered on purpose (nvidia-smi -pl).
LOWERED_POWER_LIMIT = 0.97


def _many(ctx: Context) -> bool:
    return len(visible_speed_gpus(ctx)) > 1


def _query_command(ctx: Context, fields: str) -> shell.Command:
    return ctx.shell_command(f"nvidia-smi --query-gpu={fields} --format=csv")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def bandwidth_share(gpu: GpuSpeed) -> float | None:
    link = gpu.link
    if link is None or None in (link.current_width, link.max_width, link.current_generation, link.max_generation):
        return None
    now = link.current_width * LANE_GBPS.get(link.current_generation, 0)
    most = link.max_width * LANE_GBPS.get(link.max_generation, 0)
    return now / most if most else None


@rule("EC-PERF-001", "A GPU's PCIe link runs below its maximum", Severity.WARNING, "multigpu")
def degraded_link(ctx: Context) -> Iterator[Hit]:
    """A link narrower or slower than the GPU and its slot allow starves the GPU of input and of
    the all-reduce. Under load it is a fault (a slot wired for fewer lanes, a riser, the BIOS);
    idle GPUs lower their link generation to save power, so an idle reading is only said."""
    for gpu in visible_speed_gpus(ctx):
        narrow, slow = below_maximum(gpu.link)
        if not (narrow or slow):
            continue
        loaded = gpu.load == UNDER_LOAD
        share = bandwidth_share(gpu)
        state = "under load" if loaded else "while idle" if gpu.load == "idle" else "(load unknown)"
        why = []
        if narrow:
            why.append(
                "fewer lanes than the card has: a slot wired narrower than it looks, a riser, or the BIOS's bifurcation"
            )
        if slow:
            why.append(
                "a lower generation: under load that is the BIOS's PCIe setting, a riser or signal errors"
                if loaded
                else "a lower generation, which an idle GPU chooses to save power: look again under load"
            )
        commands = [
            _query_command(
                ctx, "index,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max"
            )
        ]
        bus = gpu.pci_bus_id
        if bus and ctx.os == "linux":
            commands.append(
                ctx.shell_command(f"sudo lspci -vv -s {shell.quote(bus, shell.BASH)} | grep -E 'LnkCap|LnkSta'")
            )
        yield Hit(
            title=f"{gpu.label}: PCIe link at {link_text(gpu.link)} {state}; its maximum is {link_text(gpu.link, current=False)}",
            detail=(
                f"{_sentence('; '.join(why))}."
                + (
                    f" It has {share:.0%} of the link's bandwidth for its inputs and copies."
                    if share is not None
                    else ""
                )
            ),
            evidence=(
                ("link now", link_text(gpu.link)),
                ("link maximum", link_text(gpu.link, current=False)),
                ("load when probed", gpu.load),
                ("read from", gpu.link.source),
            ),
            fix=Fix(
                "Check the link while training runs; if it stays below its maximum, move the card to a slot "
                "wired for all its lanes (or fix the riser or the BIOS's PCIe setting) and reseat it",
                tuple(commands),
                url=NVSMI_DOCS,
            ),
            severity=Severity.WARNING if loaded else Severity.INFO,
        )


def _clock_evidence(gpu: GpuSpeed) -> tuple[tuple[str, str], ...]:
    perf = gpu.performance
    out = [("clock event reasons", ", ".join(e.name for e in gpu.clock_events) + f" (0x{perf.clock_event_reasons:x})")]
    if perf.sm_clock_mhz is not None:
        out.append(
            (
                "SM clock",
                f"{perf.sm_clock_mhz} MHz" + (f" of {perf.sm_clock_max_mhz} MHz" if perf.sm_clock_max_mhz else ""),
            )
        )
    if perf.temperature_c is not None:
        slowdown = f" (slows down at {perf.slowdown_temperature_c} °C)" if perf.slowdown_temperature_c else ""
        out.append(("temperature", f"{perf.temperature_c} °C{slowdown}"))
    if perf.power_w is not None:
        limit = f" of a {perf.power_limit_w:g} W limit" if perf.power_limit_w else ""
        default = (
            f" (default {perf.power_default_limit_w:g} W)"
            if perf.power_default_limit_w and perf.power_default_limit_w != perf.power_limit_w
            else ""
        )
        out.append(("power", f"{perf.power_w:g} W{limit}{default}"))
    return tuple(out)


def _lowered_power_limit(gpu: GpuSpeed) -> bool:
    perf = gpu.performance
    return bool(perf.power_limit_w and perf.power_default_limit_w) and (
        perf.power_limit_w < LOWERED_POWER_LIMIT * perf.power_default_limit_w
    )


def _clock_fix(ctx: Context, gpu: GpuSpeed, kinds: set[str]) -> Fix:
    if "thermal" in kinds or "hardware" in kinds:
        return Fix(
            "Cool the GPU: clear the airflow, check its fans and the room, and for a hardware slowdown or "
            "power brake the power supply; then watch the reasons while training runs",
            (ctx.shell_command(f"nvidia-smi -i {gpu.index} -q -d PERFORMANCE,TEMPERATURE,POWER"),),
            url=NVSMI_DOCS,
        )
    if "power" in kinds and _lowered_power_limit(gpu):
        watts = f"{gpu.performance.power_default_limit_w:g}"
        return Fix(
            f"Give the GPU its default power limit back ({watts} W)",
            (ctx.shell_command(f"sudo nvidia-smi -i {gpu.index} -pl {watts}"),),
            url=NVSMI_DOCS,
        )
    return Fix(
        "Nothing is wrong with the GPU: a setting holds its clocks (application clocks, sync boost, "
        "the power limit it was given); reset the application clocks if nobody set them on purpose",
        (ctx.shell_command(f"sudo nvidia-smi -i {gpu.index} -rac"),),
        url=NVSMI_DOCS,
    )


@rule("EC-PERF-002", "A GPU's clocks are lowered (thermal, power or hardware slowdown)", Severity.WARNING, "multigpu")
def lowered_clocks(ctx: Context) -> Iterator[Hit]:
    """nvmlDeviceGetCurrentClocksEventReasons says why the clocks are below their maximum. Idle is
    no fault; thermal and hardware slowdowns (clocks halved or more) and a lowered power limit
    are; the power cap at the default limit and settings someone chose are only said."""
    for gpu in visible_speed_gpus(ctx):
        events = [e for e in gpu.clock_events if e.kind != "idle"]
        if not events:
            continue
        kinds = {e.kind for e in events}
        serious = bool(kinds & {"thermal", "hardware"}) or ("power" in kinds and _lowered_power_limit(gpu))
        what = "; ".join(e.meaning for e in events)
        yield Hit(
            title=f"{gpu.label}: clocks lowered by {', '.join(e.name.replace('_', ' ') for e in events)}",
            detail=(
                f"{_sentence(what)}. In a synchronous multi-GPU step every GPU waits for this one."
                if serious
                else f"{_sentence(what)}: expected at full load, not a fault."
            ),
            evidence=_clock_evidence(gpu),
            fix=_clock_fix(ctx, gpu, kinds),
            severity=Severity.WARNING if serious else Severity.INFO,
        )


def _visible_devices_fix(ctx: Context, keep: list[GpuSpeed], why: str) -> Fix:
    """Keep only ``keep`` visible to CUDA, by UUID (CUDA's own numbers follow its device order)."""
    uuids = [ctx.facts.nvml.gpus[g.index].uuid for g in keep if g.index < len(ctx.facts.nvml.gpus)]
    if uuids and all(uuids):
        value = ",".join(uuids)
        lines = (shell.set_variable("CUDA_VISIBLE_DEVICES", value, ctx.shell),)
    else:
        value = ",".join(str(g.index) for g in keep)
        lines = (
            shell.set_variable("CUDA_DEVICE_ORDER", "PCI_BUS_ID", ctx.shell),
            shell.set_variable("CUDA_VISIBLE_DEVICES", value, ctx.shell),
        )
    return Fix(why, tuple(shell.Command(line, shell=ctx.shell) for line in lines))


@rule("EC-PERF-003", "The visible GPUs are of different models", Severity.WARNING, "multigpu")
def mixed_models(ctx: Context) -> Iterator[Hit]:
    """MirroredStrategy runs every replica in lockstep with the same batch, so the slowest model
    sets the pace of all of them (and the smallest memory the batch)."""
    gpus = visible_speed_gpus(ctx)
    models = Counter(g.name for g in gpus if g.name)
    if len(models) < 2:
        return
    common, _count = models.most_common(1)[0]
    keep = [g for g in gpus if g.name == common]
    yield Hit(
        title=f"The visible GPUs are of {len(models)} models: "
        + ", ".join(f"{n}x {name}" for name, n in models.most_common()),
        detail="A synchronous step waits for the slowest GPU, so the faster ones idle for part of every step.",
        evidence=tuple((g.label, f"{g.memory_total_mb or '?'} MiB") for g in gpus),
        fix=_visible_devices_fix(ctx, keep, f"Train on GPUs of one model, for example the {len(keep)} {common}"),
    )


def _pair_names(pairs) -> str:
    shown = ", ".join(f"{p.a}-{p.b}" for p in pairs[:8])
    return shown + (f" and {len(pairs) - 8} more" if len(pairs) > 8 else "")


@rule("EC-PERF-004", "GPUs that talk across CPU sockets", Severity.WARNING, "multigpu")
def across_sockets(ctx: Context) -> Iterator[Hit]:
    """NVML's common ancestor NVML_TOPOLOGY_SYSTEM: the path crosses the SMP interconnect between
    CPU sockets (QPI/UPI, Infinity Fabric), where an all-reduce without NVLink is slowest."""
    pairs = [p for p in visible_pairs(ctx) if p.topology == "system" and p.p2p_nvlink != "ok"]
    if not pairs:
        return
    yield Hit(
        title=f"{plural(len(pairs), 'pair')} of GPUs talk across CPU sockets ({_pair_names(pairs)})",
        detail="Each all-reduce between them crosses the link between the sockets; keeping a job's GPUs under one socket, "
        "or NVLink between them, avoids it.",
        evidence=tuple(
            (f"GPU {p.a} - GPU {p.b}", f"topology {p.topology}, P2P read {p.p2p_read or '?'}") for p in pairs[:8]
        ),
        fix=Fix(
            "Use GPUs under one CPU socket for a job (nvidia-smi topo -m shows which), or accept the slower all-reduce",
            (ctx.shell_command("nvidia-smi topo -m"),),
            url=NVSMI_DOCS,
        ),
    )


@rule("EC-PERF-005", "GPUs that cannot copy to each other directly (no P2P)", Severity.WARNING, "multigpu")
def no_p2p(ctx: Context) -> Iterator[Hit]:
    """nvmlDeviceGetP2PStatus for read and write: without peer-to-peer (or NVLink) every copy
    between the two GPUs goes through host memory. Pairs across sockets are EC-PERF-004's."""
    pairs = [p for p in visible_pairs(ctx) if p2p_works(p) is False and p.topology != "system"]
    if not pairs:
        return
    disabled = any("disabled_by_regkey" in (p.p2p_read, p.p2p_write) for p in pairs)
    yield Hit(
        title=f"{plural(len(pairs), 'pair')} of GPUs cannot copy to each other directly ({_pair_names(pairs)})",
        detail="Their all-reduce goes through host memory."
        + (
            " The driver's registry key disables P2P."
            if disabled
            else " The chipset or the topology does not allow P2P."
        ),
        evidence=tuple(
            (f"GPU {p.a} - GPU {p.b}", f"P2P read {p.p2p_read}, write {p.p2p_write}, topology {p.topology or '?'}")
            for p in pairs[:8]
        ),
        fix=Fix(
            "Check the P2P matrix; a platform without P2P needs NVLink (or fewer GPUs per job) for a fast all-reduce",
            (ctx.shell_command("nvidia-smi topo -p2p r"),),
            url=NVSMI_DOCS,
        ),
    )


@rule("EC-PERF-006", "Another process holds a GPU", Severity.WARNING, "multigpu")
def other_process(ctx: Context) -> Iterator[Hit]:
    """Processes NVML lists on a GPU that hold a real share of its memory compete with training
    for its compute and leave TensorFlow less memory (envcheck's own checks are left out)."""
    for gpu in visible_speed_gpus(ctx):
        share, procs = others_share(gpu)
        if share is None or share < SHARED_MEMORY_SHARE:
            continue
        names = ", ".join(f"pid {p.pid} {p.name or '?'} ({p.used_memory_mb:,} MiB)" for p in procs[:4])
        yield Hit(
            title=f"{gpu.label}: {plural(len(procs), 'other process', 'other processes')} "
            f"hold{'s' if len(procs) == 1 else ''} {share:.0%} of its memory",
            detail="Training there shares the GPU's compute with them and gets only the memory they leave.",
            evidence=(
                ("processes", names),
                ("memory", f"{gpu.memory_used_mb or '?'} of {gpu.memory_total_mb} MiB in use"),
            ),
            fix=_visible_devices_fix(
                ctx,
                [g for g in visible_speed_gpus(ctx) if g.index != gpu.index],
                f"Wait for those processes or end them, or leave GPU {gpu.index} out of the job",
            )
            if _many(ctx)
            else Fix("Wait for those processes or end them", (ctx.shell_command("nvidia-smi"),)),
        )


@rule("EC-PERF-007", "A GPU's compute mode keeps TensorFlow off it", Severity.WARNING, "multigpu")
def compute_mode(ctx: Context) -> Iterator[Hit]:
    """nvmlComputeMode_t: Prohibited allows no CUDA context at all; Exclusive Process allows one
    process, so a GPU another process holds is closed to TensorFlow."""
    for gpu in visible_speed_gpus(ctx):
        mode = gpu.performance.compute_mode
        if mode not in ("prohibited", "exclusive_process", "exclusive_thread"):
            continue
        holders = list(gpu.processes)
        if mode != "prohibited" and not holders:
            continue  # one process per GPU, and nobody holds it: a scheduler's choice, no fault
        why = (
            "no process may create a CUDA context on it"
            if mode == "prohibited"
            else f"only one process may use it, and pid {holders[0].pid} ({holders[0].name or '?'}) does"
        )
        yield Hit(
            title=f"{gpu.label}: compute mode {mode.replace('_', ' ')}: {why}",
            detail="TensorFlow cannot use this GPU until the mode changes (or the other process ends).",
            evidence=(("compute mode", mode), ("processes", ", ".join(str(p.pid) for p in holders) or "none")),
            fix=Fix(
                "Set the default compute mode (or ask whoever runs the cluster: schedulers set it on purpose)",
                (ctx.shell_command(f"sudo nvidia-smi -i {gpu.index} -c DEFAULT"),),
                url=NVSMI_DOCS,
            ),
        )


@rule("EC-PERF-008", "Persistence mode is off", Severity.INFO, "multigpu")
def persistence_off(ctx: Context) -> Iterator[Hit]:
    """On Linux without persistence mode the driver tears a GPU's state down whenever no program
    uses it, so every start (each nvidia-smi, each training run) waits to bring it back."""
    if ctx.os not in ("linux",):
        return
    off = [g for g in visible_speed_gpus(ctx) if g.performance.persistence_mode is False]
    if not off:
        return
    yield Hit(
        title=f"Persistence mode is off on {', '.join(f'GPU {g.index}' for g in off)}",
        detail="Each program's first CUDA call waits while the driver initialises the GPUs again; training speed "
        "itself is not changed.",
        evidence=tuple((g.label, "persistence mode off") for g in off),
        fix=Fix(
            "Keep the driver loaded between programs (NVIDIA recommends the nvidia-persistenced daemon)",
            (ctx.shell_command("sudo nvidia-smi -pm 1"),),
            url="https://docs.nvidia.com/deploy/driver-persistence/index.html",
        ),
    )


def _nccl_disabled(ctx: Context) -> list[tuple[str, str, str]]:
    """(variable, value, what it closes) for NCCL settings that take a fast path away."""
    env = ctx.facts.env.variables
    out = []
    if env.get("NCCL_P2P_DISABLE", "0").strip() not in ("", "0"):
        out.append(("NCCL_P2P_DISABLE", env["NCCL_P2P_DISABLE"], "direct GPU-to-GPU copies (P2P and NVLink)"))
    if env.get("NCCL_P2P_LEVEL", "").strip().upper() in ("LOC", "0"):
        out.append(("NCCL_P2P_LEVEL", env["NCCL_P2P_LEVEL"], "P2P between any two GPUs"))
    if env.get("NCCL_SHM_DISABLE", "0").strip() not in ("", "0"):
        out.append(("NCCL_SHM_DISABLE", env["NCCL_SHM_DISABLE"], "shared memory between the GPUs' processes"))
    return out


@rule("EC-PERF-009", "NCCL settings close a fast path", Severity.WARNING, "multigpu")
def nccl_settings(ctx: Context) -> Iterator[Hit]:
    """NCCL_P2P_DISABLE, NCCL_P2P_LEVEL=LOC and NCCL_SHM_DISABLE make NCCL copy through slower
    paths (NCCL's environment variables page); they are often left over from debugging a hang."""
    if not _many(ctx):
        return
    closed = _nccl_disabled(ctx)
    if not closed:
        return
    yield Hit(
        title="NCCL is told not to use " + "; ".join(f"{what} ({name}={value})" for name, value, what in closed),
        detail="The all-reduce between the GPUs then goes through host memory or the network stack.",
        evidence=tuple((name, value) for name, value, _ in closed),
        fix=Fix(
            "Unset them unless they work around a known hang on this machine",
            tuple(ctx.shell_command(f"unset {name}", f"Remove-Item Env:{name}") for name, _, _ in closed),
            url=NCCL_ENV_DOCS,
        ),
    )


def _memory_problems(gpu: GpuSpeed) -> list[str]:
    perf = gpu.performance
    out = []
    if perf.ecc_uncorrected_volatile:
        out.append(f"{perf.ecc_uncorrected_volatile} uncorrectable ECC errors since the driver loaded")
    if perf.retired_pages_pending:
        out.append("a page retirement waits for a GPU reset")
    if perf.remapping_pending:
        out.append("a row remapping waits for a GPU reset")
    if perf.remapping_failed:
        out.append("a row remapping failed")
    if perf.retired_pages_double_bit:
        out.append(f"{perf.retired_pages_double_bit} pages retired after double-bit errors")
    return out


@rule("EC-PERF-010", "A GPU reports memory errors", Severity.WARNING, "multigpu")
def memory_errors(ctx: Context) -> Iterator[Hit]:
    """Uncorrectable ECC errors, retirements or remappings that wait for a reset, or a failed
    remapping: the GPU's memory is faulty (NVIDIA's memory error management pages). Corrected
    errors alone are the ECC doing its work and are not reported."""
    for gpu in visible_speed_gpus(ctx):
        problems = _memory_problems(gpu)
        if not problems:
            continue
        failed = bool(gpu.performance.remapping_failed)
        yield Hit(
            title=f"{gpu.label}: {'; '.join(problems)}",
            detail="A job can crash or stall on it; a pending retirement or remapping takes effect at the next reset.",
            evidence=tuple((p, "") for p in problems),
            fix=Fix(
                "Leave the GPU out and have it replaced (a failed remapping cannot be repaired)"
                if failed
                else "Reset the GPU when nothing runs on it (or reboot), then look again",
                () if failed else (ctx.shell_command(f"sudo nvidia-smi -i {gpu.index} -r"),),
                url=RETIREMENT_DOCS,
            ),
        )


@rule("EC-PERF-011", "This process may not run on the CPUs next to its GPUs", Severity.WARNING, "multigpu")
def far_cpus(ctx: Context) -> Iterator[Hit]:
    """A process pinned (taskset, numactl, a scheduler's cgroup) to CPUs of another NUMA node
    than a GPU's feeds that GPU across the socket link: its input pipeline and copies are slower."""
    host = ctx.facts.host
    allowed = parse_cpu_list(host.cpu_affinity)
    if not allowed or (host.cpu_count and len(allowed) >= host.cpu_count):
        return  # not pinned, or not known
    far = [g for g in visible_speed_gpus(ctx) if g.local_cpus and not (parse_cpu_list(g.local_cpus) & allowed)]
    if not far:
        return
    nodes = sorted({g.numa_node for g in far if g.numa_node is not None})
    where = (
        f"node {nodes[0]}'s CPUs: numactl --cpunodebind={nodes[0]} --membind={nodes[0]} followed by the job's command"
        if len(nodes) == 1
        else "CPUs of its GPUs' node"
    )
    yield Hit(
        title=f"This process may run only on CPUs {host.cpu_affinity}, none of them next to "
        + ", ".join(f"GPU {g.index}" for g in far),
        detail="Its input pipeline and host-to-device copies for those GPUs cross the link between CPU sockets.",
        evidence=(("process CPUs", host.cpu_affinity or "?"),)
        + tuple(
            (g.label, f"NUMA node {g.numa_node if g.numa_node is not None else '?'}, CPUs {g.local_cpus}") for g in far
        ),
        fix=Fix(f"Run the job on {where} (or one job per socket)"),
    )
