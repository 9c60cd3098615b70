"""Per-model figures in a bare stack: subscription, reader, Contributor Insights rules, totals, alarm."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from synth_support import bare_stack, checkov_skips, function_logging, template_logical_id, with_nag

from triton_mme.core.model_metrics import INSIGHT_RULES, TOTALS_NAMESPACE
from triton_mme_cdk.constructs.endpoint.endpoint_logs import EndpointLogs
from triton_mme_cdk.constructs.monitoring.model_observability import MODEL_LINE_TERMS, ModelObservability

ENDPOINT = "triton-mme"


@pytest.fixture(scope="module")
def built() -> tuple[Template, ModelObservability]:
    stack = bare_stack()
    endpoint_logs = EndpointLogs(
        stack, "Logs", endpoint_name=ENDPOINT, retention=logs.RetentionDays.ONE_MONTH
    )
    observability = ModelObservability(
        stack,
        "Models",
        endpoint_name=ENDPOINT,
        endpoint_log_group_name=endpoint_logs.log_group_name,
        log_group_ready=endpoint_logs.retention,
        retention=logs.RetentionDays.ONE_MONTH,
        cache_hit=cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="ModelCacheHit"),
        evictions_per_minute=7,
        alarm_topic=sns.Topic(stack, "Topic", enforce_ssl=True),
    )
    cloudwatch.Dashboard(stack, "Dashboard", widgets=[observability.dashboard_widgets()])
    return with_nag(stack), observability


def _rule_bodies(template: Template) -> dict[str, dict[str, Any]]:
    rules = template.find_resources("AWS::CloudWatch::InsightRule")
    return {
        r["Properties"]["RuleName"]: json.loads(_plain(r["Properties"]["RuleBody"])) for r in rules.values()
    }


def _plain(body: Any) -> str:
    """A rule body with the events group's reference replaced by a marker."""
    if isinstance(body, str):
        return body
    parts = body["Fn::Join"][1]
    return "".join(part if isinstance(part, str) else "EVENTS_GROUP" for part in parts)


def test_only_the_model_lines_of_the_endpoint_log_reach_the_reader(built: tuple[Template, Any]) -> None:
    template, _ = built
    pattern = " ".join(f'?"{term}"' for term in MODEL_LINE_TERMS)
    template.has_resource_properties(
        "AWS::Logs::SubscriptionFilter",
        {"LogGroupName": f"/aws/sagemaker/Endpoints/{ENDPOINT}", "FilterPattern": pattern},
    )
    subscription = next(iter(template.find_resources("AWS::Logs::SubscriptionFilter").values()))
    assert any(d.startswith("LogsRetention") for d in subscription["DependsOn"]), "after the group exists"


def test_the_reader_runs_the_shared_parser_and_writes_to_the_events_group(
    built: tuple[Template, Any],
) -> None:
    template, _ = built
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "triton_mme_cdk.constructs.monitoring.model_events_handler.handler.main",
            "Environment": {"Variables": {"ENDPOINT_NAME": ENDPOINT}},
            "LoggingConfig": {"LogGroup": {"Ref": Match.string_like_regexp("ModelsEvents")}},
        },
    )
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})


def test_the_reader_may_write_only_the_events_group(built: tuple[Template, Any]) -> None:
    """Its log is the events group (one JSON line per model event); its role writes that group alone and
    holds no AWSLambdaBasicExecutionRole, which would let it write any group."""
    template, observability = built
    reader_id = template_logical_id(observability.function)
    reader = function_logging(template)[reader_id]
    events_id = template_logical_id(observability.events)
    assert reader.log_group == {"Ref": events_id}
    assert reader.writable == [{"Fn::GetAtt": [events_id, "Arn"]}]
    assert reader.managed_policies == []
    skips = checkov_skips(template, reader_id)
    assert set(skips) == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"}
    assert "the lines stay in the endpoint's own log group" in skips["CKV_AWS_116"]
    assert set(checkov_skips(template, events_id)) == {"CKV_AWS_158"}


def test_contributor_insights_rank_models_by_each_event_without_a_metric_per_model(
    built: tuple[Template, Any],
) -> None:
    template, _ = built
    bodies = _rule_bodies(template)
    assert set(bodies) == {f"{ENDPOINT}-models-{rule}" for rule in INSIGHT_RULES}
    for rule, event in INSIGHT_RULES.items():
        body = bodies[f"{ENDPOINT}-models-{rule}"]
        assert body["LogFormat"] == "JSON"
        assert body["LogGroupNames"] == ["EVENTS_GROUP"]
        assert body["Contribution"]["Keys"] == ["$.model"]
        assert body["Contribution"]["Filters"] == [{"Match": "$.event", "In": [event]}]
    assert bodies[f"{ENDPOINT}-models-requests"]["AggregateOn"] == "Sum"
    assert bodies[f"{ENDPOINT}-models-requests"]["Contribution"]["ValueOf"] == "$.count"
    assert bodies[f"{ENDPOINT}-models-cold-loads"]["AggregateOn"] == "Count"


def test_totals_are_one_metric_per_event_for_the_endpoint(built: tuple[Template, Any]) -> None:
    template, _ = built
    filters = template.find_resources("AWS::Logs::MetricFilter")
    transformations = [f["Properties"]["MetricTransformations"][0] for f in filters.values()]
    assert sorted(t["MetricName"] for t in transformations) == ["ColdLoads", "Evictions", "FailedLoads"]
    for t in transformations:
        assert t["MetricNamespace"] == TOTALS_NAMESPACE
        assert t["Dimensions"] == [{"Key": "EndpointName", "Value": "$.endpoint"}]
    template.has_resource_properties("AWS::Logs::MetricFilter", {"FilterPattern": '{ $.event = "unload" }'})


def test_the_thrash_alarm_wants_evictions_above_the_setting_while_requests_miss(
    built: tuple[Template, Any],
) -> None:
    template, _ = built
    alarm = template.find_resources(
        "AWS::CloudWatch::Alarm", {"Properties": {"AlarmDescription": Match.string_like_regexp("evicted")}}
    )
    (properties,) = [a["Properties"] for a in alarm.values()]
    expression = next(m["Expression"] for m in properties["Metrics"] if "Expression" in m)
    assert expression == "IF(evictions > 7 AND hit < 1, 1, 0)"
    metrics = {m["Id"]: m for m in properties["Metrics"] if "MetricStat" in m}
    assert metrics["evictions"]["MetricStat"]["Metric"]["MetricName"] == "Evictions"
    assert metrics["hit"]["MetricStat"]["Metric"]["MetricName"] == "ModelCacheHit"
    assert properties["AlarmActions"] and properties["OKActions"]


def test_the_dashboard_shows_top_models_and_caller_p99(built: tuple[Template, Any]) -> None:
    template, _ = built
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for title in ("cold loads", "evictions", "failed loads", "caller p99"):
        assert f"Top models: {title}" in body
    assert body.count("insightRule") == 3
    assert "SORT(SEARCH(" in body and "TritonMme/Callers" in body
