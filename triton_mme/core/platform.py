"""The platform facts the project relies on, in one table: Triton images, GPU instances and their drivers,
regions, build runners, deployment limits and prices.

Everything that decides whether a deployment can work — which image tag exists in which region, which CUDA,
driver and GPU an image needs, which instance types a GPU multi-model endpoint accepts and which SageMaker
inference AMI (NVIDIA driver) they can run, which GPU a CodeBuild runner has — is read from here by the
settings validation, the TensorRT guard, the constructs, the buildspec, the preflight checks and the tools.

Each fact names its source. "Inferred" marks a fact that could not be confirmed in a primary source; such a
fact takes the safe side (a refused combination rather than a deployment that fails half-way), and
docs/platform.md lists them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# ======================================================================================================
# SageMaker Triton images
# ======================================================================================================
# Tags and registry accounts: SageMaker Python SDK `image_uri_config/sagemaker-tritonserver.json`
# (SDK v2 `src/sagemaker/`, SDK v3 `sagemaker-core/src/sagemaker/core/`, read at commit a24812666).
TRITON_REPOSITORY = "sagemaker-tritonserver"
# Kept at 25.04: SageMaker's al2023 inference AMI (driver 580) runs its CUDA 12.9 natively on ml.g4dn and
# ml.g5, and the tag is published in China regions too (docs/platform.md, "The default tag").
DEFAULT_TRITON_TAG = "25.04-py3"

# The AWS Deep Learning Containers registry; tags from 23.12 on are published there (older tags lived in
# per-region SageMaker accounts and are not supported here).
DLC_ACCOUNT = "763104351884"
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

# NVIDIA documents CUDA forward compatibility for data-center GPUs, but the SageMaker Triton image is not
# documented to set it up itself, and SageMaker's newer inference AMIs turn off the container toolkit's
# automatic compat mounting (InferenceAmiVersion API text). So only a driver that runs the image's CUDA
# natively counts as serving it; the forward-compatible branches are recorded for reference only.
FORWARD_COMPATIBILITY_COUNTS = False


@dataclass(frozen=True)
class TritonImage:
    """One `sagemaker-tritonserver:<tag>` image: where it is published and what it serves with."""

    tag: str
    # Triton's `build.py` TRITON_VERSION_MAP at the release tag (triton-inference-server/server v2.x.0).
    server: str
    onnxruntime: str
    # Triton release notes ("Driver Requirements", "GPU Requirements").
    cuda: str
    # The NVIDIA driver branch that runs this CUDA natively: the larger of the release notes' figure and the
    # CUDA toolkit's minimum driver for that CUDA version. None: not known, so no driver counts.
    min_driver: int | None
    forward_compatible_drivers: tuple[int, ...]
    min_compute_capability: float
    # The PyTorch of NVIDIA's PyTorch container of the same release, whose libtorch the Triton PyTorch
    # backend is built against (NGC release notes; inferred, not read for this table). None where unknown.
    libtorch: str | None
    # TensorRT inside the image (Triton release notes; confirm with `dpkg -l | grep nvinfer` in the image)
    # and the pip requirement that carries the same version; None where unknown.
    tensorrt: str | None
    tensorrt_requirement: str | None
    regions: frozenset[str]
    # The image's own python3 (its Ubuntu's), which the serving check runs in. Triton release notes: 24.12
    # is "Ubuntu 24.04 including Python 3.12"; 24.05 is Ubuntu 22.04 (Python 3.10); 24.09 and earlier are
    # inferred to be 22.04 as well, 25.xx and 26.xx to stay on 24.04. None where unknown.
    python: str | None = None

    @property
    def release(self) -> str:
        """'25.04-py3' -> '25.04'."""
        return self.tag.split("-", 1)[0]

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".", 1)[0])


_R470_TO_R545 = (470, 525, 535, 545)

TRITON_IMAGES: dict[str, TritonImage] = {
    image.tag: image
    for image in (
        # 23.12: release notes verified (CUDA 12.3.2, driver 545, compute capability 6.0+).
        TritonImage("23.12-py3", "2.41.0", "1.16.3", "12.3.2", 545, (450, 470, 510, 525, 535, 545), 6.0,
                    "2.2.0a0", "8.6", None, _REGIONS_2024, python="3.10"),
        # 24.01: CUDA 12.3.2 and the driver figures inferred from 23.12 and 24.02 (same CUDA).
        TritonImage("24.01-py3", "2.42.0", "1.16.3", "12.3.2", 545, _R470_TO_R545, 6.0,
                    "2.2.0a0", "8.6", None, _REGIONS_2024, python="3.10"),
        # 24.03 / 24.05: the release notes say driver 545 for CUDA 12.4, whose toolkit needs R550: 550 (safe).
        TritonImage("24.03-py3", "2.44.0", "1.17.2", "12.4.0", 550, _R470_TO_R545, 6.0,
                    "2.3.0a0", "8.6", None, _REGIONS_2024, python="3.10"),
        TritonImage("24.05-py3", "2.46.0", "1.18.0", "12.4.1", 550, _R470_TO_R545, 6.0,
                    "2.4.0a0", "10.0", "tensorrt-cu12==10.0.1", _REGIONS_2024, python="3.10"),
        # 24.09: CUDA 12.6 (driver 560) inferred from the 24.08/24.10 notes; 6.0+ as every 24.xx release.
        TritonImage("24.09-py3", "2.50.0", "1.19.2", "12.6.1", 560, _R470_TO_R545, 6.0,
                    "2.5.0a0", "10.4", "tensorrt-cu12==10.4.0", _REGIONS_2024, python="3.10"),
        # 25.04: release notes verified (CUDA 12.9.0, driver 575, compute capability 7.5+); the image's own
        # start-up message says "built for NVIDIA Driver Release 575.51" (aws/deep-learning-containers#4990).
        TritonImage("25.04-py3", "2.57.0", "1.21.0", "12.9.0", 575, _R470_TO_R545, 7.5,
                    "2.7.0a0", "10.9", "tensorrt-cu12==10.9.0.34", _REGIONS_2025, python="3.12"),
        # 25.09: CUDA 13.0 needs R580 (CUDA 13.0 toolkit; the 25.08 notes print 575). Forward-compatible
        # branches for CUDA 13 not published in the notes read: none recorded.
        TritonImage("25.09-py3", "2.61.0", "1.23.0", "13.0.1", 580, (), 7.5,
                    "2.9.0a0", "10.13.3.9", "tensorrt-cu13==10.13.3.9", _REGIONS_CUDA13, python="3.12"),
        # 26.05: CUDA 13.2 (inferred); its minimum driver is not confirmed, so no AMI is taken to serve it.
        TritonImage("26.05-py3", "2.69.0", "1.24.4", "13.2", None, (), 7.5,
                    None, None, None, _REGIONS_CUDA13, python="3.12"),
    )
}  # fmt: skip
TRITON_IMAGE_TAGS: tuple[str, ...] = tuple(TRITON_IMAGES)


# How the SageMaker container starts Triton (triton-inference-server/server `docker/sagemaker/serve`,
# copied to /usr/bin/serve by `build.py`): with SAGEMAKER_MULTI_MODEL=true it runs `tritonserver
# --allow-sagemaker=true --allow-http=false --model-control-mode=explicit --model-repository=/tmp/sagemaker
# ...`, and the platform loads a model with `POST /models {"model_name", "url"}` (the url is the directory
# the archive was unpacked into, /opt/ml/models/<hash>/model), calls it with `POST /models/<name>/invoke`
# and unloads it with `DELETE /models/<name>`. SAGEMAKER_BIND_TO_PORT sets the listener's port (8080 by
# default).
SAGEMAKER_SERVE_COMMAND = "serve"
SAGEMAKER_MULTI_MODEL_ENVIRONMENT = {"SAGEMAKER_MULTI_MODEL": "true", "SAGEMAKER_BIND_TO_PORT": "8080"}
SAGEMAKER_PORT = 8080
# The serving check runs the project's code (Python 3.11+, pyproject.toml) with the image's python3.
SERVING_CHECK_MIN_PYTHON = (3, 11)


def runs_serving_check(image: TritonImage) -> bool:
    """Whether the image's own python3 can run the serving check (unknown counts as no: the safe side)."""
    if image.python is None:
        return False
    major, minor = (int(part) for part in image.python.split(".")[:2])
    return (major, minor) >= SERVING_CHECK_MIN_PYTHON


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
    return {region: dlc_registry_account(region) for region in sorted(triton_image(tag).regions)}


