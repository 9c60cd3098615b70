"""The traffic a plan serves, with each archive's figures resolved: service times and footprint estimates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from triton_mme.planner.eviction import Footprint
from triton_mme.planner.traffic import Workload
from triton_mme.sizing.estimate import ArchiveEstimate


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
