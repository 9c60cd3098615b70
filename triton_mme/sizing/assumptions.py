"""What the capacity planner assumes where nothing measured a figure: GPU memory as reported, Triton's own
footprint, the seed posts' anchor, the host's reserve, the EBS volume and the download rate. Read once from
assumptions.yaml beside this module (each with its source; docs/capacity-planning.md explains them)."""

from __future__ import annotations

from triton_mme.core.platform_tables import Fact, Frozen, Source, load_table


class SeedAnchor(Frozen):
    source: Source
    models: int
    gpu_memory_fraction: float
    gpu: str
    resnet50_onnx_load_s: float


class PlannerAssumptions(Frozen):
    gpu_reported_memory_mib: Fact[dict[str, int]]
    triton_server_gpu_bytes: Fact[int]
    seed_anchor: SeedAnchor
    resnet50_fp32_weight_bytes: Fact[int]
    host_reserved_bytes: Fact[int]
    ebs_volume_gb: Fact[int]
    download_bytes_per_s: Fact[int]


_ASSUMED = load_table("assumptions.yaml", PlannerAssumptions, package="triton_mme.sizing", folder="")

GPU_REPORTED_MEMORY_MIB: dict[str, int] = _ASSUMED.gpu_reported_memory_mib.value
TRITON_SERVER_GPU_BYTES = _ASSUMED.triton_server_gpu_bytes.value
SEED_ANCHOR_MODELS = _ASSUMED.seed_anchor.models
SEED_ANCHOR_GPU_MEMORY_FRACTION = _ASSUMED.seed_anchor.gpu_memory_fraction
SEED_ANCHOR_GPU = _ASSUMED.seed_anchor.gpu
SEED_RESNET50_ONNX_LOAD_S = _ASSUMED.seed_anchor.resnet50_onnx_load_s
RESNET50_FP32_WEIGHT_BYTES = _ASSUMED.resnet50_fp32_weight_bytes.value
HOST_RESERVED_BYTES = _ASSUMED.host_reserved_bytes.value
EBS_VOLUME_GB_ASSUMED = _ASSUMED.ebs_volume_gb.value
DOWNLOAD_BYTES_PER_S_ASSUMED = _ASSUMED.download_bytes_per_s.value