# ======================================================================================================
# SageMaker inference AMIs (ProductionVariant.InferenceAmiVersion)
# ======================================================================================================
# Source: the SageMaker API reference, ProductionVariant.InferenceAmiVersion (botocore 1.44 service model:
# names, driver, CUDA, "NVIDIA Container Toolkit with disabled CUDA-compat mounting"), and the AWS page
# "Best practices to minimize interruptions during GPU driver upgrades" (inference-gpu-drivers): without an
# InferenceAmiVersion, real-time endpoints on ml.p2/p3/g4dn/g5 run driver 470 with CUDA 11.4.
@dataclass(frozen=True)
class InferenceAmi:
    name: str
    driver: int
    cuda: str
    # True where the NVIDIA Container Toolkit mounts an image's CUDA-compat libraries by itself.
    mounts_cuda_compat: bool


# Newest first: `auto` picks the first one that applies to the instance type and runs the image natively.
INFERENCE_AMIS: dict[str, InferenceAmi] = {
    ami.name: ami
    for ami in (
        InferenceAmi("al2023-ami-sagemaker-inference-gpu-4-1", 580, "13.0", mounts_cuda_compat=False),
        InferenceAmi("al2-ami-sagemaker-inference-gpu-3-1", 550, "12.4", mounts_cuda_compat=False),
        InferenceAmi("al2-ami-sagemaker-inference-gpu-2-1", 535, "12.2", mounts_cuda_compat=False),
        InferenceAmi("al2-ami-sagemaker-inference-gpu-2", 535, "12.2", mounts_cuda_compat=True),
    )
}
DEFAULT_ENDPOINT_DRIVER, DEFAULT_ENDPOINT_CUDA = 470, "11.4"

