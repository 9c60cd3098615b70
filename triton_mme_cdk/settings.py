"""The deployment settings: one frozen, validated pydantic model in groups, built from flat camelCase CDK
context keys.

Every field carries its context key as its alias (`EndpointSettings.instance_type` is `instanceType`), and
the flat keys are the only vocabulary of cdk.json and `-c`: `Settings(instanceType=...)` (or the field's
flat Python name, `instance_type=...`) lands in its group. The field defaults are the only defaults: cdk.json
holds CDK feature flags and whatever a deployment overrides. A bad value stops in one line naming key, value
and what is allowed (through the one pydantic error formatter, triton_mme.core.errors). To add a setting,
add a field to its group with its alias and default, and a rule if it has limits (docs/settings*.md describe
every setting). The groups go to the constructs as they are (AlarmThresholds to the monitoring, UpdatePolicy
to the endpoint's guard_updates).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from triton_mme.core.errors import describe_validation_error
from triton_mme.core.platform import (
    CODEBUILD_GPUS,
    CODEBUILD_MIN_BUILD_TIMEOUT_MINUTES,
    CODEBUILD_QUEUED_TIMEOUT_RANGE,
    CUSTOM_RESOURCE_TIMEOUT_MINUTES,
    DEFAULT_TRITON_TAG,
    ENDPOINT_NAME_PATTERN,
    GPU_MME_INSTANCE_TYPES,
    GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE,
    GUARDRAIL_TERMINATION_WAIT_SECONDS_RANGE,
    GUARDRAIL_WAIT_SECONDS_RANGE,
    INVOKE_ENDPOINT_TIMEOUT_SECONDS,
    TRITON_IMAGE_TAGS,
    gpu_instance,
)
from triton_mme.planner.defaults import DEFAULT_GPU_UTILIZATION_TARGET
from triton_mme_cdk.deployment_rules import (
    STRATEGIES,
    CapacitySize,
    Fleet,
    Strategy,
    fleet_problem,
    instance_type_problem,
    peak_instances,
    step_problem,
    total_wait_seconds,
)
from triton_mme_cdk.platform_rules import (
    AUTO,
    build_gpu_problem,
    compute_capability_problem,
    inference_ami_problem,
    region_problem,
    resolve_inference_ami,
)

if TYPE_CHECKING:
    from aws_cdk import aws_logs as logs

__all__ = [
    "CONTEXT_KEYS",
    "GPU_MME_INSTANCE_TYPES",
    "AlarmThresholds",
    "BuildRunnerSettings",
    "EndpointSettings",
    "ScalingSettings",
    "Settings",
    "SettingsError",
    "UpdatePolicy",
]

# A sanity bound on instance counts (typos such as 50 instead of 5); raise it deliberately if needed.
MAX_INSTANCES = 100
KMS_KEY_ARN_PATTERN = re.compile(
    r"^arn:aws(?:-cn|-us-gov)?:kms:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d):\d{12}:key/"
    r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$"
)
REGION_PATTERN = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d$")
EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
# CloudWatch evaluates at most one day of periods; the alarms use 1-minute periods.
MAX_ALARM_EVALUATION_MINUTES = 1440


# CloudWatch Logs retention periods, in the order of aws_logs.RetentionDays (whose values are names).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                      2922, 3288, 3653)  # fmt: skip

# The build and its serving check run inside a custom resource, which CloudFormation waits on for at most one
# hour: queueing for a GPU runner twice, the build and the check must end this many minutes before that,
# which covers the provider's polling interval (one minute), CodeBuild's own finalizing and the handlers'
# start-up.
BUILD_DEADLINE_MARGIN_MINUTES = 5
BUILD_DEADLINE_MINUTES = CUSTOM_RESOURCE_TIMEOUT_MINUTES - BUILD_DEADLINE_MARGIN_MINUTES

# A step size may be written as a JSON number in cdk.json: 2 means "2" (instances).
NUMBER_AS_TEXT = "number-as-text"
StepSize = Annotated[str, NUMBER_AS_TEXT]


class SettingsError(ValueError):
    """A setting that cannot be used; the message is one line naming key, value and what is allowed."""


def context_key(field_name: str) -> str:
    """The camelCase context key of a flat snake_case name (`instance_type` -> `instanceType`)."""
    head, *rest = field_name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _fail(key: str, value: object, problem: str) -> SettingsError:
    return SettingsError(f"{key}={value} {problem}")


def _plain(number: float) -> str:
    return f"{number:g}"


class _Group(BaseModel):
    """A frozen group of settings whose fields are known by their context keys (aliases)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise SettingsError(describe_validation_error(error)) from None

    @classmethod
    def key(cls, field_name: str) -> str:
        alias = cls.model_fields[field_name].alias
        assert alias is not None
        return alias

    @classmethod
    def context_keys(cls) -> tuple[str, ...]:
        return tuple(cls.key(name) for name in cls.model_fields)

    @model_validator(mode="before")
    @classmethod
    def _from_context_values(cls, values: Any) -> Any:
        """Context values as the fields' types (`-c` gives strings, cdk.json JSON values); empty means the
        default."""
        if not isinstance(values, Mapping):
            return values
        by_key = {cls.key(name): name for name in cls.model_fields}
        converted: dict[str, Any] = {}
        for given, raw in values.items():
            name = given if given in cls.model_fields else by_key.get(given)
            if name is None:
                raise SettingsError(f"unknown setting {given}; allowed: " + ", ".join(cls.context_keys()))
            if raw is None or raw == "":
                continue
            field = cls.model_fields[name]
            converted[name] = _convert(cls.key(name), raw, field.annotation, field.metadata)
        return converted


