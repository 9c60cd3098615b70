"""The guardrail rules as plain functions, and the deployment settings that use them (one line each)."""

from __future__ import annotations

from typing import Any

import pytest

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings import Settings, SettingsError
from triton_mme_cdk.settings.deployment_rules import (
    CapacitySize,
    Fleet,
    Strategy,
    allowed_sizes,
    baking_periods,
    instance_type_problem,
    peak_instances,
    step_problem,
    total_wait_seconds,
    variant_count_problem,
)


def test_the_ranges_are_the_api_references() -> None:
    # SageMaker API reference (botocore's service model) and CloudFormation's AWS::SageMaker::Endpoint schema.
    assert (
        PLATFORM.limits.guardrails.wait_seconds_range
        == PLATFORM.limits.guardrails.termination_wait_seconds_range
        == (0, 3600)
    )
    assert PLATFORM.limits.guardrails.max_execution_seconds_range == (600, 28800)
    assert (
        PLATFORM.limits.guardrails.canary_percent_range,
        PLATFORM.limits.guardrails.linear_step_percent_range,
        PLATFORM.limits.guardrails.rolling_batch_percent_range,
    ) == (
        (1, 50),
        (10, 50),
        (5, 50),
    )
    assert PLATFORM.limits.guardrails.max_rollback_alarms == 10


def test_the_ranges_agree_with_botocores_service_model() -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    traffic = model.shape_for("TrafficRoutingConfig").members
    blue_green = model.shape_for("BlueGreenUpdatePolicy").members
    assert (
        traffic["WaitIntervalInSeconds"].metadata["min"],
        traffic["WaitIntervalInSeconds"].metadata["max"],
    ) == (PLATFORM.limits.guardrails.wait_seconds_range)
    timeout = blue_green["MaximumExecutionTimeoutInSeconds"].metadata
    assert (timeout["min"], timeout["max"]) == PLATFORM.limits.guardrails.max_execution_seconds_range
    termination = blue_green["TerminationWaitInSeconds"].metadata
    assert (
        termination["min"],
        termination["max"],
    ) == PLATFORM.limits.guardrails.termination_wait_seconds_range
    assert model.shape_for("AlarmList").metadata["max"] == PLATFORM.limits.guardrails.max_rollback_alarms
    assert model.shape_for("TrafficRoutingConfigType").enum == ["ALL_AT_ONCE", "CANARY", "LINEAR"]
    assert model.shape_for("CapacitySizeType").enum == [
        CapacitySize(1, False).api_type,
        CapacitySize(1, True).api_type,
    ]


@pytest.mark.parametrize(("text", "size"), [("1", CapacitySize(1, False)), (" 25% ", CapacitySize(25, True))])
def test_sizes_are_instances_or_percentages(text: str, size: CapacitySize) -> None:
    assert CapacitySize.parse(text) == size


@pytest.mark.parametrize("text", ["0", "0%", "-1", "1.5", "25 %", "a", "%"])
def test_other_sizes_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        CapacitySize.parse(text)


@pytest.mark.parametrize(
    ("strategy", "size", "fleet", "fits"),
    [
        (Strategy.CANARY, "1", Fleet(2, 5), True),
        (Strategy.CANARY, "2", Fleet(3, 5), False),  # 2 of 3 is more than half
        (Strategy.CANARY, "50%", Fleet(2, 2), True),
        (Strategy.CANARY, "25%", Fleet(2, 5), False),  # may round to no instance of 2
        (Strategy.CANARY, "25%", Fleet(4, 8), True),
        (Strategy.LINEAR, "1", Fleet(2, 10), True),
        (Strategy.LINEAR, "1", Fleet(2, 11), False),  # 1 of 11 is less than 10%
        (Strategy.LINEAR, "5%", Fleet(20, 20), False),  # below the documented 10%
        (Strategy.ROLLING, "1", Fleet(2, 20), True),
        (Strategy.ROLLING, "1", Fleet(2, 21), False),  # 1 of 21 is less than 5%
        (Strategy.ROLLING, "60%", Fleet(4, 4), False),
    ],
)
def test_a_step_must_be_its_documented_share_of_every_fleet_count_and_a_whole_instance(
    strategy: Strategy, size: str, fleet: Fleet, fits: bool
) -> None:
    assert (step_problem(strategy, CapacitySize.parse(size), fleet) is None) is fits