# Which AMIs apply to which instance family. `-gpu-2`: g4dn, g5, p3 (API text of February 2025, "Supported
# instance types"). `-gpu-2-1` and `-gpu-3-1`: inferred to match `-gpu-2` (the page's compatibility column
# was not readable). `-gpu-4-1` on g4dn and g5: inferred from AWS-authored code and samples that set it for
# CUDA 13 images on those families (AutoGluon's SageMaker AMI table, aws-samples notebooks); not on p3
# (absent there: safe side). p2 (K80) has no AMI: driver 470 is the last branch for Kepler GPUs.
_AMIS_G4DN_G5 = tuple(INFERENCE_AMIS)
_AMIS_P3 = ("al2-ami-sagemaker-inference-gpu-3-1", "al2-ami-sagemaker-inference-gpu-2-1",
            "al2-ami-sagemaker-inference-gpu-2")  # fmt: skip


# ======================================================================================================
# GPU multi-model endpoint instance types
# ======================================================================================================
# Types, vCPUs, memory per vCPU and GPU memory: SageMaker developer guide, "Supported algorithms, frameworks,
# and instances for multi-model endpoints" (GPU table: single-GPU types only). Compute capability: NVIDIA
# "CUDA GPUs" (T4 7.5, A10G 8.6, V100 7.0, K80 3.7). Local NVMe instance storage: EC2 instance type
# specifications (an endpoint-config KmsKeyId is rejected for types with instance storage,
# CreateEndpointConfig API reference).
@dataclass(frozen=True)
class GpuInstanceType:
    name: str
    gpu: str
    compute_capability: float
    gpu_memory_gib: int
    vcpus: int
    memory_gib: float
    instance_storage_gb: int  # local NVMe; 0: EBS only
    inference_amis: tuple[str, ...]
    default_driver: int = DEFAULT_ENDPOINT_DRIVER
    default_cuda: str = DEFAULT_ENDPOINT_CUDA

    @property
    def family(self) -> str:
        """'ml.g5.xlarge' -> 'ml.g5'."""
        return self.name.rsplit(".", 1)[0]

    @property
    def has_instance_storage(self) -> bool:
        return self.instance_storage_gb > 0


# (size, vCPUs, local NVMe GB); host memory is 4 GiB per vCPU on both families.
_G4DN_SIZES = (
    ("xlarge", 4, 125),
    ("2xlarge", 8, 225),
    ("4xlarge", 16, 225),
    ("8xlarge", 32, 900),
    ("16xlarge", 64, 900),
)
_G5_SIZES = (
    ("xlarge", 4, 250),
    ("2xlarge", 8, 450),
    ("4xlarge", 16, 600),
    ("8xlarge", 32, 900),
    ("16xlarge", 64, 1900),
)
GPU_MME_INSTANCE_TYPES: dict[str, GpuInstanceType] = {
    instance.name: instance
    for instance in (
        *(GpuInstanceType(f"ml.g4dn.{size}", "T4", 7.5, 16, vcpus, vcpus * 4, storage, _AMIS_G4DN_G5)
          for size, vcpus, storage in _G4DN_SIZES),
        *(GpuInstanceType(f"ml.g5.{size}", "A10G", 8.6, 24, vcpus, vcpus * 4, storage, _AMIS_G4DN_G5)
          for size, vcpus, storage in _G5_SIZES),
        GpuInstanceType("ml.p3.2xlarge", "V100", 7.0, 16, 8, 61, 0, _AMIS_P3),
        GpuInstanceType("ml.p2.xlarge", "K80", 3.7, 12, 4, 61, 0, ()),
    )
}  # fmt: skip


