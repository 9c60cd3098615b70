"""The endpoints a plan sizes: each GPU multi-model instance type of the platform table (what one instance
offers its models, its price), or the local Triton with a budget of models."""

from __future__ import annotations

from dataclasses import dataclass

from triton_mme.core.platform import PLATFORM, GpuInstanceType, supports_compute_capability
from triton_mme.planner.eviction import Limits
from triton_mme.planner.outcome import Configuration
from triton_mme.planner.prices import Price, PriceBook
from triton_mme.sizing.assumptions import (
    EBS_VOLUME_GB_ASSUMED,
    GPU_REPORTED_MEMORY_MIB,
    HOST_RESERVED_BYTES,
    TRITON_SERVER_GPU_BYTES,
)

GB = 10**9


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
    for name, instance in PLATFORM.gpu_instance_types.items():
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
