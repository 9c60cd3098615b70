"""The deployment settings: one frozen, validated object built from flat camelCase CDK context keys.

Each dataclass field is one context key (`instance_type` <-> `instanceType`). The field defaults are the only
defaults: cdk.json holds CDK feature flags and whatever a deployment overrides. To add a setting, add a field
with its default and a check in `_validate` if it has limits (docs/settings*.md describe every setting).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


class SettingsError(ValueError):
    """A setting that cannot be used; the message is one line naming key, value and what is allowed."""


def context_key(field_name: str) -> str:
    head, *rest = field_name.split("_")
    return head + "".join(part.capitalize() for part in rest)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything the app can be told; validated on construction."""

    stack_name: str = "TritonMultiModelEndpoint"
    region: str | None = None
    # A region that only CodeBuild's older text names for GPU runners (docs/settings-platform.md).
    allow_unconfirmed_build_region: bool = False
    instance_type: str = "ml.g5.xlarge"
    initial_instance_count: int = 2
    # Two: AWS recommends at least two instances for availability, and a guarded update moves at most half
    # of the instances at a time, at least one (docs/updates.md).
    min_instance_count: int = 2
    max_instance_count: int = 5
    gpu_utilization_target: float = 60.0
    invocations_per_instance_target: int = 0
    scale_in_cooldown_seconds: int = 600
    scale_out_cooldown_seconds: int = 200
    triton_image_tag: str = DEFAULT_TRITON_TAG
    # The SageMaker inference AMI (NVIDIA driver) of the variant; `auto` picks the newest one whose driver
    # runs the tag's CUDA natively on the instance type (triton_mme_cdk/platform_rules.py).
    inference_ami_version: str = AUTO
    # Without network access the container still gets its models: SageMaker downloads them (docs/platform.md).
    network_isolation: bool = True
    endpoint_log_retention_days: int = 30
    # Target tracking on the variant; off only while changing instanceType of a deployed stack
    # (docs/first-deploy.md).
    autoscaling: bool = True
    model_catalog: str = "models.yaml"
    kms_key_arn: str | None = None
    # Alarms (see triton_mme_cdk/constructs/monitoring.py): thresholds per 1-minute period; an alarm fires
    # when
    # alarm_datapoints_to_alarm of the last alarm_evaluation_minutes periods cross its threshold.
    alarm_email: str | None = None
    alarm_5xx_errors_per_minute: int = 1
    alarm_gpu_memory_percent: float = 90.0
    alarm_disk_percent: float = 80.0
    alarm_model_loading_wait_ms: int = 10_000
    # A cold load shows in ModelLatency too (a first ResNet-50 call took about 8 s): the default catches a
    # serving regression, not a cold start.
    alarm_model_latency_p99_ms: int = 10_000
    alarm_cache_hit_percent: float = 80.0
    # Thrash: more evictions a minute than this while ModelCacheHit is below 1 (docs/observability.md).
    alarm_thrash_evictions_per_minute: int = 5
    alarm_evaluation_minutes: int = 5
    alarm_datapoints_to_alarm: int = 3
    # Endpoint updates (see docs/updates.md): how the new fleet takes the traffic, step sizes as a number of
    # instances ("1") or a percentage of the variant's instances ("25%"), the baking period after each step,
    # during which the 5XX, ModelLatency p99 and ModelLoadingWaitTime alarms roll the update back.
    deployment_strategy: str = Strategy.CANARY.value
    deployment_canary_size: str = "1"
    deployment_linear_step_size: str = "1"
    deployment_rolling_batch_size: str = "1"
    deployment_rollback_batch_size: str | None = None
    deployment_wait_seconds: int = 600
    deployment_termination_wait_seconds: int = 0
    deployment_timeout_seconds: int = 7200
    # The GPU build runner and the serving check, on the same GPU size
    # (triton_mme_cdk/constructs/build_runner.py,
    # serving_check.py); `cdk deploy` waits for both, each queueing up to build_queue_timeout_minutes.
    builder_compute_type: str = "SMALL"
    build_timeout_minutes: int = 30
    serving_check_timeout_minutes: int = 15
    build_queue_timeout_minutes: int = 5
    build_log_retention_days: int = 30

    def __post_init__(self) -> None:
        _validate(self)

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> Settings:
        """Build settings from context values (strings from `-c key=value`, JSON values from cdk.json)."""
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            key = context_key(field.name)
            raw = context.get(key)
            if raw is None or raw == "":
                continue
            values[field.name] = _convert(key, raw, str(field.type))
        order_problem = _count_order_problem(values)
        if order_problem:
            raise order_problem
        return cls(**values)

    @property
    def endpoint_name(self) -> str:
        """The endpoint is named after the stack (unique per account and region, like endpoint names)."""
        return self.stack_name

    @property
    def endpoint_volume_accepts_kms_key(self) -> bool:
        return not gpu_instance(self.instance_type).has_instance_storage

    @property
    def resolved_inference_ami(self) -> str:
        """The InferenceAmiVersion the variant gets (never `auto`)."""
        return resolve_inference_ami(self.triton_image_tag, self.instance_type, self.inference_ami_version)

    @property
    def strategy(self) -> Strategy:
        return Strategy(self.deployment_strategy)

    @property
    def update_fleet(self) -> Fleet:
        """The instance counts the variant can have when an update starts: autoscaling moves it between its
        bounds, and the endpoint retains it across updates (RetainAllVariantProperties)."""
        if self.autoscaling:
            return Fleet(self.min_instance_count, self.max_instance_count)
        return Fleet(self.initial_instance_count, self.initial_instance_count)

    @property
    def deployment_step(self) -> CapacitySize | None:
        """The canary, linear step or rolling batch of the chosen strategy (None for all at once)."""
        name = _STEP_SETTINGS.get(self.strategy)
        return CapacitySize.parse(getattr(self, name)) if name else None

    @property
    def rollback_batch(self) -> CapacitySize | None:
        return (
            CapacitySize.parse(self.deployment_rollback_batch_size)
            if self.deployment_rollback_batch_size
            else None
        )

    @property
    def peak_update_instances(self) -> int:
        """The most instances of `instance_type` the endpoint runs during an update or its rollback."""
        return peak_instances(self.strategy, self.deployment_step, self.rollback_batch, self.update_fleet)

    @property
    def build_log_retention(self) -> logs.RetentionDays:
        return _retention(self.build_log_retention_days)

    @property
    def endpoint_log_retention(self) -> logs.RetentionDays:
        return _retention(self.endpoint_log_retention_days)


