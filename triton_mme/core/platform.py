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
from types import MappingProxyType

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
_TRITON_IMAGES: dict[str, TritonImage] = {image.tag: image for image in _IMAGES.images}

# How the SageMaker container starts Triton in multi-model mode, and on which port it listens.
_CONTAINER = _LIMITS.sagemaker_container
_MULTI_MODEL_ENVIRONMENT = {
    _CONTAINER.multi_model_variable: "true",
    _CONTAINER.port_variable: str(_LIMITS.sagemaker_container.port),
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
        return _TRITON_IMAGES[tag]
    except KeyError:
        raise KeyError(f"unknown Triton image tag {tag!r}; known: {', '.join(_TRITON_IMAGES)}") from None


def triton_release_of(tag: str) -> TritonImage | None:
    """The image whose release (YY.MM) matches a tag written as YY.MM or YY.MM-py3."""
    release = tag.strip().split("-", 1)[0]
    return next((image for image in _TRITON_IMAGES.values() if image.release == release), None)


def registry_accounts(tag: str) -> dict[str, str]:
    """Region -> ECR registry account that holds `sagemaker-tritonserver:<tag>`."""
    return {region: dlc_registry_account(region) for region in sorted(triton_image(tag).regions)}


# ======================================================================================================
# SageMaker inference AMIs (ProductionVariant.InferenceAmiVersion)
# ======================================================================================================
# Newest first: `auto` picks the first one that applies to the instance type and runs the image natively.
_INFERENCE_AMIS: dict[str, InferenceAmi] = {ami.name: ami for ami in _AMIS.amis}


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
    default_driver: int = _AMIS.default_endpoint_driver.value
    default_cuda: str = _AMIS.default_endpoint_cuda.value

    @property
    def family(self) -> str:
        """'ml.g5.xlarge' -> 'ml.g5'."""
        return self.name.rsplit(".", 1)[0]

    @property
    def has_instance_storage(self) -> bool:
        return self.instance_storage_gb > 0


_GPU_COMPUTE_CAPABILITIES: dict[str, float] = {gpu.name: gpu.compute_capability for gpu in _INSTANCES.gpus}


def _instance_types() -> dict[str, GpuInstanceType]:
    found = {}
    for index, family in enumerate(_INSTANCES.families):
        unknown = sorted(set(family.inference_amis) - set(_INFERENCE_AMIS))
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
                _GPU_COMPUTE_CAPABILITIES[family.gpu],
                family.gpu_memory_gib,
                size.vcpus,
                size.memory_gib,
                size.instance_storage_gb,
                family.inference_amis,
            )
    return found


_GPU_INSTANCE_TYPES: dict[str, GpuInstanceType] = _instance_types()


def gpu_instance(instance_type: str) -> GpuInstanceType:
    """The instance type; KeyError names the known ones."""
    try:
        return _GPU_INSTANCE_TYPES[instance_type]
    except KeyError:
        known = ", ".join(_GPU_INSTANCE_TYPES)
        raise KeyError(f"unknown GPU multi-model instance type {instance_type!r}; known: {known}") from None


def runs_natively(image: TritonImage, ami: InferenceAmi) -> bool:
    """Whether the AMI's driver runs the image's CUDA without any compatibility layer."""
    return image.min_driver is not None and ami.driver >= image.min_driver


def serving_amis(tag: str, instance_type: str) -> list[InferenceAmi]:
    """The inference AMIs that apply to the instance type and serve the tag, in `auto`'s order."""
    image = triton_image(tag)
    amis = [_INFERENCE_AMIS[name] for name in gpu_instance(instance_type).inference_amis]
    return [ami for ami in amis if runs_natively(image, ami)]


def supports_compute_capability(tag: str, instance_type: str) -> bool:
    return gpu_instance(instance_type).compute_capability >= triton_image(tag).min_compute_capability


# ======================================================================================================
# Regions and registries
# ======================================================================================================


def dlc_registry_account(region: str) -> str:
    return _REGIONS.region_specific_accounts.accounts.get(region, _REGIONS.dlc_account.value)


# Every region any listed Triton tag is published in.
_DLC_REGIONS = frozenset().union(*(image.regions for image in _TRITON_IMAGES.values()))


def deployable_regions(tag: str, *, unconfirmed_build_regions: bool = False) -> list[str]:
    """Regions with the tag's Triton image, a Deep Learning Containers registry and CodeBuild GPU runners
    (with `unconfirmed_build_regions`, also those only the older CodeBuild text names)."""
    builds = set(_REGIONS.codebuild_gpu_regions.value)
    if unconfirmed_build_regions:
        builds |= _REGIONS.codebuild_gpu_regions_unconfirmed.value
    return sorted(triton_image(tag).regions & _DLC_REGIONS & builds)


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
        if entry.gpu not in _GPU_COMPUTE_CAPABILITIES:
            raise PlatformDataError(
                f"{PLATFORM_DATA}/codebuild.yaml: gpus[{index}] ({entry.compute_type}).gpu: {entry.gpu!r} "
                "is not one of the gpus of gpu_instances.yaml"
            )
        found[entry.compute_type] = CodeBuildGpu(
            entry.compute_type,
            entry.gpu,
            entry.gpu_count,
            _GPU_COMPUTE_CAPABILITIES[entry.gpu],
            memory_gib=entry.memory_gib,
            vcpus=entry.vcpus,
            disk_gb=entry.disk_gb,
        )
    return found


