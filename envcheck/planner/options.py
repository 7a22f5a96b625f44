"""The options a plan chooses from: a TensorFlow build on an OS, for the GPU or the CPU, with the
Python, driver floor and pip extra it needs on the target machine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from packaging.version import Version

from envcheck.matrix.runs import NATIVE, NONE, PTX, release_runs_on_gpu
from envcheck.planner.target import OS_TITLES, Target, TargetGpu

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix, TfBuild

GPU = "gpu"
CPU = "cpu"

# How the plan's driver relates to the machine's.
DRIVER_OK = "ok"
DRIVER_UPGRADE = "upgrade"
DRIVER_INSTALL = "install"  # a GPU was seen, but no driver answered
DRIVER_UNKNOWN = "unknown"  # planning another machine without --driver
DRIVER_NONE = "n/a"  # CPU plans


@dataclass(frozen=True)
class Option:
    """One way to install: a TensorFlow build on an OS, for the GPU or the CPU."""

    kind: str  # GPU or CPU
    os: str
    build: "TfBuild"
    python: str
    python_change: bool  # the machine's Python cannot run this build
    support: Optional[str] = None  # "native" or "ptx" on the target GPU; None when not known
    driver_floor: Optional[Version] = None
    driver_status: str = DRIVER_NONE
    cuda_extra: Optional[str] = None  # the pip extra that brings CUDA and cuDNN as wheels ("and-cuda")
    # The exact release asked for with --tf when it is more precise than the matrix row ("2.14.0"
    # under the 2.14 row): pip installs that one, not the series' newest patch.
    exact: Optional[str] = None
    cpu_distribution: str = "tensorflow"  # the package of a CPU option (tensorflow-cpu where it exists)

    @property
    def tf(self) -> str:
        return str(self.build.tf)

    @property
    def cuda(self) -> Optional[str]:
        return str(self.build.cuda) if self.kind == GPU and self.build.cuda else None

    @property
    def cudnn(self) -> Optional[str]:
        return str(self.build.cudnn) if self.kind == GPU and self.build.cudnn else None

    @property
    def python_range(self) -> str:
        return python_range(self.build.python)

    def summary(self) -> str:
        """One line: release, where, Python, CUDA, cuDNN, driver."""
        parts = [f"TensorFlow {self.tf} on the {'GPU' if self.kind == GPU else 'CPU'}, {OS_TITLES[self.os]}"]
        parts.append(f"Python {self.python}" + (" (a different Python)" if self.python_change else ""))
        if self.cuda:
            parts.append(f"CUDA {self.cuda}")
        if self.cudnn:
            parts.append(f"cuDNN {self.cudnn}")
        if self.driver_floor:
            parts.append(f"driver >= {self.driver_floor}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Alternative:
    key: str  # "keep-driver", "newer-python", "wsl2", "native-windows", "cpu", "apple-metal", "newer-gpu"
    title: str
    text: str
    option: Optional[Option] = None


@dataclass(frozen=True)
class Choice:
    target: Target  # the GPUs the plan is for (those worth using) when some are left out
    option: Option
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    alternatives: tuple[Alternative, ...]
    left_out: tuple[TargetGpu, ...] = ()  # GPUs the chosen release does not run on: hidden from it


# --- small helpers -------------------------------------------------------------------------------


def python_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def python_range(versions: Iterable[str]) -> str:
    ordered = sorted(versions, key=python_key)
    if not ordered:
        return "?"
    return ordered[0] if len(ordered) == 1 else f"{ordered[0]}-{ordered[-1]}"


def driver_floor(matrix: "Matrix", build: "TfBuild", os: str, support: Optional[str]) -> Optional[Version]:
    """The oldest driver that runs this build's CUDA on ``os`` (the matrix's driver requirement:
    the minor-version floor, or the release's own minimum for a card that runs it through PTX)."""
    if build.cuda is None:
        return None
    need = matrix.driver_requirement(build.cuda, os, support)
    return need.minimum if need is not None else None


