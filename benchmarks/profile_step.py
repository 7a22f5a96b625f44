"""Where a training step of `envcheck train` spends its time: the TensorFlow profiler over a few steps.

Builds the trainer's own model, compiled as the trainer compiles it (the same speed plan, or the
flags given), trains a warm-up epoch, then profiles --steps steps of a second one and prints the
op types by their share of the time (from the profiler's framework op statistics), the host's
input wait, and where the trace is for TensorBoard's profile plugin.

  python benchmarks/profile_step.py [--steps 6] [--batch 64] [--precision auto] [--jit | --no-jit]
                                    [--steps-per-execution N] [--data PATH] [--top 20] [--json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def profile(args) -> dict:
    import tensorflow as tf

    from envcheck.train.config import PRESETS, TrainConfig
    from envcheck.train.outputs import OutputFolder
    from envcheck.train.pipeline import training_dataset
    from envcheck.train.prepare import prepare
    from envcheck.train.trainer import load_data

    recipe = PRESETS["post"].with_overrides(epochs=2, batch_per_replica=args.batch)
    with tempfile.TemporaryDirectory(prefix="envcheck-profile-") as folder:
        config = TrainConfig(
            output=Path(folder),
            recipe=recipe,
            data=Path(args.data) if args.data else None,
            synthetic=not args.data,
            subset=args.batch * args.steps * 2,
            val_subset=args.batch,
            steps_per_epoch=args.steps,
            precision=args.precision,
            jit=args.jit,
            steps_per_execution=args.steps_per_execution,
            gpus=args.gpus,
            progress=False,
        )
        data = load_data(config)
        run = prepare(config, data, None, OutputFolder(config.output), None)
        train_data = training_dataset(data.x_train, data.y_train, global_batch=run.global_batch, repeat=True)
        run.model.fit(train_data, steps_per_epoch=run.steps, epochs=1, verbose=0)  # traces and warms up
        trace = Path(args.trace or tempfile.mkdtemp(prefix="envcheck-trace-"))
        tf.profiler.experimental.start(str(trace))
        run.model.fit(train_data, steps_per_epoch=run.steps, epochs=1, verbose=0)
        tf.profiler.experimental.stop()
    return {"speed": run.speed.describe(), "trace": str(trace), **op_shares(trace, args.top)}


def op_shares(trace: Path, top: int) -> dict:
    """The op types by self time, from the profiler's framework op statistics table."""
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

    files = glob.glob(str(trace / "**" / "*.xplane.pb"), recursive=True)
    raw, _ = plugin.xspace_to_tools_data(files, "framework_op_stats", {})
    tables = json.loads(raw)
    rows = []
    for table in tables:
        columns = [c["id"] for c in table.get("cols", [])]
        rows += [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table.get("rows", [])]
    by_type: dict[str, float] = defaultdict(float)
    for row in rows:
        if row.get("host_or_device") in ("Host", "Device"):
            by_type[str(row.get("type"))] += float(row.get("total_self_time") or 0.0)
    total = sum(by_type.values()) or 1.0
    ranked = sorted(by_type.items(), key=lambda item: -item[1])
    return {
        "total_op_ms": round(total / 1000, 1),
        "op_types": [{"type": t, "ms": round(us / 1000, 2), "share": round(us / total, 4)} for t, us in ranked[:top]],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="steps profiled, after a warm-up epoch as long (6)")
    parser.add_argument("--batch", type=int, default=64, help="images per step (the post's 64)")
    parser.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16", "fp16"))
    parser.add_argument("--jit", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--steps-per-execution", type=int)
    parser.add_argument("--gpus", type=int)
    parser.add_argument("--data", help="CIFAR-10 to use (default: synthetic images)")
    parser.add_argument("--trace", help="folder for the trace (default: a new temporary folder, kept)")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    result = profile(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.steps} steps of {args.batch}: {result['total_op_ms']} ms of op time; {result['speed']}")
    for row in result["op_types"]:
        print(f"  {row['type']:<36} {row['ms']:10.1f} ms  {100 * row['share']:5.1f}%")
    print(f"  trace: {result['trace']} (tensorboard --logdir with the profile plugin)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
