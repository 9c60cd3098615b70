"""All the settings in their groups: one frozen model, validated on construction."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from triton_mme.core.errors import describe_validation_error
from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings.alarms import AlarmThresholds
from triton_mme_cdk.settings.base import (
    KMS_KEY_ARN_PATTERN,
    REGION_PATTERN,
    SettingsError,
    SettingsGroup,
    context_key,
    setting_error,
)
from triton_mme_cdk.settings.build import BuildRunnerSettings
from triton_mme_cdk.settings.deployment_rules import (
    Fleet,
    fleet_problem,
    instance_type_problem,
    peak_instances,
    step_problem,
    total_wait_seconds,
)
from triton_mme_cdk.settings.endpoint import EndpointSettings
from triton_mme_cdk.settings.platform_rules import (
    build_gpu_problem,
    compute_capability_problem,
    inference_ami_problem,
    region_problem,
)
from triton_mme_cdk.settings.scaling import ScalingSettings
from triton_mme_cdk.settings.updates import UpdatePolicy


class TopSettings(SettingsGroup):
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

    GROUPS: ClassVar[dict[str, type[SettingsGroup]]] = {
        "endpoint": EndpointSettings,
        "scaling": ScalingSettings,
        "alarms": AlarmThresholds,
        "updates": UpdatePolicy,
        "build": BuildRunnerSettings,
    }

    # Always given by _into_groups, from TopSettings's fields (their defaults are the only ones).
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
            owner = KEY_GROUPS.get(key)
            if owner is None:
                raise SettingsError(f"unknown setting {given}; allowed: a key of docs/settings.md")
            flat[owner][key] = raw
        top = TopSettings(**flat.pop("top"))
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
            raise setting_error(
                "stackName", self.stack_name, "is not a valid stack name; allowed: letters, digits, hyphens"
            )
        if not re.fullmatch(PLATFORM.limits.endpoint_name_pattern.value, self.endpoint_name):
            raise setting_error(
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
        """The GPU, the driver and the region must serve the tag (platform_rules.py)."""
        if self.region is not None and not REGION_PATTERN.fullmatch(self.region):
            raise setting_error("region", self.region, "is not an AWS region name; allowed: e.g. us-east-1")
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
            raise setting_error(
                "kmsKeyArn",
                self.kms_key_arn,
                "is not a KMS key ARN; allowed: arn:aws:kms:<region>:<account>:key/<key id>",
            )
        if self.region is not None and match["region"] != self.region:
            raise setting_error(
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
            raise setting_error(
                "deploymentStrategy",
                strategy.value,
                f"{problem}; allowed: {bound} >= 2, or deploymentStrategy=all-at-once",
            )
        problem = instance_type_problem(strategy, self.endpoint.instance_type)
        if problem:
            raise setting_error("deploymentStrategy", strategy.value, f"{problem}; allowed: all-at-once")
        step = updates.step
        if step is not None and updates.step_key is not None:
            problem = step_problem(strategy, step, fleet)
            if problem:
                raise setting_error(updates.step_key, step, problem)
        # An alarm fires after alarmDatapointsToAlarm one-minute periods cross it: a shorter baking period
        # ends before any alarm could roll the update back.
        alarm_seconds = self.alarms.datapoints_to_alarm * 60
        if updates.wait_seconds < alarm_seconds:
            raise setting_error(
                "deploymentWaitSeconds",
                updates.wait_seconds,
                f"is shorter than the rollback alarms need to fire (alarmDatapointsToAlarm="
                f"{self.alarms.datapoints_to_alarm} one-minute periods); allowed: "
                f"{alarm_seconds}..{PLATFORM.limits.guardrails.wait_seconds_range[1]} seconds",
            )
        waiting = total_wait_seconds(
            strategy, step, fleet, updates.wait_seconds, updates.termination_wait_seconds
        )
        longest = PLATFORM.limits.guardrails.max_execution_seconds_range[1]
        if updates.timeout_seconds <= waiting:
            allowed = f"{waiting + 1}..{longest} seconds" if waiting < longest else "none: shorten the waits"
            raise setting_error(
                "deploymentTimeoutSeconds",
                updates.timeout_seconds,
                f"is not longer than the update's own waiting ({waiting} s of baking and termination wait, "
                f"provisioning not counted); allowed: {allowed}",
            )

    def with_values(self, **changes: Any) -> Settings:
        """These settings with some flat keys changed, validated again; a buildRunners left to synthesis stays
        so (triton_mme_cdk/settings/build_target.py resolve_build_runners)."""
        given = self.context()
        if "runners" not in self.build.model_fields_set:
            given.pop(BuildRunnerSettings.key("runners"))
        return Settings(**{**given, **changes})

    def context(self) -> dict[str, Any]:
        """The flat context keys and values these settings were made of (every key, defaults included)."""
        values: dict[str, Any] = TopSettings(
            **{k: getattr(self, k) for k in TopSettings.model_fields}
        ).model_dump(by_alias=True)
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


KEY_GROUPS: dict[str, str] = {key: "top" for key in TopSettings.context_keys()} | {
    key: name for name, group in Settings.GROUPS.items() for key in group.context_keys()
}
CONTEXT_KEYS: tuple[str, ...] = tuple(KEY_GROUPS)
