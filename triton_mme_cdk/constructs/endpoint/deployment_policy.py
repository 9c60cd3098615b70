"""How an endpoint update moves traffic to the new fleet: the DeploymentConfig of an UpdatePolicy
(docs/updates.md)."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_sagemaker as sagemaker

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings import UpdatePolicy
from triton_mme_cdk.settings.deployment_rules import CapacitySize, Strategy

_TRAFFIC_ROUTING = {
    Strategy.CANARY: "CANARY",
    Strategy.LINEAR: "LINEAR",
    Strategy.ALL_AT_ONCE: "ALL_AT_ONCE",
}
Endpoint = sagemaker.CfnEndpoint


def deployment_config(policy: UpdatePolicy, alarm_names: Sequence[str]) -> Endpoint.DeploymentConfigProperty:
    """The endpoint's DeploymentConfig for `policy` (the settings' `updates` group), rolling back when any
    of `alarm_names` fires."""
    most = PLATFORM.limits.guardrails.max_rollback_alarms
    if not 1 <= len(alarm_names) <= most:
        raise ValueError(f"an update rolls back on 1..{most} alarms, not {len(alarm_names)}")
    rollback = Endpoint.AutoRollbackConfigProperty(
        alarms=[Endpoint.AlarmProperty(alarm_name=name) for name in alarm_names]
    )
    strategy, step = policy.strategy, policy.step
    if strategy is Strategy.ROLLING:
        assert step is not None
        rollback_step = policy.rollback_step
        return Endpoint.DeploymentConfigProperty(
            auto_rollback_configuration=rollback,
            rolling_update_policy=Endpoint.RollingUpdatePolicyProperty(
                maximum_batch_size=_capacity(step),
                wait_interval_in_seconds=policy.wait_seconds,
                maximum_execution_timeout_in_seconds=policy.timeout_seconds,
                rollback_maximum_batch_size=_capacity(rollback_step) if rollback_step else None,
            ),
        )
    capacity = _capacity(step) if step else None
    routing = Endpoint.TrafficRoutingConfigProperty(
        type=_TRAFFIC_ROUTING[strategy],
        wait_interval_in_seconds=policy.wait_seconds,
        canary_size=capacity if strategy is Strategy.CANARY else None,
        linear_step_size=capacity if strategy is Strategy.LINEAR else None,
    )
    return Endpoint.DeploymentConfigProperty(
        auto_rollback_configuration=rollback,
        blue_green_update_policy=Endpoint.BlueGreenUpdatePolicyProperty(
            traffic_routing_configuration=routing,
            termination_wait_in_seconds=policy.termination_wait_seconds,
            maximum_execution_timeout_in_seconds=policy.timeout_seconds,
        ),
    )


def _capacity(size: CapacitySize) -> Endpoint.CapacitySizeProperty:
    return Endpoint.CapacitySizeProperty(type=size.api_type, value=size.value)