_CODEBUILD_GPUS: dict[str, CodeBuildGpu] = _codebuild_gpus()
# The build runner's image per CUDA major.
_BUILD_IMAGES: dict[int, BuildImage] = {image.cuda_major: image for image in _CODEBUILD.build_images}


def build_image(tag: str) -> BuildImage:
    """The build runner's image for a Triton tag: the one of its CUDA major."""
    return _BUILD_IMAGES[triton_image(tag).cuda_major]


# ======================================================================================================
# Deployment limits
# ======================================================================================================


def endpoint_quota(instance_type: str) -> Quota:
    """The per-type endpoint instance quota (limits.yaml), which every endpoint of the type counts against."""
    return _quota(_LIMITS.endpoint_quotas, instance_type)


_require_quotas("limits.yaml", _LIMITS.endpoint_quotas, _GPU_INSTANCE_TYPES)
_require_quotas("codebuild.yaml", _CODEBUILD.concurrency_quotas, _CODEBUILD_GPUS)


# ======================================================================================================
# Inference components (a catalog's `placement: dedicated` entries)
# ======================================================================================================


def component_instance_problem(instance_type: str) -> str | None:
    """Why an inference component endpoint cannot run on `instance_type` (words after the value), or None."""
    family = instance_type.rsplit(".", 1)[0]
    if family in _COMPONENTS.instance_families.supported:
        return None
    known = (
        "unconfirmed for inference components"
        if family in _COMPONENTS.instance_families.unknown
        else "not known"
    )
    return f"is {known} ({PLATFORM_DATA}/inference_components.yaml); allowed: " + ", ".join(
        f"{name}.*" for name in _COMPONENTS.instance_families.supported
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
_HOURLY_PRICES: dict[tuple[str, str], HourlyPrice] = {
    (instance_type, _HOURLY.region): HourlyPrice(
        instance_type, _HOURLY.region, usd, _HOURLY.as_of, _HOURLY.label, confirmed=False
    )
    for instance_type, usd in _HOURLY.usd_per_hour.items()
}


def hourly_price(
    instance_type: str, region: str, overrides: Mapping[tuple[str, str], float] | None = None
) -> float | None:
    """USD per instance-hour: an override first, else the table; None when neither knows."""
    if overrides and (instance_type, region) in overrides:
        return overrides[(instance_type, region)]
    price = _HOURLY_PRICES.get((instance_type, region))
    return price.usd if price else None


# ======================================================================================================
# The one object every reader uses
# ======================================================================================================
@dataclass(frozen=True)
class Platform:
    """Every platform fact, by attribute: the validated tables of platform_data/ as they are (each entry
    with its `source`; `PLATFORM.limits.wait_condition_timeout_minutes.value`), and the views several
    readers share, built once from them. A new fact is a YAML entry and its field in platform_tables.py."""

    images: TritonImagesTable
    amis: InferenceAmisTable
    instances: GpuInstancesTable
    regions: RegionsTable
    codebuild: CodeBuildTable
    limits: LimitsTable
    prices: PricesTable
    components: InferenceComponentsTable
    # Views: by tag, by name, by instance type, by compute type, by CUDA major, by (instance type, region).
    triton_images: Mapping[str, TritonImage]
    inference_amis: Mapping[str, InferenceAmi]
    gpu_compute_capabilities: Mapping[str, float]
    gpu_instance_types: Mapping[str, GpuInstanceType]
    codebuild_gpus: Mapping[str, CodeBuildGpu]
    build_images: Mapping[int, BuildImage]
    hourly_prices: Mapping[tuple[str, str], HourlyPrice]
    # Every region any listed Triton tag is published in.
    dlc_regions: frozenset[str]
    # What the SageMaker container needs to start Triton in multi-model mode on its port.
    multi_model_environment: Mapping[str, str]

    @property
    def triton_image_tags(self) -> tuple[str, ...]:
        return tuple(self.triton_images)


PLATFORM = Platform(
    images=_IMAGES,
    amis=_AMIS,
    instances=_INSTANCES,
    regions=_REGIONS,
    codebuild=_CODEBUILD,
    limits=_LIMITS,
    prices=_PRICES,
    components=_COMPONENTS,
    triton_images=MappingProxyType(_TRITON_IMAGES),
    inference_amis=MappingProxyType(_INFERENCE_AMIS),
    gpu_compute_capabilities=MappingProxyType(_GPU_COMPUTE_CAPABILITIES),
    gpu_instance_types=MappingProxyType(_GPU_INSTANCE_TYPES),
    codebuild_gpus=MappingProxyType(_CODEBUILD_GPUS),
    build_images=MappingProxyType(_BUILD_IMAGES),
    hourly_prices=MappingProxyType(_HOURLY_PRICES),
    dlc_regions=_DLC_REGIONS,
    multi_model_environment=MappingProxyType(_MULTI_MODEL_ENVIRONMENT),
)
