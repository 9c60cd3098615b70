"""Per-model figures of a deployed stack from CloudWatch: the stack's Contributor Insights rules (requests,
cold loads, evictions, failed loads per TargetModel; GetInsightRuleReport) and the latency callers published
(TritonMme/Callers; ListMetrics, GetMetricData)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from triton_mme.core.errors import UserError
from triton_mme.core.model_metrics import (
    CALLER_LATENCY,
    CALLER_NAMESPACE,
    ENDPOINT_DIMENSION,
    INSIGHT_RULES,
    MODEL_DIMENSION,
    insight_rule_name,
)
from triton_mme.observability.figures import ModelFigures

# The stack output naming the endpoint (triton_mme_cdk/stack.py ENDPOINT_NAME_OUTPUT; a test keeps them
# equal).
ENDPOINT_NAME_OUTPUT = "EndpointName"
# GetInsightRuleReport returns at most 100 contributors per rule; beyond them a model shows no figure.
MAX_CONTRIBUTORS = 100
# What each rule fills in.
RULE_FIELDS = {"requests": "requests", "cold-loads": "cold_loads", "evictions": "evictions"}
RULE_FIELDS["failed-loads"] = "failed_loads"
# GetMetricData: at most 500 queries a call.
QUERIES_PER_CALL = 500


class StackError(UserError, RuntimeError):
    """The stack or its figures cannot be read; one line."""


def endpoint_of_stack(cloudformation: Any, stack: str) -> str:
    answer = cloudformation.describe_stacks(StackName=stack)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in answer["Stacks"][0].get("Outputs", [])}
    if ENDPOINT_NAME_OUTPUT not in outputs:
        raise StackError(f"--stack {stack}: no {ENDPOINT_NAME_OUTPUT} output; is it this project's stack?")
    return str(outputs[ENDPOINT_NAME_OUTPUT])


def _period(window_s: int) -> int:
    # One datapoint per period; the report's aggregate covers the window whatever the period.
    return 3600 if window_s >= 6 * 3600 else 300 if window_s >= 3600 else 60


def rule_figures(
    cloudwatch: Any, endpoint: str, start: dt.datetime, end: dt.datetime, rows: dict[str, ModelFigures]
) -> None:
    window_s = int((end - start).total_seconds())
    for rule in INSIGHT_RULES:
        report = cloudwatch.get_insight_rule_report(
            RuleName=insight_rule_name(endpoint, rule),
            StartTime=start,
            EndTime=end,
            Period=_period(window_s),
            MaxContributorCount=MAX_CONTRIBUTORS,
            OrderBy="Sum",
        )
        for contributor in report.get("Contributors", []):
            model = contributor["Keys"][0]
            row = rows.setdefault(model, ModelFigures(model))
            setattr(row, RULE_FIELDS[rule], float(contributor["ApproximateAggregateValue"]))
            if rule == "cold-loads":
                loaded = [d["Timestamp"] for d in contributor.get("Datapoints", []) if d["ApproximateValue"]]
                if loaded:
                    row.last_load = max(loaded).strftime("%Y-%m-%d %H:%M")


def caller_figures(
    cloudwatch: Any, endpoint: str, start: dt.datetime, end: dt.datetime, rows: dict[str, ModelFigures]
) -> None:
    listed = cloudwatch.list_metrics(
        Namespace=CALLER_NAMESPACE,
        MetricName=CALLER_LATENCY,
        Dimensions=[{"Name": ENDPOINT_DIMENSION, "Value": endpoint}],
    )
    models = sorted(
        {
            d["Value"]
            for metric in listed.get("Metrics", [])
            for d in metric["Dimensions"]
            if d["Name"] == MODEL_DIMENSION
        }
    )
    period = max(60, int((end - start).total_seconds()) // 60 * 60)
    queries = [
        {
            "Id": f"{stat}_{i}",
            "MetricStat": {
                "Metric": {
                    "Namespace": CALLER_NAMESPACE,
                    "MetricName": CALLER_LATENCY,
                    "Dimensions": [
                        {"Name": ENDPOINT_DIMENSION, "Value": endpoint},
                        {"Name": MODEL_DIMENSION, "Value": model},
                    ],
                },
                "Period": period,
                "Stat": stat,
            },
        }
        for i, model in enumerate(models)
        for stat in ("p50", "p99")
    ]
    for first in range(0, len(queries), QUERIES_PER_CALL):
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=queries[first : first + QUERIES_PER_CALL], StartTime=start, EndTime=end
        )
        for result in answer.get("MetricDataResults", []):
            stat, index = result["Id"].split("_")
            values = result.get("Values", [])
            if not values:
                continue
            row = rows.setdefault(models[int(index)], ModelFigures(models[int(index)]))
            setattr(row, f"{stat}_ms", float(max(values)))


def stack_figures(
    stack: str,
    since_s: int,
    *,
    region: str | None = None,
    cloudformation: Any = None,
    cloudwatch: Any = None,
    now: dt.datetime | None = None,
) -> list[ModelFigures]:
    if cloudformation is None or cloudwatch is None:
        import boto3

        cloudformation = cloudformation or boto3.client("cloudformation", region_name=region)
        cloudwatch = cloudwatch or boto3.client("cloudwatch", region_name=region)
    end = (now or dt.datetime.now(dt.UTC)).replace(second=0, microsecond=0)
    start = end - dt.timedelta(seconds=since_s)
    endpoint = endpoint_of_stack(cloudformation, stack)
    rows: dict[str, ModelFigures] = {}
    rule_figures(cloudwatch, endpoint, start, end, rows)
    caller_figures(cloudwatch, endpoint, start, end, rows)
    return list(rows.values())