def _convert(key: str, raw: Any, annotation: Any, metadata: list[Any]) -> Any:
    kinds = set(get_args(annotation)) - {type(None)} or {annotation}
    if bool in kinds:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise _fail(key, raw, "is not true or false; allowed: true, false")
    if int in kinds:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and re.fullmatch(r"[+-]?\d+", raw.strip()):
            return int(raw)
        raise _fail(key, raw, "is not a whole number; allowed: an integer such as 2")
    if float in kinds:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            number = float(raw)
        else:
            try:
                number = float(str(raw))
            except ValueError:
                raise _fail(key, raw, "is not a number; allowed: a number such as 60") from None
        if not math.isfinite(number):
            raise _fail(key, raw, "is not a finite number; allowed: a number such as 60")
        return number
    if NUMBER_AS_TEXT in metadata and isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    if isinstance(raw, Enum):
        return raw
    if not isinstance(raw, str):
        raise _fail(key, raw, "is not text; allowed: a string")
    return raw.strip()


def _retention(days: int) -> logs.RetentionDays:
    # Imported here: the settings are read without jsii's Node process too (`triton-mme plan`).
    from aws_cdk import aws_logs as logs

    finite = [member for member in logs.RetentionDays if member is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, finite, strict=True))[days]


def _retention_problem(key: str, days: int) -> SettingsError | None:
    if days in LOG_RETENTION_DAYS:
        return None
    return _fail(key, days, "is not a log retention; allowed: " + ", ".join(map(str, LOG_RETENTION_DAYS)))


