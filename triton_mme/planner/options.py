"""What a plan is asked for: the GPU utilization target, the hit-rate and latency targets, the instance bounds
and the simulation's length. Dumped as the plan JSON's `options` (the fields marked excluded stay out)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from triton_mme.planner.defaults import DEFAULT_MAX_INSTANCES, DEFAULT_SIMULATED_REQUESTS
from triton_mme.sizing.targets import DEFAULT_GPU_UTILIZATION_TARGET


class PlanOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu_utilization_target: float = DEFAULT_GPU_UTILIZATION_TARGET  # percent
    min_cache_hit_rate: float | None = None
    p99_latency_ms: float | None = None
    min_instances: int = 1
    max_instances: int = DEFAULT_MAX_INSTANCES
    simulated_requests: int = DEFAULT_SIMULATED_REQUESTS
    # Overrides every candidate's storage volume.
    disk_gb: float | None = Field(default=None, exclude=True)
    # What set the bounds, as the plan names them: the option, or the stack's setting.
    min_instances_origin: str = Field(default="--min-instances", exclude=True)
    max_instances_origin: str = Field(default="--max-instances", exclude=True)

    @property
    def utilization(self) -> float:
        return self.gpu_utilization_target / 100
