"""The placement as a table (`plan --placement`) and as the plan JSON's `placement` section."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict

from triton_mme.core.wording import plural
from triton_mme.planner.placement import Layout, LayoutKind, PlacementPlan
from triton_mme.planner.report import _money, _percent, _rows_to_text

MODEL_ROWS = 20  # the most requested archives shown in the table; the JSON has all of them

LAYOUT_HEADER = ["placement", "on components", "copies", "MME instances", "$/month", "cold starts", "problem"]
MODEL_HEADER = [
    "model",
    "requests/s",
    "MME $/month",
    "MME cold starts",
    "copies",
    "dedicated $/month",
    "placed",
]


def _layout_row(layout: Layout, recommended: Layout | None) -> list[str]:
    star = "★ " if layout is recommended else ""
    return [
        star + layout.name,
        f"{len(layout.dedicated):,}",
        f"{layout.copies:,}",
        f"{layout.mme_instances:,}",
        _money(layout.monthly_usd),
        _percent(layout.cold_start_rate, 2),
        layout.problem or "",
    ]


def layout_table(placement: PlacementPlan) -> list[str]:
    recommended = placement.recommended
    rows = [_layout_row(layout, recommended) for layout in placement.layouts]
    return _rows_to_text(LAYOUT_HEADER, rows, right={1, 2, 3, 4, 5})


def model_table(placement: PlacementPlan, limit: int = MODEL_ROWS) -> list[str]:
    workload = placement.served.workload
    dedicated = set(placement.placed_dedicated())
    by_requests = sorted(placement.models, key=lambda m: -workload.rates_per_s[m.index])
    rows = [
        [
            workload.labels[m.index],
            f"{workload.rates_per_s[m.index]:,.2f}",
            _money(m.mme_monthly_usd),
            _percent(m.mme_cold_start_rate, 2),
            f"{m.copies:,}",
            _money(m.dedicated_monthly_usd),
            "dedicated" if m.index in dedicated else "mme",
        ]
        for m in by_requests[:limit]
    ]
    lines = _rows_to_text(MODEL_HEADER, rows, right={1, 2, 3, 4, 5})
    if len(by_requests) > limit:
        lines.append(f"... and {plural(len(by_requests) - limit, 'more archive')} (all in the JSON)")
    return lines


def recommendation_line(placement: PlacementPlan) -> str:
    best = placement.recommended
    if best is None:
        return "Placement: no layout meets the targets on " + placement.candidate.name + "."
    names = [placement.served.workload.labels[i] for i in best.dedicated]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    where = f"inference components for {shown}" if names else "every model on the multi-model endpoint"
    return (
        f"Placement: {best.name} ({where}): ${best.monthly_usd or 0:,.0f}/month, predicted cold starts "
        f"{_percent(best.cold_start_rate, 2)} of requests."
    )


def render_placement(placement: PlacementPlan) -> str:
    lines = [
        f"Placement on {placement.candidate.name}: the multi-model endpoint's shared cache against inference "
        "components (docs/placement.md); MME $/month is the model's share of the all-MME cost by GPU time.",
        "",
        *layout_table(placement),
        "",
        *model_table(placement),
        "",
        recommendation_line(placement),
    ]
    return "\n".join(lines) + "\n"


class _Document(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LayoutDocument(_Document):
    kind: LayoutKind
    dedicated: list[str]
    copies: int
    mme_instances: int
    monthly_usd: float | None
    cold_start_rate: float | None
    feasible: bool
    problem: str | None


class ModelPlacementDocument(_Document):
    model: str
    target_model: str
    requests_per_s: float
    mme_monthly_usd: float | None
    mme_cold_start_rate: float | None
    copies: int
    dedicated_monthly_usd: float | None
    placement: str


class PlacementDocument(_Document):
    instance_type: str
    layouts: list[LayoutDocument]
    recommended: LayoutKind | None
    models: list[ModelPlacementDocument]

    @classmethod
    def head(cls, placement: PlacementPlan) -> PlacementDocument:
        """The placement section without its `models` (the plan JSON writes them from `placement_rows`, a
        chunk at a time)."""
        workload = placement.served.workload
        recommended = placement.recommended
        return cls(
            instance_type=placement.candidate.name,
            layouts=[
                LayoutDocument(
                    kind=layout.kind,
                    dedicated=[workload.labels[i] for i in layout.dedicated],
                    copies=layout.copies,
                    mme_instances=layout.mme_instances,
                    monthly_usd=layout.monthly_usd,
                    cold_start_rate=layout.cold_start_rate,
                    feasible=layout.feasible,
                    problem=layout.problem,
                )
                for layout in placement.layouts
            ],
            recommended=recommended.kind if recommended is not None else None,
            models=[],
        )


def placement_rows(placement: PlacementPlan) -> Iterator[dict[str, Any]]:
    """One archive's placement per row, as ModelPlacementDocument fields."""
    workload = placement.served.workload
    dedicated = set(placement.placed_dedicated())
    for m in placement.models:
        yield {
            "model": workload.labels[m.index],
            "target_model": workload.records[m.index].target_model,
            "requests_per_s": float(workload.rates_per_s[m.index]),
            "mme_monthly_usd": m.mme_monthly_usd,
            "mme_cold_start_rate": m.mme_cold_start_rate,
            "copies": m.copies,
            "dedicated_monthly_usd": m.dedicated_monthly_usd,
            "placement": "dedicated" if m.index in dedicated else "mme",
        }