def gpu_fit(
    matrix: "Matrix", build: "TfBuild", target: Target, os: str
) -> tuple[Optional[str], Optional[Version], bool]:
    """(how the build runs on the target's GPUs: "native", "ptx" or "none"; the driver it needs;
    whether every GPU can get that driver), by the one question asked for each of their
    capabilities. Support None and the release's floor when no capability is known."""
    if not build.gpu or build.cuda is None:
        return NONE, None, False
    answers = [release_runs_on_gpu(matrix, build, cc, os) for cc in target.capabilities]
    if not answers:
        return None, driver_floor(matrix, build, os, None), True
    codes = {a.code for a in answers}
    support = NONE if NONE in codes else PTX if PTX in codes else NATIVE
    needs = [a.driver_needed for a in answers if a.driver_needed is not None]
    floor = max(needs) if needs else driver_floor(matrix, build, os, support)
    return support, floor, all(a.runs is not False for a in answers)


def _pick_python(build: "TfBuild", wanted: Optional[str], bits: Optional[int]) -> tuple[str, bool]:
    """The Python to use with ``build``: the machine's when the build supports it, else its newest."""
    if wanted and build.supports_python(wanted) and bits in (None, 64):
        return wanted, False
    newest = max(build.python, key=python_key)
    return newest, wanted is not None


def _driver_status(target: Target, floor: Optional[Version]) -> str:
    if target.driver is None:
        seen = target.gpu_source in ("NVML", "PCI bus")  # a GPU was read from a machine, no driver answered
        return DRIVER_INSTALL if seen and target.has_gpu else DRIVER_UNKNOWN
    if floor is None:
        return DRIVER_UNKNOWN
    return DRIVER_OK if target.driver >= floor else DRIVER_UPGRADE


def gpu_option(
    matrix: "Matrix",
    build: "TfBuild",
    target: Target,
    os: str,
    python: Optional[str] = None,
    fit: Optional[tuple[Optional[str], Optional[Version], bool]] = None,
) -> Option:
    """The build as a GPU option for the target; ``fit``: its ``gpu_fit``, where the caller has it."""
    support, floor, _reachable = fit if fit is not None else gpu_fit(matrix, build, target, os)
    chosen, change = _pick_python(build, target.python if python is None else python, target.python_bits)
    return Option(
        kind=GPU,
        os=os,
        build=build,
        python=chosen,
        python_change=change,
        support=support,
        driver_floor=floor,
        driver_status=_driver_status(target, floor),
        cuda_extra=matrix.cuda_extra(build, os),
    )


def cpu_option(matrix: "Matrix", build: "TfBuild", target: Target, os: str) -> Option:
    chosen, change = _pick_python(build, target.python, target.python_bits)
    return Option(
        kind=CPU,
        os=os,
        build=build,
        python=chosen,
        python_change=change,
        cpu_distribution=matrix.cpu_distribution(build, os, target.machine),
    )


def release_rows(matrix: "Matrix", os: str) -> list["TfBuild"]:
    """One row per release series, newest first. A minor row ("2.15") covers every patch release
    and pip takes the newest patch; a patch row ("2.15.0") only describes that exact release, so
    it stands for its series only where the matrix has no minor row."""
    series: dict[tuple[int, ...], "TfBuild"] = {}
    for build in matrix.tf_releases(os):
        key = build.tf.release[:2]
        current = series.get(key)
        if (
            current is None
            or len(build.tf.release) < len(current.tf.release)
            or (len(build.tf.release) == len(current.tf.release) and build.tf > current.tf)
        ):
            series[key] = build
    return [series[key] for key in sorted(series, reverse=True)]


def gpu_options(matrix: "Matrix", target: Target, os: str, *, python: bool = True) -> list[Option]:
    """GPU options on ``os`` that fit the GPU (and the Python when ``python``), newest first."""
    out = []
    for build in release_rows(matrix, os):
        if not matrix.has_gpu_build(build, os):
            continue
        fit = gpu_fit(matrix, build, target, os)
        if not fit[2]:
            continue  # no code for a GPU, or a driver its architecture never gets (Kepler stops at 470)
        option = gpu_option(matrix, build, target, os, fit=fit)
        if python and option.python_change:
            continue
        out.append(option)
    return out


def cpu_options(matrix: "Matrix", target: Target, os: str, *, python: bool = True) -> list[Option]:
    out = []
    for build in release_rows(matrix, os):
        option = cpu_option(matrix, build, target, os)
        if python and option.python_change:
            continue
        out.append(option)
    return out
