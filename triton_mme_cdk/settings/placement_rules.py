"""Checks that a catalog's `placement: dedicated` entries can run as inference components on this endpoint,
and what each copy asks of an instance (docs/placement.md, docs/constructs.md).

A copy is its own single-model Triton container (the MME's image, without SAGEMAKER_MULTI_MODEL) that serves
one archive, unpacked from its S3 URL. Its footprint at synth is the planner's estimate from the catalog
(parameters x bytes per weight + the backend's per-model overhead + Triton's own memory, which every copy
pays: triton_mme/sizing/estimate.py); the build's serving report measures the real figure on a GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from triton_mme.catalog import Catalog, DedicatedPlacement, ModelEntry
from triton_mme.core.errors import quoted
from triton_mme.core.formats import Format
from triton_mme.core.platform import (
    PLATFORM,
    PLATFORM_DATA,
    component_instance_problem,
    gpu_instance,
)
from triton_mme.sizing.assumptions import (
    GPU_REPORTED_MEMORY_MIB,
    HOST_RESERVED_BYTES,
    TRITON_SERVER_GPU_BYTES,
)
from triton_mme.sizing.build_memory import parameter_count
from triton_mme.sizing.estimate import HOST_OVERHEAD_BYTES, MIB, estimate_gpu_bytes
from triton_mme_cdk.settings import Settings
from triton_mme_cdk.settings.base import MAX_INSTANCES

# Bytes per weight of the archive an inference component serves: a TensorRT plan in its precision, the
# other formats in FP32 (what the build exports).
BYTES_PER_WEIGHT = {"fp16": 2, "fp32": 4}
# The container's own process on the host, which every copy pays: Triton's pinned-memory pool (256 MB by
# default) and its CUDA context. Unconfirmed: no AWS or NVIDIA figure; 512 MiB taken, the safe side.
TRITON_PROCESS_HOST_BYTES = 512 * MIB
SUFFIX_DIGITS = 8


@dataclass(frozen=True)
class CopyFootprint:
    """What one copy of a dedicated entry asks of an instance (ComputeResourceRequirements)."""

    model: str
    format: Format
    gpu_bytes: float
    host_bytes: float
    accelerators: int = PLATFORM.components.compute_requirements.min_accelerators_per_copy

    @property
    def min_memory_mb(self) -> int:
        return max(PLATFORM.components.compute_requirements.min_memory_mb, math.ceil(self.host_bytes / MIB))


def dedicated_entries(catalog: Catalog) -> tuple[ModelEntry, ...]:
    return tuple(entry for entry in catalog.models if entry.placement == "dedicated")


def copy_footprint(entry: ModelEntry) -> CopyFootprint:
    """The estimate for one copy of `entry`'s dedicated archive; CatalogError when its size is unknowable."""
    served = entry.dedicated_format
    assert served is not None, f"{entry.name} is not dedicated"
    precision = entry.tensorrt.precision if served is Format.TENSORRT else "fp32"
    weights = parameter_count(entry) * BYTES_PER_WEIGHT[precision]
    return CopyFootprint(
        model=entry.name,
        format=served,
        gpu_bytes=estimate_gpu_bytes(weights, served.value) + TRITON_SERVER_GPU_BYTES,
        host_bytes=weights + HOST_OVERHEAD_BYTES + TRITON_PROCESS_HOST_BYTES,
    )


def rolling_batch(placement: DedicatedPlacement) -> int | None:
    """Copies per step of a component's rolling update: the fewest whole copies within 5-50 % of every copy
    count the component can have when an update starts (its copy range; one scaled to zero counts as one
    copy), or None where no whole copy fits that range for all of them: the component then updates all at
    once (docs/placement.md)."""
    low, high = placement.copy_range
    smallest, largest = PLATFORM.components.rolling_update.batch_percent_range
    batch = max(1, math.ceil(high * smallest / 100))
    return batch if batch * 100 <= max(low, 1) * largest else None


def update_surge(placement: DedicatedPlacement) -> int:
    """The instances a component's update may add at once: a rolling step provisions its batch before it
    stops old copies (and its rollback steps by the same batch); all at once, a whole second set of copies."""
    batch = rolling_batch(placement)
    return batch if batch is not None else placement.copy_range[1]


def component_instances(catalog: Catalog) -> tuple[int, int, int]:
    """(min, initial, max) instances of the component endpoint: one single-GPU instance per copy, a minimum
    of 0 once any entry may scale to zero (the platform's condition for it), and room for every component's
    update at once (an image change updates them all in the same deployment)."""
    placements = [entry.dedicated for entry in dedicated_entries(catalog) if entry.dedicated]
    assert placements, "the catalog has no dedicated entries"
    ranges = [placement.copy_range for placement in placements]
    lowest = 0 if any(low == 0 for low, _ in ranges) else sum(low for low, _ in ranges)
    initial = sum(placement.copies for placement in placements)
    return lowest, initial, sum(high for _, high in ranges) + sum(map(update_surge, placements))