def gpu_instance(instance_type: str) -> GpuInstanceType:
    """The instance type; KeyError names the known ones."""
    try:
        return GPU_MME_INSTANCE_TYPES[instance_type]
    except KeyError:
        known = ", ".join(GPU_MME_INSTANCE_TYPES)
        raise KeyError(f"unknown GPU multi-model instance type {instance_type!r}; known: {known}") from None


def runs_natively(image: TritonImage, ami: InferenceAmi) -> bool:
    """Whether the AMI's driver runs the image's CUDA without any compatibility layer."""
    return image.min_driver is not None and ami.driver >= image.min_driver


def serving_amis(tag: str, instance_type: str) -> list[InferenceAmi]:
    """The inference AMIs that apply to the instance type and serve the tag, in `auto`'s order."""
    image = triton_image(tag)
    amis = [INFERENCE_AMIS[name] for name in gpu_instance(instance_type).inference_amis]
    return [ami for ami in amis if runs_natively(image, ami)]


def supports_compute_capability(tag: str, instance_type: str) -> bool:
    return gpu_instance(instance_type).compute_capability >= triton_image(tag).min_compute_capability


# ======================================================================================================
# Regions and registries
# ======================================================================================================
# AWS Deep Learning Containers registry accounts (aws/deep-learning-containers `available_images.md`; the
# Triton images from 23.12 on share them, SDK table above). The build runner's image comes from here too.
def dlc_registry_account(region: str) -> str:
    return _REGION_SPECIFIC_ACCOUNTS.get(region, DLC_ACCOUNT)


DLC_REGIONS = _REGIONS_2025 | _REGIONS_CUDA13

# CodeBuild's LINUX_GPU_CONTAINER environment type: the CodeBuild API reference as botocore 1.44.8 carries it,
# Fleet.environmentType / CreateFleet ("The environment type LINUX_GPU_CONTAINER is available only in regions
# US East (N. Virginia), US East (Ohio), US West (Oregon), EU (Ireland), EU (Frankfurt), Asia Pacific (Tokyo),
# and Asia Pacific (Sydney)"), the only current text that names regions. The older ProjectEnvironment.type
# text named 13 (adding ca-central-1, eu-west-2, ap-northeast-2, ap-southeast-1 and the two China regions) and
# predates the SMALL (A10G) type: those six are not confirmed for it, so they are refused unless the setting
# allowUnconfirmedBuildRegion is true (docs/settings-platform.md); preflight then checks the runner's quota.
CODEBUILD_GPU_REGIONS = frozenset(
    {"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1", "ap-southeast-2"}
)  # fmt: skip
CODEBUILD_GPU_REGIONS_UNCONFIRMED = frozenset(
    {"ca-central-1", "eu-west-2", "ap-northeast-2", "ap-southeast-1", "cn-north-1", "cn-northwest-1"}
)  # fmt: skip


def deployable_regions(tag: str, *, unconfirmed_build_regions: bool = False) -> list[str]:
    """Regions with the tag's Triton image, a Deep Learning Containers registry and CodeBuild GPU runners
    (with `unconfirmed_build_regions`, also those only the older CodeBuild text names)."""
    builds = set(CODEBUILD_GPU_REGIONS)
    if unconfirmed_build_regions:
        builds |= CODEBUILD_GPU_REGIONS_UNCONFIRMED
    return sorted(triton_image(tag).regions & DLC_REGIONS & builds)


