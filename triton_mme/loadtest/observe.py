"""What one request showed, and the measurement built from many: per-model latency, cache hits, failures by
kind, in the planner's `Outcome` shape. No Locust here: the recorder only receives observations."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from triton_mme.planner.outcome import Configuration, Errors, Latency, ModelOutcome, Outcome

Kind = Literal["ok", "http_507", "http_4xx", "http_5xx", "timeouts", "model_not_ready", "other"]
MODEL_NOT_READY = "ModelNotReadyException"


@dataclass(frozen=True)
class Observation:
    model: int  # index into the run's archives
    started: float  # time.monotonic() when sent
    latency_s: float
    kind: Kind
    cache_hit: bool | None  # None where the endpoint does not say
    detail: str = ""


def kind_of_status(status: int) -> Kind:
    if 200 <= status < 300:
        return "ok"
    if status == 507:
        return "http_507"
    return "http_4xx" if 400 <= status < 500 else "http_5xx" if status >= 500 else "other"


def kind_of_sagemaker_error(code: str | None, http_status: int | None, model_status: int | None) -> Kind:
    """InvokeEndpoint's errors: ModelNotReadyException (a load still running after 60 s), ModelError (the
    container's own answer, whose status comes back as OriginalStatusCode: 507 when out of memory), others
    by their HTTP status."""
    if code == MODEL_NOT_READY:
        return "model_not_ready"
    status = model_status or http_status
    return "other" if status is None else kind_of_status(status)


def _latency(seconds: list[float]) -> Latency:
    if not seconds:
        return Latency()
    p50, p99 = np.quantile(seconds, [0.5, 0.99])
    return Latency(p50_ms=1000 * float(p50), p99_ms=1000 * float(p99))


@dataclass
class Recorder:
    """Collects observations; the first `warmup_requests` completed, and any sent before `warmup_s` has
    passed, fill the caches and are not measured; past `limit` measured requests, the rest are not either."""

    labels: tuple[str, ...]
    target_models: tuple[str, ...]
    warmup_s: float = 0.0
    warmup_requests: int = 0
    limit: int | None = None
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    warmup_done_at: float | None = None
    last_answered_at: float = 0.0
    warmed: int = 0
    observations: list[Observation] = field(default_factory=list)

    def start(self) -> None:
        self.started = self.clock()

    @property
    def measured(self) -> int:
        return len(self.observations)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.measured >= self.limit

    def in_warmup(self, observation: Observation) -> bool:
        return observation.started < self.started + self.warmup_s or self.warmed < self.warmup_requests

    def record(self, observation: Observation) -> None:
        if self.in_warmup(observation):
            self.warmed += 1
            return
        if self.full:
            return
        if self.warmup_done_at is None:
            self.warmup_done_at = observation.started
        self.observations.append(observation)
        self.last_answered_at = max(self.last_answered_at, observation.started + observation.latency_s)

    def on_request(self, context: dict[str, Any] | None = None, **_: Any) -> None:
        """A Locust `request` event listener: the observation travels in the event's context."""
        if context and isinstance(context.get("observation"), Observation):
            self.record(context["observation"])

    def outcome(self, configuration: Configuration, *, ended: float | None = None) -> Outcome:
        """The measurement; its window runs from the first measured request to `ended` (the last measured
        answer when the request limit ended the run)."""
        ended = self.last_answered_at if self.full else self.clock() if ended is None else ended
        begun = self.warmup_done_at if self.warmup_done_at is not None else ended
        duration = max(ended - begun, 1e-9)
        errors = {kind: 0 for kind in Errors.model_fields}
        latencies: list[list[float]] = [[] for _ in self.labels]
        hits = np.zeros(len(self.labels))
        answered = np.zeros(len(self.labels))  # requests whose cache state is known
        requests = np.zeros(len(self.labels))
        for o in self.observations:
            requests[o.model] += 1
            if o.kind == "ok":
                latencies[o.model].append(o.latency_s)
            else:
                errors[o.kind] += 1
            if o.cache_hit is not None:
                answered[o.model] += 1
                hits[o.model] += o.cache_hit
        known = answered.sum()
        hit_rate = float(hits.sum() / known) if known else None
        everything = [value for values in latencies for value in values]
        models = tuple(
            ModelOutcome(
                model=self.labels[i],
                target_model=self.target_models[i],
                requests=float(requests[i]),
                cache_hit_rate=float(hits[i] / answered[i]) if answered[i] else None,
                cold_loads=float(answered[i] - hits[i]) if answered[i] else None,
                latency_ms=_latency(latencies[i]),
            )
            for i in range(len(self.labels))
            if requests[i]
        )
        return Outcome(
            kind="measured",
            configuration=configuration,
            duration_s=duration,
            requests=float(len(self.observations)),
            request_rate_per_s=len(self.observations) / duration,
            cache_hit_rate=hit_rate,
            cache_hit_rate_stderr=math.sqrt(hit_rate * (1 - hit_rate) / known)
            if hit_rate is not None
            else None,
            cold_loads_per_hour=float((known - hits.sum()) / duration * 3600) if known else None,
            latency_ms=_latency(everything),
            errors=Errors(**errors),
            models=models,
        )