def _retention(days: int) -> logs.RetentionDays:
    # Imported here: the settings are read without jsii's Node process too (`triton-mme plan`).
    from aws_cdk import aws_logs as logs

    finite = [member for member in logs.RetentionDays if member is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, finite, strict=True))[days]


CONTEXT_KEYS: tuple[str, ...] = tuple(context_key(field.name) for field in dataclasses.fields(Settings))


def _convert(key: str, raw: Any, type_name: str) -> Any:
    if type_name == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise SettingsError(f"{key}={raw} is not true or false; allowed: true, false")
    if type_name == "int":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and re.fullmatch(r"[+-]?\d+", raw.strip()):
            return int(raw)
        raise SettingsError(f"{key}={raw} is not a whole number; allowed: an integer such as 2")
    if type_name == "float":
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            number = float(raw)
        else:
            try:
                number = float(str(raw))
            except ValueError:
                raise SettingsError(f"{key}={raw} is not a number; allowed: a number such as 60") from None
        if not math.isfinite(number):
            raise SettingsError(f"{key}={raw} is not a finite number; allowed: a number such as 60")
        return number
    if key.endswith("Size") and isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)  # a step size written as a JSON number in cdk.json: 2 means "2" (instances)
    if not isinstance(raw, str):
        raise SettingsError(f"{key}={raw} is not text; allowed: a string")
    return raw.strip()