# ======================================================================================================
# The GPU build runner (CodeBuild)
# ======================================================================================================
# CodeBuild user guide, "Build environment compute modes and types" (on-demand: memory, vCPUs, disk) and the
# API reference's ComputeType text (LINUX_GPU_CONTAINER SMALL: 1 NVIDIA A10G; LARGE: 4 NVIDIA Tesla V100).
# There is no T4 or L4 runner, so plans built here fit ml.g5 (SMALL) or ml.p3 (LARGE) endpoints only.
# Concurrency quota names follow the CodeBuild quota table's pattern "Concurrently running builds for
# <platform>/<size> environment"; the GPU rows' exact wording is inferred (preflight matches it
# case-insensitively).
@dataclass(frozen=True)
class CodeBuildGpu:
    compute_type: str
    gpu: str
    gpu_count: int
    compute_capability: float
    memory_gib: int
    vcpus: int
    disk_gb: int

    @property
    def concurrency_quota_name(self) -> str:
        return f"Concurrently running builds for Linux/GPU {self.compute_type.capitalize()} environment"


CODEBUILD_GPUS: dict[str, CodeBuildGpu] = {
    "SMALL": CodeBuildGpu("SMALL", "A10G", 1, 8.6, memory_gib=16, vcpus=4, disk_gb=220),
    "LARGE": CodeBuildGpu("LARGE", "V100", 4, 7.0, memory_gib=255, vcpus=32, disk_gb=50),
}

# Where an image's CUDA forward-compatibility libraries are: the Deep Learning Containers images keep them in
# /usr/local/cuda/compat; NVIDIA's NGC images (the SageMaker Triton image is built on tritonserver's) in
# ${_CUDA_COMPAT_PATH}/lib.real, i.e. /usr/local/cuda/compat/lib.real, which their entry point puts first on
# LD_LIBRARY_PATH when the driver is older than the image's CUDA (triton-inference-server/server `build.py`,
# "Extra defensive wiring for CUDA Compat lib"). CodeBuild skips both entry points: the buildspecs repeat
# them.
CUDA_COMPAT_DIRECTORIES = ("compat", "compat/lib.real")


# AWS Deep Learning Containers PyTorch GPU images, one per CUDA major: the driver-facing CUDA matches the
# serving image, and Python, pip and CUDA are preinstalled. Their entry point sets up CUDA forward
# compatibility (`start_cuda_compat.sh`, aws/deep-learning-containers), which CodeBuild does not run (it
# ignores ENTRYPOINT, maintainer confirmation in aws/aws-codebuild-docker-images#254): the buildspec repeats
# it. Source: aws/deep-learning-containers `docs/src/data/<repository>/<version>-*.yml` (tags, CUDA, OS, end
# of patch) and `docs/pytorch/changelog` (bundled versions), read at commit e0ecedea (2026-08-21). AWS: "We
# cannot fully patch Ubuntu-based PyTorch 2.8-2.10 images ... recommend migrating to our Amazon Linux
# 2023-based PyTorch 2.11 or later images" (support policy). Every AL2023 PyTorch GPU image there is CUDA 13
# (2.11 and 2.12 cu130, 2.13 cu133): there is none for CUDA 12, so the CUDA 12 Triton tags keep the Ubuntu 2.8
# cu129 image, past its end of patch. Whether a CUDA 13 image could build for a CUDA 12 serving image
# (tensorrt-cu12 in it) is not confirmed. For CUDA 13, 2.12 (CUDA 13.0.2) rather than 2.13 (CUDA 13.3): the
# CUDA of 25.09, and the lowest driver on a runner whose driver is undocumented. That the AL2023 `pytorch`
# repository is in the regional DLC registries as well as in ECR Public (`public_registry: true`) is inferred
# from the private URI format (`docs/get_started`); preflight checks the tag in the region.
@dataclass(frozen=True)
class BuildImage:
    repository: str
    tag: str
    pytorch: str
    cuda: str
    os: str
    end_of_patch: str
    # The oldest GPU its PyTorch builds run on: PyTorch 2.8 release notes, "Removed support for Maxwell,
    # Pascal, and Volta architectures with CUDA 12.8 and 12.9 builds"; CUDA 13 dropped everything below sm_75
    # (pytorch/pytorch#190385).
    min_compute_capability: float

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".", 1)[0])


BUILD_IMAGES: dict[int, BuildImage] = {
    image.cuda_major: image
    for image in (
        BuildImage("pytorch-training", "2.8.0-gpu-py312-cu129-ubuntu22.04-ec2", "2.8.0", "12.9",
                   "ubuntu22.04", end_of_patch="2026-08-06", min_compute_capability=7.5),
        BuildImage("pytorch", "2.12.1-cu130-amzn2023", "2.12.1", "13.0.2", "amzn2023",
                   end_of_patch="2027-07-02", min_compute_capability=7.5),
    )
}  # fmt: skip