class EndpointSettings(_Group):
    """The endpoint's instances, image and logs."""

    instance_type: str = Field("ml.g5.xlarge", alias="instanceType")
    triton_image_tag: str = Field(DEFAULT_TRITON_TAG, alias="tritonImageTag")
    # The SageMaker inference AMI (NVIDIA driver) of the variant; `auto` picks the newest one whose driver
    # runs the tag's CUDA natively on the instance type (triton_mme_cdk/platform_rules.py).
    inference_ami_version: str = Field(AUTO, alias="inferenceAmiVersion")
    # Without network access the container still gets its models: SageMaker downloads them (docs/platform.md).
    network_isolation: bool = Field(True, alias="networkIsolation")
    log_retention_days: int = Field(30, alias="endpointLogRetentionDays")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.instance_type not in GPU_MME_INSTANCE_TYPES:
            raise _fail(
                "instanceType",
                self.instance_type,
                "is not a single-GPU type supported by GPU multi-model endpoints; allowed: "
                + ", ".join(GPU_MME_INSTANCE_TYPES),
            )
        if self.triton_image_tag not in TRITON_IMAGE_TAGS:
            raise _fail(
                "tritonImageTag",
                self.triton_image_tag,
                "is not a known SageMaker Triton image tag; allowed: " + ", ".join(TRITON_IMAGE_TAGS),
            )
        problem = _retention_problem("endpointLogRetentionDays", self.log_retention_days)
        if problem:
            raise problem
        return self

    @property
    def volume_accepts_kms_key(self) -> bool:
        return not gpu_instance(self.instance_type).has_instance_storage

    @property
    def resolved_inference_ami(self) -> str:
        """The InferenceAmiVersion the variant gets (never `auto`)."""
        return resolve_inference_ami(self.triton_image_tag, self.instance_type, self.inference_ami_version)

    @property
    def log_retention(self) -> logs.RetentionDays:
        return _retention(self.log_retention_days)


_COUNTS = ("min_instance_count", "initial_instance_count", "max_instance_count")


class ScalingSettings(_Group):
    """The variant's instance counts and its target tracking."""

    # Target tracking on the variant; off only while changing instanceType of a deployed stack
    # (docs/first-deploy.md).
    enabled: bool = Field(True, alias="autoscaling")
    initial_instance_count: int = Field(2, alias="initialInstanceCount")
    # Two: AWS recommends at least two instances for availability, and a guarded update moves at most half
    # of the instances at a time, at least one (docs/updates.md).
    min_instance_count: int = Field(2, alias="minInstanceCount")
    max_instance_count: int = Field(5, alias="maxInstanceCount")
    # The planner plans for the same target when it reads no stack (triton_mme/planner/defaults.py).
    gpu_utilization_target: float = Field(DEFAULT_GPU_UTILIZATION_TARGET, alias="gpuUtilizationTarget")
    invocations_per_instance_target: int = Field(0, alias="invocationsPerInstanceTarget")
    scale_in_cooldown_seconds: int = Field(600, alias="scaleInCooldownSeconds")
    scale_out_cooldown_seconds: int = Field(200, alias="scaleOutCooldownSeconds")

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in _COUNTS:
            count = getattr(self, name)
            if not 1 <= count <= MAX_INSTANCES:
                raise _fail(self.key(name), count, f"is out of range; allowed: 1..{MAX_INSTANCES}")
        problem = self._count_order_problem()
        if problem:
            raise problem
        if not 0 < self.gpu_utilization_target <= 100:
            raise _fail(
                "gpuUtilizationTarget",
                _plain(self.gpu_utilization_target),
                "is out of range; allowed: (0, 100]",
            )
        if self.invocations_per_instance_target < 0:
            raise _fail(
                "invocationsPerInstanceTarget",
                self.invocations_per_instance_target,
                "is negative; allowed: 0 (no invocation-based policy) or invocations per instance per minute",
            )
        for name in ("scale_in_cooldown_seconds", "scale_out_cooldown_seconds"):
            seconds = getattr(self, name)
            if not 0 <= seconds <= 86_400:
                raise _fail(self.key(name), seconds, "is out of range; allowed: 0..86400 seconds")
        return self

    def _count_order_problem(self) -> SettingsError | None:
        """min <= initial <= max, blamed on a count that was given rather than on a default."""
        counts = {name: getattr(self, name) for name in _COUNTS}
        if counts["min_instance_count"] <= counts["initial_instance_count"] <= counts["max_instance_count"]:
            return None
        given = [name for name in _COUNTS if name in self.model_fields_set] or list(_COUNTS)
        blamed = given[-1] if "max_instance_count" in given else given[0]
        others = ", ".join(
            f"{self.key(name)}={counts[name]}" + ("" if name in self.model_fields_set else " (the default)")
            for name in _COUNTS
            if name != blamed
        )
        return _fail(
            self.key(blamed),
            counts[blamed],
            f"does not fit {others}; allowed: minInstanceCount <= initialInstanceCount <= maxInstanceCount",
        )


