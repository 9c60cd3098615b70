"""Check 3: the last update's deployment events show the steps its strategy asks for, or say it fell back."""

from __future__ import annotations

import datetime as dt

from acceptance_support import (
    ALL_AT_ONCE_EVENTS,
    CANARY_EVENTS,
    CREATED,
    deployed,
    deployment_config,
    describe_config_response,
    describe_endpoint_response,
    describe_model_response,
    expect_events,
    stubbed,
)

from triton_mme.acceptance.live import LiveEndpoint
from triton_mme.acceptance.report import Check
from triton_mme.acceptance.strategy import FELL_BACK, check_strategy

UPDATED_LIVE = LiveEndpoint(
    describe_endpoint_response(), describe_config_response(), describe_model_response()
)


def strategy_check(
    events: list[tuple[str, str]], *, live: LiveEndpoint = UPDATED_LIVE, **settings: object
) -> Check:
    logs, stubber = stubbed("logs")
    expect_events(stubber, events)
    check = check_strategy(deployed(**settings), live, logs)
    return check


def test_a_canary_update_that_ran_its_steps_passes_with_its_bake_time() -> None:
    check = strategy_check(CANARY_EVENTS)
    assert check.passed, check.line()
    assert check.expected == "CANARY with 600 s bakes"
    assert "bakes [600, 600] s" in check.seen
    assert check.figures["steps"] == 1


def test_a_canary_update_that_fell_back_to_all_at_once_fails_clearly() -> None:
    check = strategy_check(ALL_AT_ONCE_EVENTS)
    assert not check.passed
    assert check.seen.startswith(f"{FELL_BACK}: 0 partial traffic step(s)")
    assert "guardrails excluded this endpoint" in (check.fix or "")
    assert check.line().startswith(
        "FAIL strategy/last-update: expected CANARY with 600 s bakes; seen SageMaker"
    )


def test_a_linear_update_needs_several_partial_steps() -> None:
    linear = deployment_config("LINEAR", bake_s=600)
    one_step = strategy_check(CANARY_EVENTS, deploymentConfig=linear)
    assert not one_step.passed and one_step.seen.startswith(FELL_BACK)
    steps = [
        ("ActivatingTraffic", "Activating traffic on 1 instance(s)."),
        (
            "Baking",
            "Baking for 600 seconds (TerminationWaitInSeconds) with traffic enabled on 1 instance(s).",
        ),
        ("ActivatingTraffic", "Activating traffic on 2 instance(s)."),
        (
            "Baking",
            "Baking for 600 seconds (TerminationWaitInSeconds) with traffic enabled on 2 instance(s).",
        ),
    ]
    assert strategy_check(steps, deploymentConfig=linear).passed


def test_a_bake_time_that_is_not_the_stacks_fails() -> None:
    check = strategy_check(CANARY_EVENTS, deploymentConfig=deployment_config(bake_s=300))
    assert not check.passed
    assert check.seen.startswith("the first step baked 600 s")


def test_an_update_without_recorded_events_fails_and_says_why() -> None:
    check = strategy_check([])
    assert not check.passed
    assert "no deployment event of the update to TritonConfig0D2E6D52-Ab12Cd34" in check.seen


def test_events_of_another_update_do_not_count() -> None:
    logs, stubber = stubbed("logs")
    from acceptance_support import EVENT_LOG_GROUP, deployment_event
    from botocore.stub import ANY

    other = [deployment_event(status, message, config="older-config") for status, message in CANARY_EVENTS]
    stubber.add_response(
        "filter_log_events", {"events": other}, {"logGroupName": EVENT_LOG_GROUP, "startTime": ANY}
    )
    assert not check_strategy(deployed(), UPDATED_LIVE, logs).passed


def test_an_endpoint_created_with_its_config_has_no_update_to_check() -> None:
    config = describe_config_response() | {"CreationTime": CREATED - dt.timedelta(minutes=5)}
    live = LiveEndpoint(describe_endpoint_response(), config, describe_model_response())
    logs, stubber = stubbed("logs")
    check = check_strategy(deployed(), live, logs)
    assert check.passed and "no update to check yet" in check.seen
    stubber.assert_no_pending_responses()  # nothing read


def test_an_all_at_once_stack_passes_without_events() -> None:
    logs, _ = stubbed("logs")
    check = check_strategy(deployed(deploymentConfig=None), UPDATED_LIVE, logs)
    assert check.passed and check.expected == "ALL_AT_ONCE"
