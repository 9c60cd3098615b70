"""The platform facts the project relies on, in one table: Triton images, GPU instances, build runners.

Everything that decides whether a deployment can work — which image tag exists in which region, which
CUDA and TensorRT an image carries, which instance types a GPU multi-model endpoint accepts, which GPU a
CodeBuild runner has — is read from here by the settings validation, the constructs, the build and the
tools. Each fact names its source; a fact that could not be confirmed says so and takes the safe side.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- SageMaker Triton images -------------------------------------------------------------------------
# Source: SageMaker Python SDK `image_uri_config/sagemaker-tritonserver.json` (SDK v2 and sagemaker-core).
TRITON_REPOSITORY = "sagemaker-tritonserver"
DEFAULT_TRITON_TAG = "25.04-py3"

_DLC_ACCOUNT = "763104351884"
_REGION_SPECIFIC_ACCOUNTS = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-3": "364406365360",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ca-west-1": "204538143572",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-central-2": "380420809688",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "mx-central-1": "637423239942",
}

_REGIONS_2024 = frozenset(
    {
        "af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
        "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ca-central-1", "ca-west-1", "cn-north-1",
        "cn-northwest-1", "eu-central-1", "eu-north-1", "eu-south-1", "eu-west-1", "eu-west-2", "eu-west-3",
        "il-central-1", "me-south-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    }
)  # fmt: skip
_REGIONS_2025 = _REGIONS_2024 | {
    "ap-east-2", "ap-south-2", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7", "eu-central-2",
    "eu-south-2", "me-central-1", "mx-central-1",
}  # fmt: skip
# From 25.09 (CUDA 13) on: no China regions, one more opt-in region.
_REGIONS_CUDA13 = (_REGIONS_2025 - {"cn-north-1", "cn-northwest-1"}) | {"ap-southeast-6"}


@dataclass(frozen=True)
class TritonImage:
    """One `sagemaker-tritonserver:<tag>` image: where it is published and what it serves with."""

    tag: str
    cuda_major: int
    regions: frozenset[str]
    # TensorRT inside the image (Triton release notes; confirm with `dpkg -l | grep nvinfer` in the
    # image) and the pip requirement that carries the same version; None where unknown.
    tensorrt: str | None
    tensorrt_requirement: str | None

    @property
    def release(self) -> str:
        """'25.04-py3' -> '25.04'."""
        return self.tag.split("-", 1)[0]


TRITON_IMAGES: dict[str, TritonImage] = {
    image.tag: image
    for image in (
        # TensorRT 8.6 in 23.12-24.03: no cu12 wheel pin exists for it.
        TritonImage("23.12-py3", 12, _REGIONS_2024, "8.6", None),
        TritonImage("24.01-py3", 12, _REGIONS_2024, "8.6", None),
        TritonImage("24.03-py3", 12, _REGIONS_2024, "8.6", None),
        TritonImage("24.05-py3", 12, _REGIONS_2024, "10.0", "tensorrt-cu12==10.0.1"),
        TritonImage("24.09-py3", 12, _REGIONS_2024, "10.4", "tensorrt-cu12==10.4.0"),
        TritonImage("25.04-py3", 12, _REGIONS_2025, "10.9", "tensorrt-cu12==10.9.0.34"),
        TritonImage("25.09-py3", 13, _REGIONS_CUDA13, "10.13.3.9", "tensorrt-cu13==10.13.3.9"),
        TritonImage("26.05-py3", 13, _REGIONS_CUDA13, None, None),
    )
}
TRITON_IMAGE_TAGS: tuple[str, ...] = tuple(TRITON_IMAGES)


def triton_image(tag: str) -> TritonImage:
    """The image for a tag; KeyError names the known tags."""
    try:
        return TRITON_IMAGES[tag]
    except KeyError:
        raise KeyError(f"unknown Triton image tag {tag!r}; known: {', '.join(TRITON_IMAGE_TAGS)}") from None


def triton_release_of(tag: str) -> TritonImage | None:
    """The image whose release (YY.MM) matches a tag written as YY.MM or YY.MM-py3."""
    release = tag.strip().split("-", 1)[0]
    return next((image for image in TRITON_IMAGES.values() if image.release == release), None)


def registry_accounts(tag: str) -> dict[str, str]:
    """Region -> ECR registry account that holds `sagemaker-tritonserver:<tag>`."""
    return {
        region: _REGION_SPECIFIC_ACCOUNTS.get(region, _DLC_ACCOUNT)
        for region in sorted(triton_image(tag).regions)
    }


# --- GPU multi-model endpoint instances ----------------------------------------------------------------
# Source: SageMaker developer guide, "Multi-model endpoints: supported instances" (single-GPU types);
# local NVMe storage from the EC2 instance specifications (an endpoint-config KmsKeyId is rejected for
# instance types with local instance storage, CreateEndpointConfig API reference).
GPU_MME_INSTANCE_TYPES: dict[str, bool] = {
    **{f"ml.g4dn.{size}": True for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    **{f"ml.g5.{size}": True for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "ml.p3.2xlarge": False,
    "ml.p2.xlarge": False,
}


# --- The GPU build runner ------------------------------------------------------------------------------
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

# AWS Deep Learning Containers PyTorch GPU images, one per CUDA major: the driver-facing CUDA matches the
# serving image, and Python, pip and CUDA are preinstalled.
DLC_REPOSITORY = "pytorch-training"
DLC_TAG_BY_CUDA_MAJOR: dict[int, str] = {
    12: "2.8.0-gpu-py312-cu129-ubuntu22.04-ec2",
    13: "2.9.0-gpu-py312-cu130-ubuntu22.04-ec2",
}
# NVIDIA's package index, where the tensorrt-cu* packages fetch their wheels from.
NVIDIA_PIP_INDEX = "https://pypi.nvidia.com"
