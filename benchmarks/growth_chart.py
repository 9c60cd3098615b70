"""The growth chart at 10 to 10,000 models (issue 41's figures): the planner (benchmarks.growth_plan), the
client (benchmarks.growth_client) and the lock (benchmarks.growth_lock), drawn from their result files.

    .venv/bin/python -m benchmarks.growth_chart --plan P.json --client C.json --lock L.json --out CHART.png

Four panels on log-log axes, absolute figures, each curve's last value written beside it: the planner's CPU
time (what a shared machine's load does not inflate) and peak memory; the client's and the lock's time (wall:
the client's in-process resolves, the lock's commands) and memory (the resolve's above the import, the
commands' peak). Dashed: the ways the issue replaced, for comparison. Each target of issue 41 at 10,000
models is a hollow marker in its figure's colour.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Curve:
    label: str
    points: list[tuple[int, float]]
    target: float | None = None  # at 10,000 models
    replaced: bool = False  # the way before issue 41, drawn dashed


def _series(sizes: dict[str, Any], *keys: str, scale: float = 1.0) -> list[tuple[int, float]]:
    """(N, row[keys[0]][keys[1]]... x scale) for each size whose row has it, by N."""
    points = []
    for n, row in sizes.items():
        value: Any = row
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float) and value > 0:
            points.append((int(n), value * scale))
    return sorted(points)


def curves(plan: dict[str, Any], client: dict[str, Any], lock: dict[str, Any]) -> dict[str, list[Curve]]:
    """The time and memory curves of the three result files (sizes a file lacks are left out)."""
    p, c, k = plan["sizes"], client["sizes"], lock["sizes"]
    planner_time = [
        Curve("plan", _series(p, "plan", "cpu_seconds"), 10.0),
        Curve("plan --json", _series(p, "plan --json", "cpu_seconds"), 10.0),
        Curve("plan --placement --json", _series(p, "plan --placement --json", "cpu_seconds"), 20.0),
    ]
    planner_memory = [
        Curve("plan", _series(p, "plan", "peak_mib"), 200.0),
        Curve("plan --json", _series(p, "plan --json", "peak_mib"), 200.0),
        Curve("plan --placement --json", _series(p, "plan --placement --json", "peak_mib")),
    ]
    client_time = [
        Curve("client: first resolve (index)", _series(c, "index", "first_ms", scale=1e-3), 0.1),
        Curve("client: later resolve", _series(c, "index", "later_ms", scale=1e-3), 1e-3),
        Curve(
            "client: first resolve, whole manifest",
            _series(c, "whole_manifest", "first_ms", scale=1e-3),
            replaced=True,
        ),
        Curve("lock --check, unchanged files", _series(k, "check_unchanged", "seconds")),
        Curve("lock --check --rehash", _series(k, "check_rehash", "seconds"), replaced=True),
    ]
    client_memory = [
        Curve("client: first resolve (index), above import", _series(c, "index", "above_import_mib"), 20.0),
        Curve(
            "client: whole manifest, above import",
            _series(c, "whole_manifest", "above_import_mib"),
            replaced=True,
        ),
        Curve("invoke --dry-run --model (store)", _series(c, "invoke_dry_run", "model", "peak_mib")),
        Curve(
            "invoke --dry-run --target-model (store)",
            _series(c, "invoke_dry_run", "target_model", "peak_mib"),
        ),
        Curve(
            "invoke --dry-run --model, local manifest (read whole)",
            _series(c, "invoke_dry_run", "model_local_manifest", "peak_mib"),
        ),
        Curve("lock --check, unchanged files", _series(k, "check_unchanged", "peak_mib")),
    ]
    return {
        "Planner: CPU time (s)": planner_time,
        "Planner: peak memory (MiB)": planner_memory,
        "Client and lock: wall time (s)": client_time,
        "Client and lock: memory (MiB)": client_memory,
    }


def render(panels: dict[str, list[Curve]], path: Path, *, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    colours = matplotlib.colormaps["tab10"]
    fig, axes = plt.subplots(2, 2, figsize=(15, 13))
    for axis, (title, drawn) in zip(axes.flat, panels.items(), strict=True):
        sizes: set[int] = set()
        last: list[tuple[int, float, Any]] = []  # each curve's last point and colour
        for index, curve in enumerate(drawn):
            if not curve.points:
                continue
            colour = colours(index % 10)
            marker = "osD^v<>pPX"[index % 10]
            xs, ys = zip(*curve.points, strict=True)
            axis.plot(xs, ys, marker=marker, color=colour, linewidth=1.4, markersize=5, label=curve.label,
                      linestyle="--" if curve.replaced else "-")  # fmt: skip
            last.append((xs[-1], ys[-1], colour))
            if curve.target is not None:
                axis.plot([10_000], [curve.target], marker=marker, markersize=12, markerfacecolor="none",
                          markeredgecolor=colour, markeredgewidth=1.5, linestyle="none")  # fmt: skip
            sizes.update(xs)
        axis.plot([], [], marker="o", markersize=10, markerfacecolor="none", markeredgecolor="grey",
                  linestyle="none", label="its target at 10,000 models (hollow)")  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        low, high = axis.get_ylim()
        # 1, 2, 5 per decade where there are few decades; only the powers of ten on a wide axis.
        subs = (1.0, 2.0, 5.0) if math.log10(high / low) < 4 else (1.0,)
        axis.yaxis.set_major_locator(LogLocator(subs=subs))
        axis.set_xticks(sorted(sizes), labels=[f"{n:,}" for n in sorted(sizes)])
        axis.set_xlim(min(sizes, default=10) / 1.5, max(sizes, default=10_000) * 2.5)
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        # Under one decade the powers of ten and their doubles leave the axis bare: label every tick.
        narrow = math.log10(high / low) < 1
        axis.yaxis.set_minor_formatter(
            FuncFormatter(lambda value, _: f"{value:g}") if narrow else NullFormatter()
        )
        axis.set_xlabel("models in the manifest (checkpoints for lock)", fontsize=9)
        axis.set_title(title, fontsize=11, loc="left")
        axis.grid(True, which="major", linewidth=0.4, alpha=0.6)
        axis.tick_params(which="both", labelsize=8)
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
        _write_last_values(axis, last)
    fig.suptitle("Growth with the catalog at 10 to 10,000 models (issue 41)", fontsize=13, x=0.01, ha="left")
    fig.text(0.01, 0.005, caption, fontsize=8)
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _write_last_values(axis: Any, points: list[tuple[int, float, Any]]) -> None:
    """Each curve's last value to the right of its point, in its colour; values that would overlap are
    moved up just enough to be read apart."""
    low, high = (math.log10(limit) for limit in axis.get_ylim())
    placed: dict[int, float] = {}  # per N, the height (axes fraction) of the last value written
    for x, y, colour in sorted(points, key=lambda point: (point[0], point[1])):
        height = max((math.log10(y) - low) / (high - low), placed.get(x, -1.0) + 0.035)
        placed[x] = height
        axis.annotate(f"{y:.3g}", xy=(x, y), xytext=(x * 1.2, height), textcoords=("data", "axes fraction"),
                      fontsize=8, color=colour, va="center")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_chart", description=__doc__)
    parser.add_argument("--plan", type=Path, required=True, help="benchmarks.growth_plan's JSON")
    parser.add_argument("--client", type=Path, required=True, help="benchmarks.growth_client's JSON")
    parser.add_argument("--lock", type=Path, required=True, help="benchmarks.growth_lock's JSON")
    parser.add_argument("--caption", default="", help="the machine and date, under the chart")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    loaded = [json.loads(path.read_text(encoding="utf-8")) for path in (args.plan, args.client, args.lock)]
    render(curves(*loaded), args.out, caption=args.caption)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
