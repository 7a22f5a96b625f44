"""Level 3: the reference trainer itself, on the devices the doctor finds usable.

quick (default): a short run (a CIFAR-10 subset, or synthetic data) that must lower the loss, on
    exactly the GPUs the doctor's placement test passes on (or the CPU when there are none),
    reporting images/s per replica;
full: the post's 70-epoch protocol on the real data, with its accuracy compared to the post's.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from envcheck.errors import UsageError
from envcheck.facts import Facts
from envcheck.machine import Machine, short_device
from envcheck.validation.checks import Check
from envcheck.words import plural

# Below the post's accuracy by more than this fails --full. The post's figure is one run on the
# original binary images; a re-run on another machine (or the JPEG copy of CIFAR-10) lands within
# about a point of it, so two points separates "the same training" from "something is off".
ACCURACY_TOLERANCE = 0.02
QUICK_GPU = {"subset": 20_000, "val_subset": 2_000, "epochs": 5, "steps_per_epoch": None, "batch_per_replica": 64}
FULL_OUTPUT = Path("envcheck-validate-full")  # kept: a 70-epoch run must survive to be resumed
QUICK_CPU = {"subset": 512, "val_subset": 64, "epochs": 3, "steps_per_epoch": 6, "batch_per_replica": 16}


def loss_falls(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """Did the training loss of the last epoch end below that of the first?"""
    losses = [r.get("loss") for r in rows]
    if len(losses) < 2 or any(v is None for v in losses):
        return False, f"need at least two finished epochs with a finite loss, got {losses}"
    first, last = losses[0], losses[-1]
    if last < first:
        return True, f"loss {first:.4f} -> {last:.4f} over {len(rows)} epochs"
    return False, f"loss did not fall: {first:.4f} -> {last:.4f} over {len(rows)} epochs"


def compare_devices(
    used: list[str], usable_gpus: Optional[list[str]], requested: Optional[int] = None
) -> tuple[bool, str]:
    """The training devices must be every GPU the doctor finds usable, or the CPU when it finds none.

    With `requested` (--gpus N; 0 for the CPU on purpose) they must be the first N GPUs, each usable.
    """
    used_short = sorted(short_device(d) for d in used)
    used_gpus = [d for d in used_short if d.startswith("GPU")]
    if usable_gpus is None:
        return True, f"trained on {', '.join(used_short)} (the doctor's placement test was not available)"
    usable = sorted(short_device(d) for d in usable_gpus)
    if requested == 0:
        ok = not used_gpus
        return ok, (
            f"trained on {', '.join(used_short)}, the CPU as asked"
            if ok
            else f"trained on {', '.join(used_short)} but the CPU was asked for"
        )
    if requested is not None:
        wanted = [f"GPU:{i}" for i in range(requested)]
        if used_gpus == wanted and set(wanted) <= set(usable):
            return (
                True,
                f"trained on {', '.join(used_short)}: the first {requested} of the GPUs the doctor finds usable",
            )
        return False, (
            f"trained on {', '.join(used_short) or 'nothing'} but asked for the first {plural(requested, 'GPU')}, "
            f"and the doctor finds {', '.join(usable) if usable else 'no GPU'} usable"
        )
    if used_gpus == usable and (usable or all(d.startswith("CPU") for d in used_short)):
        where = ", ".join(used_short)
        return True, f"trained on {where}: {'the GPUs the doctor finds usable' if usable else 'no usable GPU, the CPU'}"
    return False, (
        f"trained on {', '.join(used_short) or 'nothing'} but the doctor finds "
        f"{', '.join(usable) if usable else 'no GPU'} usable"
    )


def start_doctor_probe():
    """Start the doctor's TensorFlow worker now (it imports TensorFlow while we train); None if unavailable."""
    try:
        # lazy for start-up: keeps probes.tensorflow out of every import of validation.training
        from envcheck.probes.tensorflow import start_tf_worker

        return start_tf_worker(sys.executable, os.environ, 180.0)
    except Exception:  # noqa: BLE001 - the check then says the probe was not available
        return None


def usable_gpus_from(probe) -> Optional[list[str]]:
    """The GPUs the doctor counts as usable (every placement op ran on it and was right), as
    "GPU:N"; None when the placement test did not run."""
    if probe is None:
        return None
    try:
        tf = probe.finish() if hasattr(probe, "finish") else probe
    except Exception:  # noqa: BLE001
        return None
    if getattr(tf, "error_kind", None) or not getattr(tf, "placement", None):
        return None

    machine = Machine(Facts(tensorflow=tf))
    return sorted(short_device(g.tf_device) for g in machine.usable_gpus if g.tf_device)