def test_the_allowed_sizes_are_spelled_out() -> None:
    assert allowed_sizes(Strategy.CANARY, Fleet(2, 5)) == "50% or 1 instance"
    assert allowed_sizes(Strategy.LINEAR, Fleet(4, 10)) == "25%..50% or 1..2 instances"
    assert allowed_sizes(Strategy.LINEAR, Fleet(2, 30)) == "50%"
    assert allowed_sizes(Strategy.CANARY, Fleet(1, 1)) == "none"


def test_waits_and_peak_instances_per_strategy() -> None:
    one, fleet = CapacitySize.parse("1"), Fleet(2, 5)
    assert baking_periods(Strategy.CANARY, one, fleet) == 2
    assert baking_periods(Strategy.ALL_AT_ONCE, None, fleet) == 1
    assert baking_periods(Strategy.LINEAR, CapacitySize.parse("20%"), fleet) == 5
    assert baking_periods(Strategy.ROLLING, CapacitySize.parse("2"), fleet) == 3
    assert total_wait_seconds(Strategy.CANARY, one, fleet, 600, 300) == 1500
    assert total_wait_seconds(Strategy.ROLLING, one, fleet, 600, 300) == 3000  # no termination wait
    # Blue/green runs two whole fleets; rolling adds one batch, or a whole old fleet on an unbatched rollback.
    assert peak_instances(Strategy.CANARY, one, None, fleet) == 10
    assert peak_instances(Strategy.ROLLING, one, None, fleet) == 10
    assert peak_instances(Strategy.ROLLING, one, CapacitySize.parse("1"), fleet) == 6
    assert peak_instances(Strategy.ROLLING, CapacitySize.parse("40%"), one, fleet) == 7


def test_the_documented_exclusions() -> None:
    assert instance_type_problem(Strategy.CANARY, "ml.inf1.xlarge") is not None
    assert instance_type_problem(Strategy.ALL_AT_ONCE, "ml.inf1.xlarge") is None
    assert instance_type_problem(Strategy.CANARY, "ml.g5.xlarge") is None
    assert variant_count_problem(Strategy.ROLLING, 2) is not None
    assert variant_count_problem(Strategy.LINEAR, 2) is None


# ----- the settings --------------------------------------------------------------------------------------


def test_deployment_defaults_are_a_one_instance_canary_baking_ten_minutes() -> None:
    settings = Settings()
    assert settings.updates.strategy is Strategy.CANARY
    assert settings.updates.step == CapacitySize(1, False)
    assert (settings.updates.wait_seconds, settings.updates.termination_wait_seconds) == (600, 0)
    assert settings.updates.timeout_seconds == 7200
    assert settings.updates.rollback_step is None
    assert settings.alarms.model_latency_p99_ms == 10_000
    assert settings.update_fleet == Fleet(2, 5)
    assert settings.peak_update_instances == 10


def test_deployment_settings_parse_from_the_command_line_and_json_numbers() -> None:
    settings = Settings.from_context(
        {
            "deploymentStrategy": "rolling",
            "deploymentRollingBatchSize": 1,  # a JSON number in cdk.json
            "deploymentRollbackBatchSize": "50%",
            "deploymentWaitSeconds": "300",
            "deploymentTimeoutSeconds": "3600",
            "alarmModelLatencyP99Ms": "2000",
        }
    )
    assert settings.updates.strategy is Strategy.ROLLING
    assert (settings.updates.step, settings.updates.rollback_step) == (
        CapacitySize(1, False),
        CapacitySize(50, True),
    )
    assert (settings.updates.wait_seconds, settings.updates.timeout_seconds) == (300, 3600)
    assert settings.alarms.model_latency_p99_ms == 2000
    assert settings.peak_update_instances == 5 + 3


def test_without_autoscaling_the_fleet_is_the_initial_count() -> None:
    settings = Settings(autoscaling=False, initial_instance_count=4)
    assert settings.update_fleet == Fleet(4, 4)
    assert settings.peak_update_instances == 8


def test_only_the_chosen_strategys_size_has_to_fit() -> None:
    settings = Settings(
        deployment_strategy="linear", deployment_canary_size="40", deployment_linear_step_size="50%"
    )
    assert settings.updates.step == CapacitySize(50, True)