COUNT_ORDER = ("min_instance_count", "initial_instance_count", "max_instance_count")


def _count_order_problem(values: Mapping[str, Any]) -> SettingsError | None:
    """min <= initial <= max, blamed on a count the context set rather than on a default it did not."""
    defaults = {field.name: field.default for field in dataclasses.fields(Settings)}
    counts = {name: values.get(name, defaults[name]) for name in COUNT_ORDER}
    if not all(isinstance(c, int) and 1 <= c <= MAX_INSTANCES for c in counts.values()):
        return None  # _validate names the count out of range
    if counts["min_instance_count"] <= counts["initial_instance_count"] <= counts["max_instance_count"]:
        return None
    given = [name for name in COUNT_ORDER if name in values] or list(COUNT_ORDER)
    blamed = given[-1] if "max_instance_count" in given else given[0]
    others = ", ".join(
        f"{context_key(name)}={counts[name]}" + ("" if name in values else " (the default)")
        for name in COUNT_ORDER
        if name != blamed
    )
    return _fail(
        blamed,
        counts[blamed],
        f"does not fit {others}; allowed: minInstanceCount <= initialInstanceCount <= maxInstanceCount",
    )


def _fail(field_name: str, value: object, problem: str) -> SettingsError:
    return SettingsError(f"{context_key(field_name)}={value} {problem}")


def _validate(s: Settings) -> None:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,127}", s.stack_name):
        raise _fail(
            "stack_name", s.stack_name, "is not a valid stack name; allowed: letters, digits, hyphens"
        )
    if not re.fullmatch(ENDPOINT_NAME_PATTERN, s.endpoint_name):
        raise _fail(
            "stack_name",
            s.stack_name,
            "also names the endpoint, and is not a SageMaker endpoint name; allowed: at most 63 letters, "
            "digits and hyphens, starting with a letter and not ending with a hyphen",
        )
    if s.instance_type not in GPU_MME_INSTANCE_TYPES:
        raise _fail(
            "instance_type",
            s.instance_type,
            "is not a single-GPU type supported by GPU multi-model endpoints; allowed: "
            + ", ".join(GPU_MME_INSTANCE_TYPES),
        )
    for name in ("min_instance_count", "initial_instance_count", "max_instance_count"):
        count = getattr(s, name)
        if not 1 <= count <= MAX_INSTANCES:
            raise _fail(name, count, f"is out of range; allowed: 1..{MAX_INSTANCES}")
    if s.min_instance_count > s.initial_instance_count:
        raise _fail(
            "min_instance_count",
            s.min_instance_count,
            f"is above initialInstanceCount={s.initial_instance_count}; allowed: min <= initial <= max",
        )
    if s.initial_instance_count > s.max_instance_count:
        raise _fail(
            "initial_instance_count",
            s.initial_instance_count,
            f"is above maxInstanceCount={s.max_instance_count}; allowed: min <= initial <= max",
        )
    if not 0 < s.gpu_utilization_target <= 100:
        raise _fail(
            "gpu_utilization_target", _plain(s.gpu_utilization_target), "is out of range; allowed: (0, 100]"
        )
    if s.invocations_per_instance_target < 0:
        raise _fail(
            "invocations_per_instance_target",
            s.invocations_per_instance_target,
            "is negative; allowed: 0 (no invocation-based policy) or invocations per instance per minute",
        )
    for name in ("scale_in_cooldown_seconds", "scale_out_cooldown_seconds"):
        seconds = getattr(s, name)
        if not 0 <= seconds <= 86_400:
            raise _fail(name, seconds, "is out of range; allowed: 0..86400 seconds")
    if s.triton_image_tag not in TRITON_IMAGE_TAGS:
        known = ", ".join(TRITON_IMAGE_TAGS)
        raise _fail(
            "triton_image_tag",
            s.triton_image_tag,
            f"is not a known SageMaker Triton image tag; allowed: {known}",
        )
    _validate_platform(s)
    _validate_kms_key(s)
    _validate_alarms(s)
    _validate_deployment(s)
    _validate_build_runner(s)
    if s.endpoint_log_retention_days not in LOG_RETENTION_DAYS:
        raise _fail(
            "endpoint_log_retention_days",
            s.endpoint_log_retention_days,
            "is not a log retention; allowed: " + ", ".join(map(str, LOG_RETENTION_DAYS)),
        )


