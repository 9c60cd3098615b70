"""The platform facts the project relies on: Triton images, GPU instances and their drivers, regions, build
runners, deployment limits and prices — read once from the data files in platform_data/ (each entry with its
source; docs/platform.md describes them) and offered here under the names the rest of the project uses.

Everything that decides whether a deployment can work — which image tag exists in which region, which CUDA,
driver and GPU an image needs, which instance types a GPU multi-model endpoint accepts and which SageMaker
inference AMI (NVIDIA driver) they can run, which GPU a CodeBuild runner has — is read from here by the
settings validation, the TensorRT guard, the constructs, the buildspec, the preflight checks and the tools.

A fact no document settles says `unconfirmed` in its source and takes the safe side (a refused combination
rather than a deployment that fails half-way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from triton_mme.core.platform_tables import (
    DATA_FOLDER,
    BuildImage,
    CodeBuildTable,
    GpuInstancesTable,
    InferenceAmi,
    InferenceAmisTable,
    InferenceComponentsTable,
    LimitsTable,
    PlatformDataError,
    PricesTable,
    RegionsTable,
    ServiceQuotas,
    TritonImage,
    TritonImagesTable,
    load_table,
)

PLATFORM_DATA = f"triton_mme/core/{DATA_FOLDER}"
_IMAGES = load_table("triton_images.yaml", TritonImagesTable)
_AMIS = load_table("inference_amis.yaml", InferenceAmisTable)
_INSTANCES = load_table("gpu_instances.yaml", GpuInstancesTable)
_REGIONS = load_table("regions.yaml", RegionsTable)
_CODEBUILD = load_table("codebuild.yaml", CodeBuildTable)
_LIMITS = load_table("limits.yaml", LimitsTable)
_PRICES = load_table("prices.yaml", PricesTable)
_COMPONENTS = load_table("inference_components.yaml", InferenceComponentsTable)


# ======================================================================================================
# Service Quotas
# ======================================================================================================
@dataclass(frozen=True)
class Quota:
    """A quota the preflight reads: by `code`; `name` is shown, and searched for only where the code is not
    known (None)."""

    service_code: str
    code: str | None
    name: str


def _quota(table: ServiceQuotas, key: str) -> Quota:
    entry = table.quotas[key]
    return Quota(table.service_code, entry.code, entry.name)


def _require_quotas(file_name: str, table: ServiceQuotas, keys: Iterable[str]) -> None:
    missing = sorted(set(keys) - set(table.quotas))
    if missing:
        raise PlatformDataError(f"{PLATFORM_DATA}/{file_name}: quotas: no entry for {', '.join(missing)}")


# ======================================================================================================
# SageMaker Triton images
# ======================================================================================================
TRITON_REPOSITORY = _IMAGES.repository.value
DEFAULT_TRITON_TAG = _IMAGES.default_tag.value
# Whether a driver that runs an image's CUDA only through forward compatibility counts as serving it.
FORWARD_COMPATIBILITY_COUNTS = _IMAGES.forward_compatibility_counts.value
TRITON_IMAGES: dict[str, TritonImage] = {image.tag: image for image in _IMAGES.images}
TRITON_IMAGE_TAGS: tuple[str, ...] = tuple(TRITON_IMAGES)

# How the SageMaker container starts Triton in multi-model mode, and on which port it listens.
_CONTAINER = _LIMITS.sagemaker_container
SAGEMAKER_SERVE_COMMAND = _CONTAINER.serve_command
SAGEMAKER_PORT = _CONTAINER.port
SAGEMAKER_MULTI_MODEL_ENVIRONMENT = {
    _CONTAINER.multi_model_variable: "true",
    _CONTAINER.port_variable: str(SAGEMAKER_PORT),
}
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
# Newest first: `auto` picks the first one that applies to the instance type and runs the image natively.
INFERENCE_AMIS: dict[str, InferenceAmi] = {ami.name: ami for ami in _AMIS.amis}
DEFAULT_ENDPOINT_DRIVER = _AMIS.default_endpoint_driver.value
DEFAULT_ENDPOINT_CUDA = _AMIS.default_endpoint_cuda.value


# ======================================================================================================
# GPU multi-model endpoint instance types
# ======================================================================================================
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


GPU_COMPUTE_CAPABILITIES: dict[str, float] = {gpu.name: gpu.compute_capability for gpu in _INSTANCES.gpus}


def _instance_types() -> dict[str, GpuInstanceType]:
    found = {}
    for index, family in enumerate(_INSTANCES.families):
        unknown = sorted(set(family.inference_amis) - set(INFERENCE_AMIS))
        if unknown:
            raise PlatformDataError(
                f"{PLATFORM_DATA}/gpu_instances.yaml: families[{index}] ({family.family}).inference_amis: "
                f"{', '.join(unknown)} not in inference_amis.yaml"
            )
        for size in family.sizes:
            name = f"{family.family}.{size.size}"
            found[name] = GpuInstanceType(
                name,
                family.gpu,
                GPU_COMPUTE_CAPABILITIES[family.gpu],
                family.gpu_memory_gib,
                size.vcpus,
                size.memory_gib,
                size.instance_storage_gb,
                family.inference_amis,
            )
    return found


GPU_MME_INSTANCE_TYPES: dict[str, GpuInstanceType] = _instance_types()


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
# The AWS Deep Learning Containers registry; tags from 23.12 on are published there, and the build runner's
# image comes from there too.
DLC_ACCOUNT = _REGIONS.dlc_account.value


def dlc_registry_account(region: str) -> str:
    return _REGIONS.region_specific_accounts.accounts.get(region, DLC_ACCOUNT)


# Every region any listed Triton tag is published in.
DLC_REGIONS = frozenset().union(*(image.regions for image in TRITON_IMAGES.values()))
# CodeBuild's LINUX_GPU_CONTAINER regions; the unconfirmed ones are refused unless the setting
# allowUnconfirmedBuildRegion is true (docs/settings-platform.md); preflight then checks the runner's quota.
CODEBUILD_GPU_REGIONS = _REGIONS.codebuild_gpu_regions.value
CODEBUILD_GPU_REGIONS_UNCONFIRMED = _REGIONS.codebuild_gpu_regions_unconfirmed.value


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
    def concurrency_quota(self) -> Quota:
        """The quota of builds of this compute type running at once (codebuild.yaml)."""
        return _quota(_CODEBUILD.concurrency_quotas, self.compute_type)


def _codebuild_gpus() -> dict[str, CodeBuildGpu]:
    found = {}
    for index, entry in enumerate(_CODEBUILD.gpus):
        if entry.gpu not in GPU_COMPUTE_CAPABILITIES:
            raise PlatformDataError(
                f"{PLATFORM_DATA}/codebuild.yaml: gpus[{index}] ({entry.compute_type}).gpu: {entry.gpu!r} "
                "is not one of the gpus of gpu_instances.yaml"
            )
        found[entry.compute_type] = CodeBuildGpu(
            entry.compute_type,
            entry.gpu,
            entry.gpu_count,
            GPU_COMPUTE_CAPABILITIES[entry.gpu],
            memory_gib=entry.memory_gib,
            vcpus=entry.vcpus,
            disk_gb=entry.disk_gb,
        )
    return found


CODEBUILD_GPUS: dict[str, CodeBuildGpu] = _codebuild_gpus()
# Where an image's CUDA forward-compatibility libraries are, under /usr/local/cuda.
CUDA_COMPAT_DIRECTORIES = _CODEBUILD.cuda_compat_directories.value
# The build runner's image per CUDA major.
BUILD_IMAGES: dict[int, BuildImage] = {image.cuda_major: image for image in _CODEBUILD.build_images}


def build_image(tag: str) -> BuildImage:
    """The build runner's image for a Triton tag: the one of its CUDA major."""
    return BUILD_IMAGES[triton_image(tag).cuda_major]


