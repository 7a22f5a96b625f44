"""Why a run does not scale, named from its measurements (validation/scaling.py), with evidence
and the fix: a straggler, an input-bound pipeline, a communication-bound all-reduce, a batch too
small for the devices, or logical devices that share one processor.

The bar is public guidance: TensorFlow's maintainers expect about 90% scaling efficiency from
MirroredStrategy on one machine, and the setup guide's own run went from 63 s to 16 s an epoch on
four GPUs (3.9x, 98%). Below 90% envcheck looks for the cause; at or above it the run "scales as
expected". The other thresholds leave room for timing noise, so a name is only given when the
measurement says so clearly.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Optional

from envcheck.render.scaling import short
from envcheck.validation.scaling import BATCH_PROBE_FACTOR, ScalingMeasurement

EXPECTED_EFFICIENCY = 0.90  # TensorFlow's guidance for MirroredStrategy (the setup guide reached 0.98)
STRAGGLER_RATIO = 0.80  # a device alone below 80% of the median device's images/s
INPUT_SHORTFALL = 0.90  # the pipeline alone below 90% of what the devices can take
INPUT_CAPPED = 0.80  # ... and training runs at 80% or more of the pipeline's rate: it waits for input
COMMUNICATION_SHARE = 0.50  # the bare all-reduce explains half or more of the step time lost
BATCH_GAIN = 1.50  # one device does 1.5x the images/s with a four times larger batch

STRAGGLER, INPUT_BOUND, COMMUNICATION_BOUND, BATCH_TOO_SMALL, SHARED_DEVICE, UNEXPLAINED = (
    "straggler",
    "input-bound",
    "communication-bound",
    "batch too small",
    "shared device",
    "unexplained",
)


@dataclass(frozen=True)
class Bottleneck:
    name: str  # one of the names above
    title: str
    evidence: tuple[str, ...]
    fix: tuple[str, ...]
    device: Optional[str] = None  # the straggler

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "evidence": list(self.evidence),
            "fix": list(self.fix),
            "device": self.device,
        }


@dataclass
class ScalingAnalysis:
    efficiencies: list[tuple[int, float]]  # (devices, images/s over count x one device's)
    bottlenecks: list[Bottleneck] = field(default_factory=list)

    @property
    def scales(self) -> bool:
        return all(e >= EXPECTED_EFFICIENCY for _, e in self.efficiencies)

    @property
    def verdict(self) -> str:
        """One line: how it scales, and the first bottleneck."""
        if not self.efficiencies or len(self.efficiencies) < 2:
            head = "one device: nothing to scale"
        else:
            count, last = self.efficiencies[-1]
            head = f"{count} devices at {last:.0%} efficiency" + (
                ": scales as expected"
                if last >= EXPECTED_EFFICIENCY
                else f", below the {EXPECTED_EFFICIENCY:.0%} expected"
            )
        if self.bottlenecks:
            return f"{head}; bottleneck: {self.bottlenecks[0].name} ({self.bottlenecks[0].title})"
        return head

    def to_dict(self) -> dict[str, Any]:
        return {
            "efficiency": [{"devices": n, "efficiency": round(e, 4)} for n, e in self.efficiencies],
            "expected_efficiency": EXPECTED_EFFICIENCY,
            "scales_as_expected": self.scales,
            "bottleneck": self.bottlenecks[0].name if self.bottlenecks else None,
            "bottlenecks": [b.to_dict() for b in self.bottlenecks],
            "verdict": self.verdict,
        }


def efficiencies(m: ScalingMeasurement) -> list[tuple[int, float]]:
    if not m.counts:
        return []
    one = m.counts[0].images_per_second
    return [(len(r.devices), r.images_per_second / (len(r.devices) * one) if one > 0 else 0.0) for r in m.counts]


def analyse(m: ScalingMeasurement) -> ScalingAnalysis:
    analysis = ScalingAnalysis(efficiencies(m))
    low = not analysis.scales
    for check in (_straggler, _input_bound, _communication_bound):
        found = check(m) if low else None
        if found is not None:
            analysis.bottlenecks.append(found)
    batch = _batch_too_small(m)
    if batch is not None:
        analysis.bottlenecks.append(batch)
    if low and not analysis.bottlenecks:
        analysis.bottlenecks.append(_shared_or_unexplained(m))
    return analysis


def _straggler(m: ScalingMeasurement) -> Optional[Bottleneck]:
    if len(m.alone) < 2:
        return None
    rates = [r.images_per_second for r in m.alone]
    median = statistics.median(rates)
    slowest = min(m.alone, key=lambda r: r.images_per_second)
    if median <= 0 or slowest.images_per_second >= STRAGGLER_RATIO * median:
        return None
    name = short(slowest.devices[0])
    return Bottleneck(
        STRAGGLER,
        f"{name} is slower than the others, and every step waits for it",
        (
            f"{name} alone: {slowest.images_per_second:.0f} images/s; the median device alone: {median:.0f} images/s "
            f"({slowest.images_per_second / median:.0%})",
            "a synchronous step ends when the slowest replica ends",
        ),
        (
            f"find out why {name} is slow: envcheck doctor -v (its link, clocks, temperature, other processes)",
            "or train without it: leave it out of CUDA_VISIBLE_DEVICES",
        ),
        device=slowest.devices[0],
    )


def _capacity(m: ScalingMeasurement) -> float:
    """Images/s the N devices could take if nothing else held them back (each alone, summed)."""
    return sum(r.images_per_second for r in m.alone) if m.alone else len(m.devices) * m.counts[0].images_per_second


def _input_bound(m: ScalingMeasurement) -> Optional[Bottleneck]:
    pipeline = m.pipeline_images_per_second
    if not pipeline or not m.counts:
        return None
    need = _capacity(m)
    reached = m.counts[-1].images_per_second
    if pipeline >= INPUT_SHORTFALL * need or reached < INPUT_CAPPED * pipeline:
        return None
    return Bottleneck(
        INPUT_BOUND,
        f"the input pipeline delivers {pipeline:.0f} images/s; the {len(m.devices)} devices could take {need:.0f}",
        (
            f"the input pipeline alone: {pipeline:.0f} images/s",
            f"the devices alone, summed: {need:.0f} images/s",
            f"training on {len(m.devices)} devices: {reached:.0f} images/s ({reached / pipeline:.0%} of the pipeline)",
        ),
        (
            "parallelise the input: map(..., num_parallel_calls=tf.data.AUTOTUNE) and .prefetch(tf.data.AUTOTUNE)",
            "decode once: .cache() after decoding, or store decoded images",
            "move augmentation into the model (Keras preprocessing layers run on the device), as envcheck train does",
        ),
    )


def _communication_bound(m: ScalingMeasurement) -> Optional[Bottleneck]:
    if m.allreduce_seconds is None or len(m.counts) < 2:
        return None
    one, last = m.counts[0].step_seconds, m.counts[-1].step_seconds
    lost = last - one
    if lost <= 0 or m.allreduce_seconds < COMMUNICATION_SHARE * lost:
        return None
    n = len(m.devices)
    return Bottleneck(
        COMMUNICATION_BOUND,
        f"the all-reduce of {m.gradient_megabytes:.1f} MB of gradients takes {m.allreduce_seconds * 1e3:.0f} ms of a "
        f"{last * 1e3:.0f} ms step",
        (
            f"a step on 1 device: {one * 1e3:.0f} ms; on {n}: {last * 1e3:.0f} ms ({lost * 1e3:.0f} ms more)",
            f"a bare all-reduce of the gradients on {n} devices: {m.allreduce_seconds * 1e3:.0f} ms",
        ),
        (
            "a larger per-replica batch (fewer all-reduces per image), with the learning rate scaled by the same factor",
            "a faster path between the devices: NVLink or P2P (envcheck doctor's Multi-GPU line), NCCL not disabled",
            "fewer, larger gradients: mixed precision halves the activations, not the float32 gradients",
        ),
    )


def _batch_too_small(m: ScalingMeasurement) -> Optional[Bottleneck]:
    if m.larger_batch is None or not m.alone:
        return None
    base = m.alone[0].images_per_second
    bigger = m.larger_batch.images_per_second
    if base <= 0 or bigger < BATCH_GAIN * base:
        return None
    batch = m.alone[0].batch_per_replica
    return Bottleneck(
        BATCH_TOO_SMALL,
        f"a batch of {batch} per device leaves it underused: {BATCH_PROBE_FACTOR * batch} gives {bigger / base:.1f}x the images/s",
        (
            f"one device, {batch} per replica: {base:.0f} images/s",
            f"one device, {BATCH_PROBE_FACTOR * batch} per replica: {bigger:.0f} images/s",
        ),
        (
            f"raise the per-replica batch (envcheck train --batch-per-replica {BATCH_PROBE_FACTOR * batch}) and scale the "
            "learning rate with it (linear scaling, with a warm-up)",
            "run several steps per call: model.compile(..., steps_per_execution=N)",
        ),
    )


def _shared_or_unexplained(m: ScalingMeasurement) -> Bottleneck:
    last = m.counts[-1]
    if m.logical_cpu:
        return Bottleneck(
            SHARED_DEVICE,
            f"the {len(m.devices)} devices are logical devices of one CPU and share its cores",
            (
                f"1 device: {m.counts[0].images_per_second:.0f} images/s; {len(last.devices)}: {last.images_per_second:.0f}",
                "logical CPU devices run the multi-replica code path, not more compute",
            ),
            ("measure on GPUs for real scaling figures: envcheck validate --scaling on a GPU machine",),
        )
    return Bottleneck(
        UNEXPLAINED,
        "none of the measured causes explains the loss",
        (f"1 device: {m.counts[0].images_per_second:.0f} images/s; {len(last.devices)}: {last.images_per_second:.0f}",),
        ("profile a few steps with the TensorFlow Profiler (tf.profiler.experimental.start/stop) and look for gaps",),
    )
