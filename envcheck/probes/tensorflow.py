"""TensorFlow in the probed interpreter: run ``tf_worker.py`` there with a timeout, read its facts.

The worker is started first and read last (``start_tf_worker`` / ``TfWorker.finish``) so every
other probe runs while TensorFlow imports. Whatever the worker does (fails to import, crashes,
hangs, prints garbage) becomes facts with an ``error_kind``; the doctor goes on.
"""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from envcheck import procs
from envcheck.facts import (
    ERROR,
    MISSING,
    OK,
    PlacementResult,
    TensorflowFacts,
    TfDevice,
    snapshot_seconds,
)
from envcheck.probes import tf_worker
from envcheck.probes.limits import TF_TIMEOUT

WORKER_SCRIPT = Path(tf_worker.__file__).resolve()
MARKER = tf_worker.MARKER

MAX_LOG_LINES = 80
MAX_LOG_LINE_CHARS = 500
# The patterns look at this much of a line, as explain's scanner does: no message TensorFlow prints
# is longer, and a regex never meets a line of megabytes (a flood is capped at 8 MiB, not per line).
MAX_SCANNED_CHARS = 8192

# Lines of the worker's output that explain what TensorFlow did with the GPU. Everything else
# (oneDNN notices, CPU feature hints) is noise for this question.
IMPORTANT_LOG_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"Could not load dynamic library",
        r"Successfully opened dynamic library",
        r"Cannot dlopen some GPU libraries",
        r"failed call to cuInit",
        r"Could not find cuda drivers",
        r"(?i)cudnn",
        r"CUBLAS_STATUS|cuBLAS|Unable to register cu\w+ factory",
        r"TF-TRT Warning|Could not find TensorRT",
        r"^\S+: \(\w*(MatMul|Conv2D)\w*\): /job:",  # device placement of the test ops
        r"Executing op \w*(MatMul|Conv2D)\w* in device",  # the same, as older TF 2 prints it
        r"Created device|Ignoring visible gpu device|Adding visible gpu device",
        r"kernel driver does not appear to be running|(kernel|libcuda) reported version|driver version",
        r"CUDA_ERROR|CUDA error|cudaError|cuda_dnn|cuda_blas|cuda_fft|cuda_diagnostics|cuda_executor",
        r"(?i)compute capability",
        r"DLL load failed|Could not find '[^']+\.dll'|ImportError|ModuleNotFoundError|OSError",
        r"(?i)out of memory|\bOOM\b|ResourceExhausted",
        r"ptxas|libdevice|XLA",
        r"Segmentation fault|core dumped|Fatal Python error|Aborted",
    )
)

# "I0000 00:00:1796056734.533541    7312 port.cc:153] message" (absl) and
# "2019-05-01 12:00:00.123456: I tensorflow/.../dso_loader.cc:42] message" (TF 1.x / early 2.x):
# the time and thread id change on every run and say nothing, so they are dropped.
_ABSL_PREFIX = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ ([^\]\s]+:\d+)\] ?")
_OLD_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+: ([IWEF]) ([^\]\s]+:\d+)\] ?")


def worker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the informative lines are INFO and WARNING lines
    env["PYTHONIOENCODING"] = "utf-8"
    return env


class TfWorker:
    """A running worker; ``finish`` waits for it (until its timeout or an earlier deadline) and
    returns its facts. Its output is read as it comes, with a cap (``procs``): a worker that floods
    is stopped, one that hangs is killed with everything it started."""

    def __init__(self, child: procs.Child, timeout: float):
        self.child = child
        self.timeout = timeout

    def finish(self, deadline: Optional[float] = None) -> TensorflowFacts:
        done = self.child.finish(deadline)
        facts = facts_from_worker(
            done.text("stdout"),
            done.text("stderr"),
            returncode=done.returncode,
            timed_out=done.timed_out,
            timeout=self.timeout if deadline is None else min(self.timeout, max(0.0, deadline - self.child.started)),
            seconds=done.seconds,
        )
        if done.flooded:
            return dataclasses.replace(
                facts,
                status=ERROR,
                error_kind="bad_output",
                error=f"the TensorFlow check printed more than {procs.MAX_STREAM_BYTES // (1024 * 1024)} MiB and was stopped",
            )
        return dataclasses.replace(facts, timed_out=done.timed_out)

    def kill(self) -> None:
        self.child.kill()


