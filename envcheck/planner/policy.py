"""Which TensorFlow to install: the recommendation policy and its alternatives.

The policy: recommend the newest release that fits the hard constraints -- the operating system,
the Python version and the GPU's compute capability. The driver is a soft constraint: when that
release needs a newer driver, upgrading it becomes the plan's first step, and "keep your driver"
(the newest release that runs on the driver as it is) is listed as an alternative. A newer driver
still runs every older CUDA release, so upgrading it closes no door, while settling for an old
TensorFlow does (Keras 3, newer Python and security fixes only come with new releases).

When no release fits the Python version, the newest fitting release is still recommended, with
the Python it needs; when none fits the GPU, the plan is for the CPU and says why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from envcheck.errors import NotFoundError
from envcheck.matrix import BUILD_OSES, as_version
from envcheck.matrix.runs import release_runs_on_gpu
from envcheck.planner.options import (
    DRIVER_INSTALL,
    DRIVER_OK,
    DRIVER_UPGRADE,
    GPU,
    Alternative,
    Choice,
    Option,
    cpu_option,
    cpu_options,
    gpu_option,
    gpu_options,
)
from envcheck.planner.target import OS_TITLES, Target, TargetGpu
from envcheck.planner.worth import newest_for, only, split_gpus

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix, TfBuild


def _fits_driver(option: Option) -> bool:
    return option.driver_status != DRIVER_UPGRADE


def _capability_text(target: Target) -> str:
    return f"compute capability {target.compute_capability}" if target.compute_capability else "an unknown GPU"


def _no_run_reason(matrix: "Matrix", build: "TfBuild", target: Target, os: str) -> str:
    """The GPU a build does not run on and why, in the one answer every verdict uses
    (``release_runs_on_gpu``): no code for the capability, PTX it cannot JIT for the card, a driver
    the card cannot get."""
    for capability in target.capabilities:
        answer = release_runs_on_gpu(matrix, build, capability, os)
        if answer.runs is False or answer.code == "none":
            return f"compute capability {capability}: {answer.reason}"
    if build.min_compute_capability and not target.capabilities:
        return f"{_capability_text(target)} (it needs {build.min_compute_capability} or higher)"
    return _capability_text(target)


# --- the choice ----------------------------------------------------------------------------------


def choose(matrix: "Matrix", target: Target) -> Choice:
    if target.tf_pin:
        return _choose_pinned(matrix, target)
    if target.has_gpu is False or target.os == "macos":
        return _cpu_choice(matrix, target, _why_cpu(matrix, target))
    everything = target
    target, left_out = split_gpus(matrix, target)
    candidates = gpu_options(matrix, target, target.os)
    reasons: list[str] = []
    if not candidates:
        # No build fits this Python: recommend the newest that fits the GPU, with the Python it needs.
        candidates = gpu_options(matrix, target, target.os, python=False)
        if candidates and target.python:
            reasons.append(
                f"No TensorFlow GPU build for {OS_TITLES[target.os]}{_gpu_limits_python(matrix, target)} supports "
                f"Python {target.python}{_bits_note(target)}; TensorFlow {candidates[0].tf} needs Python "
                f"{candidates[0].python_range}, so install Python {candidates[0].python}."
            )
    if not candidates:
        return _cpu_choice(matrix, target, _why_no_gpu_build(matrix, target))
    best = candidates[0]
    reasons[:0] = _why_this_release(matrix, target, best)
    reasons.extend(_left_out_reasons(matrix, target, best, left_out))
    reasons.extend(_driver_reasons(matrix, target, best))
    alternatives = _gpu_alternatives(matrix, target, best, candidates)
    if left_out:
        alternatives[:0] = _every_gpu(matrix, everything)
    return Choice(target, best, tuple(reasons), _warnings(matrix, target, best), tuple(alternatives), left_out)


def _left_out_reasons(matrix: "Matrix", target: Target, best: Option, left_out: tuple[TargetGpu, ...]) -> list[str]:
    out = []
    for gpu in left_out:
        newest = newest_for(matrix, only(target, gpu.compute_capability))
        older = f"the newest release for it is {newest.tf}" if newest is not None else "no GPU release runs on it"
        out.append(
            f"{gpu.name} (compute capability {gpu.compute_capability}) is left out: TensorFlow {best.tf} does not "
            f"run on it and {older}; the plan hides it from TensorFlow with CUDA_VISIBLE_DEVICES."
        )
    return out


def _every_gpu(matrix: "Matrix", everything: Target) -> list[Alternative]:
    """When the plan leaves GPUs out: the newest release that runs on all of them, if any."""
    option = newest_for(matrix, everything)
    if option is None:
        return []
    return [
        Alternative(
            "every-gpu", "Every GPU", f"the newest release that runs on all of them: {option.summary()}", option
        )
    ]


def _gpu_limits_python(matrix: "Matrix", target: Target) -> str:
    """' that runs on compute capability X' when the GPU, not the OS, is why no build fits the Python:
    some GPU build for this OS supports the Python, but none of those runs on this GPU."""
    if not target.compute_capability or not gpu_options(matrix, only(target, None), target.os):
        return ""
    return f" that runs on {_capability_text(target)}"


def _bits_note(target: Target) -> str:
    return f" ({target.python_bits}-bit)" if target.python_bits and target.python_bits != 64 else ""


def _why_this_release(matrix: "Matrix", target: Target, best: Option) -> list[str]:
    fits = [OS_TITLES[target.os]]
    if target.python and not best.python_change:
        fits.append(f"Python {target.python}")
    if target.compute_capability is not None:
        fits.append(_capability_text(target))
    reasons = []
    if target.os == "windows":
        last = matrix.platform.windows_native_gpu_last
        reasons.append(
            f"TensorFlow's GPU builds for native Windows end at {last}; newer releases use the GPU "
            "only under WSL2 (see the alternatives)."
        )
    reasons.append(f"TensorFlow {best.tf} is the newest release whose GPU build fits {_and_join(fits)}.")
    reasons.extend(_support_reasons(target, best))
    if best.cuda:
        reasons.append(f"It is built with CUDA {best.cuda} and cuDNN {best.cudnn or '?'}.")
    return reasons


def _support_reasons(target: Target, option: Option) -> list[str]:
    """How the GPU build runs on the target's card: unchecked (capability unknown) or through PTX."""
    if target.compute_capability is None:
        low = option.build.min_compute_capability
        return [
            "The GPU's compute capability is not known, so it was not checked"
            + (f"; TensorFlow {option.tf} needs {low} or higher" if low else "")
            + " (give --gpu NAME or --compute-capability X.Y)."
        ]
    if option.support == "ptx":
        return [
            f"TensorFlow {option.tf} has no code compiled for compute capability {target.compute_capability}; "
            "it runs through PTX, which the driver compiles on first start (minutes, cached afterwards)."
        ]
    return []


