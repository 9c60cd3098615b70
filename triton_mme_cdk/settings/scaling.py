"""The variant's instance counts and its target tracking."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from triton_mme.sizing.targets import DEFAULT_GPU_UTILIZATION_TARGET
from triton_mme_cdk.settings.base import (
    MAX_INSTANCES,
    SettingsError,
    SettingsGroup,
    plain_number,
    setting_error,
)

INSTANCE_COUNTS = ("min_instance_count", "initial_instance_count", "max_instance_count")


class ScalingSettings(SettingsGroup):
    """The variant's instance counts and its target tracking."""

    # Target tracking on the variant; off only while changing instanceType of a deployed stack
    # (docs/first-deploy.md).
    enabled: bool = Field(True, alias="autoscaling")
    initial_instance_count: int = Field(2, alias="initialInstanceCount")
    # Two: AWS recommends at least two instances for availability, and a guarded update moves at most half
    # of the instances at a time, at least one (docs/updates.md).
    min_instance_count: int = Field(2, alias="minInstanceCount")
    max_instance_count: int = Field(5, alias="maxInstanceCount")
    # The planner plans for the same target when it reads no stack (triton_mme/sizing/targets.py).
    gpu_utilization_target: float = Field(DEFAULT_GPU_UTILIZATION_TARGET, alias="gpuUtilizationTarget")
    invocations_per_instance_target: int = Field(0, alias="invocationsPerInstanceTarget")
    # Each inference component's own target tracking (a catalog's dedicated entries): invocations per copy per
    # minute (SageMakerInferenceComponentInvocationsPerCopy), between its entry's min and max copies.
    invocations_per_copy_target: int = Field(60, alias="invocationsPerCopyTarget")
    scale_in_cooldown_seconds: int = Field(600, alias="scaleInCooldownSeconds")
    scale_out_cooldown_seconds: int = Field(200, alias="scaleOutCooldownSeconds")

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in INSTANCE_COUNTS:
            count = getattr(self, name)
            if not 1 <= count <= MAX_INSTANCES:
                raise setting_error(self.key(name), count, f"is out of range; allowed: 1..{MAX_INSTANCES}")
        problem = self._count_order_problem()
        if problem:
            raise problem
        if not 0 < self.gpu_utilization_target <= 100:
            raise setting_error(
                "gpuUtilizationTarget",
                plain_number(self.gpu_utilization_target),
                "is out of range; allowed: (0, 100]",
            )
        if self.invocations_per_instance_target < 0:
            raise setting_error(
                "invocationsPerInstanceTarget",
                self.invocations_per_instance_target,
                "is negative; allowed: 0 (no invocation-based policy) or invocations per instance per minute",
            )
        if self.invocations_per_copy_target < 1:
            raise setting_error(
                "invocationsPerCopyTarget",
                self.invocations_per_copy_target,
                "is out of range; allowed: invocations per copy per minute, 1 or more",
            )
        for name in ("scale_in_cooldown_seconds", "scale_out_cooldown_seconds"):
            seconds = getattr(self, name)
            if not 0 <= seconds <= 86_400:
                raise setting_error(self.key(name), seconds, "is out of range; allowed: 0..86400 seconds")
        return self

    def _count_order_problem(self) -> SettingsError | None:
        """min <= initial <= max, blamed on a count that was given rather than on a default."""
        counts = {name: getattr(self, name) for name in INSTANCE_COUNTS}
        if counts["min_instance_count"] <= counts["initial_instance_count"] <= counts["max_instance_count"]:
            return None
        given = [name for name in INSTANCE_COUNTS if name in self.model_fields_set] or list(INSTANCE_COUNTS)
        blamed = given[-1] if "max_instance_count" in given else given[0]
        others = ", ".join(
            f"{self.key(name)}={counts[name]}" + ("" if name in self.model_fields_set else " (the default)")
            for name in INSTANCE_COUNTS
            if name != blamed
        )
        return setting_error(
            self.key(blamed),
            counts[blamed],
            f"does not fit {others}; allowed: minInstanceCount <= initialInstanceCount <= maxInstanceCount",
        )