def start_tf_worker(python: str, environ: Mapping[str, str], timeout: float = TF_TIMEOUT) -> TfWorker | TensorflowFacts:
    """Start the worker in ``python``; facts right away when it cannot even be started."""
    try:
        child = procs.Child([python, str(WORKER_SCRIPT)], timeout=timeout, env=worker_environment(environ))
    except OSError as exc:
        return TensorflowFacts(
            status=ERROR,
            error_kind="worker_failed",
            error=f"cannot run {python}: {exc.strerror or exc}",
        )
    return TfWorker(child, timeout)


def probe_tensorflow(python: Optional[str], environ: Mapping[str, str], timeout: float = TF_TIMEOUT) -> TensorflowFacts:
    started = start_tf_worker(python or sys.executable, environ, timeout)
    return started if isinstance(started, TensorflowFacts) else started.finish()


# --- reading the worker's output -----------------------------------------------------------------


def parse_result(stdout: str) -> tuple[Optional[dict], bool]:
    """(the last result the worker printed, whether anything after a marker failed to parse)."""
    result = None
    garbled = False
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        payload = lines[i + 1] if i + 1 < len(lines) else ""
        try:
            data = json.loads(payload)
        except ValueError:
            garbled = True
            continue
        if isinstance(data, dict):
            result = data
        else:
            garbled = True
    return result, garbled


def important_log_lines(*texts: str) -> tuple[str, ...]:
    """The lines that matter, without timestamps, each once, at most ``MAX_LOG_LINES``."""
    kept: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for raw in text.splitlines():
            line = raw.strip()[:MAX_SCANNED_CHARS]
            if not line or line == MARKER or line.startswith("{"):
                continue
            if not any(p.search(line) for p in IMPORTANT_LOG_PATTERNS):
                continue
            line = _strip_log_prefix(line)[:MAX_LOG_LINE_CHARS]
            if line in seen:
                continue
            seen.add(line)
            kept.append(line)
            if len(kept) >= MAX_LOG_LINES:
                return tuple(kept)
    return tuple(kept)


def _strip_log_prefix(line: str) -> str:
    m = _ABSL_PREFIX.match(line) or _OLD_PREFIX.match(line)
    if m:
        return f"{m.group(1)} {m.group(2)}] {line[m.end() :]}"
    return line


def signal_name(returncode: Optional[int]) -> Optional[str]:
    """SIGSEGV for -11 (POSIX); Windows reports crashes as NTSTATUS exit codes instead."""
    if returncode is None:
        return None
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    windows = {0xC0000005: "access violation", 0xC0000409: "stack buffer overrun", 0xC000001D: "illegal instruction"}
    return windows.get(returncode & 0xFFFFFFFF) if returncode > 0xFFFF else None


_IMPORT_FAILURE = re.compile(
    r"(ImportError|ModuleNotFoundError|DLL load failed|Could not find '[^']+\.dll'|"
    r"Failed to load the native TensorFlow runtime|undefined symbol|Illegal instruction)"
)


def _without_a_result(
    stdout: str, stderr: str, returncode: Optional[int], garbled: bool, base: dict
) -> TensorflowFacts:
    """The worker left no result: TensorFlow's import failed, it printed something else, or it died."""
    combined = stderr + "\n" + stdout
    if _IMPORT_FAILURE.search(combined):
        return TensorflowFacts(
            status=ERROR, error_kind="import_failed", error=_last_error_line(combined), failed_stage="import", **base
        )
    if garbled or stdout.strip():
        return TensorflowFacts(
            status=ERROR,
            error_kind="bad_output",
            error="the TensorFlow check printed output envcheck cannot read: " + _first_line(stdout),
            **base,
        )
    return TensorflowFacts(
        status=ERROR,
        error_kind="worker_failed",
        error=f"the TensorFlow check ended with exit status {returncode} and no result"
        + (f": {_last_line(stderr)}" if stderr.strip() else ""),
        **base,
    )