def build_image(tag: str) -> BuildImage:
    """The build runner's image for a Triton tag: the one of its CUDA major."""
    return BUILD_IMAGES[triton_image(tag).cuda_major]


# NVIDIA's package index, where the tensorrt-cu* packages fetch their wheels from.
NVIDIA_PIP_INDEX = "https://pypi.nvidia.com"


# ======================================================================================================
# Deployment limits
# ======================================================================================================
# CloudFormation waits at most one hour for a custom resource (AWS::CloudFormation::CustomResource
# ServiceTimeout: 1..3600 seconds).
CUSTOM_RESOURCE_TIMEOUT_MINUTES = 60
# SageMaker endpoint names: the EndpointName shape of the SageMaker API (botocore's service model,
# CreateEndpoint), confirmed: letters, digits and hyphens between them, at most 63 characters.
ENDPOINT_NAME_PATTERN = r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
# CodeBuild: a build's timeout is at least 5 minutes ("Minimum period for build timeout"); a queued build
# waits QueuedTimeoutInMinutes, 5..480, default 480 (API reference, "Builds in CodeBuild").
CODEBUILD_MIN_BUILD_TIMEOUT_MINUTES = 5
CODEBUILD_QUEUED_TIMEOUT_RANGE = (5, 480)
# The bootstrap version aws-cdk-lib 2.275 requires: its templates carry the rule CheckBootstrapVersion, which
# refuses versions 1..5 (a test checks the synthesized rule against this number).
CDK_BOOTSTRAP_STACK = "CDKToolkit"
CDK_MIN_BOOTSTRAP_VERSION = 6


# ======================================================================================================
# Endpoint updates: SageMaker deployment guardrails
# ======================================================================================================
# SageMaker API reference (botocore 1.44 service model, read here): BlueGreenUpdatePolicy,
# TrafficRoutingConfig, RollingUpdatePolicy, CapacitySize and AutoRollbackConfig; the same ranges are in
# CloudFormation's AWS::SageMaker::Endpoint schema (cfn-lint 1.58's copy), whose update handler waits up to
# 970 minutes.
# - WaitIntervalInSeconds (the baking period after each traffic step or rolling batch): 0..3600.
# - TerminationWaitInSeconds (blue/green: how long the old fleet lives after the last step): 0..3600.
# - MaximumExecutionTimeoutInSeconds: 600..28800, "larger than the total waiting time specified in
#   TerminationWaitInSeconds and WaitIntervalInSeconds".
# - CanarySize: "less than or equal to 50% of the variant's total instance count".
# - LinearStepSize: "10-50% of the variant's total instance count".
# - RollingUpdatePolicy.MaximumBatchSize: "between 5% to 50% of the variant's total instance count";
#   RollbackMaximumBatchSize absent: "100% of total capacity", the whole old fleet at once during a rollback.
# - CapacitySize.Value >= 1, as INSTANCE_COUNT or CAPACITY_PERCENT.
# - AutoRollbackConfig.Alarms: 1..10 alarm names; SageMaker needs cloudwatch:DescribeAlarms on them
#   (developer guide, "Auto-Rollback Configuration and Monitoring").
# Not documented (the safe side is taken in triton_mme_cdk/deployment_rules.py): how SageMaker rounds a
# percentage to
# whole instances, and whether CreateEndpoint checks that the named alarms exist.
GUARDRAIL_WAIT_SECONDS_RANGE = (0, 3600)
GUARDRAIL_TERMINATION_WAIT_SECONDS_RANGE = (0, 3600)
GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE = (600, 28800)
CANARY_PERCENT_RANGE = (1, 50)
LINEAR_STEP_PERCENT_RANGE = (10, 50)
ROLLING_BATCH_PERCENT_RANGE = (5, 50)
MAX_ROLLBACK_ALARMS = 10
# Developer guide, "Exclusions" (deployment-guardrails-exclusions): the new endpoint config must keep the
# variant name; endpoints on Inf1 instances (and Marketplace containers) fall back to blue/green all at once
# with no final baking period; rolling deployments also exclude serverless and multi-variant endpoints.
# A GPU multi-model endpoint is none of these.
GUARDRAIL_FALLBACK_INSTANCE_PREFIXES = ("ml.inf1.",)
# Blue/green (canary, linear, all at once) provisions the whole new fleet beside the old one before it
# shifts traffic ("Blue/Green Deployments": SageMaker provisions the green fleet, then shifts, then
# terminates the blue fleet); rolling provisions one batch at a time ("Use rolling deployments").
# InvokeEndpoint answers within 60 seconds (API reference, InvokeEndpoint): a latency above it is a timeout.
INVOKE_ENDPOINT_TIMEOUT_SECONDS = 60
# InvokeEndpoint's Body limit as botocore's sagemaker-runtime model states it (BodyBlob max); the reply's
# Body is the same shape, and AWS documents 6 MB each way for a multi-model endpoint.
SAGEMAKER_MAX_REQUEST_BYTES = 6 * 1024 * 1024
SAGEMAKER_MAX_RESPONSE_BYTES = SAGEMAKER_MAX_REQUEST_BYTES


