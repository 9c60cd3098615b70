"""What each archive occupies once loaded, and how long its cold start takes: measured where the serving
report has a GPU figure, estimated otherwise (docs/capacity-planning.md, "The estimate").

GPU memory = weight bytes x precision factor + the backend's per-model overhead; Triton's own memory is
counted once per instance (`TRITON_SERVER_GPU_BYTES`), not per model.

- Weight bytes: the archive's size. Float weights barely compress (the ResNet-50 ONNX archive is 102.1 MB for
  102.2 MB of FP32 weights, benchmarks/results/2026-11-30-amd-epyc-2c.md), and the config beside them is a
  few kB.
- Precision factor 1.0 for every format: an archive holds its weights in the precision they are served in
  (a TensorRT FP16 plan is half its FP32 ONNX export), and Triton's ONNX Runtime and libtorch backends place
  FP32 weights on the GPU as they are.
- Per-model overhead (runtime arena, cuDNN/cuBLAS workspaces, activations at the configured batch), derived
  from the seed's anchor: 16 ResNet-50 models used 38.3 % of a T4's 15,360 MiB, i.e. 385.5 MB each; less
  Triton's 300 MB shared by 16 (18.75 MB) and ResNet-50's 102.2 MB of weights, 264.6 MB per model. The same
  figure is used for every backend: per-backend figures were not found, and the serving report replaces the
  whole estimate where it measured one.

Host memory = weight bytes + 128 MiB per model (the backend's host-side state; inferred, no source); the
instance keeps `HOST_RESERVED_BYTES` for itself. Disk = twice the archive (the downloaded archive and its
unpacked copy; whether the platform deletes the archive after unpacking is not documented: safe side).

Load time = 1 s + weight bytes at 30 MB/s: 4.4 s for ResNet-50, the seed's ONNX cold start before tuning
(1.61 s after), so untuned archives are not underestimated. Download = archive bytes at
`DOWNLOAD_BYTES_PER_S_ASSUMED` (50 MB/s, inferred).
"""

from __future__ import annotations

from dataclasses import dataclass

from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.serving_report import ArchiveServing, ServingReport
from triton_mme.sizing.assumptions import (
    DOWNLOAD_BYTES_PER_S_ASSUMED,
    GPU_REPORTED_MEMORY_MIB,
    RESNET50_FP32_WEIGHT_BYTES,
    SEED_ANCHOR_GPU,
    SEED_ANCHOR_GPU_MEMORY_FRACTION,
    SEED_ANCHOR_MODELS,
    SEED_RESNET50_ONNX_LOAD_S,
    TRITON_SERVER_GPU_BYTES,
)

MIB = 2**20
PRECISION_FACTOR = {"onnx": 1.0, "torchscript": 1.0, "tensorrt": 1.0}
ANCHOR_BYTES_PER_MODEL = (
    SEED_ANCHOR_GPU_MEMORY_FRACTION * GPU_REPORTED_MEMORY_MIB[SEED_ANCHOR_GPU] * MIB / SEED_ANCHOR_MODELS
)
BACKEND_GPU_OVERHEAD_BYTES = (
    ANCHOR_BYTES_PER_MODEL - TRITON_SERVER_GPU_BYTES / SEED_ANCHOR_MODELS - RESNET50_FP32_WEIGHT_BYTES
)
HOST_OVERHEAD_BYTES = 128 * MIB
DISK_COPIES = 2
LOAD_FIXED_S = 1.0
LOAD_BYTES_PER_S = RESNET50_FP32_WEIGHT_BYTES / (SEED_RESNET50_ONNX_LOAD_S - LOAD_FIXED_S)


@dataclass(frozen=True)
class ArchiveEstimate:
    """One archive's footprint and cold start, with where each figure came from."""

    target_model: str
    gpu_bytes: float
    host_bytes: float
    disk_bytes: float
    load_s: float
    download_s: float
    gpu_source: str
    load_source: str


def estimate_gpu_bytes(weight_bytes: float, format: str) -> float:
    """The estimate for one loaded model, Triton's own memory excluded."""
    return weight_bytes * PRECISION_FACTOR.get(format, 1.0) + BACKEND_GPU_OVERHEAD_BYTES


def estimate_load_s(weight_bytes: float) -> float:
    return LOAD_FIXED_S + weight_bytes / LOAD_BYTES_PER_S


def archive_estimate(
    record: ArchiveRecord, measured: ArchiveServing | None = None, *, gpu: str | None = None
) -> ArchiveEstimate:
    """Measured figures (from a serving report run on `gpu`) where present, the estimate elsewhere."""
    weights = float(record.size_bytes)
    gpu_bytes, gpu_source = estimate_gpu_bytes(weights, record.format), "estimate"
    load_s, load_source = estimate_load_s(weights), "estimate"
    if measured is not None and measured.passed and gpu is not None:
        if measured.gpu_memory_mib is not None:
            gpu_bytes, gpu_source = measured.gpu_memory_mib * MIB, f"serving report ({gpu})"
        if measured.load_seconds is not None:
            load_s, load_source = measured.load_seconds, f"serving report ({gpu})"
    return ArchiveEstimate(
        target_model=record.target_model,
        gpu_bytes=gpu_bytes,
        host_bytes=weights + HOST_OVERHEAD_BYTES,
        disk_bytes=DISK_COPIES * weights,
        load_s=load_s,
        download_s=weights / DOWNLOAD_BYTES_PER_S_ASSUMED,
        gpu_source=gpu_source,
        load_source=load_source,
    )


def archive_estimates(
    records: tuple[ArchiveRecord, ...], report: ServingReport | None
) -> tuple[ArchiveEstimate, ...]:
    """Every archive's figures; a serving report counts only where it ran on a GPU (the CPU stand-in's
    memory and load times say nothing about an endpoint)."""
    gpu = report.gpu if report is not None else None
    return tuple(
        archive_estimate(record, report.find(record.target_model) if report else None, gpu=gpu)
        for record in records
    )
