"""The growth chart at 10 to 10,000 models (issue 41's figures): the planner (benchmarks.growth_plan), the
client (benchmarks.growth_client) and the lock (benchmarks.growth_lock), drawn from their result files.

    .venv/bin/python -m benchmarks.growth_chart --plan P.json --client C.json --lock L.json --out CHART.png

Two panels on log-log axes, absolute figures: time (CPU seconds for the commands, what a shared machine's
load does not inflate; wall for the client's in-process resolves) and memory (peak of the process, or above
the import for the client's resolve). Each target of issue 41 at 10,000 models is drawn as a hollow marker
in its figure's colour.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Curve:
    label: str
    points: list[tuple[int, float]]
    target: float | None = None  # at 10,000 models


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
    time = [
        Curve("plan, CPU", _series(p, "plan", "cpu_seconds"), 10.0),
        Curve("plan --json, CPU", _series(p, "plan --json", "cpu_seconds"), 10.0),
        Curve("plan --placement --json, CPU", _series(p, "plan --placement --json", "cpu_seconds"), 20.0),
        Curve("client: first resolve (index), wall", _series(c, "index", "first_ms", scale=1e-3), 0.1),
        Curve("client: later resolve, wall", _series(c, "index", "later_ms", scale=1e-3), 1e-3),
        Curve(
            "client: first resolve, whole manifest (before the index)",
            _series(c, "whole_manifest", "first_ms", scale=1e-3),
        ),
        Curve("lock --check, unchanged files, wall", _series(k, "check_unchanged", "seconds")),
        Curve("lock --check --rehash, wall", _series(k, "check_rehash", "seconds")),
    ]
    memory = [
        Curve("plan", _series(p, "plan", "peak_mib"), 200.0),
        Curve("plan --json", _series(p, "plan --json", "peak_mib"), 200.0),
        Curve("plan --placement --json", _series(p, "plan --placement --json", "peak_mib")),
        Curve("client: first resolve (index), above import", _series(c, "index", "above_import_mib"), 20.0),
        Curve(
            "client: whole manifest, above import (before the index)",
            _series(c, "whole_manifest", "above_import_mib"),
        ),
        Curve("invoke --dry-run --model", _series(c, "invoke_dry_run", "model", "peak_mib")),
        Curve("invoke --dry-run --target-model", _series(c, "invoke_dry_run", "target_model", "peak_mib")),
        Curve(
            "invoke --dry-run --model, local manifest (read whole)",
            _series(c, "invoke_dry_run", "model_local_manifest", "peak_mib"),
        ),
        Curve("lock --check, unchanged files", _series(k, "check_unchanged", "peak_mib")),
    ]
    return {"time (s)": time, "memory (MiB)": memory}


def render(panels: dict[str, list[Curve]], path: Path, *, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    colours = matplotlib.colormaps["tab10"]
    fig, axes = plt.subplots(1, len(panels), figsize=(15, 8.5))
    for axis, (unit, drawn) in zip(axes, panels.items(), strict=True):
        sizes: set[int] = set()
        for index, curve in enumerate(drawn):
            if not curve.points:
                continue
            colour = colours(index % 10)
            marker = "osD^v<>pPX"[index % 10]
            xs, ys = zip(*curve.points, strict=True)
            axis.plot(xs, ys, marker=marker, color=colour, linewidth=1.4, markersize=5, label=curve.label)
            if curve.target is not None:
                axis.plot([10_000], [curve.target], marker=marker, markersize=12, markerfacecolor="none",
                          markeredgecolor=colour, markeredgewidth=1.5, linestyle="none")  # fmt: skip
            sizes.update(xs)
        axis.plot([], [], marker="o", markersize=10, markerfacecolor="none", markeredgecolor="grey",
                  linestyle="none", label="its target at 10,000 models (hollow)")  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xticks(sorted(sizes), labels=[f"{n:,}" for n in sorted(sizes)])
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_xlabel("models in the manifest (N; checkpoints for lock)", fontsize=9)
        axis.set_ylabel(unit, fontsize=9)
        axis.set_title(unit.split(" ")[0].capitalize(), fontsize=11, loc="left")
        axis.grid(True, which="major", linewidth=0.4, alpha=0.6)
        axis.tick_params(labelsize=8)
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=1, frameon=False)
    fig.suptitle("Growth with the catalog at 10 to 10,000 models (issue 41)", fontsize=12, x=0.01, ha="left")
    fig.text(0.01, 0.005, caption, fontsize=8)
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
