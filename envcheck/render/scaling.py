"""validate --scaling's report: the table of images/s and efficiency per device count, the
measurements behind the verdict, the bottlenecks with evidence and fix; and the plot of
efficiency against devices. Both read the JSON document (``measurement`` and ``analysis``), so
a saved ``--json`` renders the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def short(device: str) -> str:
    """ "/job:localhost/replica:0/task:0/device:CPU:1" -> "CPU:1"."""
    return device.rsplit("device:", 1)[-1] if "device:" in device else device.lstrip("/").upper()


def render_scaling(result: dict[str, Any]) -> str:
    m, analysis = result["measurement"], result["analysis"]
    counts = m["counts"]
    batch = counts[0]["batch_per_replica"] if counts else 0
    lines = [
        f"Scaling of {m['workload']}",
        f"  {batch} images per replica at every count, on {', '.join(short(d) for d in m['devices'])}"
        + (" (logical devices of one CPU)" if m["logical_cpu"] else ""),
        "",
        f"  {'devices':>7}  {'images/s':>9}  {'per device':>10}  {'efficiency':>10}",
    ]
    for rate, row in zip(counts, analysis["efficiency"]):
        n = len(rate["devices"])
        ips = rate["images_per_second"]
        lines.append(f"  {n:>7}  {ips:>9,.1f}  {ips / n:>10,.1f}  {row['efficiency']:>10.0%}")
    lines += ["", *_measurements(m), "", f"Verdict: {analysis['verdict']}"]
    for found in analysis["bottlenecks"]:
        lines.append(f"  {found['name']}: {found['title']}")
        lines += [f"    evidence: {e}" for e in found["evidence"]]
        lines += [f"    fix: {f}" for f in found["fix"]]
    return "\n".join(lines) + "\n"


def _measurements(m: dict[str, Any]) -> list[str]:
    out = []
    if m.get("pipeline_images_per_second") is not None:
        out.append(f"  the input pipeline alone: {m['pipeline_images_per_second']:,.0f} images/s")
    if m.get("allreduce_seconds") is not None:
        out.append(
            f"  a bare all-reduce of the {m['gradient_megabytes']:.1f} MB of gradients on {len(m['devices'])} devices: "
            f"{m['allreduce_seconds'] * 1e3:.1f} ms"
        )
    if m.get("alone"):
        each = ", ".join(f"{short(r['devices'][0])} {r['images_per_second']:,.0f}" for r in m["alone"])
        out.append(f"  each device alone (an in-memory batch): {each} images/s")
    larger = m.get("larger_batch")
    if larger:
        out.append(
            f"  one device, {larger['batch_per_replica']} per replica: {larger['images_per_second']:,.0f} images/s"
        )
    return out


def scaling_figure(result: dict[str, Any]):
    """Efficiency against the number of devices, with the linear ideal and the expected bar."""
    # lazy for start-up: matplotlib is heavy (or absent), imported only where it is used
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    analysis = result["analysis"]
    rows = analysis["efficiency"]
    expected = analysis["expected_efficiency"] * 100
    # A Figure of our own, not pyplot: no global backend or state, safe in any process.
    with matplotlib.style.context("ggplot"):
        figure = Figure(figsize=(6.5, 4.5), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots()
        axes.plot([r["devices"] for r in rows], [r["efficiency"] * 100 for r in rows], marker="o", label="measured")
        axes.axhline(100, color="grey", linestyle="--", label="linear")
        axes.axhline(expected, color="orange", linestyle=":", label=f"{expected:.0f}% expected")
        axes.set_xlabel("devices")
        axes.set_ylabel("scaling efficiency")
        axes.yaxis.set_major_formatter(PercentFormatter())
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_ylim(0, 110)
        title = result["measurement"]["workload"].split(" (")[0]
        axes.set_title(f"{title}: {analysis['verdict'].split(';')[0]}", fontsize=9)
        axes.legend(loc="lower left")
    return figure


def write_scaling_plot(result: dict[str, Any], target: Path) -> None:
    scaling_figure(result).savefig(target, dpi=100)
