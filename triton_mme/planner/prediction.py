"""One endpoint configuration under the traffic: the simulated cache (`eviction.simulate`), the latency
mixture (`latency`), the targets it misses, and the prediction in the load test's `Outcome` shape."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from triton_mme.core.platform import PLATFORM
from triton_mme.planner.candidates import Candidate
from triton_mme.planner.eviction import CacheStats, Limits, draw_stream, replicas_needed, simulate
from triton_mme.planner.latency import cold_mixture, mixture_quantile, per_component_quantile
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.outcome import Latency, ModelOutcome, Outcome
from triton_mme.planner.served import Served

WARMUP_SHARE = 0.25  # requests simulated before counting, as a share of the counted ones


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

    def outcome(self, *, per_model: bool = True) -> Outcome:
        """The prediction in the shape a load test measures, per-model figures included unless `per_model`
        is False (the plan JSON writes those from `model_rows`, a chunk at a time)."""
        workload = self.served.workload
        duration = workload.duration_s
        models = (
            MODEL_OUTCOMES.validate_python([r for rows in self.model_rows() for r in rows])
            if per_model
            else ()
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
            models=models,
        )

    def model_rows(self, chunk: int = 1000) -> Iterator[list[dict[str, Any]]]:
        """The per-model figures of `outcome` as ModelOutcome fields, `chunk` models at a time."""
        workload = self.served.workload
        count = len(workload.records)
        queue = {"utilization": min(self.utilization, 1.0), "mean_service_s": self.served.mean_service_s}
        offsets, weights = self.offsets_s.reshape(3, count), self.weights.reshape(3, count)
        p50 = 1000 * np.asarray(per_component_quantile(0.5, offsets, weights, **queue), dtype=float)
        p99 = 1000 * np.asarray(per_component_quantile(0.99, offsets, weights, **queue), dtype=float)
        hit_rates = np.asarray(self.stats.model_hit_rates(), dtype=float)
        requests = np.asarray(workload.rates_per_s, dtype=float) * workload.duration_s
        # Rows as plain values, validated a list at a time (pydantic's per-object call overhead took most of
        # `plan --json`'s time at 10,000 models).
        for start in range(0, count, chunk):
            part = slice(start, start + chunk)
            hits = [None if math.isnan(h) else h for h in hit_rates[part].tolist()]
            yield [
                {
                    "model": label,
                    "target_model": record.target_model,
                    "requests": requested,
                    "cache_hit_rate": hit,
                    "cold_loads": None if hit is None else (1 - hit) * requested,
                    "latency_ms": {} if math.isnan(low) else {"p50_ms": low, "p99_ms": high},
                }
                for label, record, requested, hit, low, high in zip(
                    workload.labels[part],
                    workload.records[part],
                    requests[part].tolist(),
                    hits,
                    p50[part].tolist(),
                    p99[part].tolist(),
                    strict=True,
                )
            ]


MODEL_OUTCOMES = TypeAdapter(tuple[ModelOutcome, ...])


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
        if cold_s[i] > PLATFORM.limits.invoke_endpoint_timeout_seconds.value
        and stats.hits[i] < stats.requests[i]
    )
    return Evaluation(
        served, candidate, instances, stats, utilization, offsets, weights, p50, p99, tuple(misses), slow
    )


def predict(served: Served, candidate: Candidate, instances: int, options: PlanOptions) -> Evaluation:
    """The outcome of one given configuration (what `plan --compare` sets beside a load test)."""
    return evaluate(served, candidate, instances, Simulator(served, options), options)