NVIDIA_PIP_INDEX = _CODEBUILD.nvidia_pip_index.value
CODEBUILD_MIN_BUILD_TIMEOUT_MINUTES = _CODEBUILD.min_build_timeout_minutes.value
CODEBUILD_QUEUED_TIMEOUT_RANGE = _CODEBUILD.queued_timeout_minutes_range.value


# ======================================================================================================
# Deployment limits
# ======================================================================================================
CUSTOM_RESOURCE_TIMEOUT_MINUTES = _LIMITS.custom_resource_timeout_minutes.value
WAIT_CONDITION_TIMEOUT_MINUTES = _LIMITS.wait_condition_timeout_minutes.value
ENDPOINT_NAME_PATTERN = _LIMITS.endpoint_name_pattern.value
CDK_BOOTSTRAP_STACK = _LIMITS.cdk_bootstrap_stack.value
CDK_MIN_BOOTSTRAP_VERSION = _LIMITS.cdk_min_bootstrap_version.value
# Account-level CloudWatch Logs resource policies per account and region (the stack adds one).
LOGS_RESOURCE_POLICY_LIMIT = _LIMITS.logs_resource_policy_limit.value

# Endpoint updates: SageMaker deployment guardrails (the safe side of what is undocumented is taken in
# triton_mme_cdk/deployment_rules.py).
_GUARDRAILS = _LIMITS.guardrails
GUARDRAIL_WAIT_SECONDS_RANGE = _GUARDRAILS.wait_seconds_range
GUARDRAIL_TERMINATION_WAIT_SECONDS_RANGE = _GUARDRAILS.termination_wait_seconds_range
GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE = _GUARDRAILS.max_execution_seconds_range
CANARY_PERCENT_RANGE = _GUARDRAILS.canary_percent_range
LINEAR_STEP_PERCENT_RANGE = _GUARDRAILS.linear_step_percent_range
ROLLING_BATCH_PERCENT_RANGE = _GUARDRAILS.rolling_batch_percent_range
MAX_ROLLBACK_ALARMS = _GUARDRAILS.max_rollback_alarms
GUARDRAIL_FALLBACK_INSTANCE_PREFIXES = _LIMITS.guardrail_fallback_instance_prefixes.value

