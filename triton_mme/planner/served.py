"""What every plan starts from: the options, and the traffic with each archive's figures resolved."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from triton_mme.planner.defaults import (
    DEFAULT_GPU_UTILIZATION_TARGET,
    DEFAULT_MAX_INSTANCES,
    DEFAULT_SIMULATED_REQUESTS,
)
from triton_mme.planner.estimate import ArchiveEstimate
from triton_mme.planner.eviction import Footprint
from triton_mme.planner.traffic import Workload


@dataclass(frozen=True)
class PlanOptions:
    gpu_utilization_target: float = DEFAULT_GPU_UTILIZATION_TARGET  # percent
    min_cache_hit_rate: float | None = None
    p99_latency_ms: float | None = None
    min_instances: int = 1
    max_instances: int = DEFAULT_MAX_INSTANCES
    simulated_requests: int = DEFAULT_SIMULATED_REQUESTS
    disk_gb: float | None = None  # overrides every candidate's storage volume
    # What set the bounds, as the plan names them: the option, or the stack's setting.
    min_instances_origin: str = "--min-instances"
    max_instances_origin: str = "--max-instances"

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
