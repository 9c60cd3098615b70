"""Growth with the catalog, the planner: `triton-mme plan`, `plan --json` and `plan --placement --json` over a
synthetic manifest of N archives (benchmarks/capacity_inputs.py, 2.9 MB each) and benchmark 11's Zipf day.

    .venv/bin/python -m benchmarks.growth_plan [--models 1000 10000] [--out FILE]

Each command in a fresh process: wall time, CPU time (what a shared machine's load does not inflate) and the
process tree's peak memory (benchmarks/process_tree.py).
Writes JSON to stdout (or --out) and a Markdown table to stderr.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.capacity_inputs import synthetic_manifest, write_manifest, write_traffic
from benchmarks.machine import load_average
from benchmarks.plan_speed import TRAFFIC
from benchmarks.process_tree import run_measured
from benchmarks.results import write_figures

SIZES = (1000, 10000)
ARCHIVE_BYTES = 2_900_000
VARIANTS = {"plan": [], "plan --json": ["--json"], "plan --placement --json": ["--placement", "--json"]}


def measure(sizes: tuple[int, ...], scratch: Path) -> dict[str, Any]:
    traffic = write_traffic(scratch / "traffic.yaml", TRAFFIC)
    results: dict[str, Any] = {"sizes": {}}
    for count in sizes:
        manifest = write_manifest(scratch / f"n{count}", synthetic_manifest(count, size_bytes=ARCHIVE_BYTES))
        row = {}
        for name, extra in VARIANTS.items():
            tail = [*extra[:-1], extra[-1], str(scratch / f"n{count}" / "plan.json")] if extra else []
            command = [sys.executable, "-m", "triton_mme", "plan", "--no-stack", "--traffic", str(traffic),
                       "--manifest", str(manifest), *tail]  # fmt: skip
            run = run_measured(command)
            if run.returncode != 0:
                raise RuntimeError(f"{name}: exit {run.returncode}: {run.stderr.strip()[-400:]}")
            row[name] = {
                "seconds": round(run.seconds, 2),
                "cpu_seconds": round(run.cpu_seconds, 2),
                "peak_mib": round(run.peak_bytes / 2**20, 1),
            }
        results["sizes"][str(count)] = row
    return results


def table(results: dict[str, Any]) -> str:
    lines = ["| models | " + " | ".join(f"`{name}`" for name in VARIANTS) + " |", "|---:|---:|---:|---:|"]
    for count, row in results["sizes"].items():
        cells = [
            f"{row[name]['seconds']} s (CPU {row[name]['cpu_seconds']} s), {row[name]['peak_mib']} MiB"
            for name in VARIANTS
        ]
        lines.append(f"| {int(count):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_plan", description=__doc__)
    parser.add_argument("--models", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="growth-plan-") as scratch:
        load_before = load_average()
        results = measure(tuple(args.models), Path(scratch))
        results["load_average_1min"] = {"before": load_before, "after": load_average()}
    write_figures(results, args.out, table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
