"""One table from the JSON files that run_all.sh leaves in a folder: the figures and ratios that matter.

  python benchmarks/summary.py FOLDER

Reads input_pipeline.json, post_trainer.json, train_throughput_1.json, train_throughput_all.json
and validate.json when present; a benchmark whose file is missing, empty or not JSON is listed as
failed, with its log file named, so one failure does not hide the other figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCHMARKS = {
    "input_pipeline": "input_pipeline.py",
    "post_trainer": "post_trainer.py",
    "train_throughput_1": "train_throughput.py, 1 device",
    "train_throughput_all": "train_throughput.py, all GPUs",
    "validate": "validate --train",
    "speed_1": "trainer's speed options, 1 device",
    "speed_all": "trainer's speed options, all GPUs",
}
PIPELINE_LABELS = {
    "image_data_generator": "post's ImageDataGenerator (tf_keras)",
    "numpy_flow": "numpy re-implementation of flow()",
    "trainer_per_step": "trainer pipeline, one batch per call",
    "trainer_as_fit": "trainer pipeline, as fit runs it",
    "trainer_pipeline": "trainer pipeline, 16 batches per call",
    "tf_data_alone": "tf.data alone",
}


def read(folder: Path, name: str):
    try:
        return json.loads((folder / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def pipeline_rows(result: dict) -> list[tuple[str, str, str]]:
    against = "the post's" if result.get("ratios_against") == "image_data_generator" else "the numpy flow()'s"
    rows = []
    for name, column in result["columns"].items():
        ratio = f"{column['ratio']:.1f}x {against}" if "ratio" in column else ""
        rows.append((PIPELINE_LABELS.get(name, name), f"{column['images_per_second']:,.0f} images/s", ratio))
    return rows


def post_trainer_rows(result: dict) -> list[tuple[str, str, str]]:
    rows = []
    for name, label in (("post", "post's train.py"), ("envcheck", "envcheck train")):
        medians = result["medians"][name]
        if "error" in medians:
            rows.append((label, "failed", medians["error"]))
            continue
        rows.append(
            (
                label,
                f"{medians['images_per_second_epoch_2']:,.1f} images/s in epoch 2",
                f"{medians['seconds_to_steps']:.1f} s to {result['steps']} steps",
            )
        )
    speedup = result.get("envcheck_speedup")
    if speedup:
        rows.append(
            (
                "envcheck train / post's train.py",
                f"{speedup['images_per_second_epoch_2']:.2f}x images/s",
                f"{speedup['seconds_to_steps']:.2f}x as fast to the steps",
            )
        )
    return rows


def throughput_rows(result: dict) -> list[tuple[str, str, str]]:
    rows = []
    for name, variant in result["variants"].items():
        if "error" in variant:
            rows.append((name, "failed", variant["error"]))
            continue
        rows.append(
            (
                f"{name} ({variant['replicas']} x {'/'.join(variant['devices'])})",
                f"{variant['images_per_second']:,.1f} images/s",
                f"{variant['images_per_second_per_replica']:,.1f} per replica",
            )
        )
    return rows


def speed_rows(result: dict) -> list[tuple[str, str, str]]:
    """Each variant's images/s, its images/s per replica against the post's Titan X (794 images/s)."""
    rows = []
    post = result.get("post_images_per_second_per_gpu", 793.7)
    for name, variant in result["variants"].items():
        if "error" in variant:
            rows.append((name, "failed", variant["error"]))
            continue
        rows.append(
            (
                f"{name}: {variant['precision']}, XLA {'on' if variant.get('jit') else 'off'}, "
                f"{variant.get('steps_per_execution')} per call ({variant['replicas']} x {'/'.join(variant['devices'])})",
                f"{variant['images_per_second']:,.1f} images/s",
                f"{variant['images_per_second_per_replica']:,.1f} per replica = "
                f"{variant['images_per_second_per_replica'] / post:.2f}x the post's Titan X",
            )
        )
    return rows


def scaling_row(folder: Path) -> list[tuple[str, str, str, str]]:
    """All GPUs against one, for the same variant, beside the post's 3.9x on four Titan X."""
    one, every = read(folder, "speed_1"), read(folder, "speed_all")
    if not one or not every:
        return []
    rows = []
    for name, variant in every.get("variants", {}).items():
        single = one.get("variants", {}).get(name, {})
        if "error" in variant or "error" in single or not single:
            continue
        gain = variant["images_per_second"] / single["images_per_second"]
        rows.append(
            (
                BENCHMARKS["speed_all"],
                f"{name}: {variant['replicas']} GPUs / 1",
                f"{gain:.2f}x",
                f"post: 3.9x on 4 Titan X; {gain / variant['replicas']:.0%} of linear here",
            )
        )
    return rows


def validate_rows(result: dict) -> list[tuple[str, str, str]]:
    return [(check["name"], "PASS" if check["passed"] else "FAIL", check["summary"]) for check in result["checks"]]


ROWS = {
    "input_pipeline": pipeline_rows,
    "post_trainer": post_trainer_rows,
    "train_throughput_1": throughput_rows,
    "train_throughput_all": throughput_rows,
    "validate": validate_rows,
    "speed_1": speed_rows,
    "speed_all": speed_rows,
}


def summary_rows(folder: Path) -> list[tuple[str, str, str, str]]:
    """(benchmark, what, figure, comparison) for every benchmark that ran, or why it has no figures."""
    rows = []
    for name, title in BENCHMARKS.items():
        if (folder / f"{name}.skipped").exists():
            rows.append((title, "skipped", (folder / f"{name}.skipped").read_text().strip(), ""))
            continue
        if not (folder / f"{name}.json").exists() and not (folder / f"{name}.log").exists():
            continue  # not run
        result = read(folder, name)
        try:
            rows += [(title, *row) for row in ROWS[name](result)]
        except (TypeError, KeyError, ValueError):
            rows.append((title, "failed", f"see {folder / (name + '.log')}", ""))
    return rows


def render(rows: list[tuple[str, ...]], header=("benchmark", "what", "figure", "comparison")) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python benchmarks/summary.py FOLDER (the folder run_all.sh wrote)", file=sys.stderr)
        return 2
    folder = Path(args[0])
    for name in ("input_pipeline", "post_trainer"):
        result = read(folder, name)
        if result and "machine" in result:
            print(f"{result['date']}, {result['machine']}, data: {result['data']}")
            break
    print(render(summary_rows(folder) + scaling_row(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