def dedicated_problem(settings: Settings, catalog: Catalog) -> str | None:
    """Why the catalog's dedicated entries cannot deploy with these settings (one line), or None."""
    entries = dedicated_entries(catalog)
    if not entries:
        return None
    instance_type = settings.endpoint.instance_type
    problem = component_instance_problem(instance_type)
    if problem:
        names = ", ".join(quoted(entry.name) for entry in entries)
        return f"models {names} have placement: dedicated, but instanceType={instance_type} {problem}"
    if settings.region and settings.region not in PLATFORM.components.regions.value:
        names = ", ".join(quoted(entry.name) for entry in entries)
        return (
            f"models {names} have placement: dedicated, but region={settings.region} has no "
            "AWS::SageMaker::InferenceComponent in CloudFormation; allowed: "
            + ", ".join(sorted(PLATFORM.components.regions.value))
        )
    for entry in entries:
        problem = _entry_problem(entry, settings)
        if problem:
            return f"model {quoted(entry.name)}: {problem}"
    _, _, highest = component_instances(catalog)
    if highest > MAX_INSTANCES:
        copies = sum(entry.dedicated.copy_range[1] for entry in entries if entry.dedicated)
        return (
            f"the dedicated entries' max_copies add up to {copies} copies, one {instance_type} instance "
            f"each, and their updates add {highest - copies} more: {highest} instances, more than "
            f"{MAX_INSTANCES}; allowed: fewer max_copies"
        )
    if any(entry.dedicated.min_copies == 0 for entry in entries if entry.dedicated):
        return scale_to_zero_problem(settings.region, entries)
    return None


def scale_to_zero_problem(region: str | None, entries: tuple[ModelEntry, ...]) -> str | None:
    """Why entries with min_copies 0 cannot scale the endpoint to zero in `region`, or None (an unknown
    region, as in an environment-agnostic template, is preflight's to check)."""
    if region is None or region in PLATFORM.components.scale_to_zero_regions.value:
        return None
    names = ", ".join(
        quoted(entry.name) for entry in entries if entry.dedicated and entry.dedicated.min_copies == 0
    )
    known = sorted(PLATFORM.components.scale_to_zero_regions.value)
    return (
        f"models {names} have dedicated.min_copies: 0, which scales the endpoint to zero instances "
        f"(MinInstanceCount 0), known to be accepted only in {', '.join(known)}, not region={region} "
        f"({PLATFORM_DATA}/inference_components.yaml); allowed: min_copies 1 or more, or "
        + ", ".join(f"region={name}" for name in known)
    )


def _entry_problem(entry: ModelEntry, settings: Settings) -> str | None:
    assert entry.dedicated is not None and entry.dedicated.format is not None
    served = entry.dedicated.format
    instance_type = settings.endpoint.instance_type
    if served.value not in PLATFORM.components.container.served_formats:
        return (
            f"dedicated.format: {served.value} is not served by the inference component's Triton container; "
            f"allowed: {', '.join(PLATFORM.components.container.served_formats)}"
        )
    if entry.dedicated.min_copies == 0 and not settings.scaling.enabled:
        return (
            "dedicated.min_copies: 0 scales to zero through the component's own scaling, which "
            "autoscaling=false turns off; allowed: min_copies 1 or more, or autoscaling=true"
        )
    footprint = copy_footprint(entry)
    instance = gpu_instance(instance_type)
    gpu_bytes = GPU_REPORTED_MEMORY_MIB.get(instance.gpu, instance.gpu_memory_gib * 1024) * MIB
    if footprint.gpu_bytes > gpu_bytes:
        return (
            f"dedicated: one copy needs about {footprint.gpu_bytes / 2**30:.1f} GiB of GPU memory (estimated "
            f"from its parameters, {served.value}), more than the {gpu_bytes / 2**30:.1f} GiB of "
            f"instanceType={instance_type}'s {instance.gpu}; allowed: a type with a larger GPU"
        )
    host_bytes = instance.memory_gib * 2**30 - HOST_RESERVED_BYTES
    if footprint.host_bytes > host_bytes:
        return (
            f"dedicated: one copy needs about {footprint.host_bytes / 2**30:.1f} GiB of host memory, more "
            f"than the {host_bytes / 2**30:.1f} GiB instanceType={instance_type} leaves after "
            f"{HOST_RESERVED_BYTES / 2**30:g} GiB for itself; allowed: a larger size of the family"
        )
    return None
