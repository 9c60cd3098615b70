"""Per instance type: how many instances the traffic needs, what they hold, how often they start cold, what
they cost; the same for one endpoint per model; then a recommendation (docs/capacity-planning.md).

Instances needed: the fewest (at least `min_instances`) that keep the average GPU utilization at or below the
target (the GPU time of the traffic, sum of rate x service time, spread over the instances) and meet the
hit-rate and p99 targets where they are set, searched from Che's estimate with the simulation
(`eviction.simulate`) deciding. One endpoint per model: each model on its own endpoint of the same type,
enough instances for its own GPU time at the target, nothing ever cold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from triton_mme.core.platform import (
    EBS_VOLUME_GB_ASSUMED,
    GPU_MME_INSTANCE_TYPES,
    GPU_REPORTED_MEMORY_MIB,
    HOST_RESERVED_BYTES,
    HOURS_PER_MONTH,
    INVOKE_ENDPOINT_TIMEOUT_S,
    TRITON_SERVER_GPU_BYTES,
    GpuInstanceType,
    supports_compute_capability,
)
from triton_mme.planner.defaults import (
    DEFAULT_GPU_UTILIZATION_TARGET,
    DEFAULT_MAX_INSTANCES,
    DEFAULT_SIMULATED_REQUESTS,
)
from triton_mme.planner.estimate import ArchiveEstimate
from triton_mme.planner.eviction import (
    CacheStats,
    Footprint,
    Limits,
    che_hit_rate,
    draw_stream,
    replicas_needed,
    simulate,
)
from triton_mme.planner.latency import cold_mixture, mixture_quantile, per_component_quantile
from triton_mme.planner.outcome import Configuration, Latency, ModelOutcome, Outcome
from triton_mme.planner.prices import Price, PriceBook
from triton_mme.planner.traffic import Workload

WARMUP_SHARE = 0.25  # requests simulated before counting, as a share of the counted ones
GB = 10**9


class NoServiceTime(ValueError):
    pass


@dataclass(frozen=True)
class PlanOptions:
    gpu_utilization_target: float = DEFAULT_GPU_UTILIZATION_TARGET  # percent
    min_cache_hit_rate: float | None = None
    p99_latency_ms: float | None = None
    min_instances: int = 1
    max_instances: int = DEFAULT_MAX_INSTANCES
    simulated_requests: int = DEFAULT_SIMULATED_REQUESTS
    disk_gb: float | None = None  # overrides every candidate's storage volume

    @property
    def utilization(self) -> float:
        return self.gpu_utilization_target / 100


@dataclass(frozen=True)
class Served:
    """A workload with every figure the plan needs: service times and each archive's estimate."""

    workload: Workload
    estimates: tuple[ArchiveEstimate, ...]
    service_s: np.ndarray

    @property
    def gpu_seconds_per_s(self) -> np.ndarray:
        return self.workload.rates_per_s * self.service_s

    @property
    def total_gpu_seconds_per_s(self) -> float:
        return float(self.gpu_seconds_per_s.sum())

    @property
    def mean_service_s(self) -> float:
        return float(self.total_gpu_seconds_per_s / self.workload.total_rate_per_s)

    def footprint(self) -> Footprint:
        return Footprint(
            np.array([e.gpu_bytes for e in self.estimates]),
            np.array([e.host_bytes for e in self.estimates]),
            np.array([e.disk_bytes for e in self.estimates]),
        )

    def column(self, name: str) -> np.ndarray:
        return np.array([getattr(e, name) for e in self.estimates], dtype=float)


@dataclass(frozen=True)
class Candidate:
    """An endpoint to size: a GPU multi-model instance type, or the local Triton with a model budget."""

    name: str
    limits: Limits
    configuration: Configuration
    price: Price | None = None
    gpu: str | None = None
    downloads: bool = True  # the local Triton reads archives from a directory

    def with_instances(self, instances: int) -> Configuration:
        return self.configuration.model_copy(update={"instances": instances})


def instance_limits(instance: GpuInstanceType, disk_gb: float | None = None) -> Limits:
    """What one instance of the type offers its models (Triton's own GPU memory and the host's reserve
    taken off; the NVMe instance store, or the assumed EBS volume, for disk)."""
    gpu = GPU_REPORTED_MEMORY_MIB[instance.gpu] * 2**20 - TRITON_SERVER_GPU_BYTES
    host = instance.memory_gib * 2**30 - HOST_RESERVED_BYTES
    volume_gb = disk_gb or instance.instance_storage_gb or EBS_VOLUME_GB_ASSUMED
    return Limits(gpu_bytes=gpu, host_bytes=host, disk_bytes=volume_gb * GB)


def sagemaker_candidate(
    instance: GpuInstanceType, prices: PriceBook, disk_gb: float | None = None
) -> Candidate:
    configuration = Configuration(target="sagemaker", instance_type=instance.name)
    return Candidate(
        instance.name,
        instance_limits(instance, disk_gb),
        configuration,
        prices.price(instance.name),
        instance.gpu,
    )