def _driver_reasons(matrix: "Matrix", target: Target, option: Option) -> list[str]:
    if option.kind != GPU or option.driver_floor is None:
        return []
    requirement = matrix.driver_requirement(option.cuda, option.os, option.support)
    where = requirement.os_title if requirement is not None else "Linux"
    need = f"CUDA {option.cuda} needs NVIDIA driver {option.driver_floor} or newer on {where}"
    full = requirement.full if requirement is not None else None
    first = (
        matrix.first_driver(str(target.compute_capability), option.os)
        if target.compute_capability is not None
        else None
    )
    if first is not None and first[1] == option.driver_floor and (full is None or first[1] > full):
        # The card is newer than the build's CUDA: its own first CUDA's driver is the floor.
        need = (
            f"Compute capability {target.compute_capability} needs NVIDIA driver {option.driver_floor} or newer on "
            f"{where}, the driver of CUDA {first[0].version.major}.{first[0].version.minor}, the first release for it"
        )
    elif full is not None and option.driver_floor < full:
        major = option.build.cuda.major
        need += f" (the floor of CUDA {major}'s minor-version compatibility; the {option.cuda} toolkit itself asks for {full})"
    if option.os == "wsl":
        need += " (under WSL2 the driver is the Windows one)"
    ceiling = matrix.last_driver_branch(target.compute_capability) if target.compute_capability is not None else None
    if ceiling is not None and _held_back_by_ceiling(matrix, target, option):
        arch = matrix.architecture(str(target.compute_capability))
        need += f"; {arch.name if arch else 'these'} GPUs get no driver after the {ceiling} branch, so the plan stays within it"
    if option.driver_status == DRIVER_OK:
        return [f"{need}; driver {target.driver} is new enough."]
    if option.driver_status == DRIVER_UPGRADE:
        return [
            f"{need}; driver {target.driver} is older, so upgrade the driver first. A newer driver still "
            "runs older CUDA releases, so the upgrade closes no door; to keep this driver, see the alternatives."
        ]
    if option.driver_status == DRIVER_INSTALL:
        return [f"{need}; no NVIDIA driver answered on this machine, so install one first."]
    return [f"{need} (the driver is not known: check it with nvidia-smi, or pass --driver)."]


