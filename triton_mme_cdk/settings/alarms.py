"""When the alarms fire, and whom they tell."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings.base import (
    EMAIL_PATTERN,
    MAX_ALARM_EVALUATION_MINUTES,
    SettingsGroup,
    plain_number,
    setting_error,
)


class AlarmThresholds(SettingsGroup):
    """When the alarms fire (triton_mme_cdk/constructs/monitoring/monitoring.py), and whom they tell. Each
    alarm looks at 1-minute periods and fires when `datapoints_to_alarm` of the last `evaluation_minutes`
    cross its threshold."""

    email: str | None = Field(None, alias="alarmEmail")
    errors_5xx_per_minute: int = Field(1, alias="alarm5xxErrorsPerMinute")
    gpu_memory_percent: float = Field(90.0, alias="alarmGpuMemoryPercent")
    disk_percent: float = Field(80.0, alias="alarmDiskPercent")
    model_loading_wait_ms: int = Field(10_000, alias="alarmModelLoadingWaitMs")
    # A cold load shows in ModelLatency too (a first ResNet-50 call took about 8 s): the default catches a
    # serving regression, not a cold start. It notifies only; it does not roll updates back (monitoring.py).
    model_latency_p99_ms: int = Field(10_000, alias="alarmModelLatencyP99Ms")
    cache_hit_percent: float = Field(80.0, alias="alarmCacheHitPercent")
    # Thrash: more evictions a minute than this while ModelCacheHit is below 1 (docs/observability.md).
    thrash_evictions_per_minute: int = Field(5, alias="alarmThrashEvictionsPerMinute")
    evaluation_minutes: int = Field(5, alias="alarmEvaluationMinutes")
    datapoints_to_alarm: int = Field(3, alias="alarmDatapointsToAlarm")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.email is not None and not EMAIL_PATTERN.fullmatch(self.email):
            raise setting_error(
                "alarmEmail", self.email, "is not an email address; allowed: e.g. ops@example.com"
            )
        if self.errors_5xx_per_minute < 1:
            raise setting_error(
                "alarm5xxErrorsPerMinute", self.errors_5xx_per_minute, "is out of range; allowed: 1 or more"
            )
        if self.thrash_evictions_per_minute < 1:
            raise setting_error(
                "alarmThrashEvictionsPerMinute",
                self.thrash_evictions_per_minute,
                "is out of range; allowed: 1 or more evictions a minute",
            )
        for name in ("gpu_memory_percent", "disk_percent", "cache_hit_percent"):
            percent = getattr(self, name)
            if not 0 < percent <= 100:
                raise setting_error(
                    self.key(name), plain_number(percent), "is out of range; allowed: (0, 100] percent"
                )
        if not 1 <= self.model_loading_wait_ms <= 3_600_000:
            raise setting_error(
                "alarmModelLoadingWaitMs",
                self.model_loading_wait_ms,
                "is out of range; allowed: 1..3600000 milliseconds",
            )
        longest_latency_ms = PLATFORM.limits.invoke_endpoint_timeout_seconds.value * 1000
        if not 1 <= self.model_latency_p99_ms <= longest_latency_ms:
            raise setting_error(
                "alarmModelLatencyP99Ms",
                self.model_latency_p99_ms,
                f"is out of range; allowed: 1..{longest_latency_ms} milliseconds (InvokeEndpoint times out "
                f"after {PLATFORM.limits.invoke_endpoint_timeout_seconds.value} s)",
            )
        if not 1 <= self.evaluation_minutes <= MAX_ALARM_EVALUATION_MINUTES:
            raise setting_error(
                "alarmEvaluationMinutes",
                self.evaluation_minutes,
                f"is out of range; allowed: 1..{MAX_ALARM_EVALUATION_MINUTES} minutes",
            )
        if not 1 <= self.datapoints_to_alarm <= self.evaluation_minutes:
            raise setting_error(
                "alarmDatapointsToAlarm",
                self.datapoints_to_alarm,
                f"is out of range; allowed: 1..alarmEvaluationMinutes ({self.evaluation_minutes})",
            )
        return self
