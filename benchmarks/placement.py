"""16. Placement: the planner's hybrid recommendation against all on the multi-model endpoint and all on
inference components, on the benchmark traffic (Zipf 1.0, 50 requests/s for a day, 8 ms per request, hit
rate >= 95 %, p99 <= 5 s) over the default catalog's build and over a 100-model tiny catalog, from the
planner (docs/placement.md); then a local round trip of a catalog with both placements, built and served by
serve-local, the client routing each model by the manifest (benchmarks/placement_local.py).

The docs' table (docs/placement.md) is `placement_markdown` of the capacity-planning page's traffic file over
the default build, generated here and tested to match (tests/planner/test_planner_docs_example.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from benchmarks.capacity_inputs import synthetic_record, write_manifest, write_traffic
from benchmarks.context import RunContext
from benchmarks.placement_local import run_local
from benchmarks.results import Section
from triton_mme.core.manifest import Manifest
from triton_mme.core.platform import PLATFORM
from triton_mme.core.wording import plural
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.placement import PlacementPlan, placement_for
from triton_mme.planner.prices import PriceBook
from triton_mme.planner.run import plan_from_files
from triton_mme.planner.traffic import TrafficFile, parse_traffic
from triton_mme.sizing.assumptions import RESNET50_FP32_WEIGHT_BYTES

NAME = "placement"
TITLE = "16. Placement: hybrid vs all on the multi-model endpoint vs all on inference components"
REPO = Path(__file__).resolve().parents[1]
CAPACITY_DOC = REPO / "docs" / "capacity-planning.md"
REGION = "us-east-1"
TRAFFIC: dict[str, Any] = {
    "duration_s": 86_400,
    "service_ms": 8,
    "zipf": {"total_rate_per_s": 50, "exponent": 1.0},
    "targets": {"min_cache_hit_rate": 0.95, "p99_latency_ms": 5000},
}
# RoBERTa-large: 355 M parameters in FP32.
ROBERTA_LARGE_FP32_BYTES = 1_421_000_000
# A tiny catalog model: the tests' SqueezeNet 1.1 at 3x64x64 weighs about 5 MB as an archive.
TINY_MODEL_BYTES = 5_000_000
TINY_MODELS = 100


def default_build() -> Manifest:
    """What `make build-models` records for models.yaml (resnet50 in ONNX and TorchScript, roberta-large in
    ONNX), at their weights' sizes."""
    shapes = [
        ("resnet50", "onnx", RESNET50_FP32_WEIGHT_BYTES),
        ("resnet50", "torchscript", RESNET50_FP32_WEIGHT_BYTES),
        ("roberta-large", "onnx", ROBERTA_LARGE_FP32_BYTES),
    ]
    return Manifest(
        archives=tuple(
            synthetic_record(i, size, format=fmt).model_copy(
                update={"name": name, "target_model": f"{name}-{fmt}-{i:016x}.tar.gz"}
            )
            for i, (name, fmt, size) in enumerate(shapes)
        )
    )


def tiny_catalog_build(count: int = TINY_MODELS) -> Manifest:
    return Manifest(archives=tuple(synthetic_record(i, TINY_MODEL_BYTES) for i in range(count)))


def documented_traffic() -> TrafficFile:
    """The traffic file of docs/capacity-planning.md, as written there."""
    section = CAPACITY_DOC.read_text(encoding="utf-8").split("## The traffic file", 1)[1]
    return parse_traffic(yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0]))


def placement_of(
    traffic: TrafficFile, manifest: Manifest, folder: Path, *, max_instances: int | None = None
) -> PlacementPlan | None:
    """The planner's placement for the traffic over the manifest, with the table's prices (no stack)."""
    path = write_manifest(folder, manifest)
    targets = traffic.targets
    options = PlanOptions(
        min_cache_hit_rate=targets.min_cache_hit_rate, p99_latency_ms=targets.p99_latency_ms
    )
    if max_instances is not None:
        options = options.model_copy(update={"max_instances": max_instances})
    plan = plan_from_files(
        traffic,
        str(path),
        options,
        PriceBook(REGION),
        triton_tag=PLATFORM.images.default_tag.value,
        warn=lambda _: None,
    )
    return placement_for(plan)


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.0f}"