# ======================================================================================================
# S3 conditional writes
# ======================================================================================================
# S3 user guide, "Enforce conditional writes on Amazon S3 buckets": a bucket policy can require the
# If-None-Match / If-Match headers with the condition keys s3:if-none-match / s3:if-match on s3:PutObject.
# Multipart uploads need s3:ObjectCreationOperation to exempt CreateMultipartUpload, UploadPart and
# UploadPartCopy, which take no conditional header (the condition then applies to CompleteMultipartUpload).
# Under such a policy CopyObject into the covered keys fails (403 without a header, 501 with one).
S3_IF_NONE_MATCH_KEY = "s3:if-none-match"
S3_IF_MATCH_KEY = "s3:if-match"
S3_OBJECT_CREATION_KEY = "s3:ObjectCreationOperation"


def endpoint_quota_name(instance_type: str) -> str:
    """The Service Quotas name of the per-type endpoint instance quota (SageMaker quota table)."""
    return f"{instance_type} for endpoint usage"


# ======================================================================================================
# On-demand prices (for capacity planning; never used to decide whether a deployment works)
# ======================================================================================================
@dataclass(frozen=True)
class HourlyPrice:
    instance_type: str
    region: str
    usd: float
    as_of: str
    source: str
    confirmed: bool


# Inferred: copies of the AWS Price List for SageMaker real-time inference (component Hosting, us-east-1) seen
# in October 2025, where at least two copies agree (code repositories' price tables and a cost guide; the
# 16xlarge figures come from a us-east-2 copy whose other GPU figures equal us-east-1's). Copies disagree on
# some (e.g. $1.006 for ml.g5.xlarge, EC2's price) and SageMaker changes prices. Query the Price List API
# (`triton-mme plan --price-list-api`, or `aws pricing get-products --service-code AmazonSageMaker`) before
# relying on them, or pass your own figures (`--price TYPE=USD`, `--prices FILE`). Sizes no copy agreed on
# are absent: the planner shows their cost as unknown rather than guess it.
_PRICE_SOURCE = "copies of the AWS Price List (SageMaker real-time inference, Hosting)"
_US_EAST_1_HOSTING = {
    "ml.g4dn.xlarge": 0.736,
    "ml.g4dn.2xlarge": 0.94,
    "ml.g4dn.4xlarge": 1.505,
    "ml.g4dn.8xlarge": 2.72,
    "ml.g4dn.16xlarge": 5.44,
    "ml.g5.xlarge": 1.408,
    "ml.g5.2xlarge": 1.515,
    "ml.g5.4xlarge": 2.03,
    "ml.g5.8xlarge": 3.06,
    "ml.g5.16xlarge": 5.12,
    "ml.p3.2xlarge": 3.825,
}
HOURLY_PRICES: dict[tuple[str, str], HourlyPrice] = {
    (instance_type, "us-east-1"): HourlyPrice(
        instance_type, "us-east-1", usd, "2025-10", _PRICE_SOURCE, confirmed=False
    )
    for instance_type, usd in _US_EAST_1_HOSTING.items()
}
# The Price List API (service AmazonSageMaker): one product per instanceName, regionCode and component
# "Hosting", priced per "Hrs" on demand (as AWS's own awslabs/llmeter queries it). The API answers from
# us-east-1 (also eu-central-1 and ap-south-1).
PRICE_LIST_SERVICE_CODE = "AmazonSageMaker"
PRICE_LIST_API_REGION = "us-east-1"
PRICE_LIST_HOSTING_COMPONENT = "Hosting"
PRICE_LIST_HOURLY_UNIT = "Hrs"
# AWS bills a month as 730 hours in its pricing examples and calculator (8,760 hours a year / 12).
HOURS_PER_MONTH = 730