def _validate_platform(s: Settings) -> None:
    """The GPU, the driver and the region must serve the tag (triton_mme_cdk/platform_rules.py)."""
    if s.region is not None and not REGION_PATTERN.fullmatch(s.region):
        raise _fail("region", s.region, "is not an AWS region name; allowed: e.g. us-east-1")
    for problem in (
        compute_capability_problem(s.triton_image_tag, s.instance_type),
        inference_ami_problem(s.triton_image_tag, s.instance_type, s.inference_ami_version),
        region_problem(
            s.region, s.triton_image_tag, allow_unconfirmed_build_region=s.allow_unconfirmed_build_region
        ),
    ):
        if problem:
            raise SettingsError(problem)


def _validate_kms_key(s: Settings) -> None:
    if s.kms_key_arn is None:
        return
    match = KMS_KEY_ARN_PATTERN.fullmatch(s.kms_key_arn)
    if match is None:
        raise _fail(
            "kms_key_arn",
            s.kms_key_arn,
            "is not a KMS key ARN; allowed: arn:aws:kms:<region>:<account>:key/<key id>",
        )
    if s.region is not None and match["region"] != s.region:
        raise _fail(
            "kms_key_arn", s.kms_key_arn, f"is not in the stack's region; allowed: a key in {s.region}"
        )


def _validate_alarms(s: Settings) -> None:
    if s.alarm_email is not None and not EMAIL_PATTERN.fullmatch(s.alarm_email):
        raise _fail("alarm_email", s.alarm_email, "is not an email address; allowed: e.g. ops@example.com")
    if s.alarm_5xx_errors_per_minute < 1:
        raise _fail(
            "alarm_5xx_errors_per_minute",
            s.alarm_5xx_errors_per_minute,
            "is out of range; allowed: 1 or more",
        )
    if s.alarm_thrash_evictions_per_minute < 1:
        raise _fail(
            "alarm_thrash_evictions_per_minute",
            s.alarm_thrash_evictions_per_minute,
            "is out of range; allowed: 1 or more evictions a minute",
        )
    for name in ("alarm_gpu_memory_percent", "alarm_disk_percent", "alarm_cache_hit_percent"):
        percent = getattr(s, name)
        if not 0 < percent <= 100:
            raise _fail(name, _plain(percent), "is out of range; allowed: (0, 100] percent")
    if not 1 <= s.alarm_model_loading_wait_ms <= 3_600_000:
        raise _fail(
            "alarm_model_loading_wait_ms",
            s.alarm_model_loading_wait_ms,
            "is out of range; allowed: 1..3600000 milliseconds",
        )
    longest_latency_ms = INVOKE_ENDPOINT_TIMEOUT_SECONDS * 1000
    if not 1 <= s.alarm_model_latency_p99_ms <= longest_latency_ms:
        raise _fail(
            "alarm_model_latency_p99_ms",
            s.alarm_model_latency_p99_ms,
            f"is out of range; allowed: 1..{longest_latency_ms} milliseconds (InvokeEndpoint times out after "
            f"{INVOKE_ENDPOINT_TIMEOUT_SECONDS} s)",
        )
    if not 1 <= s.alarm_evaluation_minutes <= MAX_ALARM_EVALUATION_MINUTES:
        raise _fail(
            "alarm_evaluation_minutes",
            s.alarm_evaluation_minutes,
            f"is out of range; allowed: 1..{MAX_ALARM_EVALUATION_MINUTES} minutes",
        )
    if not 1 <= s.alarm_datapoints_to_alarm <= s.alarm_evaluation_minutes:
        raise _fail(
            "alarm_datapoints_to_alarm",
            s.alarm_datapoints_to_alarm,
            f"is out of range; allowed: 1..alarmEvaluationMinutes ({s.alarm_evaluation_minutes})",
        )


