"""13. The planner's cache-hit rate against the local Triton's, under Zipf traffic at several exponents.

Eight tiny archives (random-weight SqueezeNet, ONNX, distinct names) are built with the project's build code
and served by the real local Triton with a budget of four models, so it unloads the least recently used as
a multi-model endpoint does under memory pressure. For each Zipf exponent, `triton-mme loadtest` drives it
(Locust, two users, back to back) and counts the local endpoint's per-request hit/miss answers; the planner
predicts the same configuration from the same traffic file (`plan --compare`, its own seeded simulation).
The target is the issue's: within 5 points for every exponent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.capacity_inputs import write_traffic
from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.results import Section

NAME = "hit_rate"
TITLE = "13. Predicted vs measured cache-hit rate on the local Triton (Zipf traffic)"
ARCHIVES = 8
BUDGET = 4
USERS = 2
# Exponent -> measured requests: enough for a binomial standard error of about 2 points at the hit rate
# each gives (about 66 %, 80 % and 89 %), a miss costing a load and an unload (~3.6 s) on this machine.
REQUESTS = {1.0: 500, 1.5: 350, 2.0: 250}
QUICK_REQUESTS = 40
WARMUP_REQUESTS = 40
SIMULATED = 200_000
TOLERANCE_POINTS = 5.0


def unavailable() -> str | None:
    from triton_mme.local_triton.isolation import isolation_available

    reason = isolation_available()
    return None if reason is None else f"not run: the local Triton cannot be isolated here ({reason})"


def build_archives(out: Path) -> Path:
    """The tiny archives and their manifest, built by the project's build code."""
    from triton_mme.catalog import parse_catalog
    from triton_mme.model_build.pipeline import build_catalog

    entries = [
        {
            "name": f"tiny-{index}",
            "source": "torchvision:squeezenet1_1",
            "weights": "random",
            "formats": ["onnx"],
            "max_batch_size": 1,
            "input_shape": [3, 32, 32],
        }
        for index in range(ARCHIVES)
    ]
    build_catalog(parse_catalog({"models": entries}), out, progress=False)
    return out / "manifest.json"


def load_test(url: str, manifest: Path, traffic: Path, requests: int, out: Path) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "triton_mme", "loadtest", "--traffic", str(traffic),
        "--manifest", str(manifest), "--local", url, "--rate", "0", "--users", str(USERS),
        "--warmup-requests", str(WARMUP_REQUESTS), "--requests", str(requests), "--duration", "86400",
        "--timeout", "300", "--out", str(out),
    ]  # fmt: skip
    subprocess.run(command, cwd=REPO_ROOT, check=True, capture_output=True, timeout=4 * 3600)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def run(ctx: RunContext, section: Section) -> None:
    from triton_mme.local_triton.runner import LocalTriton
    from triton_mme.planner.options import PlanOptions
    from triton_mme.planner.run import compare_with

    folder = ctx.scratch / "hit-rate"
    manifest = build_archives(folder / "models")
    rows: list[tuple[float, dict[str, Any], float, dict[str, Any]]] = []
    with LocalTriton(models_dir=manifest.parent, port=0, model_budget=BUDGET, report=lambda _: None) as local:
        for index, (exponent, full) in enumerate(REQUESTS.items()):
            traffic = write_traffic(
                folder / f"traffic-{exponent}.yaml",
                {
                    "service_ms": 5,
                    "seed": 100 + index,
                    "zipf": {"total_rate_per_s": 10, "exponent": exponent},
                },
            )
            report_path = folder / f"loadtest-{exponent}.json"
            report = load_test(local.url, manifest, traffic, ctx.pick(full, QUICK_REQUESTS), report_path)
            measured = report["measured"]
            if measured["errors"] != {key: 0 for key in measured["errors"]}:
                raise RuntimeError(f"exponent {exponent}: failed requests {measured['errors']}")
            comparison = compare_with(
                report_path, PlanOptions(simulated_requests=SIMULATED), warn=lambda _: None
            )
            rows.append((exponent, measured, comparison.predicted.cache_hit_rate or 0.0, report["server"]))
    for exponent, measured, predicted, server in rows:
        key = f"{exponent:g}"
        section.add(
            f"measured.{key}", f"Zipf {key}: measured hit rate", 100 * measured["cache_hit_rate"], "%"
        )
        section.add(f"predicted.{key}", f"Zipf {key}: predicted hit rate", 100 * predicted, "%")
        difference = abs(100 * predicted - 100 * measured["cache_hit_rate"])
        section.add(
            f"difference.{key}", f"Zipf {key}: predicted vs measured, difference", difference, "points"
        )
        section.add(
            f"stderr.{key}",
            f"Zipf {key}: measured standard error",
            100 * measured["cache_hit_rate_stderr"],
            "points",
        )
        section.target(
            f"Predicted vs measured hit rate, Zipf {key}", f"difference.{key}", "<=", TOLERANCE_POINTS
        )
        section.notes.append(
            f"Zipf {key}: {measured['requests']:,.0f} measured requests in {measured['duration_s']:,.0f} s "
            f"({measured['request_rate_per_s']:.2f}/s); the local endpoint's own counters, warm-up included: "
            f"{100 * server['cache_hit_rate']:.1f} % of {server['requests']:,.0f}."
        )
    section.chart = [f"{kind}.{exponent:g}" for exponent, *_ in rows for kind in ("measured", "predicted")]
    section.settings["Archives"] = f"{ARCHIVES} tiny SqueezeNet ONNX archives (random weights, 3x32x32)"
    section.settings["Local Triton model budget"] = BUDGET
    section.settings["Load test"] = (
        f"{USERS} Locust users back to back, {WARMUP_REQUESTS} warm-up requests per exponent, seeds 100.."
    )
    section.settings["Prediction"] = f"{SIMULATED:,} simulated requests after a warm-up (planner/eviction.py)"
