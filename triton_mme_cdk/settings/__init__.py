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

from triton_mme_cdk.settings.alarms import AlarmThresholds
from triton_mme_cdk.settings.app_settings import CONTEXT_KEYS, Settings
from triton_mme_cdk.settings.base import (
    BUILD_DEADLINE_MARGIN_MINUTES,
    LOG_RETENTION_DAYS,
    LONG_BUILD_DEADLINE_MINUTES,
    MAX_INSTANCES,
    SettingsError,
    context_key,
)
from triton_mme_cdk.settings.build import BuildRunnerSettings
from triton_mme_cdk.settings.endpoint import EndpointSettings
from triton_mme_cdk.settings.scaling import ScalingSettings
from triton_mme_cdk.settings.updates import UpdatePolicy

__all__ = [
    "BUILD_DEADLINE_MARGIN_MINUTES",
    "CONTEXT_KEYS",
    "LOG_RETENTION_DAYS",
    "LONG_BUILD_DEADLINE_MINUTES",
    "MAX_INSTANCES",
    "AlarmThresholds",
    "BuildRunnerSettings",
    "EndpointSettings",
    "ScalingSettings",
    "Settings",
    "SettingsError",
    "UpdatePolicy",
    "context_key",
]