_STEP_SETTINGS = {
    Strategy.CANARY: "deployment_canary_size",
    Strategy.LINEAR: "deployment_linear_step_size",
    Strategy.ROLLING: "deployment_rolling_batch_size",
}
_SIZE_ALLOWED = "a number of instances such as 1, or a percentage of the instances such as 25%"


def _validate_deployment(s: Settings) -> None:
    """The guardrails' ranges and rules (triton_mme_cdk/deployment_rules.py, from the SageMaker API
    reference)."""
    if s.deployment_strategy not in STRATEGIES:
        raise _fail(
            "deployment_strategy",
            s.deployment_strategy,
            "is not a deployment strategy; allowed: " + ", ".join(STRATEGIES),
        )
    for name in (*_STEP_SETTINGS.values(), "deployment_rollback_batch_size"):
        value = getattr(s, name)
        if value is None:
            continue
        try:
            size = CapacitySize.parse(value)
        except ValueError:
            raise _fail(name, value, f"is not a size; allowed: {_SIZE_ALLOWED}") from None
        if size.percent and size.value > 100:
            raise _fail(
                name, value, "is more than the whole fleet; allowed: 1%..100% or a number of instances"
            )
    strategy, fleet = s.strategy, s.update_fleet
    problem = fleet_problem(strategy, fleet)
    if problem:
        bound = "minInstanceCount" if s.autoscaling else "initialInstanceCount (autoscaling=false)"
        raise _fail(
            "deployment_strategy",
            s.deployment_strategy,
            f"{problem}; allowed: {bound} >= 2, or deploymentStrategy=all-at-once",
        )
    problem = instance_type_problem(strategy, s.instance_type)
    if problem:
        raise _fail("deployment_strategy", s.deployment_strategy, f"{problem}; allowed: all-at-once")
    step = s.deployment_step
    if step is not None:
        problem = step_problem(strategy, step, fleet)
        if problem:
            raise _fail(_STEP_SETTINGS[strategy], step, problem)
    if s.deployment_rollback_batch_size is not None and strategy is not Strategy.ROLLING:
        raise _fail(
            "deployment_rollback_batch_size",
            s.deployment_rollback_batch_size,
            f"applies to rolling updates only; allowed: unset with deploymentStrategy={strategy.value}",
        )
    _validate_deployment_times(s, strategy, step, fleet)


def _validate_deployment_times(
    s: Settings, strategy: Strategy, step: CapacitySize | None, fleet: Fleet
) -> None:
    for name, (low, high) in (
        ("deployment_wait_seconds", GUARDRAIL_WAIT_SECONDS_RANGE),
        ("deployment_termination_wait_seconds", GUARDRAIL_TERMINATION_WAIT_SECONDS_RANGE),
        ("deployment_timeout_seconds", GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE),
    ):
        if not low <= getattr(s, name) <= high:
            raise _fail(name, getattr(s, name), f"is out of range; allowed: {low}..{high} seconds")
    # An alarm fires after alarmDatapointsToAlarm one-minute periods cross it: a shorter baking period ends
    # before any alarm could roll the update back.
    alarm_seconds = s.alarm_datapoints_to_alarm * 60
    if s.deployment_wait_seconds < alarm_seconds:
        raise _fail(
            "deployment_wait_seconds",
            s.deployment_wait_seconds,
            f"is shorter than the rollback alarms need to fire (alarmDatapointsToAlarm="
            f"{s.alarm_datapoints_to_alarm} one-minute periods); allowed: "
            f"{alarm_seconds}..{GUARDRAIL_WAIT_SECONDS_RANGE[1]} seconds",
        )
    if s.deployment_termination_wait_seconds and not strategy.is_blue_green:
        raise _fail(
            "deployment_termination_wait_seconds",
            s.deployment_termination_wait_seconds,
            "applies to blue/green updates only; allowed: 0 with deploymentStrategy=rolling",
        )
    waiting = total_wait_seconds(
        strategy, step, fleet, s.deployment_wait_seconds, s.deployment_termination_wait_seconds
    )
    longest = GUARDRAIL_MAX_EXECUTION_SECONDS_RANGE[1]
    if s.deployment_timeout_seconds <= waiting:
        allowed = f"{waiting + 1}..{longest} seconds" if waiting < longest else "none: shorten the waits"
        raise _fail(
            "deployment_timeout_seconds",
            s.deployment_timeout_seconds,
            f"is not longer than the update's own waiting ({waiting} s of baking and termination wait, "
            f"provisioning not counted); allowed: {allowed}",
        )