def hourly_price(
    instance_type: str, region: str, overrides: Mapping[tuple[str, str], float] | None = None
) -> float | None:
    """USD per instance-hour: an override first, else the table; None when neither knows."""
    if overrides and (instance_type, region) in overrides:
        return overrides[(instance_type, region)]
    price = HOURLY_PRICES.get((instance_type, region))
    return price.usd if price else None


# ======================================================================================================
# Capacity planning: what a loaded model occupies and how long a cold start takes
# ======================================================================================================
# GPU memory as the driver reports it ("Total" in nvidia-smi), which is what fills up before a load fails:
# published nvidia-smi output from ml.g4dn (Tesla T4: 15360 MiB), ml.g5 (A10G: 23028 MiB), ml.p3
# (V100-SXM2-16GB: 16160 MiB) and ml.p2 (K80: 11441 MiB) hosts; reported, not read in an NVIDIA document.
GPU_REPORTED_MEMORY_MIB: dict[str, int] = {"T4": 15360, "A10G": 23028, "V100": 16160, "K80": 11441}
# Triton itself takes ~0.2-0.3 GB of GPU memory before any model (CUDA context, Model Analyzer reports;
# inferred): the planner takes the high end, once per instance.
TRITON_SERVER_GPU_BYTES = 300 * 10**6
# The SageMaker Triton image sets no SAGEMAKER_TRITON_MODEL_LOAD_GPU_LIMIT by default (Triton's
# docker/sagemaker/serve passes --model-load-gpu-limit only when it is set) and the endpoint construct sets
# none: models load until a CUDA allocation fails, Triton answers 507 and SageMaker unloads unused models
# (AWS, "Invoke a multi-model endpoint"). So the whole reported GPU memory is the cache.

# The seed's anchor (REFERENCE.md section 6, the seed posts: ResNet-50 models on an ml.g4dn, SageMaker MME
# with Triton): 16 ResNet-50 models loaded used 38.3 % of the T4's memory.
SEED_ANCHOR_MODELS = 16
SEED_ANCHOR_GPU_MEMORY_FRACTION = 0.383
SEED_ANCHOR_GPU = "T4"
# torchvision's ResNet-50 has 25,557,032 parameters: 102,228,128 bytes of FP32 weights.
RESNET50_FP32_WEIGHT_BYTES = 25_557_032 * 4

# Host memory the instance keeps for itself (OS, SageMaker's agents, Triton's pinned-memory pool of 256 MB):
# inferred, no AWS figure; 2 GiB taken.
HOST_RESERVED_BYTES = 2 * 2**30
# The storage volume of an EBS-only type (ml.p3, ml.p2) in multi-model mode is listed in AWS's "host instance
# storage volumes" table, which could not be read: 30 GB taken (inferred; `plan --disk-gb` overrides).
EBS_VOLUME_GB_ASSUMED = 30

# Cold start (AWS, "How multi-model endpoints work" and "Invoke a multi-model endpoint"): a model loaded on no
# instance is downloaded to the instance's storage volume, then loaded; an unloaded model stays on disk and
# loads without a download. InvokeEndpoint answers within 60 s; a load still running then returns
# ModelNotReadyException and continues for up to 360 s.
INVOKE_ENDPOINT_TIMEOUT_S = 60
MODEL_LOADING_LIMIT_S = 360

# Where SageMaker publishes a variant's CloudWatch metrics ("SageMaker AI metrics in Amazon CloudWatch" and
# "CloudWatch metrics for multi-model endpoint deployments"): requests, latencies, errors and the multi-model
# loading metrics in AWS/SageMaker; per-instance utilization and LoadedModelCount in /aws/sagemaker/Endpoints;
# both with the dimensions EndpointName and VariantName. A wrong namespace, name or dimension is not an error
# anywhere: the graph stays empty and the alarm never fires.
INVOCATION_METRICS_NAMESPACE = "AWS/SageMaker"
INSTANCE_METRICS_NAMESPACE = "/aws/sagemaker/Endpoints"
VARIANT_METRIC_DIMENSIONS = ("EndpointName", "VariantName")
# Seed figures (REFERENCE.md section 6): a ResNet-50 ONNX cold start of 4.4 s before tuning (1.61 s after).
SEED_RESNET50_ONNX_LOAD_S = 4.4
# S3 to instance storage: no AWS figure for a multi-model endpoint's download rate (the ModelDownloadingTime
# metric measures it); 50 MB/s taken, below a single S3 GET stream on these instances (inferred).
DOWNLOAD_BYTES_PER_S_ASSUMED = 50 * 10**6
