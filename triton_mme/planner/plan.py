"""The plan: per instance type, how many instances the traffic needs, what they hold, how often they start
cold, what they cost; the same for one endpoint per model; then a recommendation (docs/capacity-planning.md).

Instances needed: the fewest (at least `min_instances`) that keep the average GPU utilization at or below the
target (the GPU time of the traffic, sum of rate x service time, spread over the instances) and meet the
hit-rate and p99 targets where they are set, searched from Che's estimate with the simulation deciding. One
endpoint per model: each model on its own endpoint of the same type, enough instances for its own GPU time at
the target, nothing ever cold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict

from triton_mme.core.platform import PLATFORM
from triton_mme.core.wording import plural, relative_change
from triton_mme.planner.candidates import GB, Candidate
from triton_mme.planner.eviction import Limits, che_hit_rate
from triton_mme.planner.latency import mixture_quantile
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.prediction import Evaluation, Simulator, evaluate
from triton_mme.planner.served import Served


class SingleModelPlan(BaseModel):
    """One endpoint per model, all of the candidate's type (the plan JSON's `one_endpoint_per_model`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instances: int
    monthly_usd: float | None
    p99_ms: float
    problem: str | None = None


@dataclass(frozen=True)
class CandidatePlan:
    candidate: Candidate
    capacity_models: dict[str, int]  # models of the workload's average footprint each limit holds
    evaluation: Evaluation | None
    single: SingleModelPlan
    problem: str | None = None  # why no instance count serves the traffic
    # What decides the count: "GPU time", "--min-instances", or the targets one instance fewer misses.
    sized_by: str | None = None

    @property
    def feasible(self) -> bool:
        return self.problem is None and self.evaluation is not None and self.evaluation.meets_targets

    @property
    def monthly_usd(self) -> float | None:
        if self.evaluation is None or self.candidate.price is None:
            return None
        return (
            self.evaluation.instances
            * self.candidate.price.usd_per_hour
            * PLATFORM.prices.hours_per_month.value
        )

    @property
    def binding_limit(self) -> str:
        if self.evaluation is None:
            return "—"
        bound = self.evaluation.stats.binding_limit
        if bound is not None:
            return bound
        tightest = min(self.capacity_models, key=lambda name: self.capacity_models[name], default=None)
        return f"none ({tightest} would)" if tightest else "none"