# InvokeEndpoint answers within this many seconds: a latency above it is a timeout. A multi-model endpoint's
# load still running then returns ModelNotReadyException and continues for up to MODEL_LOADING_LIMIT_S.
INVOKE_ENDPOINT_TIMEOUT_SECONDS = _LIMITS.invoke_endpoint_timeout_seconds.value
MODEL_LOADING_LIMIT_S = _LIMITS.model_loading_limit_seconds.value
# InvokeEndpoint's Body limit, the same each way.
SAGEMAKER_MAX_REQUEST_BYTES = _LIMITS.sagemaker_max_payload_bytes.value
SAGEMAKER_MAX_RESPONSE_BYTES = SAGEMAKER_MAX_REQUEST_BYTES

# S3 conditional writes: the bucket-policy condition keys.
S3_IF_NONE_MATCH_KEY = _LIMITS.s3_condition_keys.if_none_match
S3_IF_MATCH_KEY = _LIMITS.s3_condition_keys.if_match
S3_OBJECT_CREATION_KEY = _LIMITS.s3_condition_keys.object_creation

# Where SageMaker publishes a variant's CloudWatch metrics, and their dimensions.
INVOCATION_METRICS_NAMESPACE = _LIMITS.metrics.invocation_namespace
INSTANCE_METRICS_NAMESPACE = _LIMITS.metrics.instance_namespace
VARIANT_METRIC_DIMENSIONS = _LIMITS.metrics.variant_dimensions


def endpoint_quota(instance_type: str) -> Quota:
    """The per-type endpoint instance quota (limits.yaml), which every endpoint of the type counts against."""
    return _quota(_LIMITS.endpoint_quotas, instance_type)


_require_quotas("limits.yaml", _LIMITS.endpoint_quotas, GPU_MME_INSTANCE_TYPES)
_require_quotas("codebuild.yaml", _CODEBUILD.concurrency_quotas, CODEBUILD_GPUS)