def quick_config(plan, data_path: Optional[Path], output: Path, progress: bool):
    # lazy for start-up: keeps train.config, train.data out of every import of validation.training
    from envcheck.train.config import PRESETS, TrainConfig
    from envcheck.train.data import DataError, load_cifar10

    profile = QUICK_GPU if plan.uses_gpu else QUICK_CPU
    recipe = PRESETS["post"].with_overrides(epochs=profile["epochs"], batch_per_replica=profile["batch_per_replica"])
    synthetic = data_path is None
    if data_path is None and plan.uses_gpu:  # a GPU has time for real images, when there are some
        try:
            load_cifar10(None, subset=1, val_subset=1)
            synthetic = False
        except DataError:
            pass
    return TrainConfig(
        output=output,
        recipe=recipe,
        data=data_path,
        synthetic=synthetic,
        subset=profile["subset"],
        val_subset=profile["val_subset"],
        steps_per_epoch=profile["steps_per_epoch"],
        progress=progress,
        overwrite=True,  # a check of this machine now: an earlier quick run in --output is replaced
    )


def require_gpu_for_full(plan) -> None:
    if not plan.uses_gpu:
        raise UsageError(
            "--full runs the post's 70 epochs over 50,000 images: that needs a GPU (hours to days on a CPU)"
        )


def full_config(plan, data_path: Optional[Path], output: Path, progress: bool):
    # lazy for start-up: keeps train.config out of every import of validation.training
    from envcheck.train.config import PRESETS, TrainConfig

    require_gpu_for_full(plan)
    # 70 epochs are worth keeping: an interrupted run resumes, a finished one is reported again.
    return TrainConfig(output=output, recipe=PRESETS["post"], data=data_path, progress=progress, resume=True)


def run_level3(
    plan,
    *,
    full: bool = False,
    data_path: Optional[Path] = None,
    output: Optional[Path] = None,
    progress: bool = True,
    requested_gpus: Optional[int] = None,
    console=None,
    announce=None,
) -> list[Check]:
    # lazy for start-up: keeps train.trainer out of every import of validation.training
    from envcheck.train.trainer import TrainingDiverged, train

    probe = start_doctor_probe()
    temporary = None
    if output is None and not full:
        temporary = tempfile.TemporaryDirectory(prefix="envcheck-validate-")
        output = Path(temporary.name)
    elif output is None:
        output = FULL_OUTPUT
    name = "training (the post's protocol)" if full else "training (quick)"
    finished = False
    try:
        config = (full_config if full else quick_config)(plan, data_path, output, progress)
        try:
            result = train(config, plan=plan, progress_console=console)
        except TrainingDiverged as exc:
            return [Check(3, name, False, str(exc))]
        summary, rows = result.summary, result.history
        if announce is not None:
            announce("waiting for the doctor's TensorFlow check, to compare the devices it finds usable")
        usable = usable_gpus_from(probe)
        finished = True
    finally:
        if not finished and hasattr(probe, "kill"):
            probe.kill()  # no verdict to compare with: do not leave the doctor's worker behind
        if temporary is not None:
            temporary.cleanup()
    checks = [_training_check(name, summary)]
    falls, detail = loss_falls(rows)
    checks.append(Check(3, "loss falls", falls, detail, {"losses": [r.get("loss") for r in rows]}))
    same, detail = compare_devices(list(plan.devices), usable, requested_gpus)
    checks.append(Check(3, "devices used", same, detail, {"used": list(plan.devices), "doctor_usable_gpus": usable}))
    if full:
        checks.append(_accuracy_check(summary, plan.replicas))
    return checks


def _training_check(name: str, summary: dict[str, Any]) -> Check:
    """What the run did, with its figures."""
    rate = summary.get("images_per_second_steady")
    per_replica = summary.get("images_per_second_per_replica")
    figures = {
        k: summary.get(k)
        for k in (
            "epochs",
            "seconds",
            "seconds_per_epoch",
            "images_per_second_steady",
            "images_per_second_per_replica",
            "replicas",
            "final",
        )
    }
    figures["data"] = summary["data"]["source"]
    return Check(
        3,
        name,
        True,
        f"{summary['epochs']} epochs x {summary['steps_per_epoch']} steps x {summary['global_batch']} images "
        f"on {plural(summary['replicas'], 'replica')}: {rate} images/s, {per_replica} per replica",
        figures,
        summary.get("seconds"),
    )


def _accuracy_check(summary: dict[str, Any], replicas: int) -> Check:
    """--full: the validation accuracy against the post's, within ACCURACY_TOLERANCE."""
    # lazy for start-up: keeps train.config out of every import of validation.training
    from envcheck.train.config import post_reference

    reference = post_reference(replicas)
    accuracy = summary["final"]["val_accuracy"]
    ok = accuracy is not None and accuracy >= reference["val_accuracy"] - ACCURACY_TOLERANCE
    shown = "none" if accuracy is None else f"{accuracy:.4f}"
    return Check(
        3,
        "accuracy vs the post",
        ok,
        f"val accuracy {shown}, the post's {reference['val_accuracy']:.4f} on {reference['gpus']} Titan X "
        f"(pass at {reference['val_accuracy'] - ACCURACY_TOLERANCE:.4f} or more); "
        f"{summary['seconds_per_epoch']} s/epoch vs the post's {reference['seconds_per_epoch']:g}",
        {"val_accuracy": accuracy, "post": reference, "tolerance": ACCURACY_TOLERANCE},
    )
