"""The platform tables as data: the YAML files in platform_data/, their shapes, and the one loader that reads
and validates them (triton_mme/core/platform.py reads each once, at import).

Every table, or every entry of a table, names its `source`: a document's URL, `this repository: ...`, or
`unconfirmed — ...` with the safe side chosen. A file that does not match its shape is refused with one line
naming the file, the entry and the field.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Annotated, Any, Generic, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StringConstraints,
    ValidationError,
    model_validator,
)

from triton_mme.core.bounded import UniqueKeys
from triton_mme.core.errors import describe_validation_error, first_line

DATA_FOLDER = "platform_data"
# What a source may be: a document (its URL), a file of this repository, or words saying it is unconfirmed.
SOURCE_FORMS = ("https://", "this repository:", "unconfirmed")
# The fields that name an entry in an error message, in this order.
ENTRY_NAMES = ("tag", "name", "family", "compute_type", "size", "repository")


class PlatformDataError(ValueError):
    """A platform data file that cannot be read or does not match its shape; one line."""


def _checked_source(text: str) -> str:
    text = " ".join(text.split())
    if not ("https://" in text or text.startswith(SOURCE_FORMS[1:])):
        raise ValueError(
            "a source is a document's https:// URL, 'this repository: ...' or 'unconfirmed — ...'"
        )
    return text


Source = Annotated[str, AfterValidator(_checked_source)]
T = TypeVar("T")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Sourced(Frozen):
    source: Source


class Fact(Sourced, Generic[T]):
    """One value and where it comes from."""

    value: T


class SourcedGroup(Sourced):
    """Named values that share one source (the extra fields are the values)."""

    model_config = ConfigDict(frozen=True, extra="allow")


# ----- triton_images.yaml ---------------------------------------------------------------------------------
class TritonImage(Sourced):
    """One `sagemaker-tritonserver:<tag>` image: where it is published and what it serves with."""

    tag: str
    server: str
    onnxruntime: str | None
    cuda: str
    # The NVIDIA driver branch that runs this CUDA natively; None: not known, so no driver counts.
    min_driver: int | None
    forward_compatible_drivers: tuple[int, ...]
    min_compute_capability: float
    libtorch: str | None
    tensorrt: str | None
    tensorrt_requirement: str | None
    regions: frozenset[str]
    python: str | None = None

    @property
    def release(self) -> str:
        """'25.04-py3' -> '25.04'."""
        return self.tag.split("-", 1)[0]

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".", 1)[0])


class TritonImagesTable(Frozen):
    repository: Fact[str]
    default_tag: Fact[str]
    forward_compatibility_counts: Fact[bool]
    region_sets: SourcedGroup
    images: tuple[TritonImage, ...]

    @model_validator(mode="after")
    def _default_tag_is_listed(self) -> TritonImagesTable:
        tags = [image.tag for image in self.images]
        if len(set(tags)) != len(tags):
            raise ValueError(f"images: a tag is listed twice ({', '.join(tags)})")
        if self.default_tag.value not in tags:
            raise ValueError(f"default_tag: {self.default_tag.value!r} is not one of the images")
        return self


# ----- inference_amis.yaml --------------------------------------------------------------------------------
class InferenceAmi(Sourced):
    name: str
    driver: int
    cuda: str
    # True where the NVIDIA Container Toolkit mounts an image's CUDA-compat libraries by itself.
    mounts_cuda_compat: bool


class InferenceAmisTable(Frozen):
    default_endpoint_driver: Fact[int]
    default_endpoint_cuda: Fact[str]
    amis: tuple[InferenceAmi, ...]


# ----- gpu_instances.yaml ---------------------------------------------------------------------------------
class Gpu(Sourced):
    name: str
    compute_capability: float


class InstanceSize(Frozen):
    size: str
    vcpus: int
    memory_gib: int | float
    instance_storage_gb: int  # local NVMe; 0: EBS only


class InstanceFamily(Sourced):
    family: str
    gpu: str
    gpu_memory_gib: int
    inference_amis: tuple[str, ...]
    sizes: tuple[InstanceSize, ...]


class GpuInstancesTable(Frozen):
    gpus: tuple[Gpu, ...]
    families: tuple[InstanceFamily, ...]

    @model_validator(mode="after")
    def _families_name_known_gpus(self) -> GpuInstancesTable:
        known = {gpu.name for gpu in self.gpus}
        for index, family in enumerate(self.families):
            if family.gpu not in known:
                raise ValueError(
                    f"families[{index}].gpu: {family.gpu!r} is not one of gpus ({', '.join(known)})"
                )
        return self


# ----- regions.yaml ---------------------------------------------------------------------------------------
class RegionAccounts(Sourced):
    accounts: dict[str, str]


class RegionsTable(Frozen):
    dlc_account: Fact[str]
    region_specific_accounts: RegionAccounts
    codebuild_gpu_regions: Fact[frozenset[str]]
    codebuild_gpu_regions_unconfirmed: Fact[frozenset[str]]


# ----- service quotas (codebuild.yaml, limits.yaml) ------------------------------------------------------
QUOTA_CODE_PATTERN = r"^L-[0-9A-F]{8}$"


class ServiceQuota(Frozen):
    """One Service Quotas quota: looked up by its code; the name is shown, and searched for only where the
    code is not known (null)."""

    code: Annotated[str, StringConstraints(pattern=QUOTA_CODE_PATTERN)] | None
    name: str


class ServiceQuotas(Sourced):
    """The quotas of one service (its Service Quotas service code), keyed by what each one bounds."""

    service_code: str
    quotas: dict[str, ServiceQuota]


# ----- codebuild.yaml -------------------------------------------------------------------------------------
class CodeBuildGpuEntry(Sourced):
    compute_type: str
    gpu: str
    gpu_count: int
    memory_gib: int
    vcpus: int
    disk_gb: int


class BuildImage(Sourced):
    repository: str
    tag: str
    pytorch: str
    cuda: str
    os: str
    end_of_patch: str
    # The oldest GPU its PyTorch builds run on.
    min_compute_capability: float

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".", 1)[0])


class CodeBuildTable(Frozen):
    gpus: tuple[CodeBuildGpuEntry, ...]
    concurrency_quotas: ServiceQuotas
    min_build_timeout_minutes: Fact[int]
    queued_timeout_minutes_range: Fact[tuple[int, int]]
    build_images: tuple[BuildImage, ...]
    cuda_compat_directories: Fact[tuple[str, ...]]
    nvidia_pip_index: Fact[str]


# ----- limits.yaml ----------------------------------------------------------------------------------------
class Guardrails(Sourced):
    wait_seconds_range: tuple[int, int]
    termination_wait_seconds_range: tuple[int, int]
    max_execution_seconds_range: tuple[int, int]
    canary_percent_range: tuple[int, int]
    linear_step_percent_range: tuple[int, int]
    rolling_batch_percent_range: tuple[int, int]
    max_rollback_alarms: int


class SageMakerContainer(Sourced):
    serve_command: str
    multi_model_variable: str
    port_variable: str
    port: int


class S3ConditionKeys(Sourced):
    if_none_match: str
    if_match: str
    object_creation: str


class VariantMetrics(Sourced):
    invocation_namespace: str
    instance_namespace: str
    variant_dimensions: tuple[str, ...]


class LimitsTable(Frozen):
    custom_resource_timeout_minutes: Fact[int]
    wait_condition_timeout_minutes: Fact[int]
    endpoint_name_pattern: Fact[str]
    cdk_bootstrap_stack: Fact[str]
    cdk_min_bootstrap_version: Fact[int]
    logs_resource_policy_limit: Fact[int]
    guardrails: Guardrails
    guardrail_fallback_instance_prefixes: Fact[tuple[str, ...]]
    invoke_endpoint_timeout_seconds: Fact[int]
    sagemaker_max_payload_bytes: Fact[int]
    model_loading_limit_seconds: Fact[int]
    sagemaker_container: SageMakerContainer
    s3_condition_keys: S3ConditionKeys
    metrics: VariantMetrics
    endpoint_quotas: ServiceQuotas


# ----- prices.yaml ----------------------------------------------------------------------------------------
class HourlyPriceTable(Sourced):
    label: str
    region: str
    as_of: str
    usd_per_hour: dict[str, float]


class PriceListApi(Sourced):
    service_code: str
    region: str
    hosting_component: str
    hourly_unit: str


class PricesTable(Frozen):
    hourly_prices: HourlyPriceTable
    price_list_api: PriceListApi
    hours_per_month: Fact[int]


# ----- inference_components.yaml -------------------------------------------------------------------------
class ComponentInstanceFamilies(Sourced):
    supported: tuple[str, ...]
    unknown: tuple[str, ...]


class ComponentComputeRequirements(Sourced):
    min_accelerators_per_copy: int
    min_memory_mb: int


class ComponentCopies(Sourced):
    min_copy_count: int
    name_pattern: str
    name_max_length: int


class ComponentScaleToZero(Sourced):
    endpoint_min_instance_count: int
    wake_metric: str
    wake_metric_dimension: str
    wake_period_seconds: int


class ComponentNoCapacityError(Sourced):
    """What InvokeEndpoint answers while a component has no copy (the client's one line is built from it)."""

    code: str
    http_status: int
    message: str
    minutes_to_first_copy: str


class ComponentScaling(Sourced):
    resource_id: str
    scalable_dimension: str
    predefined_metric: str


class ComponentEndpoint(Sourced):
    routing_strategy: str


class ComponentRollingUpdate(Sourced):
    batch_type: str
    batch_percent_range: tuple[int, int]


class ComponentMetrics(Sourced):
    namespace: str
    dimension: str


class ComponentContainer(Sourced):
    served_formats: tuple[str, ...]
    artifact_suffix: str
    model_repository: str


class InferenceComponentsTable(Frozen):
    instance_families: ComponentInstanceFamilies
    regions: Fact[frozenset[str]]
    compute_requirements: ComponentComputeRequirements
    copies: ComponentCopies
    scale_to_zero: ComponentScaleToZero
    scale_to_zero_regions: Fact[frozenset[str]]
    no_capacity_error: ComponentNoCapacityError
    scaling: ComponentScaling
    endpoint: ComponentEndpoint
    rolling_update: ComponentRollingUpdate
    metrics: ComponentMetrics
    container: ComponentContainer


# ----- the loader -----------------------------------------------------------------------------------------
M = TypeVar("M", bound=BaseModel)


class _Loader(UniqueKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The C loader where PyYAML has it (the tables are read at every synthesis), refusing repeated keys."""


_LOADER: Any = _Loader


def parse_table(file_name: str, text: str, model: type[M]) -> M:
    """A table from the text of its file; PlatformDataError names the file, the entry and the field."""
    try:
        raw = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or first_line(error)
        raise PlatformDataError(f"{file_name}: not valid YAML{at} ({problem})") from None
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        where = describe_validation_error(error)
        raise PlatformDataError(f"{file_name}: {_named_entry(where, error, raw)}") from None


def _named_entry(where: str, error: ValidationError, raw: Any) -> str:
    """`images[2].min_driver: ...` -> `images[2] (24.03-py3).min_driver: ...`: the entry by its name too."""
    location = error.errors()[0]["loc"]
    if len(location) < 2 or not isinstance(location[1], int) or not isinstance(raw, dict):
        return where
    entries = raw.get(location[0])
    if (
        not isinstance(entries, list)
        or not location[1] < len(entries)
        or not isinstance(entries[location[1]], dict)
    ):
        return where
    entry = entries[location[1]]
    name = next((entry[key] for key in ENTRY_NAMES if isinstance(entry.get(key), str)), None)
    prefix = f"{location[0]}[{location[1]}]"
    return where.replace(prefix, f"{prefix} ({name})", 1) if name else where


def load_table(
    file_name: str, model: type[M], package: str = "triton_mme.core", folder: str = DATA_FOLDER
) -> M:
    """A table from its file in the package's data folder (package data, so it travels with the package);
    errors name the file by its path in the repository."""
    path = files(package).joinpath(*filter(None, (folder, file_name)))
    shown = "/".join(filter(None, (*package.split("."), folder, file_name)))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise PlatformDataError(f"{shown}: cannot read it ({error.strerror})") from None
    return parse_table(shown, text, model)
