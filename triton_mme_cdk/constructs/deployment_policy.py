"""How an endpoint update moves traffic to the new fleet: its DeploymentConfig (docs/updates.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_sagemaker as sagemaker

from triton_mme.core.platform import MAX_ROLLBACK_ALARMS
from triton_mme_cdk.deployment_rules import CapacitySize, Strategy

_TRAFFIC_ROUTING = {
    Strategy.CANARY: "CANARY",
    Strategy.LINEAR: "LINEAR",
    Strategy.ALL_AT_ONCE: "ALL_AT_ONCE",
}
Endpoint = sagemaker.CfnEndpoint


@dataclass(frozen=True, kw_only=True)
class DeploymentPolicy:
    """A guarded update.

    `step` is the canary, linear step or rolling batch (None for all at once); `rollback_step` the rolling
    rollback batch (None: the whole old fleet at once); `wait` the baking period after every step;
    `termination_wait` how long the old fleet outlives a blue/green update (default: not at all); `timeout`
    the longest the whole update may take before SageMaker rolls it back.
    """

    strategy: Strategy
    step: CapacitySize | None
    wait: Duration
    timeout: Duration
    termination_wait: Duration | None = None
    rollback_step: CapacitySize | None = None

    def __post_init__(self) -> None:
        if (self.step is None) != (self.strategy is Strategy.ALL_AT_ONCE):
            raise ValueError(
                f"a {self.strategy.value} update needs a step size exactly when it is not all at once"
            )
        if self.rollback_step is not None and self.strategy is not Strategy.ROLLING:
            raise ValueError(f"a rollback batch applies to rolling updates only, not {self.strategy.value}")

    def deployment_config(self, alarm_names: Sequence[str]) -> Endpoint.DeploymentConfigProperty:
        """The endpoint's DeploymentConfig, rolling back when any of `alarm_names` fires."""
        if not 1 <= len(alarm_names) <= MAX_ROLLBACK_ALARMS:
            raise ValueError(
                f"an update rolls back on 1..{MAX_ROLLBACK_ALARMS} alarms, not {len(alarm_names)}"
            )
        rollback = Endpoint.AutoRollbackConfigProperty(
            alarms=[Endpoint.AlarmProperty(alarm_name=name) for name in alarm_names]
        )
        wait, timeout = int(self.wait.to_seconds()), int(self.timeout.to_seconds())
        termination = int(self.termination_wait.to_seconds()) if self.termination_wait else 0
        if self.strategy is Strategy.ROLLING:
            assert self.step is not None
            return Endpoint.DeploymentConfigProperty(
                auto_rollback_configuration=rollback,
                rolling_update_policy=Endpoint.RollingUpdatePolicyProperty(
                    maximum_batch_size=_capacity(self.step),
                    wait_interval_in_seconds=wait,
                    maximum_execution_timeout_in_seconds=timeout,
                    rollback_maximum_batch_size=_capacity(self.rollback_step) if self.rollback_step else None,
                ),
            )
        step = _capacity(self.step) if self.step else None
        routing = Endpoint.TrafficRoutingConfigProperty(
            type=_TRAFFIC_ROUTING[self.strategy],
            wait_interval_in_seconds=wait,
            canary_size=step if self.strategy is Strategy.CANARY else None,
            linear_step_size=step if self.strategy is Strategy.LINEAR else None,
        )
        return Endpoint.DeploymentConfigProperty(
            auto_rollback_configuration=rollback,
            blue_green_update_policy=Endpoint.BlueGreenUpdatePolicyProperty(
                traffic_routing_configuration=routing,
                termination_wait_in_seconds=termination,
                maximum_execution_timeout_in_seconds=timeout,
            ),
        )


def _capacity(size: CapacitySize) -> Endpoint.CapacitySizeProperty:
    return Endpoint.CapacitySizeProperty(type=size.api_type, value=size.value)
