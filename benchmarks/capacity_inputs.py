"""Inputs of the capacity benchmarks: manifests of many archives (nothing built: the planner and the load
generator read sizes and tensor specs only) and traffic files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from triton_mme.core.manifest import ArchiveRecord, Manifest, TensorSpec
from triton_mme.sizing.assumptions import RESNET50_FP32_WEIGHT_BYTES


def synthetic_record(
    index: int, size_bytes: int = RESNET50_FP32_WEIGHT_BYTES, *, format: str = "onnx"
) -> ArchiveRecord:
    """A ResNet-50-sized archive with a small input, named m0000, m0001, ..."""
    return ArchiveRecord(
        name=f"m{index:04d}",
        format=format,
        target_model=f"m{index:04d}-{format}-{index:016x}.tar.gz",
        sha256="0" * 64,
        size_bytes=size_bytes,
        source="torchvision:resnet50",
        weights="random",
        max_batch_size=8,
        inputs=(TensorSpec(name="input", datatype="FP32", dims=(3, 8, 8)),),
        outputs=(TensorSpec(name="output", datatype="FP32", dims=(10,)),),
    )


def synthetic_manifest(count: int, *, size_bytes: int = RESNET50_FP32_WEIGHT_BYTES) -> Manifest:
    """`count` ResNet-50-sized ONNX archives with a small input, named m0000, m0001, ..."""
    return Manifest(archives=tuple(synthetic_record(i, size_bytes) for i in range(count)))


def write_manifest(directory: Path, manifest: Manifest) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "manifest.json"
    path.write_text(manifest.to_json(), encoding="utf-8")
    return path


def write_traffic(path: Path, traffic: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(traffic, sort_keys=False), encoding="utf-8")
    return path
