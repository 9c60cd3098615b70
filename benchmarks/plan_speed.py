"""11. `triton-mme plan` for 1,000 models and one day of traffic, as a user runs it (a fresh process).

1,000 ResNet-50-sized archives, Zipf traffic of 50 requests/s for a day (4.32 million requests), a 95 %
hit-rate and a 5 s p99 target, every GPU multi-model instance type of the platform table that runs the
default Triton image, with the JSON and the chart written too.
"""

from __future__ import annotations

import json
import sys

from benchmarks.capacity_inputs import synthetic_manifest, write_manifest, write_traffic
from benchmarks.client_invoke import child_environment, measure_command
from benchmarks.context import RunContext
from benchmarks.results import Section

NAME = "plan"
TITLE = "11. Capacity plan: 1,000 models, one day of traffic"
MODELS = 1000
TRAFFIC = {
    "duration_s": 86_400,
    "service_ms": 8,
    "zipf": {"total_rate_per_s": 50, "exponent": 1.0},
    "targets": {"min_cache_hit_rate": 0.95, "p99_latency_ms": 5000},
}


def run(ctx: RunContext, section: Section) -> None:
    folder = ctx.scratch / "plan"
    manifest = write_manifest(folder, synthetic_manifest(MODELS))
    traffic = write_traffic(folder / "traffic.yaml", TRAFFIC)
    plan_json, chart = folder / "plan.json", folder / "plan.png"
    command = [
        sys.executable, "-m", "triton_mme", "plan", "--no-stack", "--traffic", str(traffic),
        "--manifest", str(manifest), "--json", str(plan_json), "--chart", str(chart),
    ]  # fmt: skip
    env = child_environment("http://127.0.0.1:9")  # no AWS configuration of this machine: none is used
    repetitions = ctx.pick(5, 1)
    runs = [measure_command(command, env) for _ in range(repetitions)]
    section.add_median("time", "plan (table, JSON and chart), wall time", [r["seconds"] for r in runs], "s")
    section.add_median("peak", "plan, peak memory", [r["peak_rss_mb"] for r in runs], "MB")
    section.target("Plan for 1,000 models and one day of traffic", "time", "<=", 10.0)
    section.chart = ["time"]
    plan = json.loads(plan_json.read_text())
    section.settings["Archives"] = MODELS
    section.settings["Traffic"] = "Zipf 1.0, 50 requests/s for 86,400 s, service 8 ms"
    section.settings["Targets"] = "hit rate >= 95 %, p99 <= 5 s, GPU utilization <= 60 %"
    section.settings["Instance types"] = len(plan["candidates"])
    section.settings["Simulated requests per configuration"] = f"{plan['options']['simulated_requests']:,}"
    section.notes.append(f"Recommendation: {plan['recommendation']}.")
    section.notes.append(
        f"Median of {repetitions} fresh processes (`triton-mme plan ... --json --chart`), interpreter start "
        "and imports included; the day's traffic is simulated as a seeded sample stream per configuration "
        "(docs/capacity-planning.md)."
    )