def _held_back_by_ceiling(matrix: "Matrix", target: Target, option: Option) -> bool:
    """A newer release has code for the card, but needs a driver its architecture never gets."""
    cc = target.compute_capability
    newer = matrix.newest_release(
        option.os, gpu=True, python=option.python, accept=lambda b: matrix.support(b, cc) != "none"
    )
    return newer is not None and newer.tf > option.build.tf


def _keep_driver(target: Target, best: Option, candidates: list[Option]) -> list[Alternative]:
    """When the plan upgrades the driver: the newest release that runs on the driver as it is."""
    out: list[Alternative] = []
    if best.driver_status == DRIVER_UPGRADE:
        keep = next((o for o in candidates if _fits_driver(o)), None)
        if keep is not None:
            out.append(
                Alternative(
                    "keep-driver",
                    f"Keep driver {target.driver}",
                    f"the newest release that runs on it: {keep.summary()}",
                    keep,
                )
            )
        else:
            out.append(
                Alternative(
                    "keep-driver",
                    f"Keep driver {target.driver}",
                    "no TensorFlow GPU release in the matrix runs on it; the driver must be upgraded "
                    f"(to {best.driver_floor} or newer for TensorFlow {best.tf}).",
                )
            )
    return out


def _gpu_alternatives(matrix: "Matrix", target: Target, best: Option, candidates: list[Option]) -> list[Alternative]:
    out = _keep_driver(target, best, candidates)
    if not best.python_change:
        any_python = gpu_options(matrix, target, target.os, python=False)
        newer = next((o for o in any_python if o.build.tf > best.build.tf), None)
        if newer is not None:
            out.append(
                Alternative(
                    "newer-python",
                    f"Python {newer.python}",
                    f"TensorFlow {newer.tf} needs Python {newer.python_range}: {newer.summary()}",
                    newer,
                )
            )
    if target.os == "windows":
        wsl = _wsl_option(matrix, target)
        if wsl is not None and wsl.build.tf > best.build.tf:
            out.append(
                Alternative(
                    "wsl2",
                    "WSL2",
                    f"TensorFlow's Linux build runs on this GPU under WSL2: {wsl.summary()}",
                    wsl,
                )
            )
    out.append(_cpu_alternative(matrix, target))
    return out


def _wsl_option(matrix: "Matrix", target: Target) -> Optional[Option]:
    """The newest GPU build under WSL2. Inside WSL2 Python is a fresh install, so any version will do."""
    inside = replace(target, python_bits=None)
    options = gpu_options(matrix, inside, "wsl", python=False)
    if not options:
        return None
    return options[0]


def _cpu_alternative(matrix: "Matrix", target: Target) -> Alternative:
    options = cpu_options(matrix, target, target.os) or cpu_options(matrix, target, target.os, python=False)
    if not options:
        return Alternative("cpu", "CPU only", f"no TensorFlow build for {OS_TITLES[target.os]} is in the matrix.")
    cpu = options[0]
    return Alternative("cpu", "CPU only", f"no GPU setup at all: {cpu.summary()}", cpu)


# --- CPU plans -----------------------------------------------------------------------------------


def _why_cpu(matrix: "Matrix", target: Target) -> list[str]:
    if target.os == "macos":
        return [
            "TensorFlow has no CUDA GPU support on macOS (NVIDIA's CUDA for macOS ended with CUDA 10.2), "
            "so the plan is for the CPU."
        ]
    if target.origin("gpu") == "--cpu":
        return ["--cpu: planning for the CPU only."]
    where = {"PCI bus": " on the PCI bus", "NVML": " through the NVIDIA driver"}.get(target.origin("gpu"), "")
    return [
        f"No NVIDIA GPU was found{where}, so the plan is for the CPU "
        "(to plan for a machine that has one, give --gpu NAME and --driver VERSION)."
    ]


def _why_no_gpu_build(matrix: "Matrix", target: Target) -> list[str]:
    builds = matrix.gpu_builds(target.os)
    if not builds:
        return [f"The matrix has no TensorFlow GPU build for {OS_TITLES[target.os]}, so the plan is for the CPU."]
    lowest = min((b.min_compute_capability for b in builds if b.min_compute_capability), default=None)
    return [
        f"No TensorFlow GPU build for {OS_TITLES[target.os]} runs on {_capability_text(target)}"
        + (f" (the lowest any build supports is {lowest})" if lowest else "")
        + ", so the plan is for the CPU."
    ]


