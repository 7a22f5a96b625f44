"""Training images per second (per replica) of MiniGoogLeNet: the post's configuration (float32, no
XLA, one step per call), what `envcheck train` chooses by itself on this hardware, and each
precision and XLA, on whatever devices this machine has; held against the post's 794 images/s
per Titan X (50,000 images in 63 s).

Each variant is a fresh `python -m envcheck.train` process (precision policies and device setup
are per process) on synthetic CIFAR-shaped data, for 2 epochs of --steps steps: the first epoch
traces and compiles, the second is the steady rate that is reported.

  python benchmarks/train_throughput.py [--steps 10] [--batch-per-replica 64] [--gpus N | --cpu-replicas N]
                                        [--variants fp32,auto,bf16,fp16,jit,...] [--json]

MiniGoogLeNet trains at tens of images per second on a laptop-class CPU: keep --steps small there.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from input_pipeline import describe_machine  # noqa: E402

VARIANTS = {
    "fp32": ["--precision", "fp32", "--no-jit", "--steps-per-execution", "1"],  # the post's configuration
    "auto": [],  # what envcheck train chooses here (its header and summary say what)
    "bf16": ["--precision", "bf16", "--no-jit"],
    "fp16": ["--precision", "fp16", "--no-jit"],
    "jit": ["--precision", "fp32", "--jit"],
    "bf16+jit": ["--precision", "bf16", "--jit"],
    "fp16+jit": ["--precision", "fp16", "--jit"],
}
DEFAULT_VARIANTS = "fp32,auto,bf16,jit"
POST_IMAGES_PER_SECOND_PER_GPU = round(50_000 / 63.0, 1)  # one Titan X, the post's 63 s per epoch


def run_variant(flags: list[str], args, workdir: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "envcheck.train",
        "--synthetic",
        "--no-progress",
        "--json",
        "--epochs",
        "2",
        "--steps-per-epoch",
        str(args.steps),
        "--batch-per-replica",
        str(args.batch_per_replica),
        "--subset",
        str(args.batch_per_replica * 8),
        "--val-subset",
        str(args.batch_per_replica),
        "--output",
        str(workdir),
        *flags,
    ]
    if args.gpus is not None:
        command += ["--gpus", str(args.gpus)]
    if args.cpu_replicas:
        command += ["--cpu-replicas", str(args.cpu_replicas)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": last}
    summary = json.loads(done.stdout)
    return {
        "replicas": summary["replicas"],
        "devices": [d.rsplit("device:", 1)[-1] for d in summary["devices"]["devices"]],
        "images_per_second": summary["images_per_second_steady"],
        "images_per_second_per_replica": summary["images_per_second_per_replica"],
        "seconds_first_epoch": read_first_epoch(workdir),
        "precision": summary.get("precision") or summary["mixed_precision"] or "float32",
        "jit": summary.get("jit"),
        "steps_per_execution": summary.get("steps_per_execution"),
        "per_replica_vs_post_titan_x": round(
            summary["images_per_second_per_replica"] / POST_IMAGES_PER_SECOND_PER_GPU, 2
        )
        if summary["images_per_second_per_replica"]
        else None,
    }


def read_first_epoch(workdir: Path):
    try:
        return json.loads((workdir / "history.json").read_text())["epochs"][0]["seconds"]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per epoch (10; use 100+ on a GPU)")
    parser.add_argument("--batch-per-replica", type=int, default=64, help="the post's 64")
    parser.add_argument("--gpus", type=int, help="GPUs to use (default: all; 0: the CPU)")
    parser.add_argument("--cpu-replicas", type=int, help="mirror over N logical CPU devices")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    unknown = [name for name in args.variants.split(",") if name not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(VARIANTS)}")

    results = {
        "date": date.today().isoformat(),
        "machine": describe_machine(),
        "steps": args.steps,
        "batch_per_replica": args.batch_per_replica,
        "post_images_per_second_per_gpu": POST_IMAGES_PER_SECOND_PER_GPU,
        "variants": {},
    }
    for name in args.variants.split(","):
        if (args.cpu_replicas or 0) > 1 and "jit" in name:
            results["variants"][name] = {"error": "XLA cannot mirror over logical CPU devices (skipped)"}
            continue
        with tempfile.TemporaryDirectory(prefix="envcheck-bench-") as workdir:
            results["variants"][name] = run_variant(VARIANTS[name], args, Path(workdir))
        if not args.json:
            print(_line(name, results["variants"][name]), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{results['date']}, {results['machine']}; {args.steps} steps of {args.batch_per_replica} per replica")
    return 0


def _line(name: str, result: dict) -> str:
    if "error" in result:
        return f"{name:<10} failed: {result['error']}"
    return (
        f"{name:<10} {result['precision']:<15} {result['replicas']} x {'/'.join(result['devices'])}: "
        f"{result['images_per_second']:9.1f} images/s, {result['images_per_second_per_replica']:9.1f} per replica "
        f"(first epoch {result['seconds_first_epoch']:.1f} s)"
    )


if __name__ == "__main__":
    sys.exit(main())