class AlarmThresholds(_Group):
    """When the alarms fire (triton_mme_cdk/constructs/monitoring.py), and whom they tell. Each alarm looks
    at 1-minute periods and fires when `datapoints_to_alarm` of the last `evaluation_minutes` cross its
    threshold."""

    email: str | None = Field(None, alias="alarmEmail")
    errors_5xx_per_minute: int = Field(1, alias="alarm5xxErrorsPerMinute")
    gpu_memory_percent: float = Field(90.0, alias="alarmGpuMemoryPercent")
    disk_percent: float = Field(80.0, alias="alarmDiskPercent")
    model_loading_wait_ms: int = Field(10_000, alias="alarmModelLoadingWaitMs")
    # A cold load shows in ModelLatency too (a first ResNet-50 call took about 8 s): the default catches a
    # serving regression, not a cold start.
    model_latency_p99_ms: int = Field(10_000, alias="alarmModelLatencyP99Ms")
    cache_hit_percent: float = Field(80.0, alias="alarmCacheHitPercent")
    # Thrash: more evictions a minute than this while ModelCacheHit is below 1 (docs/observability.md).
    thrash_evictions_per_minute: int = Field(5, alias="alarmThrashEvictionsPerMinute")
    evaluation_minutes: int = Field(5, alias="alarmEvaluationMinutes")
    datapoints_to_alarm: int = Field(3, alias="alarmDatapointsToAlarm")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.email is not None and not EMAIL_PATTERN.fullmatch(self.email):
            raise _fail("alarmEmail", self.email, "is not an email address; allowed: e.g. ops@example.com")
        if self.errors_5xx_per_minute < 1:
            raise _fail(
                "alarm5xxErrorsPerMinute", self.errors_5xx_per_minute, "is out of range; allowed: 1 or more"
            )
        if self.thrash_evictions_per_minute < 1:
            raise _fail(
                "alarmThrashEvictionsPerMinute",
                self.thrash_evictions_per_minute,
                "is out of range; allowed: 1 or more evictions a minute",
            )
        for name in ("gpu_memory_percent", "disk_percent", "cache_hit_percent"):
            percent = getattr(self, name)
            if not 0 < percent <= 100:
                raise _fail(self.key(name), _plain(percent), "is out of range; allowed: (0, 100] percent")
        if not 1 <= self.model_loading_wait_ms <= 3_600_000:
            raise _fail(
                "alarmModelLoadingWaitMs",
                self.model_loading_wait_ms,
                "is out of range; allowed: 1..3600000 milliseconds",
            )
        longest_latency_ms = INVOKE_ENDPOINT_TIMEOUT_SECONDS * 1000
        if not 1 <= self.model_latency_p99_ms <= longest_latency_ms:
            raise _fail(
                "alarmModelLatencyP99Ms",
                self.model_latency_p99_ms,
                f"is out of range; allowed: 1..{longest_latency_ms} milliseconds (InvokeEndpoint times out "
                f"after {INVOKE_ENDPOINT_TIMEOUT_SECONDS} s)",
            )
        if not 1 <= self.evaluation_minutes <= MAX_ALARM_EVALUATION_MINUTES:
            raise _fail(
                "alarmEvaluationMinutes",
                self.evaluation_minutes,
                f"is out of range; allowed: 1..{MAX_ALARM_EVALUATION_MINUTES} minutes",
            )
        if not 1 <= self.datapoints_to_alarm <= self.evaluation_minutes:
            raise _fail(
                "alarmDatapointsToAlarm",
                self.datapoints_to_alarm,
                f"is out of range; allowed: 1..alarmEvaluationMinutes ({self.evaluation_minutes})",
            )
        return self


