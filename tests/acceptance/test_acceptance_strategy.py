"""Check 3: the last update's deployment events show the steps its strategy asks for, say it fell back, or
say that they cannot tell."""

from __future__ import annotations

import datetime as dt
import json

from acceptance_support import (
    ALL_AT_ONCE_EVENTS,
    CANARY_EVENTS,
    CREATED,
    EVENT_LOG_GROUP,
    deployed,
    deployment_config,
    deployment_event,
    describe_config_response,
    describe_endpoint_response,
    describe_model_response,
    expect_events,
    expect_record,
    stubbed,
)
from botocore.stub import ANY

from triton_mme.acceptance.live import LiveEndpoint
from triton_mme.acceptance.report import AcceptanceReport, Check
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
    assert check.figures["steps"] == 2  # the canary, then the full capacity


def test_a_canary_update_that_fell_back_to_all_at_once_fails_clearly() -> None:
    check = strategy_check(ALL_AT_ONCE_EVENTS)
    assert not check.passed
    assert check.seen.startswith(f"{FELL_BACK}: one traffic step, on the full capacity")
    assert "guardrails excluded this endpoint" in (check.fix or "")
    assert check.line().startswith(
        "FAIL strategy/last-update: expected CANARY with 600 s bakes; seen SageMaker"
    )


def test_a_linear_update_that_fell_back_fails_and_one_that_stepped_passes() -> None:
    linear = deployment_config("LINEAR", bake_s=600)
    fell_back = strategy_check(ALL_AT_ONCE_EVENTS, deploymentConfig=linear)
    assert not fell_back.passed and not fell_back.cannot_tell and fell_back.seen.startswith(FELL_BACK)
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


def test_an_update_without_recorded_events_cannot_tell_and_blames_nothing() -> None:
    check = strategy_check([])
    assert not check.passed and check.cannot_tell
    assert "no deployment event of the update to TritonConfig0D2E6D52-Ab12Cd34" in check.seen
    assert "before" not in (check.fix or "") and "FailedInvocations" in (check.fix or "")
    assert check.line().startswith("CANNOT TELL strategy/last-update: ")
    report = AcceptanceReport(stack="s", endpoint="e", started="t", checks=(check,))
    assert report.failures == () and report.summary().endswith("0 failed, 1 cannot tell: accepted")


def test_events_of_another_update_do_not_count() -> None:
    logs, stubber = stubbed("logs")
    expect_record(stubber)
    other = [deployment_event(status, message, config="older-config") for status, message in CANARY_EVENTS]
    stubber.add_response(
        "filter_log_events", {"events": other}, {"logGroupName": EVENT_LOG_GROUP, "startTime": ANY}
    )
    check = check_strategy(deployed(), UPDATED_LIVE, logs)
    assert not check.passed and check.cannot_tell


def test_an_update_made_before_the_record_existed_cannot_tell_and_reads_no_event() -> None:
    logs, stubber = stubbed("logs")
    configured = UPDATED_LIVE.config["CreationTime"]
    expect_record(stubber, created=configured + dt.timedelta(minutes=1))
    check = check_strategy(deployed(), UPDATED_LIVE, logs)
    assert not check.passed and check.cannot_tell
    assert "was made before the stack's deployment-event record existed" in check.seen
    assert "make deploy" not in (check.fix or "")
    stubber.assert_no_pending_responses()


def test_a_missing_record_cannot_tell() -> None:
    logs, stubber = stubbed("logs")
    stubber.add_response("describe_log_groups", {"logGroups": []}, {"logGroupNamePrefix": EVENT_LOG_GROUP})
    check = check_strategy(deployed(), UPDATED_LIVE, logs)
    assert check.cannot_tell and f"no log group {EVENT_LOG_GROUP}" in check.seen


def test_one_traffic_step_in_undocumented_wording_cannot_tell() -> None:
    check = strategy_check([("ActivatingTraffic", "Activating traffic on 2 instance(s).")])
    assert check.cannot_tell and "one traffic step, in wording AWS shows no example of" in check.seen
    assert strategy_check([("Creating", "Launching 2 instance(s).")]).cannot_tell


def test_steps_with_the_same_message_count_apart_when_sagemaker_dates_them() -> None:
    logs, stubber = stubbed("logs")
    expect_record(stubber)
    events = []
    for started in ("2026-12-01T11:10:00Z", "2026-12-01T11:30:00Z"):
        event = deployment_event("ActivatingTraffic", "Activating traffic on 1 instance(s).")
        detail = json.loads(event["message"])
        variant = detail["detail"]["PendingDeploymentSummary"]["ProductionVariants"][0]
        variant["VariantStatus"][0]["StartTime"] = started
        events.append(event | {"message": json.dumps(detail)})
    stubber.add_response(
        "filter_log_events", {"events": events}, {"logGroupName": EVENT_LOG_GROUP, "startTime": ANY}
    )
    check = check_strategy(deployed(deploymentConfig=deployment_config("LINEAR")), UPDATED_LIVE, logs)
    assert check.passed and check.figures["steps"] == 2


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
