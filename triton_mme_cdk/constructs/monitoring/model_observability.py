"""Per-model figures of the multi-model endpoint from its own log: which models load cold, get evicted, fail.

SageMaker publishes no per-model metric for a multi-model endpoint. Triton, at info level, writes a line
naming the model for every load, unload, failed load and invocation to /aws/sagemaker/Endpoints/<name>.
A subscription sends just those lines to a small function that writes one JSON line per model event to a
log group of its own; there, Contributor Insights rules rank TargetModels (top-N by cold loads, evictions,
failed loads, requests; no custom metric per model) and metric filters count endpoint-wide totals (one
metric each). Why this shape and what it costs: docs/observability.md.
"""

from __future__ import annotations

import json

from aws_cdk import Annotations, CfnResource, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as destinations
from aws_cdk import aws_sns as sns
from constructs import Construct, IDependable

from triton_mme.core.model_metrics import (
    ENDPOINT_DIMENSION,
    INSIGHT_RULES,
    TOTAL_METRICS,
    TOTALS_NAMESPACE,
    insight_rule_name,
)
from triton_mme_cdk.constructs.build.runner_source import runner_source
from triton_mme_cdk.constructs.functions.function_role import function_role
from triton_mme_cdk.constructs.monitoring.top_models import insight_rule_body, top_model_widgets
from triton_mme_cdk.constructs.scanners.checkov import LOG_GROUP_KEY_REASON, skip_checks, skip_function_checks
from triton_mme_cdk.runner_files import shipped_files

# What the function runs: its handler and the log parser it shares with `triton-mme models --local`.
HANDLER_FILES = (
    "triton_mme_cdk/__init__.py",
    "triton_mme_cdk/constructs/__init__.py",
    "triton_mme_cdk/constructs/monitoring/__init__.py",
    "triton_mme_cdk/constructs/monitoring/model_events_handler/__init__.py",
    "triton_mme_cdk/constructs/monitoring/model_events_handler/handler.py",
    "triton_mme/__init__.py",
    "triton_mme/core/__init__.py",
    "triton_mme/core/model_metrics.py",
    "triton_mme/observability/__init__.py",
    "triton_mme/observability/triton_log.py",
)
# Only the lines that name a model reach the function (the filter's terms are case-sensitive). The terms
# precede the model's name, so they match Triton's namespaced lines (`loading: /opt/ml/models/<hash>/model::
# <TargetModel>:1`) as well as the bare ones; the parser drops the namespace.
MODEL_LINE_TERMS = (
    "loading: ",
    "successfully loaded",
    "successfully unloaded",
    "failed to load",
    "Invoking SageMaker TargetModel",
    "All models are stopped",  # a stopping server's unloads are no evictions
)


