"""Check 4: the metrics arrive with the variant's dimensions within a bounded wait; the alarms have actions
and are not in ALARM; the scalable target has the stack's bounds and its policy."""

from __future__ import annotations

from typing import Any

from acceptance_support import (
    ALARMS,
    EVERY_METRIC,
    START,
    FakeClock,
    alarm,
    deployed,
    expect_alarms,
    expect_scaling,
    metric_results,
    stubbed,
)
from botocore.stub import ANY

from triton_mme.acceptance.metrics import (
    POLL_INTERVAL_S,
    REQUIRED_METRICS,
    check_alarms,
    check_metrics_arrive,
    check_scaling,
)
from triton_mme.core.platform import PLATFORM

QUERY = {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY}


def test_the_required_metrics_are_the_six_the_dashboard_alarms_and_scaling_read() -> None:
    assert set(REQUIRED_METRICS) == EVERY_METRIC
    assert (
        REQUIRED_METRICS["GPUUtilization"]
        == REQUIRED_METRICS["LoadedModelCount"]
        == PLATFORM.limits.metrics.instance_namespace
    )
    assert (
        REQUIRED_METRICS["ModelCacheHit"]
        == REQUIRED_METRICS["Invocations"]
        == PLATFORM.limits.metrics.invocation_namespace
    )


def test_metrics_that_arrive_after_a_while_pass_without_real_waiting() -> None:
    cloudwatch, stubber = stubbed("cloudwatch")
    stubber.add_response("get_metric_data", metric_results({"GPUUtilization", "GPUMemoryUtilization"}), QUERY)
    stubber.add_response("get_metric_data", metric_results(EVERY_METRIC), QUERY)
    clock = FakeClock()
    checks = check_metrics_arrive(deployed(), cloudwatch, clock.timing, START, wait_s=600)
    assert all(check.passed for check in checks), [check.line() for check in checks]
    assert [check.name for check in checks] == list(REQUIRED_METRICS)
    assert clock.sleeps == [POLL_INTERVAL_S]
    assert checks[0].expected == (
        "/aws/sagemaker/Endpoints GPUUtilization with EndpointName=TritonMultiModelEndpoint, "
        "VariantName=AllTraffic"
    )


def test_the_queries_use_the_variants_dimensions() -> None:
    cloudwatch, stubber = stubbed("cloudwatch")
    seen: list[dict[str, Any]] = []
    cloudwatch.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData", lambda params, **_: seen.append(params)
    )
    stubber.add_response("get_metric_data", metric_results(EVERY_METRIC), QUERY)
    check_metrics_arrive(deployed(), cloudwatch, FakeClock().timing, START, wait_s=0)
    metric = seen[0]["MetricDataQueries"][0]["MetricStat"]["Metric"]
    assert metric["Dimensions"] == [
        {"Name": "EndpointName", "Value": "TritonMultiModelEndpoint"},
        {"Name": "VariantName", "Value": "AllTraffic"},
    ]


def test_a_metric_that_never_arrives_fails_after_the_bounded_wait_naming_what_exists() -> None:
    cloudwatch, stubber = stubbed("cloudwatch")
    arrived = EVERY_METRIC - {"ModelCacheHit"}
    polls = int(120 / POLL_INTERVAL_S) + 1
    for _ in range(polls):
        stubber.add_response("get_metric_data", metric_results(arrived), QUERY)
    stubber.add_response(
        "list_metrics",
        {
            "Metrics": [
                {
                    "Namespace": PLATFORM.limits.metrics.invocation_namespace,
                    "MetricName": "ModelCacheHit",
                    "Dimensions": [{"Name": "EndpointName", "Value": "TritonMultiModelEndpoint"}],
                }
            ]
        },
        {
            "Namespace": PLATFORM.limits.metrics.invocation_namespace,
            "MetricName": "ModelCacheHit",
            "Dimensions": ANY,
        },
    )
    clock = FakeClock()
    checks = {
        check.name: check for check in check_metrics_arrive(deployed(), cloudwatch, clock.timing, START, 120)
    }
    stubber.assert_no_pending_responses()
    assert sum(clock.sleeps) <= 120
    missing = checks["ModelCacheHit"]
    assert not missing.passed
    assert missing.seen == (
        "no datapoint within 120 s; ListMetrics knows it with: EndpointName=TritonMultiModelEndpoint"
    )
    assert "--metrics-wait-s" in (missing.fix or "")
    assert all(check.passed for name, check in checks.items() if name != "ModelCacheHit")


def test_alarms_with_actions_that_are_not_in_alarm_pass() -> None:
    cloudwatch, stubber = stubbed("cloudwatch")
    expect_alarms(stubber, [alarm(name) for name in ALARMS])
    checks = check_alarms(deployed(), cloudwatch)
    assert [check.passed for check in checks] == [True, True]


def test_an_alarm_in_alarm_without_an_action_or_missing_fails() -> None:
    cloudwatch, stubber = stubbed("cloudwatch")
    expect_alarms(stubber, [alarm(ALARMS[0], state="ALARM", actions=False)])
    firing, missing = check_alarms(deployed(), cloudwatch)
    assert not firing.passed
    assert "no alarm action" in firing.seen and "in ALARM since" in firing.seen
    assert not missing.passed and missing.seen == "no such alarm"


def test_an_alarm_watching_another_endpoint_fails() -> None:
    cloudwatch, stubber = stubbed("cloudwatch")
    expect_alarms(stubber, [alarm(name, endpoint="old-endpoint") for name in ALARMS])
    checks = check_alarms(deployed(), cloudwatch)
    assert not checks[0].passed and "dimensions" in checks[0].seen


def test_a_registered_target_with_the_stacks_bounds_and_its_policy_passes() -> None:
    autoscaling, stubber = stubbed("application-autoscaling")
    expect_scaling(stubber)
    bounds, policies = check_scaling(deployed(), autoscaling)
    assert bounds.passed and bounds.seen == "min 2, max 5"
    assert policies.passed, policies.line()


def test_other_bounds_or_no_target_fail() -> None:
    autoscaling, stubber = stubbed("application-autoscaling")
    expect_scaling(stubber, max_capacity=3)
    bounds, _ = check_scaling(deployed(), autoscaling)
    assert not bounds.passed and bounds.seen == "min 2, max 3"
    expect_scaling(stubber, registered=False)
    (unregistered,) = check_scaling(deployed(), autoscaling)
    assert not unregistered.passed and unregistered.seen == "no scalable target"


def test_a_stack_without_scaling_passes_without_a_call() -> None:
    autoscaling, stubber = stubbed("application-autoscaling")
    (check,) = check_scaling(deployed(scaling=None), autoscaling)
    assert check.passed
    stubber.assert_no_pending_responses()
