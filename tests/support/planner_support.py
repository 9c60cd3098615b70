"""Manifests of many archives without building any (the planner reads sizes and tensor specs only): the
capacity benchmarks' builders, and a serving report that measured one of them."""

from __future__ import annotations

from benchmarks.capacity_inputs import synthetic_record as record
from benchmarks.capacity_inputs import write_manifest
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ArchiveServing, BatchFigures, ServingReport
from triton_mme.sizing.assumptions import RESNET50_FP32_WEIGHT_BYTES

__all__ = ["manifest_of", "record", "serving_report_of", "write_manifest"]


def manifest_of(count: int, size_bytes: int = RESNET50_FP32_WEIGHT_BYTES) -> Manifest:
    return Manifest(archives=tuple(record(i, size_bytes) for i in range(count)))


def serving_report_of(manifest: Manifest) -> ServingReport:
    """A report measured on a T4 for the manifest's first archive: 900 MiB of GPU memory, a 1.5 s load and a
    2 ms batch-1 median."""
    first = manifest.archives[0]
    measured = ArchiveServing(
        target_model=first.target_model,
        name=first.name,
        format=first.format,
        passed=True,
        gpu_memory_mib=900.0,
        load_seconds=1.5,
        batches=(
            BatchFigures(
                batch_size=1, requests=10, latency_p50_ms=2.0, latency_p99_ms=3.0, throughput_per_s=400
            ),
        ),
    )
    return ServingReport(
        manifest_sha256=manifest.sha256,
        server="sagemaker-tritonserver:25.04-py3",
        gpu="NVIDIA T4",
        archives=(measured,),
    )
