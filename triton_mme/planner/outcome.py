"""What an endpoint configuration does under a traffic file, in one shape for the planner's prediction and
the load test's measurement, so that `plan --compare` can set them side by side.

Rates are fractions (0..1); latencies in milliseconds; None where a figure was not predicted or could not be
observed (a measurement against SageMaker sees no per-request cache hit, for instance).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from triton_mme.planner.traffic import MAX_DURATION_S, MAX_RATE_PER_S, TrafficFile

Fraction = Annotated[float, Field(ge=0, le=1)]
# Bounds on a load-test report's figures: a report claiming a billion instances or an infinite rate would
# make the prediction allocate per instance or divide by zero.
MAX_REPORTED_INSTANCES = 10_000
MAX_MODEL_BUDGET = 100_000
Count = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, le=MAX_DURATION_S, allow_inf_nan=False)]
RatePerS = Annotated[float, Field(ge=0, le=MAX_RATE_PER_S, allow_inf_nan=False)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Latency(_Frozen):
    p50_ms: float | None = None
    p99_ms: float | None = None


class Errors(_Frozen):
    """Failed requests by kind: 507 (the container's out-of-memory answer), other 4xx, 5xx, client-side
    timeouts, ModelNotReadyException (a load still running after InvokeEndpoint's 60 s), anything else."""

    http_507: int = 0
    http_4xx: int = 0
    http_5xx: int = 0
    timeouts: int = 0
    model_not_ready: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return (
            self.http_507 + self.http_4xx + self.http_5xx + self.timeouts + self.model_not_ready + self.other
        )


class Configuration(_Frozen):
    """The endpoint the outcome is for: a SageMaker instance type and count, or the local Triton's budget."""

    target: Literal["sagemaker", "local"]
    instance_type: str | None = None
    instances: Annotated[int, Field(ge=1, le=MAX_REPORTED_INSTANCES)] = 1
    model_budget: Annotated[int, Field(ge=1, le=MAX_MODEL_BUDGET)] | None = None
    endpoint: str | None = None  # the endpoint name, or the local endpoint's URL

    def describe(self) -> str:
        if self.model_budget is not None:
            return f"local Triton, model budget {self.model_budget}"
        return f"{self.instance_type} x {self.instances}"


class ModelOutcome(_Frozen):
    model: str  # name/format
    target_model: str
    requests: float
    cache_hit_rate: Fraction | None = None
    cold_loads: float | None = None
    latency_ms: Latency = Latency()


class Outcome(_Frozen):
    kind: Literal["predicted", "measured"]
    configuration: Configuration
    duration_s: Positive
    requests: Count
    request_rate_per_s: RatePerS
    cache_hit_rate: Fraction | None = None
    # Standard error of the hit rate (simulation batch means, or the binomial error of a measurement).
    cache_hit_rate_stderr: float | None = None
    cold_loads_per_hour: float | None = None
    latency_ms: Latency = Latency()
    errors: Errors = Errors()
    models: tuple[ModelOutcome, ...] = ()

    def model(self, target_model: str) -> ModelOutcome | None:
        return next((m for m in self.models if m.target_model == target_model), None)


class ServerCount(_Frozen):
    """The server's own count of cache hits over the measured window: the local endpoint's counters, or
    SageMaker's ModelCacheHit metric (Average over the window, weighted by its SampleCount)."""

    source: str
    cache_hit_rate: Fraction | None = None
    requests: float | None = None


class LoadTestReport(_Frozen):
    """What `triton-mme loadtest` writes: the traffic it drove (so the prediction uses the same), how, and
    what it measured."""

    schema_version: int = 1
    traffic: TrafficFile
    manifest: str
    users: Annotated[int, Field(ge=1, le=MAX_REPORTED_INSTANCES * 100)]
    rate_per_s: Annotated[float, Field(gt=0, le=MAX_RATE_PER_S, allow_inf_nan=False)] | None  # None: flat out
    warmup_s: Annotated[float, Field(ge=0, le=MAX_DURATION_S, allow_inf_nan=False)]
    warmup_requests: Annotated[int, Field(ge=0)]
    measured: Outcome
    server: ServerCount | None = None