def placement_markdown(placement: PlacementPlan) -> str:
    """The layouts side by side, then the per-model figures, as Markdown tables."""
    recommended = placement.recommended
    labels = placement.served.workload.labels
    lines = [
        f"On {placement.candidate.name} ({REGION} prices of the platform table):",
        "",
        "| placement | on inference components | copies | MME instances | $/month | predicted cold starts |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for layout in placement.layouts:
        star = " (recommended)" if layout is recommended else ""
        names = ", ".join(labels[i] for i in layout.dedicated) or "none"
        cold = "—" if layout.cold_start_rate is None else f"{100 * layout.cold_start_rate:.2f} %"
        cost = _usd(layout.monthly_usd) + ("" if layout.feasible else f" (misses: {layout.problem})")
        lines.append(
            f"| {layout.name}{star} | {names} | {layout.copies} | {layout.mme_instances} | {cost} | {cold} |"
        )
    lines += [
        "",
        "| model | requests/s | on the MME: share of $/month | on the MME: cold starts | copies | "
        "dedicated $/month |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rates = placement.served.workload.rates_per_s
    for model in sorted(placement.models, key=lambda m: -rates[m.index]):
        cold = "—" if model.mme_cold_start_rate is None else f"{100 * model.mme_cold_start_rate:.2f} %"
        lines.append(
            f"| {labels[model.index]} | {rates[model.index]:,.2f} | {_usd(model.mme_monthly_usd)} | {cold} | "
            f"{model.copies} | {_usd(model.dedicated_monthly_usd)} |"
        )
    return "\n".join(lines) + "\n"


# The tiny catalog again, where the multi-model endpoint may not grow: one instance at most, 99 % of requests
# warm. The hybrid is then the only layout short of all dedicated that meets the target.
CAPPED = f"tiny-{TINY_MODELS}-capped"
CAPPED_TRAFFIC = {**TRAFFIC, "targets": {"min_cache_hit_rate": 0.99, "p99_latency_ms": 5000}}


def run(ctx: RunContext, section: Section) -> None:
    scenarios = [
        ("default", default_build(), TRAFFIC, None),
        (f"tiny-{TINY_MODELS}", tiny_catalog_build(), TRAFFIC, None),
        (CAPPED, tiny_catalog_build(), CAPPED_TRAFFIC, 1),
    ]
    for label, manifest, raw, max_instances in scenarios:
        folder = ctx.scratch / "placement" / label
        write_traffic(folder / "traffic.yaml", raw)
        placement = placement_of(parse_traffic(raw), manifest, folder, max_instances=max_instances)
        if placement is None:
            section.notes.append(f"{label}: no instance type serves the traffic in any placement.")
            continue
        for layout in placement.layouts:
            key = f"{label}_{layout.kind}"
            if layout.monthly_usd is not None:
                section.add(
                    f"{key}_usd", f"{label} catalog, {layout.name}: monthly cost", layout.monthly_usd, "USD"
                )
            if layout.cold_start_rate is not None:
                section.add(
                    f"{key}_cold",
                    f"{label} catalog, {layout.name}: predicted cold starts",
                    100 * layout.cold_start_rate,
                    "% of requests",
                )
        best = placement.recommended
        hybrid = placement.layouts[1]
        moved = plural(len(hybrid.dedicated), "archive")
        section.notes.append(
            f"{label} catalog ({len(manifest.archives)} archives) on {placement.candidate.name}: recommended "
            f"{best.name if best else 'none'}; the best hybrid puts {moved} on inference components"
            f"{'' if hybrid.feasible else f' and misses: {hybrid.problem}'}."
        )
    section.chart = [f.key for f in section.figures if f.unit == "USD"]
    section.settings["Traffic"] = "Zipf 1.0, 50 requests/s for 86,400 s, service 8 ms"
    section.settings["Targets"] = "hit rate >= 95 % of all requests, p99 <= 5 s, GPU utilization <= 60 %"
    section.settings["Catalogs"] = (
        "the default catalog's build (resnet50 ONNX and TorchScript, roberta-large ONNX, at their weights' "
        f"sizes); {TINY_MODELS} tiny archives of {TINY_MODEL_BYTES / 1e6:g} MB"
    )
    section.settings[CAPPED] = "the tiny catalog, hit rate >= 99 %, at most 1 multi-model endpoint instance"
    section.settings["Copies"] = "one per instance (a copy is given the instance's GPU), table prices"
    section.notes.append(
        "Costs and cold starts from the planner: the multi-model endpoint's LRU cache simulated as "
        "`triton-mme plan` does, inference components as their own copies (never cold: scale to zero is not "
        "planned); docs/placement.md."
    )
    if ctx.quick:
        section.notes.append("Quick run: the local round trip (a build and serve-local) was not run.")
    else:
        run_local(section)