class ModelObservability(Construct):
    """Per-model figures from the endpoint's log group, and a thrash alarm.

    `endpoint_log_group_name` is /aws/sagemaker/Endpoints/<name>, which SageMaker creates; `log_group_ready`
    is what creates it before the subscription (EndpointLogs' retention). `cache_hit` is the endpoint's
    ModelCacheHit average: the thrash alarm fires when more than `evictions_per_minute` models are evicted in
    a minute while requests find their model unloaded. Children: `rules` (by name), `totals` (metrics by
    event), `thrash_alarm`, `events` (the events log group), `function`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        endpoint_name: str,
        endpoint_log_group_name: str,
        log_group_ready: IDependable,
        retention: logs.RetentionDays,
        cache_hit: cloudwatch.IMetric,
        evictions_per_minute: int,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self._endpoint_name = endpoint_name
        self.events = logs.LogGroup(self, "Events", retention=retention, removal_policy=RemovalPolicy.DESTROY)
        skip_checks(self.events, {"CKV_AWS_158": LOG_GROUP_KEY_REASON})
        code = runner_source(self, "HandlerSource", files=shipped_files(HANDLER_FILES))
        self.function = lambda_.Function(
            self,
            "Reader",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="triton_mme_cdk.constructs.monitoring.model_events_handler.handler.main",
            code=lambda_.Code.from_bucket(code.bucket, code.s3_object_key),
            environment={"ENDPOINT_NAME": endpoint_name},
            memory_size=128,
            timeout=Duration.seconds(30),
            role=function_role(self, "ReaderRole", log_group=self.events),
            log_group=self.events,
            description="Turns the endpoint's Triton model lines into one JSON line per model event",
        )
        # CDK warns on the source's bucket, a child of this construct.
        Annotations.of(self).acknowledge_warning(
            "@aws-cdk/aws-lambda:codeFromBucketObjectVersionNotSpecified",
            "the object key is the source asset's content hash: changed code is a new key, which updates "
            "the function",
        )
        source = logs.LogGroup.from_log_group_name(self, "EndpointLogGroup", endpoint_log_group_name)
        subscription = logs.SubscriptionFilter(
            self,
            "ModelLines",
            log_group=source,
            destination=destinations.LambdaDestination(self.function),
            filter_pattern=logs.FilterPattern.any_term(*MODEL_LINE_TERMS),
        )
        subscription.node.add_dependency(log_group_ready)
        self.rules = {
            rule: cloudwatch.CfnInsightRule(
                self,
                f"Top-{rule}",
                rule_name=insight_rule_name(endpoint_name, rule),
                rule_state="ENABLED",
                rule_body=json.dumps(insight_rule_body(self.events.log_group_name, event), sort_keys=True),
            )
            for rule, event in INSIGHT_RULES.items()
        }
        self.totals = {
            event: self._total(event, name, endpoint_name) for event, name in TOTAL_METRICS.items()
        }
        evictions = self.totals["unload"]
        self.thrash_alarm = cloudwatch.MathExpression(
            expression=f"IF(evictions > {evictions_per_minute} AND hit < 1, 1, 0)",
            using_metrics={"evictions": evictions, "hit": cache_hit},
            period=Duration.minutes(1),
            label="thrashing (evictions above the threshold while requests miss)",
        ).create_alarm(
            self,
            "Thrash",
            threshold=1,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"More than {evictions_per_minute} models a minute are evicted while requests "
            "find their model unloaded: the models in use do not fit (docs/observability.md).",
        )
        notify = actions.SnsAction(alarm_topic)
        self.thrash_alarm.add_alarm_action(notify)
        self.thrash_alarm.add_ok_action(notify)
        # CDK makes the function depend on its role, which the role ARN already implies.
        function_resource = self.function.node.default_child
        assert isinstance(function_resource, CfnResource)
        function_resource.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
        skip_function_checks(
            self.function,
            calls="none: Lambda carries what it prints to its own log group",
            invoked="The endpoint log's subscription invokes it per batch of model lines, which its filter "
            "keeps to loads, unloads, failed loads and invocations.",
            failures="a batch it fails on loses derived figures only: the lines stay in the endpoint's own "
            "log group for its retention, and a queue would hold a second copy nothing reads.",
            environment=True,
        )

    def _total(self, event: str, metric_name: str, endpoint_name: str) -> cloudwatch.Metric:
        metric_filter = logs.MetricFilter(
            self,
            f"Total-{metric_name}",
            log_group=self.events,
            filter_pattern=logs.FilterPattern.string_value("$.event", "=", event),
            metric_namespace=TOTALS_NAMESPACE,
            metric_name=metric_name,
            metric_value="1",
            dimensions={ENDPOINT_DIMENSION: "$.endpoint"},
            unit=cloudwatch.Unit.COUNT,
        )
        return metric_filter.metric(
            statistic=cloudwatch.Stats.SUM,
            period=Duration.minutes(1),
            dimensions_map={ENDPOINT_DIMENSION: endpoint_name},
        )

    def dashboard_widgets(self) -> list[cloudwatch.IWidget]:
        """Top models by cold loads, evictions and failed loads, and by the p99 latency callers published."""
        return top_model_widgets(
            self._endpoint_name, {rule: cfn.attr_rule_name for rule, cfn in self.rules.items()}
        )