def capacity_in_models(served: Served, limits: Limits) -> dict[str, int]:
    """How many models of the popularity-weighted average footprint each limit holds."""
    weights = served.workload.popularity
    found = {}
    for name, cap, sizes in (
        ("GPU memory", limits.gpu_bytes, served.column("gpu_bytes")),
        ("host memory", limits.host_bytes, served.column("host_bytes")),
        ("disk", limits.disk_bytes, served.column("disk_bytes")),
        ("model budget", limits.models, np.ones(len(weights))),
    ):
        if math.isfinite(cap):
            found[name] = int(cap // float(np.dot(weights, sizes)))
    return found


def _che_start(served: Served, capacity: dict[str, int], options: PlanOptions, lowest: int) -> int:
    """The fewest instances whose pooled capacity gives the hit-rate target by Che's approximation."""
    if options.min_cache_hit_rate is None or not capacity:
        return lowest
    per_instance = max(min(capacity.values()), 1)
    popularity = served.workload.popularity
    n = lowest
    while (
        n < options.max_instances and che_hit_rate(popularity, n * per_instance) < options.min_cache_hit_rate
    ):
        n += 1
    return n


def fewest(lowest: int, highest: int, guess: int, meets: Callable[[int], bool]) -> int | None:
    """The smallest n in [lowest, highest] with meets(n), taking meets as monotone: from the guess, steps
    doubling down or up, then bisection; None when even `highest` does not meet it."""
    guess = min(max(guess, lowest), highest)
    if meets(guess):
        passing, step = guess, 1
        while passing - step >= lowest and meets(passing - step):
            passing, step = passing - step, step * 2
        failing = max(passing - step, lowest - 1)
    else:
        failing, step = guess, 1
        while failing + step < highest and not meets(failing + step):
            failing, step = failing + step, step * 2
        passing = min(failing + step, highest)
        if not meets(passing):
            return None
    while passing - failing > 1:
        middle = (passing + failing) // 2
        if meets(middle):
            passing = middle
        else:
            failing = middle
    return passing


def plan_candidate(
    served: Served, candidate: Candidate, simulator: Simulator, options: PlanOptions
) -> CandidatePlan:
    """Size one candidate: the fewest instances that meet every target, and one endpoint per model."""
    capacity = capacity_in_models(served, candidate.limits)
    single = single_model_plan(served, candidate, options)
    oversized = simulator.footprint.too_large(candidate.limits)
    if oversized:
        first = served.estimates[oversized[0]]
        problem = (
            f"{served.workload.labels[oversized[0]]} needs {first.gpu_bytes / GB:.1f} GB of GPU memory, "
            f"{first.host_bytes / GB:.1f} GB of host memory and {first.disk_bytes / GB:.1f} GB of disk: "
            "more than one instance offers"
        )
        return CandidatePlan(candidate, capacity, None, single, problem)
    for_gpu_time = math.ceil(served.total_gpu_seconds_per_s / options.utilization - 1e-9)
    lowest = max(options.min_instances, for_gpu_time)
    if lowest > options.max_instances:
        problem = (
            f"the traffic needs {plural(lowest, 'instance')} for its GPU time alone; the maximum is "
            f"{options.max_instances} ({options.max_instances_origin})"
        )
        return CandidatePlan(candidate, capacity, None, single, problem)
    tried: dict[int, Evaluation] = {}

    def at(n: int) -> Evaluation:
        if n not in tried:
            tried[n] = evaluate(served, candidate, n, simulator, options)
        return tried[n]

    guess = _che_start(served, capacity, options, lowest)
    found = fewest(lowest, options.max_instances, guess, lambda n: at(n).meets_targets)
    if found is None:
        best = at(options.max_instances)
        most = f"{plural(best.instances, 'instance')} ({options.max_instances_origin})"
        problem = f"{'; '.join(best.misses)} even with {most}"
        return CandidatePlan(candidate, capacity, best, single, problem)
    if found > lowest:
        sized_by = "; ".join(at(found - 1).misses)
    else:
        sized_by = (
            "GPU time"
            if for_gpu_time >= options.min_instances
            else f"minimum ({options.min_instances_origin})"
        )
    return CandidatePlan(candidate, capacity, at(found), single, sized_by=sized_by)


def single_model_plan(served: Served, candidate: Candidate, options: PlanOptions) -> SingleModelPlan:
    """Every model on its own endpoint of the candidate's type: loaded once, never evicted."""
    footprint = served.footprint()
    oversized = footprint.too_large(candidate.limits)
    gpu_time = served.gpu_seconds_per_s
    instances = np.maximum(options.min_instances, np.ceil(gpu_time / options.utilization - 1e-9)).astype(int)
    utilization = gpu_time / instances
    called = served.workload.rates_per_s > 0
    p99 = mixture_quantile(
        0.99,
        served.service_s[called],
        served.workload.rates_per_s[called],
        utilization=utilization[called],
        mean_service_s=served.service_s[called],
    )
    total = int(instances.sum())
    price = candidate.price
    monthly = total * price.usd_per_hour * PLATFORM.prices.hours_per_month.value if price else None
    problem = None
    if oversized:
        problem = f"{served.workload.labels[oversized[0]]} does not fit one {candidate.name}"
    elif options.p99_latency_ms is not None and 1000 * p99 > options.p99_latency_ms:
        problem = f"p99 {1000 * p99:,.0f} ms above {options.p99_latency_ms:,.0f} ms"
    return SingleModelPlan(instances=total, monthly_usd=monthly, p99_ms=1000 * p99, problem=problem)


@dataclass
class Plan:
    served: Served
    options: PlanOptions
    candidates: list[CandidatePlan]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    region: str = "us-east-1"

    def cheapest(self) -> CandidatePlan | None:
        priced = [c for c in self.candidates if c.feasible and c.monthly_usd is not None]
        return min(
            priced,
            key=lambda c: (c.monthly_usd, -(c.evaluation.stats.hit_rate if c.evaluation else 0)),
            default=None,
        )

    def cheapest_single(self) -> CandidatePlan | None:
        priced = [c for c in self.candidates if c.single.problem is None and c.single.monthly_usd is not None]
        return min(priced, key=lambda c: c.single.monthly_usd or math.inf, default=None)

    def recommendation(self) -> str:
        best, single = self.cheapest(), self.cheapest_single()
        if best is None:
            feasible = [c for c in self.candidates if c.feasible]
            if feasible:
                meet = "meets" if len(feasible) == 1 else "meet"
                return (f"{plural(len(feasible), 'instance type')} {meet} the targets but none has a known "
                        f"price in {self.region}; pass --price TYPE=USD or --price-list-api")  # fmt: skip
            return "no instance type meets the targets: " + "; ".join(
                f"{c.candidate.name}: {c.problem or '; '.join(c.evaluation.misses if c.evaluation else ())}"
                for c in self.candidates[:3]
            )
        assert best.evaluation is not None and best.monthly_usd is not None
        text = (
            f"{best.candidate.name} x {best.evaluation.instances}: ${best.monthly_usd:,.0f}/month, predicted "
            f"cache-hit rate {best.evaluation.stats.hit_rate:.1%}, "
            f"{best.evaluation.cold_loads_per_hour:,.0f} cold loads/hour"
        )
        if single is not None and single.single.monthly_usd:
            ratio = best.monthly_usd / single.single.monthly_usd
            verdict = relative_change(ratio, more="costs {} more", less="saves {}", same="costs the same")
            separate = plural(single.single.instances, "instance")
            text += (
                f"; one endpoint per model ({single.candidate.name}, {separate}) "
                f"would cost ${single.single.monthly_usd:,.0f}/month: the multi-model endpoint {verdict}"
            )
        return text


def plan(served: Served, candidates: list[Candidate], options: PlanOptions, **extra: object) -> Plan:
    """Size every candidate against one seeded request stream."""
    simulator = Simulator(served, options)
    sized = [plan_candidate(served, candidate, simulator, options) for candidate in candidates]
    return Plan(served, options, sized, **extra)  # type: ignore[arg-type]
