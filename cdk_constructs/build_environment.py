"""What the GPU build runner runs on: its GPU per compute type, its image, and its TensorRT per Triton tag.

A TensorRT plan runs only on the GPU architecture and the TensorRT version that built it, so the runner's
GPU must match the endpoint's instance family and its TensorRT must match the serving Triton image.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_logs as logs


@dataclass(frozen=True)
class BuilderGpu:
    gpu: str
    architecture: str
    endpoint_family: str  # instance types whose GPU has the same architecture


# CodeBuild's LINUX_GPU_CONTAINER fleet: SMALL = 1x A10G, LARGE = 4x V100; there is no T4 or L4 runner.
BUILDER_GPUS: dict[str, BuilderGpu] = {
    "SMALL": BuilderGpu(gpu="A10G", architecture="sm_86", endpoint_family="ml.g5."),
    "LARGE": BuilderGpu(gpu="V100", architecture="sm_70", endpoint_family="ml.p3."),
}


@dataclass(frozen=True)
class TritonBuildTarget:
    cuda_major: int
    # The pip requirement carrying the serving image's TensorRT, or None where that version is unknown.
    tensorrt_requirement: str | None


# From the Triton release notes of each tag; confirm with `dpkg -l | grep nvinfer` in the image.
TRITON_BUILD_TARGETS: dict[str, TritonBuildTarget] = {
    "23.12-py3": TritonBuildTarget(
        cuda_major=12, tensorrt_requirement=None
    ),  # TensorRT 8.6: no cu12 wheel pin
    "24.01-py3": TritonBuildTarget(cuda_major=12, tensorrt_requirement=None),
    "24.03-py3": TritonBuildTarget(cuda_major=12, tensorrt_requirement=None),
    "24.05-py3": TritonBuildTarget(cuda_major=12, tensorrt_requirement="tensorrt-cu12==10.0.1"),
    "24.09-py3": TritonBuildTarget(cuda_major=12, tensorrt_requirement="tensorrt-cu12==10.4.0"),
    "25.04-py3": TritonBuildTarget(cuda_major=12, tensorrt_requirement="tensorrt-cu12==10.9.0.34"),
    "25.09-py3": TritonBuildTarget(cuda_major=13, tensorrt_requirement="tensorrt-cu13==10.13.3.9"),
    "26.05-py3": TritonBuildTarget(cuda_major=13, tensorrt_requirement=None),
}

# AWS Deep Learning Containers PyTorch GPU images (account per region resolved by CDK), one per CUDA
# major: the driver-facing CUDA matches the serving image, and Python, pip and CUDA are preinstalled.
DLC_REPOSITORY = "pytorch-training"
DLC_TAG_BY_CUDA_MAJOR: dict[int, str] = {
    12: "2.8.0-gpu-py312-cu129-ubuntu22.04-ec2",
    13: "2.9.0-gpu-py312-cu130-ubuntu22.04-ec2",
}
# NVIDIA's package index, where the tensorrt-cu* packages fetch their wheels from.
NVIDIA_PIP_INDEX = "https://pypi.nvidia.com"


# CloudWatch Logs retention periods, in the order of aws_logs.RetentionDays (whose values are names).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                      2922, 3288, 3653)  # fmt: skip


def log_retention(days: int) -> logs.RetentionDays:
    finite = [member for member in logs.RetentionDays if member is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, finite, strict=True))[days]


def tensorrt_problem(*, builder_compute_type: str, instance_type: str, triton_image_tag: str) -> str | None:
    """Why this runner cannot build TensorRT plans for this endpoint (one line), or None when it can."""
    builder = BUILDER_GPUS[builder_compute_type]
    if not instance_type.startswith(builder.endpoint_family):
        fitting = next(
            (name for name, gpu in BUILDER_GPUS.items() if instance_type.startswith(gpu.endpoint_family)),
            None,
        )
        fixes = [f"an {builder.endpoint_family}* instanceType"]
        if fitting:
            fixes.append(f"builderComputeType={fitting}")
        fixes.append("drop 'tensorrt' from the catalog's formats")
        return (
            f"the catalog asks for tensorrt, but builderComputeType={builder_compute_type} builds on "
            f"{builder.gpu} ({builder.architecture}), whose plans do not run on "
            f"instanceType={instance_type}; use " + ", or ".join(fixes)
        )
    if TRITON_BUILD_TARGETS[triton_image_tag].tensorrt_requirement is None:
        known = ", ".join(tag for tag, target in TRITON_BUILD_TARGETS.items() if target.tensorrt_requirement)
        return (
            f"the catalog asks for tensorrt, but the TensorRT of tritonImageTag={triton_image_tag} has no "
            f"known pip pin; use a tritonImageTag with one ({known}), or drop 'tensorrt' from the formats"
        )
    return None