def _cpu_choice(matrix: "Matrix", target: Target, reasons: list[str]) -> Choice:
    options = cpu_options(matrix, target, target.os)
    reasons = list(reasons)
    if not options:
        options = cpu_options(matrix, target, target.os, python=False)
        if not options:
            raise NotFoundError(f"the compatibility matrix has no TensorFlow build for {OS_TITLES[target.os]}")
        if target.python:
            reasons.append(
                f"No TensorFlow release for {OS_TITLES[target.os]} supports Python {target.python}{_bits_note(target)}; "
                f"TensorFlow {options[0].tf} needs Python {options[0].python_range}, so install Python {options[0].python}."
            )
    best = options[0]
    reasons.append(
        f"TensorFlow {best.tf} is the newest release for {OS_TITLES[target.os]}"
        + ("" if best.python_change or not target.python else f" that supports Python {target.python}")
        + "."
    )
    alternatives = []
    if target.os == "macos":
        alternatives.append(
            Alternative(
                "apple-metal",
                "Apple GPU (Metal)",
                "on Apple silicon, Apple's tensorflow-metal plug-in runs TensorFlow on the Mac's own GPU; "
                "it is Apple's project, not CUDA, and envcheck does not check it.",
            )
        )
    elif target.has_gpu and target.compute_capability is not None:
        alternatives.append(_newer_gpu_alternative(matrix, target))
    return Choice(target, best, tuple(reasons), _warnings(matrix, target, best), tuple(alternatives))


def _newer_gpu_alternative(matrix: "Matrix", target: Target) -> Alternative:
    builds = [b for b in matrix.gpu_builds(target.os) if b.min_compute_capability]
    if not builds:
        return Alternative("newer-gpu", "A supported GPU", "the matrix has no GPU build for this OS.")
    newest = builds[-1]
    return Alternative(
        "newer-gpu",
        "A supported GPU",
        f"TensorFlow {newest.tf} needs an NVIDIA GPU with compute capability {newest.min_compute_capability} "
        "or higher (https://developer.nvidia.com/cuda-gpus).",
    )


# --- a pinned release ----------------------------------------------------------------------------


def _choose_pinned(matrix: "Matrix", target: Target) -> Choice:
    pin = target.tf_pin or ""
    build = _pinned_build(matrix, target, pin)
    reasons = [f"--tf {pin}: TensorFlow {build.tf} as asked."]
    if target.has_gpu is False or target.os == "macos":
        option = cpu_option(matrix, build, target, target.os)
        reasons = _why_cpu(matrix, target) + reasons + _python_reasons(target, option)
        return Choice(target, option, tuple(reasons), _warnings(matrix, target, option), ())
    option, why, alternatives = _pinned_gpu(matrix, target, build, pin)
    reasons += why
    if option is None:
        option = cpu_option(matrix, build, target, target.os)
        reasons.append(f"The plan is TensorFlow {build.tf} on the CPU.")
    else:
        reasons.extend(_support_reasons(target, option))
        reasons.append(f"It is built with CUDA {option.cuda} and cuDNN {option.cudnn or '?'}.")
        reasons.extend(_driver_reasons(matrix, target, option))
        alternatives[:0] = _keep_driver(target, option, gpu_options(matrix, target, option.os, python=False))
        cpu = cpu_option(matrix, build, target, target.os)
        alternatives.append(Alternative("cpu", "CPU only", f"no GPU setup at all: {cpu.summary()}", cpu))
    reasons.extend(_python_reasons(target, option))
    exact = _exact_release(pin, build)
    if exact:
        reasons.append(f"pip installs exactly {exact}; the matrix's TensorFlow {build.tf} row covers it.")
        option = replace(option, exact=exact)
        alternatives = [
            replace(a, option=replace(a.option, exact=exact)) if a.key == "cpu" and a.option is not None else a
            for a in alternatives
        ]
    return Choice(target, option, tuple(reasons), _warnings(matrix, target, option), tuple(alternatives))


