"""Where each archive should be served: the multi-model endpoint's shared cache, or an inference component of
its own (docs/placement.md). For one instance type, three layouts of the whole traffic side by side:

- all on the multi-model endpoint: the plan's own sizing (`plan.plan_candidate`), its simulated LRU cache;
- all dedicated: every archive its own copies, enough for its GPU time at the utilization target, at least
  one, never cold (scale to zero is not planned: a model busy enough to earn its own copies seldom idles);
- hybrid: the hottest archives (most GPU time first, one format per model) on inference components, the rest
  on a multi-model endpoint sized and simulated for the rest alone. Prefixes of 1, 2, 3, 4, 6, 8, 12, ...
  archives are tried; the cheapest that meets the targets is the hybrid.

The hit-rate target applies to all requests: a hybrid's multi-model endpoint may miss more of its own
requests where the dedicated ones never miss. Copies: one per instance (each copy is given the instance's
one GPU: the safe side, as whether small copies may share a GPU is not confirmed here), priced like the
multi-model endpoint's instances of the same type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from triton_mme.core.platform import PLATFORM
from triton_mme.planner.candidates import Candidate
from triton_mme.planner.latency import mixture_quantile
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.plan import CandidatePlan, Plan, plan_candidate
from triton_mme.planner.prediction import Simulator
from triton_mme.planner.served import Served

# Instance types tried, cheapest first, where no type serves all the traffic on the multi-model endpoint.
FALLBACK_TYPES = 3
LayoutKind = Literal["all-mme", "hybrid", "all-dedicated"]
LAYOUT_NAMES: dict[LayoutKind, str] = {
    "all-mme": "all on the multi-model endpoint",
    "hybrid": "hybrid",
    "all-dedicated": "all on inference components",
}


def hybrid_sizes(count: int) -> list[int]:
    """How many of the hottest archives a hybrid puts on inference components: 1, 2, 3, 4, 6, 8, 12, 16, ...
    (about 1.4x apart), below `count` (all of them is the all-dedicated layout)."""
    sizes, size = [], 1
    while size < count:
        sizes.append(size)
        size = size + 1 if size < 4 else int(size * 1.5)
    return sizes


def subset(served: Served, indices: list[int]) -> Served:
    """The same traffic for only these archives (in this order)."""
    load = served.workload
    chosen = replace(
        load,
        records=tuple(load.records[i] for i in indices),
        rates_per_s=load.rates_per_s[indices],
        service_ms=tuple(load.service_ms[i] for i in indices),
    )
    return Served(chosen, tuple(served.estimates[i] for i in indices), served.service_s[indices])


def dedicated_copies(served: Served, options: PlanOptions) -> np.ndarray:
    """Per archive: the copies its GPU time needs at the utilization target, at least one."""
    return np.maximum(1, np.ceil(served.gpu_seconds_per_s / options.utilization - 1e-9)).astype(int)


@dataclass(frozen=True)
class Layout:
    """One placement of the whole traffic: which archives get inference components, what it costs and how
    often a request starts cold."""

    kind: LayoutKind
    dedicated: tuple[int, ...]  # indices into the workload, hottest first
    copies: int  # inference component copies, all dedicated archives together
    mme: CandidatePlan | None  # the multi-model endpoint for the rest; None when nothing is left on it
    monthly_usd: float | None
    cold_start_rate: float | None  # of all requests
    problem: str | None = None

    @property
    def name(self) -> str:
        return LAYOUT_NAMES[self.kind]

    @property
    def feasible(self) -> bool:
        return self.problem is None

    @property
    def mme_instances(self) -> int:
        return self.mme.evaluation.instances if self.mme is not None and self.mme.evaluation else 0


@dataclass(frozen=True)
class ModelFigures:
    """One archive on either endpoint: its share of the all-MME cost (by GPU time) and its cold starts there,
    against its own copies."""

    index: int
    mme_monthly_usd: float | None
    mme_cold_start_rate: float | None
    copies: int
    dedicated_monthly_usd: float | None


@dataclass(frozen=True)
class PlacementPlan:
    served: Served
    candidate: Candidate
    layouts: tuple[Layout, Layout, Layout]  # all-MME, hybrid, all-dedicated
    models: tuple[ModelFigures, ...]

    @property
    def recommended(self) -> Layout | None:
        """The cheapest layout that meets the targets (the simpler one where two cost the same)."""
        priced = [layout for layout in self.layouts if layout.feasible and layout.monthly_usd is not None]
        return min(priced, key=lambda layout: layout.monthly_usd or 0.0, default=None)

    def placed_dedicated(self) -> tuple[int, ...]:
        recommended = self.recommended
        return recommended.dedicated if recommended is not None else ()


def _monthly(candidate: Candidate, instances: float) -> float | None:
    price = candidate.price
    return None if price is None else instances * price.usd_per_hour * PLATFORM.prices.hours_per_month.value


def _tail_options(options: PlanOptions, tail_share: float) -> PlanOptions:
    """The multi-model endpoint's own targets when only `tail_share` of the requests reach it: the cold starts
    all requests may have, spread over its own."""
    if options.min_cache_hit_rate is None:
        return options
    allowed_cold = (1 - options.min_cache_hit_rate) / tail_share
    return options.model_copy(update={"min_cache_hit_rate": None if allowed_cold >= 1 else 1 - allowed_cold})


def _dedicated_problem(
    served: Served, candidate: Candidate, options: PlanOptions, indices: list[int], copies: np.ndarray
) -> str | None:
    labels = served.workload.labels
    oversized = subset(served, indices).footprint().too_large(candidate.limits)
    if oversized:
        return f"{labels[indices[oversized[0]]]} does not fit one {candidate.name}"
    if options.p99_latency_ms is None:
        return None
    rates, service = served.workload.rates_per_s[indices], served.service_s[indices]
    utilization = served.gpu_seconds_per_s[indices] / copies
    p99 = mixture_quantile(0.99, service, rates, utilization=utilization, mean_service_s=service)
    if 1000 * p99 > options.p99_latency_ms:
        return f"dedicated p99 {1000 * p99:,.0f} ms above {options.p99_latency_ms:,.0f} ms"
    return None


def layout(
    served: Served,
    candidate: Candidate,
    options: PlanOptions,
    dedicated: list[int],
    kind: LayoutKind,
    *,
    all_mme: CandidatePlan | None = None,
) -> Layout:
    """Size one layout: `dedicated` archives on inference components, the others on a multi-model endpoint."""
    copies_each = dedicated_copies(served, options)
    copies = int(copies_each[dedicated].sum()) if dedicated else 0
    chosen = set(dedicated)
    rest = [i for i in range(len(served.workload.records)) if i not in chosen]
    problem = (
        _dedicated_problem(served, candidate, options, dedicated, copies_each[dedicated])
        if dedicated
        else None
    )
    mme: CandidatePlan | None = None
    cold = 0.0
    mme_usd: float | None = 0.0
    if rest:
        total = served.workload.total_rate_per_s
        tail = subset(served, rest)
        share = tail.workload.total_rate_per_s / total
        tail_options = _tail_options(options, share)
        mme = (
            all_mme
            if all_mme is not None
            else plan_candidate(tail, candidate, Simulator(tail, tail_options), tail_options)
        )
        if mme.evaluation is None:
            return Layout(
                kind, tuple(dedicated), copies, mme, None, None, mme.problem or "no instance count fits"
            )
        cold = (1 - mme.evaluation.stats.hit_rate) * share
        mme_usd = mme.monthly_usd
        if not mme.feasible:
            problem = problem or f"multi-model endpoint: {mme.problem or '; '.join(mme.evaluation.misses)}"
    dedicated_usd = _monthly(candidate, copies)
    monthly = None if mme_usd is None or dedicated_usd is None else mme_usd + dedicated_usd
    return Layout(kind, tuple(dedicated), copies, mme, monthly, cold, problem)


def hottest_first(served: Served) -> list[int]:
    """Archives by GPU time, most first (then by requests); a model's later formats are left out, since a
    model has one inference component."""
    gpu, rates = served.gpu_seconds_per_s, served.workload.rates_per_s
    order = sorted(range(len(gpu)), key=lambda i: (-gpu[i], -rates[i], i))
    seen: set[str] = set()
    chosen = []
    for i in order:
        name = served.workload.records[i].name
        if name not in seen:
            seen.add(name)
            chosen.append(i)
    return chosen


def placement_plan(plan: Plan, sized: CandidatePlan) -> PlacementPlan:
    """The three layouts and the per-archive figures on the candidate `sized` (one of `plan`'s)."""
    served, options, candidate = plan.served, plan.options, sized.candidate
    everything = list(range(len(served.workload.records)))
    order = hottest_first(served)
    all_mme = layout(served, candidate, options, [], "all-mme", all_mme=sized)
    hybrids = [layout(served, candidate, options, order[:k], "hybrid") for k in hybrid_sizes(len(order))]
    feasible = [h for h in hybrids if h.feasible and h.monthly_usd is not None]
    if feasible:
        hybrid = min(feasible, key=lambda h: (h.monthly_usd or 0.0, len(h.dedicated)))
    elif hybrids:
        hybrid = min(hybrids, key=lambda h: math.inf if h.cold_start_rate is None else h.cold_start_rate)
    else:
        hybrid = replace(all_mme, kind="hybrid")
    # Every model on components, one format each; a model's other formats stay on a multi-model endpoint.
    all_dedicated = layout(served, candidate, options, order, "all-dedicated")
    copies = dedicated_copies(served, options)
    evaluation = sized.evaluation
    hit_rates = evaluation.stats.model_hit_rates() if evaluation is not None else None
    gpu = served.gpu_seconds_per_s
    share = gpu / gpu.sum() if gpu.sum() > 0 else np.zeros(len(gpu))
    models = tuple(
        ModelFigures(
            index=i,
            mme_monthly_usd=None if sized.monthly_usd is None else sized.monthly_usd * float(share[i]),
            mme_cold_start_rate=None
            if hit_rates is None or math.isnan(hit_rates[i])
            else 1 - float(hit_rates[i]),
            copies=int(copies[i]),
            dedicated_monthly_usd=_monthly(candidate, int(copies[i])),
        )
        for i in everything
    )
    return PlacementPlan(served, candidate, (all_mme, hybrid, all_dedicated), models)


def placement_for(plan: Plan) -> PlacementPlan | None:
    """The placement on the plan's recommended instance type; where no type serves all the traffic on the
    multi-model endpoint, on the cheapest type whose hybrid or all-dedicated layout meets the targets."""
    best = plan.cheapest()
    if best is not None:
        return placement_plan(plan, best)
    priced = sorted(
        (c for c in plan.candidates if c.candidate.price is not None),
        key=lambda c: c.candidate.price.usd_per_hour if c.candidate.price else math.inf,
    )
    for sized in priced[:FALLBACK_TYPES]:
        placed = placement_plan(plan, sized)
        if placed.recommended is not None:
            return placed
    return None