def facts_from_worker(
    stdout: str,
    stderr: str,
    returncode: Optional[int],
    timed_out: bool = False,
    timeout: float = TF_TIMEOUT,
    seconds: float = 0.0,
) -> TensorflowFacts:
    """Everything the worker left behind, as facts. Pure, so every failure mode is testable."""
    result, garbled = parse_result(stdout)
    logs = important_log_lines(stderr, stdout)
    base = _from_result(result) if result else {}
    base.update(log_lines=logs, returncode=returncode, seconds=seconds)
    stage = _word((result or {}).get("failed_stage")) or _word((result or {}).get("stage"))
    if timed_out:
        return TensorflowFacts(
            status=ERROR,
            error_kind="timeout",
            error=f"the TensorFlow check did not finish within {timeout:g} s and was stopped"
            + (f" (during {stage})" if stage else ""),
            failed_stage=stage,
            **base,
        )
    crash = signal_name(returncode)
    if crash is not None and (result is None or result.get("partial")):
        return TensorflowFacts(
            status=ERROR,
            error_kind="crashed",
            error=f"the TensorFlow check crashed ({crash})" + (f" during {stage}" if stage else ""),
            failed_stage=stage,
            signal=crash,
            **base,
        )
    if result is None:
        return _without_a_result(stdout, stderr, returncode, garbled, base)
    if result.get("not_installed"):
        return TensorflowFacts(
            status=MISSING, error_kind="not_installed", error="TensorFlow is not installed in this interpreter", **base
        )
    if result.get("partial"):
        if stage == "import" and _IMPORT_FAILURE.search(stderr):
            return TensorflowFacts(
                status=ERROR, error_kind="import_failed", error=_last_error_line(stderr), failed_stage="import", **base
            )
        return TensorflowFacts(
            status=ERROR,
            error_kind="worker_failed",
            error=f"the TensorFlow check stopped during {stage} (exit status {returncode})",
            failed_stage=stage,
            **base,
        )
    failed = _word(result.get("failed_stage"))
    error = str(result["error"]) if result.get("error") is not None else None
    if failed == "import":
        return TensorflowFacts(status=ERROR, error_kind="import_failed", error=error, failed_stage="import", **base)
    if failed:
        return TensorflowFacts(status=ERROR, error_kind="worker_failed", error=error, failed_stage=failed, **base)
    return TensorflowFacts(status=OK, **base)


def _from_result(result: dict) -> dict:
    """The worker's JSON as TensorflowFacts keyword arguments; unexpected shapes are dropped."""

    def text(key: str) -> Optional[str]:
        value = result.get(key)
        return str(value) if value is not None else None

    def flag(key: str) -> Optional[bool]:
        value = result.get(key)
        return value if isinstance(value, bool) else None

    def items(key: str) -> list:
        value = result.get(key)
        return value if isinstance(value, list) else []

    def strings(key: str) -> tuple[str, ...]:
        return tuple(str(v) for v in items(key))

    def devices(key: str) -> tuple[TfDevice, ...]:
        out = []
        for item in items(key):
            if isinstance(item, dict) and "name" in item:
                details = item.get("details") if isinstance(item.get("details"), dict) else {}
                out.append(
                    TfDevice(
                        name=str(item["name"]),
                        device_type=str(item.get("device_type", "")),
                        details={str(k): str(v) for k, v in details.items()},
                    )
                )
        return tuple(out)

    placement = []
    for item in items("placement"):
        if isinstance(item, dict) and "op" in item:
            seconds = item.get("seconds")
            placement.append(
                PlacementResult(
                    op=str(item["op"]),
                    requested=str(item.get("requested", "")),
                    device=str(item["device"]) if item.get("device") else None,
                    ok=item.get("ok") is True,
                    error=str(item["error"]) if item.get("error") else None,
                    seconds=snapshot_seconds(seconds),
                )
            )
    build = result.get("build_info") if isinstance(result.get("build_info"), dict) else {}
    dists = strings("distributions")
    import_seconds = result.get("import_seconds")
    return dict(
        version=text("version"),
        distribution=dists[0] if dists else None,
        distributions=dists,
        location=text("location"),
        is_cuda_build=flag("is_cuda_build"),
        is_rocm_build=flag("is_rocm_build"),
        cuda_version=text("cuda_version"),
        cudnn_version=text("cudnn_version"),
        compute_capabilities=strings("compute_capabilities"),
        build_info={str(k): str(v) for k, v in build.items() if v is not None},
        physical_devices=devices("physical_devices"),
        logical_devices=devices("logical_devices"),
        placement=tuple(placement),
        mapped_libraries=strings("mapped_libraries"),
        import_seconds=snapshot_seconds(import_seconds),
    )


def _word(value: object) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:200]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _last_error_line(text: str) -> str:
    """The most telling line of a failed import: the last one naming the failure."""
    lines = [ln.strip() for ln in text.splitlines() if _IMPORT_FAILURE.search(ln)]
    return (lines[-1] if lines else _last_line(text))[:1000]