REJECTED: list[tuple[dict[str, Any], str]] = [
    (
        {"deploymentStrategy": "blue-green"},
        r"^deploymentStrategy=blue-green is not a deployment strategy; allowed: canary, linear, all-at-once, "
        r"rolling$",
    ),
    (
        {"deploymentCanarySize": "a few"},
        r"^deploymentCanarySize=a few is not a size; allowed: a number of instances such as 1, or a "
        r"percentage ",
    ),
    ({"deploymentLinearStepSize": "0"}, r"^deploymentLinearStepSize=0 is not a size"),
    (
        {"deploymentStrategy": "rolling", "deploymentRollbackBatchSize": "150%"},
        r"^deploymentRollbackBatchSize=150% is more than the whole fleet; allowed: 1%..100% or a number",
    ),
    (
        {"deploymentCanarySize": "25%"},
        r"^deploymentCanarySize=25% does not fit a variant of 2..5 instances: a step must be 1-50% of the "
        r"instances and at least one instance; allowed: 50% or 1 instance$",
    ),
    (
        {"deploymentStrategy": "linear", "deploymentLinearStepSize": "2"},
        r"^deploymentLinearStepSize=2 does not fit a variant of 2..5 instances: a step must be 10-50% ",
    ),
    (
        {
            "deploymentStrategy": "rolling",
            "deploymentRollingBatchSize": "3%",
            "minInstanceCount": "40",
            "initialInstanceCount": "40",
            "maxInstanceCount": "40",
        },
        r"^deploymentRollingBatchSize=3% does not fit a variant of 40 instances: a step must be 5-50% ",
    ),
    (
        {"minInstanceCount": "1"},
        r"^deploymentStrategy=canary moves part of the fleet at a time, at most half of it and at least one "
        r"instance, which a variant of 1..5 instances cannot do; allowed: minInstanceCount >= 2, or "
        r"deploymentStrategy=all-at-once$",
    ),
    (
        {
            "autoscaling": "false",
            "initialInstanceCount": "1",
            "minInstanceCount": "1",
            "deploymentStrategy": "linear",
        },
        r"allowed: initialInstanceCount \(autoscaling=false\) >= 2, or deploymentStrategy=all-at-once$",
    ),
    (
        {"deploymentRollbackBatchSize": "1"},
        r"^deploymentRollbackBatchSize=1 applies to rolling updates only; allowed: unset with "
        r"deploymentStrategy=canary$",
    ),
    (
        {"deploymentWaitSeconds": "3601"},
        r"^deploymentWaitSeconds=3601 is out of range; allowed: 0..3600 seconds$",
    ),
    (
        {"deploymentWaitSeconds": "120"},
        r"^deploymentWaitSeconds=120 is shorter than the rollback alarms need to fire "
        r"\(alarmDatapointsToAlarm=3 "
        r"one-minute periods\); allowed: 180..3600 seconds$",
    ),
    ({"deploymentTerminationWaitSeconds": "-1"}, r"^deploymentTerminationWaitSeconds=-1 is out of range"),
    (
        {"deploymentStrategy": "rolling", "deploymentTerminationWaitSeconds": "60"},
        r"^deploymentTerminationWaitSeconds=60 applies to blue/green updates only",
    ),
    (
        {"deploymentTimeoutSeconds": "599"},
        r"^deploymentTimeoutSeconds=599 is out of range; allowed: 600..28800",
    ),
    (
        {"deploymentTimeoutSeconds": "1200"},
        r"^deploymentTimeoutSeconds=1200 is not longer than the update's own waiting \(1200 s of baking and "
        r"termination wait, provisioning not counted\); allowed: 1201..28800 seconds$",
    ),
    (
        {
            "deploymentStrategy": "linear",
            "deploymentWaitSeconds": "3600",
            "deploymentTimeoutSeconds": "28800",
            "minInstanceCount": "10",
            "initialInstanceCount": "10",
            "maxInstanceCount": "10",
        },
        r"^deploymentTimeoutSeconds=28800 is not longer than the update's own waiting \(36000 s "
        r".*allowed: none",
    ),
    (
        {"alarmModelLatencyP99Ms": "60001"},
        r"^alarmModelLatencyP99Ms=60001 is out of range; allowed: 1..60000 milliseconds \(InvokeEndpoint ",
    ),
    ({"alarmModelLatencyP99Ms": "0"}, r"^alarmModelLatencyP99Ms=0 is out of range"),
]


@pytest.mark.parametrize(("context", "message"), REJECTED, ids=[str(c) for c, _ in REJECTED])
def test_bad_deployment_settings_are_one_line(context: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        Settings.from_context(context)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("strategy", ["canary", "linear", "all-at-once", "rolling"])
def test_every_strategy_works_with_the_other_defaults(strategy: str) -> None:
    assert Settings(deployment_strategy=strategy).updates.strategy.value == strategy


def test_all_at_once_needs_no_second_instance() -> None:
    settings = Settings(deployment_strategy="all-at-once", min_instance_count=1, initial_instance_count=1)
    assert settings.updates.step is None and settings.peak_update_instances == 10