# ======================================================================================================
# Inference components (a catalog's `placement: dedicated` entries)
# ======================================================================================================
IC_INSTANCE_FAMILIES = _COMPONENTS.instance_families.supported
IC_UNKNOWN_INSTANCE_FAMILIES = _COMPONENTS.instance_families.unknown
# Regions whose CloudFormation has AWS::SageMaker::InferenceComponent.
IC_REGIONS = _COMPONENTS.regions.value
IC_MIN_ACCELERATORS_PER_COPY = _COMPONENTS.compute_requirements.min_accelerators_per_copy
IC_MIN_MEMORY_MB = _COMPONENTS.compute_requirements.min_memory_mb
IC_NAME_PATTERN = _COMPONENTS.copies.name_pattern
IC_NAME_MAX_LENGTH = _COMPONENTS.copies.name_max_length
# Scale to zero: the endpoint's MinInstanceCount, and the alarm metric whose step policy adds the first copy.
IC_SCALE_TO_ZERO = _COMPONENTS.scale_to_zero
# Where MinInstanceCount 0 is known to be accepted (the other component regions are unconfirmed).
IC_SCALE_TO_ZERO_REGIONS = _COMPONENTS.scale_to_zero_regions.value
# What InvokeEndpoint answers while a component has no copy (code, HTTP status, message).
IC_NO_CAPACITY_ERROR = _COMPONENTS.no_capacity_error
IC_SCALING = _COMPONENTS.scaling
IC_ROUTING_STRATEGY = _COMPONENTS.endpoint.routing_strategy
IC_ROLLING_BATCH_TYPE = _COMPONENTS.rolling_update.batch_type
# A rolling step's copies as a share of the component's copy count, in percent.
IC_ROLLING_BATCH_PERCENT_RANGE = _COMPONENTS.rolling_update.batch_percent_range
IC_METRICS_NAMESPACE = _COMPONENTS.metrics.namespace
IC_METRIC_DIMENSION = _COMPONENTS.metrics.dimension
IC_SERVED_FORMATS = _COMPONENTS.container.served_formats


def ic_instance_problem(instance_type: str) -> str | None:
    """Why an inference component endpoint cannot run on `instance_type` (words after the value), or None."""
    family = instance_type.rsplit(".", 1)[0]
    if family in IC_INSTANCE_FAMILIES:
        return None
    known = "unconfirmed for inference components" if family in IC_UNKNOWN_INSTANCE_FAMILIES else "not known"
    return f"is {known} ({PLATFORM_DATA}/inference_components.yaml); allowed: " + ", ".join(
        f"{name}.*" for name in IC_INSTANCE_FAMILIES
    )


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


_HOURLY = _PRICES.hourly_prices
HOURLY_PRICES: dict[tuple[str, str], HourlyPrice] = {
    (instance_type, _HOURLY.region): HourlyPrice(
        instance_type, _HOURLY.region, usd, _HOURLY.as_of, _HOURLY.label, confirmed=False
    )
    for instance_type, usd in _HOURLY.usd_per_hour.items()
}
# The Price List API: the product attributes of SageMaker hosting, and the region it answers from.
PRICE_LIST_SERVICE_CODE = _PRICES.price_list_api.service_code
PRICE_LIST_API_REGION = _PRICES.price_list_api.region
PRICE_LIST_HOSTING_COMPONENT = _PRICES.price_list_api.hosting_component
PRICE_LIST_HOURLY_UNIT = _PRICES.price_list_api.hourly_unit
HOURS_PER_MONTH = _PRICES.hours_per_month.value


def hourly_price(
    instance_type: str, region: str, overrides: Mapping[tuple[str, str], float] | None = None
) -> float | None:
    """USD per instance-hour: an override first, else the table; None when neither knows."""
    if overrides and (instance_type, region) in overrides:
        return overrides[(instance_type, region)]
    price = HOURLY_PRICES.get((instance_type, region))
    return price.usd if price else None
