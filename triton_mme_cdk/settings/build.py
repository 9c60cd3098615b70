"""The GPU build runner and the serving check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from pydantic import Field, model_validator

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings.base import (
    BUILD_DEADLINE_MARGIN_MINUTES,
    LONG_BUILD_DEADLINE_MINUTES,
    SettingsError,
    SettingsGroup,
    log_retention_of,
    retention_problem,
    setting_error,
)

if TYPE_CHECKING:
    from aws_cdk import aws_logs as logs

_WAITS = (
    f"cdk deploy waits at most {PLATFORM.limits.wait_condition_timeout_minutes.value // 60} hours for the "
    "build, the serving check and their queueing, on a wait condition, docs/deploy.md#time-limit"
)
# A bound against typos, not a platform limit (none is documented for a batch's size): the account's
# concurrent-build quota for the GPU size is the real one, and preflight checks it.
MAX_BUILD_RUNNERS = 50
# Without buildRunners, synthesis takes the fewest runners, up to this many, on which both stages fit their
# timeouts (build_target.py resolve_build_runners); make preflight checks the account's concurrent GPU build
# quota against the number it took. Past it, the refusal names runners and timeouts.
AUTO_BUILD_RUNNERS_CAP = 10


class BuildRunnerSettings(SettingsGroup):
    """The GPU build runner and the serving check, on the same GPU size (triton_mme_cdk/constructs/
    build_runner.py, serving_check.py); `cdk deploy` waits for both, each queueing up to
    `queue_timeout_minutes`."""

    compute_type: str = Field("SMALL", alias="builderComputeType")
    timeout_minutes: int = Field(30, alias="buildTimeoutMinutes")
    serving_check_timeout_minutes: int = Field(15, alias="servingCheckTimeoutMinutes")
    queue_timeout_minutes: int = Field(5, alias="buildQueueTimeoutMinutes")
    log_retention_days: int = Field(30, alias="buildLogRetentionDays")
    # Runners per stage: above 1, each stage is a CodeBuild batch build of that many shards (docs/deploy.md).
    # Not given: the fewest (up to AUTO_BUILD_RUNNERS_CAP) that fit the catalog, decided with the catalog.
    runners: int = Field(1, alias="buildRunners")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.compute_type not in PLATFORM.codebuild_gpus:
            allowed = ", ".join(f"{name} ({gpu.gpu})" for name, gpu in PLATFORM.codebuild_gpus.items())
            raise setting_error(
                "builderComputeType", self.compute_type, f"is not a CodeBuild GPU size; allowed: {allowed}"
            )
        lowest_queue, highest_queue = PLATFORM.codebuild.queued_timeout_minutes_range.value
        lowest_stage = PLATFORM.codebuild.min_build_timeout_minutes.value
        # Two stages, each queueing and running: 2 x queue + build + check must end before the deadline.
        together = LONG_BUILD_DEADLINE_MINUTES - 2 * lowest_queue
        for name in ("timeout_minutes", "serving_check_timeout_minutes"):
            value = getattr(self, name)
            if not lowest_stage <= value <= together - lowest_stage:
                raise setting_error(
                    self.key(name),
                    value,
                    f"is out of range; allowed: {lowest_stage}..{together - lowest_stage} ({_WAITS})",
                )
        build, check = self.timeout_minutes, self.serving_check_timeout_minutes
        if build + check > together:
            raise SettingsError(
                f"buildTimeoutMinutes={build} and servingCheckTimeoutMinutes={check} add up to "
                f"{build + check} minutes; allowed: at most {together} together ({_WAITS})"
            )
        longest_queue = min(highest_queue, (LONG_BUILD_DEADLINE_MINUTES - build - check) // 2)
        if not lowest_queue <= self.queue_timeout_minutes <= longest_queue:
            raise setting_error(
                "buildQueueTimeoutMinutes",
                self.queue_timeout_minutes,
                f"is out of range with buildTimeoutMinutes={build} and servingCheckTimeoutMinutes={check}; "
                f"allowed: {lowest_queue}..{longest_queue} (both stages queue: 2 x queue + build + check "
                f"must end {BUILD_DEADLINE_MARGIN_MINUTES} minutes before cdk deploy stops waiting after "
                f"{PLATFORM.limits.wait_condition_timeout_minutes.value // 60} hours)",
            )
        problem = retention_problem("buildLogRetentionDays", self.log_retention_days)
        if problem:
            raise problem
        if not 1 <= self.runners <= MAX_BUILD_RUNNERS:
            raise setting_error(
                "buildRunners",
                self.runners,
                f"is out of range; allowed: 1..{MAX_BUILD_RUNNERS} (make preflight checks the account's "
                "concurrent GPU build quota)",
            )
        if self.stage_minutes > LONG_BUILD_DEADLINE_MINUTES:
            raise SettingsError(
                f"buildRunners={self.runners} runs each stage as a batch whose levels all queue and run: "
                f"{self.stage_minutes} minutes with buildQueueTimeoutMinutes={self.queue_timeout_minutes}, "
                f"buildTimeoutMinutes={build} and servingCheckTimeoutMinutes={check}; allowed: at most "
                f"{LONG_BUILD_DEADLINE_MINUTES} ({_WAITS})"
            )
        return self

    @property
    def build_stage_minutes(self) -> int:
        """The longest the build stage can take: queueing, then its timeout; a batch (buildRunners > 1) also
        queues for the build that downloads its source (BuildBatchConfig.TimeoutInMins bounds the whole
        batch from submission)."""
        return self.batch_levels(1) * self.queue_timeout_minutes + self.timeout_minutes

    @property
    def check_stage_minutes(self) -> int:
        """The serving check's: as the build's, and a batch's graph has a second level (`publish`)."""
        levels = 2 if self.runners > 1 else 1
        queues = self.batch_levels(levels) * self.queue_timeout_minutes
        return queues + levels * self.serving_check_timeout_minutes

    def batch_levels(self, levels: int) -> int:
        """Queue waits of a stage of `levels` build levels: one more for a batch's source download."""
        return levels + 1 if self.runners > 1 else levels

    @property
    def stage_minutes(self) -> int:
        """The longest the two stages can take, each queueing and running to its timeout."""
        return self.build_stage_minutes + self.check_stage_minutes

    @property
    def log_retention(self) -> logs.RetentionDays:
        return log_retention_of(self.log_retention_days)