def _plain(number: float) -> str:
    return f"{number:g}"


def _validate_build_runner(s: Settings) -> None:
    if s.builder_compute_type not in CODEBUILD_GPUS:
        allowed = ", ".join(f"{name} ({gpu.gpu})" for name, gpu in CODEBUILD_GPUS.items())
        raise _fail(
            "builder_compute_type", s.builder_compute_type, f"is not a CodeBuild GPU size; allowed: {allowed}"
        )
    problem = build_gpu_problem(s.builder_compute_type, s.triton_image_tag)
    if problem:
        raise SettingsError(problem)
    lowest_queue, _ = CODEBUILD_QUEUED_TIMEOUT_RANGE
    lowest_stage = CODEBUILD_MIN_BUILD_TIMEOUT_MINUTES
    # Two stages, each queueing and running: 2 x queue + build + check must end before the deadline.
    together = BUILD_DEADLINE_MINUTES - 2 * lowest_queue
    for name in ("build_timeout_minutes", "serving_check_timeout_minutes"):
        value = getattr(s, name)
        if not lowest_stage <= value <= together - lowest_stage:
            raise _fail(
                name,
                value,
                f"is out of range; allowed: {lowest_stage}..{together - lowest_stage} (cdk deploy waits at "
                "most an hour for the build, the serving check and their queueing)",
            )
    if s.build_timeout_minutes + s.serving_check_timeout_minutes > together:
        raise SettingsError(
            f"buildTimeoutMinutes={s.build_timeout_minutes} and servingCheckTimeoutMinutes="
            f"{s.serving_check_timeout_minutes} add up to "
            f"{s.build_timeout_minutes + s.serving_check_timeout_minutes} minutes; allowed: at most "
            f"{together} together (cdk deploy waits at most an hour for the build, the serving check and "
            "their queueing)"
        )
    longest_queue = (BUILD_DEADLINE_MINUTES - s.build_timeout_minutes - s.serving_check_timeout_minutes) // 2
    if not lowest_queue <= s.build_queue_timeout_minutes <= longest_queue:
        raise _fail(
            "build_queue_timeout_minutes",
            s.build_queue_timeout_minutes,
            f"is out of range with buildTimeoutMinutes={s.build_timeout_minutes} and "
            f"servingCheckTimeoutMinutes={s.serving_check_timeout_minutes}; allowed: "
            f"{lowest_queue}..{longest_queue} (both stages queue: 2 x queue + build + check must end "
            f"{BUILD_DEADLINE_MARGIN_MINUTES} minutes before cdk deploy stops waiting after "
            f"{CUSTOM_RESOURCE_TIMEOUT_MINUTES})",
        )
    if s.build_log_retention_days not in LOG_RETENTION_DAYS:
        allowed = ", ".join(map(str, LOG_RETENTION_DAYS))
        raise _fail(
            "build_log_retention_days",
            s.build_log_retention_days,
            f"is not a log retention; allowed: {allowed}",
        )