_STEP_FIELDS = {
    Strategy.CANARY: "canary_size",
    Strategy.LINEAR: "linear_step_size",
    Strategy.ROLLING: "rolling_batch_size",
}
_SIZE_ALLOWED = "a number of instances such as 1, or a percentage of the instances such as 25%"


class UpdatePolicy(_Group):
    """How an endpoint update takes the traffic (docs/updates.md): step sizes as a number of instances ("1")
    or a percentage of the variant's instances ("25%"), the baking period after each step, during which the
    5XX, ModelLatency p99 and ModelLoadingWaitTime alarms roll the update back. The guardrails' ranges and
    rules come from triton_mme_cdk/deployment_rules.py (the SageMaker API reference)."""

    strategy: Strategy = Field(Strategy.CANARY, alias="deploymentStrategy")
    canary_size: StepSize = Field("1", alias="deploymentCanarySize")
    linear_step_size: StepSize = Field("1", alias="deploymentLinearStepSize")
    rolling_batch_size: StepSize = Field("1", alias="deploymentRollingBatchSize")
    rollback_batch_size: StepSize | None = Field(None, alias="deploymentRollbackBatchSize")
    wait_seconds: int = Field(600, alias="deploymentWaitSeconds")
    termination_wait_seconds: int = Field(0, alias="deploymentTerminationWaitSeconds")
    timeout_seconds: int = Field(7200, alias="deploymentTimeoutSeconds")

    @model_validator(mode="before")
    @classmethod
    def _known_strategy(cls, values: Any) -> Any:
        if isinstance(values, Mapping):
            for key in ("deploymentStrategy", "strategy"):
                given = values.get(key)
                if isinstance(given, str) and given.strip() and given.strip() not in STRATEGIES:
                    raise _fail(
                        "deploymentStrategy",
                        given,
                        "is not a deployment strategy; allowed: " + ", ".join(STRATEGIES),
                    )
        return values

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in (*_STEP_FIELDS.values(), "rollback_batch_size"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                size = CapacitySize.parse(value)
            except ValueError:
                raise _fail(self.key(name), value, f"is not a size; allowed: {_SIZE_ALLOWED}") from None
            if size.percent and size.value > 100:
                raise _fail(
                    self.key(name),
                    value,
                    "is more than the whole fleet; allowed: 1%..100% or a number of instances",
                )
        if self.rollback_batch_size is not None and self.strategy is not Strategy.ROLLING:
            raise _fail(
                "deploymentRollbackBatchSize",
                self.rollback_batch_size,
                "applies to rolling updates only; allowed: unset with "
                f"deploymentStrategy={self.strategy.value}",
            )
        for name, (low, high) in (
            ("wait_seconds", GUARDRAIL_WAIT_SECONDS_RANGE),
            ("termination_wait_seconds", GUARDRAIL_TERMINATION_WAIT_SECONDS_RANGE),
            ("timeout_seconds", GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE),
        ):
            if not low <= getattr(self, name) <= high:
                raise _fail(
                    self.key(name), getattr(self, name), f"is out of range; allowed: {low}..{high} seconds"
                )
        if self.termination_wait_seconds and not self.strategy.is_blue_green:
            raise _fail(
                "deploymentTerminationWaitSeconds",
                self.termination_wait_seconds,
                "applies to blue/green updates only; allowed: 0 with deploymentStrategy=rolling",
            )
        return self

    @property
    def step_key(self) -> str | None:
        """The context key of the chosen strategy's step (None for all at once)."""
        name = _STEP_FIELDS.get(self.strategy)
        return self.key(name) if name else None

    @property
    def step(self) -> CapacitySize | None:
        """The canary, linear step or rolling batch of the chosen strategy (None for all at once)."""
        name = _STEP_FIELDS.get(self.strategy)
        return CapacitySize.parse(getattr(self, name)) if name else None

    @property
    def rollback_step(self) -> CapacitySize | None:
        """The rolling rollback batch (None: the whole old fleet at once)."""
        return CapacitySize.parse(self.rollback_batch_size) if self.rollback_batch_size else None


class BuildRunnerSettings(_Group):
    """The GPU build runner and the serving check, on the same GPU size (triton_mme_cdk/constructs/
    build_runner.py, serving_check.py); `cdk deploy` waits for both, each queueing up to
    `queue_timeout_minutes`."""

    compute_type: str = Field("SMALL", alias="builderComputeType")
    timeout_minutes: int = Field(30, alias="buildTimeoutMinutes")
    serving_check_timeout_minutes: int = Field(15, alias="servingCheckTimeoutMinutes")
    queue_timeout_minutes: int = Field(5, alias="buildQueueTimeoutMinutes")
    log_retention_days: int = Field(30, alias="buildLogRetentionDays")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.compute_type not in CODEBUILD_GPUS:
            allowed = ", ".join(f"{name} ({gpu.gpu})" for name, gpu in CODEBUILD_GPUS.items())
            raise _fail(
                "builderComputeType", self.compute_type, f"is not a CodeBuild GPU size; allowed: {allowed}"
            )
        lowest_queue, _ = CODEBUILD_QUEUED_TIMEOUT_RANGE
        lowest_stage = CODEBUILD_MIN_BUILD_TIMEOUT_MINUTES
        # Two stages, each queueing and running: 2 x queue + build + check must end before the deadline.
        together = BUILD_DEADLINE_MINUTES - 2 * lowest_queue
        for name in ("timeout_minutes", "serving_check_timeout_minutes"):
            value = getattr(self, name)
            if not lowest_stage <= value <= together - lowest_stage:
                raise _fail(
                    self.key(name),
                    value,
                    f"is out of range; allowed: {lowest_stage}..{together - lowest_stage} (cdk deploy waits "
                    "at most an hour for the build, the serving check and their queueing)",
                )
        build, check = self.timeout_minutes, self.serving_check_timeout_minutes
        if build + check > together:
            raise SettingsError(
                f"buildTimeoutMinutes={build} and servingCheckTimeoutMinutes={check} add up to "
                f"{build + check} minutes; allowed: at most {together} together (cdk deploy waits at most an "
                "hour for the build, the serving check and their queueing)"
            )
        longest_queue = (BUILD_DEADLINE_MINUTES - build - check) // 2
        if not lowest_queue <= self.queue_timeout_minutes <= longest_queue:
            raise _fail(
                "buildQueueTimeoutMinutes",
                self.queue_timeout_minutes,
                f"is out of range with buildTimeoutMinutes={build} and servingCheckTimeoutMinutes={check}; "
                f"allowed: {lowest_queue}..{longest_queue} (both stages queue: 2 x queue + build + check "
                f"must end {BUILD_DEADLINE_MARGIN_MINUTES} minutes before cdk deploy stops waiting after "
                f"{CUSTOM_RESOURCE_TIMEOUT_MINUTES})",
            )
        problem = _retention_problem("buildLogRetentionDays", self.log_retention_days)
        if problem:
            raise problem
        return self

    @property
    def log_retention(self) -> logs.RetentionDays:
        return _retention(self.log_retention_days)


class _Top(_Group):
    """The settings outside every group: the stack, its region, its key and its catalog."""

    stack_name: str = Field("TritonMultiModelEndpoint", alias="stackName")
    region: str | None = Field(None, alias="region")
    # A region that only CodeBuild's older text names for GPU runners (docs/settings-platform.md).
    allow_unconfirmed_build_region: bool = Field(False, alias="allowUnconfirmedBuildRegion")
    model_catalog: str = Field("models.yaml", alias="modelCatalog")
    kms_key_arn: str | None = Field(None, alias="kmsKeyArn")


class Settings(BaseModel):
    """Everything the app can be told, in groups; validated on construction, frozen.

    `Settings(**flat)` and `Settings.from_context(context)` take the flat context keys (or their snake_case
    names); the groups can also be given whole (`Settings(alarms=AlarmThresholds(...))`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    GROUPS: ClassVar[dict[str, type[_Group]]] = {
        "endpoint": EndpointSettings,
        "scaling": ScalingSettings,
        "alarms": AlarmThresholds,
        "updates": UpdatePolicy,
        "build": BuildRunnerSettings,
    }

    # Always given by _into_groups, from _Top's fields (their defaults are the only ones).
    stack_name: str
    region: str | None
    allow_unconfirmed_build_region: bool
    model_catalog: str
    kms_key_arn: str | None
    endpoint: EndpointSettings = EndpointSettings()
    scaling: ScalingSettings = ScalingSettings()
    alarms: AlarmThresholds = AlarmThresholds()
    updates: UpdatePolicy = UpdatePolicy()
    build: BuildRunnerSettings = BuildRunnerSettings()

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise SettingsError(describe_validation_error(error)) from None

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> Settings:
        """Build settings from context values (strings from `-c key=value`, JSON values from cdk.json)."""
        return cls(**{key: context[key] for key in CONTEXT_KEYS if key in context})

    @model_validator(mode="before")
    @classmethod
    def _into_groups(cls, values: Any) -> Any:
        """Flat keys into their groups, each group validated (and its error raised) on its own."""
        if not isinstance(values, Mapping):
            return values
        grouped: dict[str, Any] = {}
        flat: dict[str, dict[str, Any]] = {"top": {}, **{name: {} for name in cls.GROUPS}}
        for given, raw in values.items():
            if given in cls.GROUPS:
                grouped[given] = raw
                continue
            key = context_key(given)
            owner = _KEY_GROUPS.get(key)
            if owner is None:
                raise SettingsError(f"unknown setting {given}; allowed: a key of docs/settings.md")
            flat[owner][key] = raw
        top = _Top(**flat.pop("top"))
        for name, group in cls.GROUPS.items():
            if flat[name] and name in grouped:
                raise SettingsError(f"{name} is given whole and by its keys; allowed: one of the two")
            if name not in grouped:
                grouped[name] = group(**flat[name])
        return {**top.model_dump(), **grouped}

    @model_validator(mode="after")
    def _check(self) -> Self:
        """The rules across groups: names, region and key, the platform, the updates against the fleet."""
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,127}", self.stack_name):
            raise _fail(
                "stackName", self.stack_name, "is not a valid stack name; allowed: letters, digits, hyphens"
            )
        if not re.fullmatch(ENDPOINT_NAME_PATTERN, self.endpoint_name):
            raise _fail(
                "stackName",
                self.stack_name,
                "also names the endpoint, and is not a SageMaker endpoint name; allowed: at most 63 letters, "
                "digits and hyphens, starting with a letter and not ending with a hyphen",
            )
        self._check_platform()
        self._check_kms_key()
        self._check_updates()
        problem = build_gpu_problem(self.build.compute_type, self.endpoint.triton_image_tag)
        if problem:
            raise SettingsError(problem)
        return self

    def _check_platform(self) -> None:
        """The GPU, the driver and the region must serve the tag (triton_mme_cdk/platform_rules.py)."""
        if self.region is not None and not REGION_PATTERN.fullmatch(self.region):
            raise _fail("region", self.region, "is not an AWS region name; allowed: e.g. us-east-1")
        tag, instance_type = self.endpoint.triton_image_tag, self.endpoint.instance_type
        for problem in (
            compute_capability_problem(tag, instance_type),
            inference_ami_problem(tag, instance_type, self.endpoint.inference_ami_version),
            region_problem(
                self.region, tag, allow_unconfirmed_build_region=self.allow_unconfirmed_build_region
            ),
        ):
            if problem:
                raise SettingsError(problem)

    def _check_kms_key(self) -> None:
        if self.kms_key_arn is None:
            return
        match = KMS_KEY_ARN_PATTERN.fullmatch(self.kms_key_arn)
        if match is None:
            raise _fail(
                "kmsKeyArn",
                self.kms_key_arn,
                "is not a KMS key ARN; allowed: arn:aws:kms:<region>:<account>:key/<key id>",
            )
        if self.region is not None and match["region"] != self.region:
            raise _fail(
                "kmsKeyArn",
                self.kms_key_arn,
                f"is not in the stack's region; allowed: a key in {self.region}",
            )

    def _check_updates(self) -> None:
        """The update against the fleet it moves and the alarms that roll it back."""
        updates, strategy, fleet = self.updates, self.updates.strategy, self.update_fleet
        problem = fleet_problem(strategy, fleet)
        if problem:
            bound = "minInstanceCount" if self.scaling.enabled else "initialInstanceCount (autoscaling=false)"
            raise _fail(
                "deploymentStrategy",
                strategy.value,
                f"{problem}; allowed: {bound} >= 2, or deploymentStrategy=all-at-once",
            )
        problem = instance_type_problem(strategy, self.endpoint.instance_type)
        if problem:
            raise _fail("deploymentStrategy", strategy.value, f"{problem}; allowed: all-at-once")
        step = updates.step
        if step is not None and updates.step_key is not None:
            problem = step_problem(strategy, step, fleet)
            if problem:
                raise _fail(updates.step_key, step, problem)
        # An alarm fires after alarmDatapointsToAlarm one-minute periods cross it: a shorter baking period
        # ends before any alarm could roll the update back.
        alarm_seconds = self.alarms.datapoints_to_alarm * 60
        if updates.wait_seconds < alarm_seconds:
            raise _fail(
                "deploymentWaitSeconds",
                updates.wait_seconds,
                f"is shorter than the rollback alarms need to fire (alarmDatapointsToAlarm="
                f"{self.alarms.datapoints_to_alarm} one-minute periods); allowed: "
                f"{alarm_seconds}..{GUARDRAIL_WAIT_SECONDS_RANGE[1]} seconds",
            )
        waiting = total_wait_seconds(
            strategy, step, fleet, updates.wait_seconds, updates.termination_wait_seconds
        )
        longest = GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE[1]
        if updates.timeout_seconds <= waiting:
            allowed = f"{waiting + 1}..{longest} seconds" if waiting < longest else "none: shorten the waits"
            raise _fail(
                "deploymentTimeoutSeconds",
                updates.timeout_seconds,
                f"is not longer than the update's own waiting ({waiting} s of baking and termination wait, "
                f"provisioning not counted); allowed: {allowed}",
            )

    def with_values(self, **changes: Any) -> Settings:
        """These settings with some flat keys changed, validated again."""
        return Settings(**{**self.context(), **changes})

    def context(self) -> dict[str, Any]:
        """The flat context keys and values these settings were made of (every key, defaults included)."""
        values: dict[str, Any] = _Top(**{k: getattr(self, k) for k in _Top.model_fields}).model_dump(
            by_alias=True
        )
        for name in self.GROUPS:
            values.update(getattr(self, name).model_dump(by_alias=True))
        return values

    @property
    def endpoint_name(self) -> str:
        """The endpoint is named after the stack (unique per account and region, like endpoint names)."""
        return self.stack_name

    @property
    def update_fleet(self) -> Fleet:
        """The instance counts the variant can have when an update starts: autoscaling moves it between its
        bounds, and the endpoint retains it across updates (RetainAllVariantProperties)."""
        scaling = self.scaling
        if scaling.enabled:
            return Fleet(scaling.min_instance_count, scaling.max_instance_count)
        return Fleet(scaling.initial_instance_count, scaling.initial_instance_count)

    @property
    def peak_update_instances(self) -> int:
        """The most instances of `instance_type` the endpoint runs during an update or its rollback."""
        return peak_instances(
            self.updates.strategy, self.updates.step, self.updates.rollback_step, self.update_fleet
        )


_KEY_GROUPS: dict[str, str] = {key: "top" for key in _Top.context_keys()} | {
    key: name for name, group in Settings.GROUPS.items() for key in group.context_keys()
}
CONTEXT_KEYS: tuple[str, ...] = tuple(_KEY_GROUPS)
