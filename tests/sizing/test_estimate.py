"""The footprint estimate against the seed's anchor, and measured figures taking its place."""

from __future__ import annotations

import pytest
from planner_support import record

from triton_mme.core.serving_report import ArchiveServing, BatchFigures, ServingReport
from triton_mme.sizing.assumptions import (
    GPU_REPORTED_MEMORY_MIB,
    RESNET50_FP32_WEIGHT_BYTES,
    TRITON_SERVER_GPU_BYTES,
)
from triton_mme.sizing.estimate import (
    BACKEND_GPU_OVERHEAD_BYTES,
    archive_estimate,
    archive_estimates,
    estimate_gpu_bytes,
    estimate_load_s,
)

T4_BYTES = GPU_REPORTED_MEMORY_MIB["T4"] * 2**20


def test_sixteen_resnet50_archives_fill_38_percent_of_a_t4_as_in_the_seed() -> None:
    """The seed's anchor: 16 ResNet-50 models used 38.3 % of a 16 GB T4 (about 0.38 GB each)."""
    per_model = estimate_gpu_bytes(RESNET50_FP32_WEIGHT_BYTES, "onnx")
    assert per_model == pytest.approx(0.367e9, rel=0.01)  # plus Triton's 300 MB shared: 0.386 GB each
    assert (16 * per_model + TRITON_SERVER_GPU_BYTES) / T4_BYTES == pytest.approx(0.383, abs=0.002)
    for format in ("torchscript", "tensorrt"):
        assert estimate_gpu_bytes(RESNET50_FP32_WEIGHT_BYTES, format) == per_model


def test_the_stated_figures_are_the_ones_used() -> None:
    # docs/capacity-planning.md and estimate.py state 264.6 MB of per-model overhead and 4.4 s for ResNet-50.
    assert abs(BACKEND_GPU_OVERHEAD_BYTES - 264.6e6) < 0.1e6
    assert estimate_load_s(RESNET50_FP32_WEIGHT_BYTES) == pytest.approx(4.4, abs=0.01)


def test_a_bigger_archive_takes_proportionally_more_than_the_overhead() -> None:
    small = archive_estimate(record(0, 10_000_000))
    large = archive_estimate(record(1, 1_000_000_000))
    assert large.gpu_bytes - small.gpu_bytes == pytest.approx(990_000_000)
    assert large.disk_bytes == 2 * 1_000_000_000
    assert large.download_s == pytest.approx(20.0)  # at the assumed 50 MB/s
    assert small.gpu_source == large.gpu_source == "estimate"


def _report(gpu: str | None, **figures: object) -> ServingReport:
    archive = ArchiveServing(
        target_model=record(0).target_model,
        name="m0000",
        format="onnx",
        passed=True,
        batches=(
            BatchFigures(
                batch_size=1, requests=20, latency_p50_ms=3.0, latency_p99_ms=5.0, throughput_per_s=300
            ),
        ),
        **figures,  # type: ignore[arg-type]
    )
    return ServingReport(
        manifest_sha256="0" * 64, server="sagemaker-tritonserver:25.04-py3", gpu=gpu, archives=(archive,)
    )


def test_a_serving_report_measured_on_a_gpu_replaces_the_estimate() -> None:
    report = _report("NVIDIA A10G", gpu_memory_mib=500.0, load_seconds=2.5)
    (estimate,) = archive_estimates((record(0),), report)
    assert estimate.gpu_bytes == 500 * 2**20 and estimate.load_s == 2.5
    assert estimate.gpu_source == estimate.load_source == "serving report (NVIDIA A10G)"


def test_a_report_from_the_cpu_stand_in_or_a_failed_archive_is_not_used() -> None:
    (estimate,) = archive_estimates((record(0),), _report(None, load_seconds=9.0))
    assert estimate.load_s == pytest.approx(4.4, abs=0.01) and estimate.load_source == "estimate"
    failed = ArchiveServing(
        target_model=record(0).target_model,
        name="m0000",
        format="onnx",
        passed=False,
        error="CUDA out of memory",
        gpu_memory_mib=1.0,
    )
    (estimate,) = archive_estimates((record(0),), _report("T4").model_copy(update={"archives": (failed,)}))
    assert estimate.gpu_source == "estimate"
