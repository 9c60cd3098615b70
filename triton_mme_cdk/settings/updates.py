"""How an endpoint update takes the traffic, and how it rolls back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, model_validator

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings.base import SettingsGroup, StepSize, setting_error
from triton_mme_cdk.settings.deployment_rules import (
    STRATEGIES,
    CapacitySize,
    Strategy,
)

STEP_FIELDS = {
    Strategy.CANARY: "canary_size",
    Strategy.LINEAR: "linear_step_size",
    Strategy.ROLLING: "rolling_batch_size",
}
SIZE_ALLOWED = "a number of instances such as 1, or a percentage of the instances such as 25%"


class UpdatePolicy(SettingsGroup):
    """How an endpoint update takes the traffic (docs/updates.md): step sizes as a number of instances ("1")
    or a percentage of the variant's instances ("25%"), the baking period after each step, during which the
    5XX, ModelLatency p99 and ModelLoadingWaitTime alarms roll the update back. The guardrails' ranges and
    rules come from triton_mme_cdk/settings/deployment_rules.py (the SageMaker API reference)."""

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
                    raise setting_error(
                        "deploymentStrategy",
                        given,
                        "is not a deployment strategy; allowed: " + ", ".join(STRATEGIES),
                    )
        return values

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in (*STEP_FIELDS.values(), "rollback_batch_size"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                size = CapacitySize.parse(value)
            except ValueError:
                raise setting_error(
                    self.key(name), value, f"is not a size; allowed: {SIZE_ALLOWED}"
                ) from None
            if size.percent and size.value > 100:
                raise setting_error(
                    self.key(name),
                    value,
                    "is more than the whole fleet; allowed: 1%..100% or a number of instances",
                )
        if self.rollback_batch_size is not None and self.strategy is not Strategy.ROLLING:
            raise setting_error(
                "deploymentRollbackBatchSize",
                self.rollback_batch_size,
                "applies to rolling updates only; allowed: unset with "
                f"deploymentStrategy={self.strategy.value}",
            )
        for name, (low, high) in (
            ("wait_seconds", PLATFORM.limits.guardrails.wait_seconds_range),
            ("termination_wait_seconds", PLATFORM.limits.guardrails.termination_wait_seconds_range),
            ("timeout_seconds", PLATFORM.limits.guardrails.max_execution_seconds_range),
        ):
            if not low <= getattr(self, name) <= high:
                raise setting_error(
                    self.key(name), getattr(self, name), f"is out of range; allowed: {low}..{high} seconds"
                )
        if self.termination_wait_seconds and not self.strategy.is_blue_green:
            raise setting_error(
                "deploymentTerminationWaitSeconds",
                self.termination_wait_seconds,
                "applies to blue/green updates only; allowed: 0 with deploymentStrategy=rolling",
            )
        return self

    @property
    def step_key(self) -> str | None:
        """The context key of the chosen strategy's step (None for all at once)."""
        name = STEP_FIELDS.get(self.strategy)
        return self.key(name) if name else None

    @property
    def step(self) -> CapacitySize | None:
        """The canary, linear step or rolling batch of the chosen strategy (None for all at once)."""
        name = STEP_FIELDS.get(self.strategy)
        return CapacitySize.parse(getattr(self, name)) if name else None

    @property
    def rollback_step(self) -> CapacitySize | None:
        """The rolling rollback batch (None: the whole old fleet at once)."""
        return CapacitySize.parse(self.rollback_batch_size) if self.rollback_batch_size else None
