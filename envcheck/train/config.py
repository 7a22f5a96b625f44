"""What one training run is: the protocol (the post's, or the fast preset) plus devices, data and outputs.

Nothing here imports TensorFlow, so the command line can check a configuration before paying for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Optional

JIT_WITH_CPU_REPLICAS = (
    "--jit with --cpu-replicas: XLA cannot run a model mirrored over logical CPU devices "
    "(it puts every replica on CPU:0); use --jit with one CPU replica or with GPUs"
)

# The post's protocol: MiniGoogLeNet, 70 epochs, SGD 5e-3 with momentum 0.9, linear decay to 0 per
# epoch, 64 images per GPU, per-pixel mean subtraction, shift 0.1 + horizontal flip.
POST_EPOCHS = 70
POST_LEARNING_RATE = 5e-3
POST_MOMENTUM = 0.9
POST_BATCH_PER_REPLICA = 64

# What the post measured on Titan X cards (Keras 2 with multi_gpu_model, TensorFlow 1.x).
POST_RESULTS: dict[int, dict[str, float]] = {
    1: {"gpus": 1, "seconds_per_epoch": 63.0, "total_seconds": 74 * 60 + 10, "val_accuracy": 0.9065},
    4: {"gpus": 4, "seconds_per_epoch": 16.0, "total_seconds": 19 * 60 + 3, "val_accuracy": 0.8877},
}


@dataclass(frozen=True)
class Recipe:
    """The optimisation protocol: everything that changes what the model learns, not where it runs."""

    name: str
    epochs: int
    learning_rate: float
    batch_per_replica: int
    momentum: float = POST_MOMENTUM
    nesterov: bool = False
    schedule: str = "poly"  # "poly" (the post's) or "warmup-cosine"
    warmup_epochs: int = 0
    label_smoothing: float = 0.0
    weight_decay: float = 0.0
    description: str = ""

    def with_overrides(self, **changes: Any) -> "Recipe":
        """This recipe with some settings changed, its description saying which."""
        if not changes:
            return self
        said = ", ".join(f"{k}={v}" for k, v in changes.items())
        return replace(self, **changes, description=f"{self.description}; changed: {said}")


PRESETS: dict[str, Recipe] = {
    "post": Recipe(
        name="post",
        epochs=POST_EPOCHS,
        learning_rate=POST_LEARNING_RATE,
        batch_per_replica=POST_BATCH_PER_REPLICA,
        description="the post's protocol: 70 epochs, SGD 5e-3 momentum 0.9, linear decay to 0",
    ),
    # A shorter modern recipe: larger batches and a higher peak rate that a short warm-up makes
    # safe, cosine decay, Nesterov momentum, label smoothing and decoupled weight decay.
    "fast": Recipe(
        name="fast",
        epochs=30,
        learning_rate=0.05,
        batch_per_replica=128,
        nesterov=True,
        schedule="warmup-cosine",
        warmup_epochs=2,
        label_smoothing=0.1,
        weight_decay=5e-4,
        description="30 epochs, SGD Nesterov peak 0.05 with 2 warm-up epochs, cosine decay, "
        "label smoothing 0.1, weight decay 5e-4",
    ),
}


@dataclass(frozen=True)
class TrainConfig:
    output: Path
    recipe: Recipe = PRESETS["post"]
    gpus: Optional[int] = None  # None: every GPU TensorFlow can see; 0: the CPU
    cpu_replicas: int = 1
    multi_worker: bool = False
    data: Optional[Path] = None  # None: look in the Keras cache
    synthetic: bool = False
    subset: Optional[int] = None  # the first N training images
    val_subset: Optional[int] = None  # the first N test images
    steps_per_epoch: Optional[int] = None  # None: one pass over the training images
    precision: str = "auto"  # auto, fp32, bf16, fp16 (envcheck.train.speed); "mixed": the device's
    jit: Optional[bool] = None  # None: where XLA was measured faster
    steps_per_execution: Optional[int] = None  # None: chosen per device and epoch
    seed: int = 0
    progress: bool = True  # the rich progress bar on stderr
    # What to do with a finished run already in `output`: keep it and report it (resume), or
    # replace it (overwrite); neither: refuse. An interrupted run resumes either way.
    resume: bool = False
    overwrite: bool = False

    def resume_key(self) -> dict[str, Any]:
        """The settings a resumed run must share with the interrupted one.

        The device count is left out on purpose: finishing a run on fewer machines is what
        fault tolerance is for. The precision is compared once it is known (envcheck.train.prepare).
        """
        return {
            "recipe": asdict(self.recipe),
            "data": str(self.data) if self.data else None,
            "synthetic": self.synthetic,
            "subset": self.subset,
            "val_subset": self.val_subset,
            "steps_per_epoch": self.steps_per_epoch,
            "seed": self.seed,  # the data order, and for --synthetic the images themselves
        }

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["output"] = str(self.output)
        out["data"] = str(self.data) if self.data else None
        for name in ("progress", "resume", "overwrite"):  # how this process runs, not what it trains
            out.pop(name)
        return out


PRECISION_KEYS = ("policy", "precision", "mixed_precision")


def same_settings(stored: Any, key: dict[str, Any]) -> bool:
    """Whether a resume point's settings are this run's, the precision left to envcheck.train.prepare."""
    if not isinstance(stored, dict):
        return False
    return {k: v for k, v in stored.items() if k not in PRECISION_KEYS} == {
        k: v for k, v in key.items() if k not in PRECISION_KEYS
    }


def post_reference(gpus: int) -> dict[str, float]:
    """The post's result closest to a run on `gpus` devices (1 GPU, or the 4-GPU run for more)."""
    return dict(POST_RESULTS[1 if gpus <= 1 else 4])
