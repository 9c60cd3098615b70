"""The endpoint's dashboard, alarms and alarm topic, on a small stack holding only an endpoint."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from dashboard_support import dashboard_widgets, widget

from triton_mme_cdk.constructs.monitoring.monitoring import COLD_START_METRICS, EndpointMonitoring
from triton_mme_cdk.settings import AlarmThresholds

ENDPOINT = "Endpoint.EndpointName"  # how the endpoint's GetAtt reads once the dashboard body is rendered
REQUESTS = "AWS/SageMaker"
INSTANCES = "/aws/sagemaker/Endpoints"
DIMENSIONS = [
    {"Name": "EndpointName", "Value": {"Fn::GetAtt": ["Endpoint", "EndpointName"]}},
    {"Name": "VariantName", "Value": "AllTraffic"},
]

# (namespace, metric, statistic) for every series the dashboard draws.
CHARTED = {
    (REQUESTS, "Invocations", "Sum"),
    (REQUESTS, "InvocationsPerInstance", "Sum"),
    (REQUESTS, "Invocation4XXErrors", "Sum"),
    (REQUESTS, "Invocation5XXErrors", "Sum"),
    *((REQUESTS, name, f"p{p}") for name in ("ModelLatency", "OverheadLatency") for p in (50, 90, 99)),
    (REQUESTS, "ModelCacheHit", "Average"),
    (REQUESTS, "ModelLoadingWaitTime", "Average"),
    (REQUESTS, "ModelLoadingWaitTime", "Maximum"),
    (REQUESTS, "ModelDownloadingTime", "Average"),
    (REQUESTS, "ModelLoadingTime", "Average"),
    (REQUESTS, "ModelUnloadingTime", "Average"),
    (INSTANCES, "LoadedModelCount", "Average"),
    (INSTANCES, "LoadedModelCount", "Sum"),
    (INSTANCES, "GPUUtilization", "Average"),
    (INSTANCES, "GPUMemoryUtilization", "Average"),
    (INSTANCES, "GPUMemoryUtilization", "Maximum"),
    (INSTANCES, "CPUUtilization", "Average"),
    (INSTANCES, "CPUUtilization", "SampleCount"),
    (INSTANCES, "MemoryUtilization", "Average"),
    (INSTANCES, "DiskUtilization", "Average"),
    (INSTANCES, "DiskUtilization", "Maximum"),
}

AT_LEAST = "GreaterThanOrEqualToThreshold"
# construct id -> (namespace, metric, statistic, threshold, comparison, treat missing data), defaults.
ALARMS = {
    "Errors5xx": (REQUESTS, "Invocation5XXErrors", "Sum", 1, AT_LEAST, "notBreaching"),
    "GpuMemoryHigh": (INSTANCES, "GPUMemoryUtilization", "Maximum", 90, AT_LEAST, "missing"),
    "DiskHigh": (INSTANCES, "DiskUtilization", "Maximum", 80, AT_LEAST, "missing"),
    "ModelLatencyP99High": (REQUESTS, "ModelLatency", "p99", 10_000_000, AT_LEAST, "notBreaching"),
    "ModelLoadingWaitHigh": (
        REQUESTS,
        "ModelLoadingWaitTime",
        "Average",
        10_000_000,
        AT_LEAST,
        "notBreaching",
    ),
    "CacheHitLow": (REQUESTS, "ModelCacheHit", "Average", 0.8, "LessThanThreshold", "notBreaching"),
}

# The thresholds of the default settings (the stack passes the settings' values).
DEFAULT_THRESHOLDS = AlarmThresholds(
    errors_5xx_per_minute=1,
    gpu_memory_percent=90.0,
    disk_percent=80.0,
    model_loading_wait_ms=10_000,
    model_latency_p99_ms=10_000,
    cache_hit_percent=80.0,
    evaluation_minutes=5,
    datapoints_to_alarm=3,
)


def synthesize(thresholds: AlarmThresholds, app: cdk.App | None = None, **props: Any) -> cdk.Stack:
    stack = cdk.Stack(app or cdk.App(), "MonitoringTest")
    endpoint = sagemaker.CfnEndpoint(stack, "Endpoint", endpoint_config_name="config")
    endpoint.override_logical_id("Endpoint")
    EndpointMonitoring(
        stack,
        "Monitoring",
        endpoint_name=endpoint.attr_endpoint_name,
        variant_name="AllTraffic",
        thresholds=thresholds,
        **props,
    )
    return stack


FULL_PROPS: dict[str, Any] = {"min_instances": 1, "max_instances": 5}
WITH_EMAIL = AlarmThresholds(**{**DEFAULT_THRESHOLDS.model_dump(), "email": "ops@example.com"})


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.from_stack(synthesize(WITH_EMAIL, **FULL_PROPS))


def charted_series(template: Template) -> list[tuple[str, str, dict[str, str], str]]:
    series = []
    for graph in dashboard_widgets(template):
        for entry in graph["properties"].get("metrics", []):
            if "expression" in entry[0]:
                continue
            namespace, name, *dimension_pairs, options = entry
            dimensions = dict(zip(dimension_pairs[::2], dimension_pairs[1::2], strict=True))
            # The dashboard leaves out "stat" for Average, CloudWatch's default.
            series.append((namespace, name, dimensions, options.get("stat", "Average")))
    return series


def test_dashboard_charts_every_metric_in_its_namespace_with_its_statistic(template: Template) -> None:
    charted = {(namespace, name, stat) for namespace, name, _, stat in charted_series(template)}
    assert charted == CHARTED


def test_every_charted_metric_is_filtered_to_the_endpoint_variant(template: Template) -> None:
    series = charted_series(template)
    assert series
    for _, name, dimensions, _ in series:
        assert dimensions == {"EndpointName": ENDPOINT, "VariantName": "AllTraffic"}, name


def test_every_charted_metric_uses_one_minute_periods(template: Template) -> None:
    for graph in dashboard_widgets(template):
        for entry in graph["properties"].get("metrics", []):
            assert entry[-1]["period"] == 60, entry


def test_latency_graphs_show_p50_p90_p99_in_microseconds(template: Template) -> None:
    for name in ("ModelLatency", "OverheadLatency"):
        graph = widget(template, f"{name} (µs)")["properties"]
        assert [entry[-1]["stat"] for entry in graph["metrics"]] == ["p50", "p90", "p99"]
        assert graph["yAxis"]["left"]["label"] == "µs"


def test_instance_count_is_invocations_over_invocations_per_instance(template: Template) -> None:
    graph = widget(template, "Instances")["properties"]
    expression, *inputs = graph["metrics"]
    assert expression[0]["expression"] == "invocations / perInstance"
    ids = {entry[-1].get("id"): (entry[1], entry[-1]["stat"]) for entry in inputs}
    assert ids["invocations"] == ("Invocations", "Sum")
    assert ids["perInstance"] == ("InvocationsPerInstance", "Sum")
    assert ("CPUUtilization", "SampleCount") in ids.values()
    annotations = {a["label"]: a["value"] for a in graph["annotations"]["horizontal"]}
    assert annotations == {"min instances": 1, "max instances": 5}


@pytest.mark.parametrize(
    ("title", "threshold"),
    [
        ("Errors", 1),
        ("GPU (%)", 90),
        ("Disk (%)", 80),
        ("Model loading wait (µs)", 10_000_000),
        ("ModelLatency (µs)", 10_000_000),
        ("Model cache hit ratio", 0.8),
    ],
)
def test_alarm_thresholds_are_drawn_on_their_graphs(template: Template, title: str, threshold: float) -> None:
    annotations = widget(template, title)["properties"]["annotations"]["horizontal"]
    assert [a["value"] for a in annotations] == [threshold]


def test_alarm_status_widget_lists_every_alarm(template: Template) -> None:
    [status] = [w for w in dashboard_widgets(template) if w["type"] == "alarm"]
    alarm_ids = set(template.find_resources("AWS::CloudWatch::Alarm"))
    assert {arn.removesuffix(".Arn") for arn in status["properties"]["alarms"]} == alarm_ids


@pytest.mark.parametrize("alarm_id", ALARMS)
def test_alarm_watches_its_metric_and_notifies_the_topic(template: Template, alarm_id: str) -> None:
    namespace, name, stat, threshold, comparison, missing = ALARMS[alarm_id]
    [topic] = template.find_resources("AWS::SNS::Topic")
    alarms = template.find_resources(
        "AWS::CloudWatch::Alarm",
        {
            "Properties": {
                "Metrics": [
                    Match.object_like(
                        {
                            "MetricStat": {
                                "Metric": {
                                    "Namespace": namespace,
                                    "MetricName": name,
                                    "Dimensions": DIMENSIONS,
                                },
                                "Period": 60,
                                "Stat": stat,
                            }
                        }
                    )
                ],
                "Threshold": threshold,
                "ComparisonOperator": comparison,
                "EvaluationPeriods": 5,
                "DatapointsToAlarm": 3,
                "TreatMissingData": missing,
                "AlarmActions": [{"Ref": topic}],
                "OKActions": [{"Ref": topic}],
            }
        },
    )
    assert [logical_id for logical_id in alarms if alarm_id in logical_id] == list(alarms)
    assert len(alarms) == 1


def test_exactly_the_six_alarms_exist(template: Template) -> None:
    template.resource_count_is("AWS::CloudWatch::Alarm", len(ALARMS))


def test_no_alarm_has_a_physical_name(template: Template) -> None:
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        assert "AlarmName" not in alarm["Properties"]


def test_only_alarms_a_fleet_with_cold_caches_cannot_trip_guard_updates() -> None:
    stack = synthesize(DEFAULT_THRESHOLDS)
    monitoring = stack.node.find_child("Monitoring")
    assert isinstance(monitoring, EndpointMonitoring)
    watched = {alarm.node.id: alarm.metric.metric_name for alarm in monitoring.rollback_alarms}
    assert watched, "an update needs at least one rollback alarm"
    assert not set(watched.values()) & COLD_START_METRICS, watched
    # The alarms that do watch a cold-start metric still notify.
    notifying = {alarm.metric.metric_name for alarm in monitoring.alarms.values()}
    assert {"ModelLatency", "ModelLoadingWaitTime"} <= notifying


def test_an_alarm_on_a_cold_start_metric_cannot_guard_updates() -> None:
    stack = synthesize(DEFAULT_THRESHOLDS)
    monitoring = stack.node.find_child("Monitoring")
    assert isinstance(monitoring, EndpointMonitoring)
    with pytest.raises(ValueError, match=r"^LoadWait: a fleet with cold caches moves ModelLoadingWaitTime$"):
        monitoring._alarm(
            "LoadWait",
            monitoring.metrics.model_loading_time("ModelLoadingWaitTime"),
            threshold=1,
            missing=cloudwatch.TreatMissingData.NOT_BREACHING,
            description="d",
            guards_updates=True,
        )


def test_the_p99_alarm_ignores_minutes_with_too_few_requests_to_be_a_percentile(template: Template) -> None:
    for logical_id, alarm in template.find_resources("AWS::CloudWatch::Alarm").items():
        expected = "ignore" if "ModelLatencyP99High" in logical_id else None
        assert alarm["Properties"].get("EvaluateLowSampleCountPercentile") == expected, logical_id


def test_thresholds_come_from_settings_and_wait_time_is_converted_to_microseconds() -> None:
    thresholds = AlarmThresholds(
        errors_5xx_per_minute=4,
        gpu_memory_percent=95,
        disk_percent=70,
        model_loading_wait_ms=2500,
        model_latency_p99_ms=750,
        cache_hit_percent=95,
        evaluation_minutes=10,
        datapoints_to_alarm=2,
    )
    template = Template.from_stack(synthesize(thresholds))
    expected = {
        "Invocation5XXErrors": 4,
        "GPUMemoryUtilization": 95,
        "DiskUtilization": 70,
        "ModelLoadingWaitTime": 2_500_000,
        "ModelLatency": 750_000,
        "ModelCacheHit": 0.95,
    }
    for name, threshold in expected.items():
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Metrics": [
                    Match.object_like(
                        {"MetricStat": Match.object_like({"Metric": Match.object_like({"MetricName": name})})}
                    )
                ],
                "Threshold": threshold,
                "EvaluationPeriods": 10,
                "DatapointsToAlarm": 2,
            },
        )
    # Without min/max instances the instance graph carries no capacity lines.
    assert "annotations" not in widget(template, "Instances")["properties"]


def test_topic_is_encrypted_with_a_rotated_key_that_cloudwatch_may_use(template: Template) -> None:
    [key] = template.find_resources("AWS::KMS::Key", {"DeletionPolicy": "Delete"})
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key, "Arn"]}})
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                                "Condition": Match.object_like(
                                    {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
                                ),
                            }
                        )
                    ]
                )
            },
        },
    )


def test_topic_refuses_publishing_without_tls(template: Template) -> None:
    [topic] = template.find_resources("AWS::SNS::Topic")
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "sns:Publish",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_topic_lets_only_this_accounts_alarms_publish(template: Template) -> None:
    # The topic policy replaces SNS's default one: without this Allow, no alarm reaches the topic.
    [topic] = template.find_resources("AWS::SNS::Topic")
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "AllowCloudWatchAlarmsToPublish",
                            "Effect": "Allow",
                            "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            "Action": "sns:Publish",
                            "Resource": {"Ref": topic},
                            "Condition": {
                                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                                "ArnLike": {
                                    "aws:SourceArn": {
                                        "Fn::Join": [
                                            "",
                                            [
                                                "arn:",
                                                {"Ref": "AWS::Partition"},
                                                ":cloudwatch:",
                                                {"Ref": "AWS::Region"},
                                                ":",
                                                {"Ref": "AWS::AccountId"},
                                                ":alarm:*",
                                            ],
                                        ]
                                    }
                                },
                            },
                        }
                    ]
                )
            },
        },
    )


def test_alarm_email_subscribes_to_the_topic(template: Template) -> None:
    [topic] = template.find_resources("AWS::SNS::Topic")
    template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "email", "Endpoint": "ops@example.com", "TopicArn": {"Ref": topic}},
    )


def test_no_subscription_without_an_alarm_email() -> None:
    Template.from_stack(synthesize(DEFAULT_THRESHOLDS)).resource_count_is("AWS::SNS::Subscription", 0)


def test_cdk_nag_finds_nothing() -> None:
    app = cdk.App()
    synthesize(WITH_EMAIL, app, **FULL_PROPS)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises "Validation failed" on any AwsSolutions finding