def _pinned_build(matrix: "Matrix", target: Target, pin: str) -> "TfBuild":
    """The matrix row of the release asked for on the target's OS, or a NotFoundError saying why."""
    build = matrix.tf_build(pin, target.os)
    if build is not None:
        return build
    oses = [os for os in BUILD_OSES if matrix.tf_build(pin, os) is not None]
    low, high = matrix.tf_range()
    if not oses:
        raise NotFoundError(
            f"TensorFlow {pin} is not in the compatibility matrix (it covers {low} to {high}); "
            "envcheck does not guess what an unknown release needs"
        )
    raise NotFoundError(
        f"the matrix has no TensorFlow {pin} build for {OS_TITLES[target.os]} (only for {', '.join(oses)})"
    )


def _pinned_gpu(
    matrix: "Matrix", target: Target, build: "TfBuild", pin: str
) -> tuple[Optional[Option], list[str], list[Alternative]]:
    """(the GPU option for the pinned release, or None; why; alternatives): its own GPU build, its
    Linux build under WSL2 where native Windows has none, or none at all."""
    if matrix.has_gpu_build(build, target.os):
        candidate = gpu_option(matrix, build, target, target.os)
        if candidate.support != "none":
            return candidate, [], []
        why = [
            f"TensorFlow {build.tf} does not run on {_no_run_reason(matrix, build, target, target.os)}, so it runs on the CPU only."
        ]
        newest = next(iter(gpu_options(matrix, target, target.os)), None)
        if newest is None:
            return None, why, []
        summary = f"the newest release that runs on this GPU: {newest.summary()}"
        return None, why, [Alternative("older-release", f"TensorFlow {newest.tf}", summary, newest)]
    if target.os == "windows":
        return _pinned_under_wsl(matrix, target, build, pin)
    return None, [f"TensorFlow {build.tf} has no GPU build for {OS_TITLES[target.os]}."], []


def _pinned_under_wsl(
    matrix: "Matrix", target: Target, build: "TfBuild", pin: str
) -> tuple[Optional[Option], list[str], list[Alternative]]:
    """Native Windows after its last GPU release: the same release's Linux build under WSL2."""
    last = matrix.platform.windows_native_gpu_last
    why = [f"TensorFlow {build.tf} has no GPU build for native Windows (the last one is {last})."]
    option = None
    wsl_build = matrix.tf_build(pin, "wsl")
    if wsl_build is not None and wsl_build.gpu:
        candidate = gpu_option(matrix, wsl_build, replace(target, python_bits=None), "wsl")
        if candidate.support != "none":
            option = candidate
            why.append("Its Linux build runs on the GPU under WSL2, so the plan is for WSL2.")
        else:
            why.append(
                f"Its Linux build, which WSL2 would run, does not run on {_no_run_reason(matrix, wsl_build, target, 'wsl')}."
            )
    native = next(
        iter(gpu_options(matrix, target, "windows") or gpu_options(matrix, target, "windows", python=False)), None
    )
    alternatives = []
    if native is not None:
        alternatives.append(
            Alternative(
                "native-windows",
                f"TensorFlow {native.tf} on native Windows",
                f"the last native-Windows GPU release: {native.summary()}",
                native,
            )
        )
    return option, why, alternatives


def _exact_release(pin: str, build: "TfBuild") -> Optional[str]:
    """The release asked for when it names more than the matrix row does (a patch or a pre-release)."""
    wanted = as_version(pin)
    more = wanted.release != build.tf.release or wanted.pre or wanted.post or wanted.dev
    return str(wanted) if more else None


def _python_reasons(target: Target, option: Option) -> list[str]:
    if not option.python_change:
        return []
    return [
        f"TensorFlow {option.tf} needs Python {option.python_range}; Python {target.python}{_bits_note(target)} "
        f"cannot run it, so install Python {option.python}."
    ]


# --- warnings that do not change the choice ------------------------------------------------------


def _warnings(matrix: "Matrix", target: Target, option: Option) -> tuple[str, ...]:
    out = list(target.notes)
    if target.python_bits and target.python_bits != 64:
        out.append(
            f"This Python is {target.python_bits}-bit; TensorFlow publishes 64-bit wheels only "
            "(pip says 'No matching distribution found for tensorflow'). Install a 64-bit Python."
        )
    if target.cpu_flags is not None and "avx" not in target.cpu_flags:
        out.append(
            "This CPU does not report AVX; TensorFlow's official wheels have required it since 1.6, and "
            "'import tensorflow' stops with 'Illegal instruction'. Build from source or use a community "
            "wheel built without AVX."
        )
    return tuple(out)


def _and_join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