def sagemaker_candidates(
    prices: PriceBook, triton_tag: str, *, only: tuple[str, ...] = (), disk_gb: float | None = None
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """The GPU multi-model instance types of the platform table that can run the Triton tag, and the ones
    left out with the reason."""
    candidates, skipped = [], []
    for name, instance in GPU_MME_INSTANCE_TYPES.items():
        if only and name not in only:
            continue
        if supports_compute_capability(triton_tag, name):
            candidates.append(sagemaker_candidate(instance, prices, disk_gb))
        else:
            reason = f"{instance.gpu} (compute capability {instance.compute_capability}) cannot run "
            skipped.append((name, reason + f"sagemaker-tritonserver:{triton_tag}"))
    return candidates, skipped


def local_candidate(model_budget: int, url: str | None = None) -> Candidate:
    """The local Triton: a budget of models, archives read from a directory (no download)."""
    configuration = Configuration(target="local", model_budget=model_budget, endpoint=url)
    return Candidate("local Triton", Limits(models=model_budget), configuration, downloads=False)


class Simulator:
    """One seeded request stream for the whole plan; results kept per (limits, instances)."""

    def __init__(self, served: Served, options: PlanOptions):
        self.served = served
        self.options = options
        self.footprint = served.footprint()
        self.warmup = int(options.simulated_requests * WARMUP_SHARE)
        length = self.warmup + options.simulated_requests
        self.stream = draw_stream(served.workload.popularity, length, served.workload.seed)
        self._results: dict[tuple[tuple[float, ...], int], CacheStats] = {}

    def run(self, limits: Limits, instances: int) -> CacheStats:
        limits = self.footprint.effective(limits)
        key = (limits.as_tuple(), instances)
        if key not in self._results:
            replicas = replicas_needed(self.served.gpu_seconds_per_s, self.options.utilization, instances)
            self._results[key] = simulate(
                self.stream,
                self.footprint,
                limits,
                instances=instances,
                replicas=replicas,
                warmup=self.warmup,
                seed=self.served.workload.seed + instances,
            )
        return self._results[key]


@dataclass(frozen=True)
class Evaluation:
    """One candidate at one instance count: the simulated cache, the latency mixture, the targets missed."""

    served: Served
    candidate: Candidate
    instances: int
    stats: CacheStats
    utilization: float
    offsets_s: np.ndarray  # latency outcomes: per model hit, load from disk, download and load
    weights: np.ndarray  # their shares of all requests
    p50_s: float
    p99_s: float
    misses: tuple[str, ...]
    slow_cold_starts: tuple[str, ...]  # models whose cold start exceeds InvokeEndpoint's 60 s

    @property
    def meets_targets(self) -> bool:
        return not self.misses

    @property
    def cold_loads_per_hour(self) -> float:
        return (1 - self.stats.hit_rate) * self.served.workload.total_rate_per_s * 3600

    def outcome(self) -> Outcome:
        """The prediction in the shape a load test measures (per-model figures included)."""
        workload = self.served.workload
        count = len(workload.records)
        queue = {"utilization": min(self.utilization, 1.0), "mean_service_s": self.served.mean_service_s}
        offsets, weights = self.offsets_s.reshape(3, count), self.weights.reshape(3, count)
        p50 = per_component_quantile(0.5, offsets, weights, **queue)
        p99 = per_component_quantile(0.99, offsets, weights, **queue)
        hit_rates = self.stats.model_hit_rates()
        duration = workload.duration_s
        models = []
        for i, record in enumerate(workload.records):
            requests = float(workload.rates_per_s[i] * duration)
            hit = None if math.isnan(hit_rates[i]) else float(hit_rates[i])
            latency = Latency() if math.isnan(p50[i]) else Latency(p50_ms=1000 * p50[i], p99_ms=1000 * p99[i])
            cold = None if hit is None else (1 - hit) * requests
            models.append(
                ModelOutcome(
                    model=workload.labels[i],
                    target_model=record.target_model,
                    requests=requests,
                    cache_hit_rate=hit,
                    cold_loads=cold,
                    latency_ms=latency,
                )
            )
        return Outcome(
            kind="predicted",
            configuration=self.candidate.with_instances(self.instances),
            duration_s=duration,
            requests=workload.total_rate_per_s * duration,
            request_rate_per_s=workload.total_rate_per_s,
            cache_hit_rate=self.stats.hit_rate,
            cache_hit_rate_stderr=self.stats.hit_rate_stderr,
            cold_loads_per_hour=self.cold_loads_per_hour,
            latency_ms=Latency(p50_ms=1000 * self.p50_s, p99_ms=1000 * self.p99_s),
            models=tuple(models),
        )


def evaluate(
    served: Served, candidate: Candidate, instances: int, simulator: Simulator, options: PlanOptions
) -> Evaluation:
    """Predict what `instances` of the candidate do under the workload."""
    stats = simulator.run(candidate.limits, instances)
    utilization = served.total_gpu_seconds_per_s / instances
    measured = max(stats.measured, 1)
    load = served.column("load_s")
    download = served.column("download_s") if candidate.downloads else np.zeros(len(load))
    offsets, weights = cold_mixture(
        served.service_s,
        load,
        download,
        hit=stats.hits / measured,
        from_disk=stats.loads_from_disk / measured,
        download=stats.downloads / measured,
    )
    queue = {"utilization": min(utilization, 1.0), "mean_service_s": served.mean_service_s}
    p50 = mixture_quantile(0.5, offsets, weights, **queue)
    p99 = mixture_quantile(0.99, offsets, weights, **queue)
    misses = []
    if utilization > options.utilization + 1e-9:
        misses.append(
            f"GPU utilization {utilization:.0%} above the {options.gpu_utilization_target:g} % target"
        )
    if options.min_cache_hit_rate is not None and stats.hit_rate < options.min_cache_hit_rate:
        misses.append(f"cache-hit rate {stats.hit_rate:.1%} below {options.min_cache_hit_rate:.1%}")
    if options.p99_latency_ms is not None and 1000 * p99 > options.p99_latency_ms:
        misses.append(f"p99 {1000 * p99:,.0f} ms above {options.p99_latency_ms:,.0f} ms")
    cold_s = served.service_s + load + download
    labels = served.workload.labels
    slow = tuple(
        labels[i]
        for i in range(len(labels))
        if cold_s[i] > INVOKE_ENDPOINT_TIMEOUT_S and stats.hits[i] < stats.requests[i]
    )
    return Evaluation(
        served, candidate, instances, stats, utilization, offsets, weights, p50, p99, tuple(misses), slow
    )


@dataclass(frozen=True)
class SingleModelPlan:
    """One endpoint per model, all of the candidate's type."""

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

    @property
    def feasible(self) -> bool:
        return self.problem is None and self.evaluation is not None and self.evaluation.meets_targets

    @property
    def monthly_usd(self) -> float | None:
        if self.evaluation is None or self.candidate.price is None:
            return None
        return self.evaluation.instances * self.candidate.price.usd_per_hour * HOURS_PER_MONTH

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
    lowest = max(
        options.min_instances, math.ceil(served.total_gpu_seconds_per_s / options.utilization - 1e-9)
    )
    if lowest > options.max_instances:
        problem = (
            f"the traffic needs {lowest} instances for its GPU time alone; --max-instances is "
            f"{options.max_instances}"
        )
        return CandidatePlan(candidate, capacity, None, single, problem)
    tried: dict[int, Evaluation] = {}

    def at(n: int) -> Evaluation:
        if n not in tried:
            tried[n] = evaluate(served, candidate, n, simulator, options)
        return tried[n]

    n = _che_start(served, capacity, options, lowest)
    if at(n).meets_targets:
        while n > lowest and at(n - 1).meets_targets:
            n -= 1
        return CandidatePlan(candidate, capacity, at(n), single)
    failing, step = n, 1
    while failing + step <= options.max_instances and not at(failing + step).meets_targets:
        failing, step = failing + step, step * 2
    passing = failing + step
    if passing > options.max_instances:
        if options.max_instances not in tried:
            at(options.max_instances)
        best = at(options.max_instances) if at(options.max_instances).meets_targets else tried[max(tried)]
        if best.meets_targets:
            return CandidatePlan(candidate, capacity, best, single)
        problem = f"{'; '.join(best.misses)} even with {best.instances} instances (--max-instances)"
        return CandidatePlan(candidate, capacity, best, single, problem)
    while passing - failing > 1:
        middle = (passing + failing) // 2
        if at(middle).meets_targets:
            passing = middle
        else:
            failing = middle
    return CandidatePlan(candidate, capacity, at(passing), single)


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
    monthly = total * price.usd_per_hour * HOURS_PER_MONTH if price else None
    problem = None
    if oversized:
        problem = f"{served.workload.labels[oversized[0]]} does not fit one {candidate.name}"
    elif options.p99_latency_ms is not None and 1000 * p99 > options.p99_latency_ms:
        problem = f"p99 {1000 * p99:,.0f} ms above {options.p99_latency_ms:,.0f} ms"
    return SingleModelPlan(total, monthly, 1000 * p99, problem)


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
                return (f"{len(feasible)} instance type(s) meet the targets but none has a known price in "
                        f"{self.region}; pass --price TYPE=USD or --price-list-api")  # fmt: skip
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
            saving = 1 - best.monthly_usd / single.single.monthly_usd
            verdict = f"saves {saving:.0%}" if saving > 0 else f"costs {-saving:.0%} more"
            text += (
                f"; one endpoint per model ({single.candidate.name}, {single.single.instances} instances) "
                f"would cost ${single.single.monthly_usd:,.0f}/month: the multi-model endpoint {verdict}"
            )
        return text


def plan(served: Served, candidates: list[Candidate], options: PlanOptions, **extra: object) -> Plan:
    """Size every candidate against one seeded request stream."""
    simulator = Simulator(served, options)
    sized = [plan_candidate(served, candidate, simulator, options) for candidate in candidates]
    return Plan(served, options, sized, **extra)  # type: ignore[arg-type]


def predict(served: Served, candidate: Candidate, instances: int, options: PlanOptions) -> Evaluation:
    """The outcome of one given configuration (what `plan --compare` sets beside a load test)."""
    return evaluate(served, candidate, instances, Simulator(served, options), options)
