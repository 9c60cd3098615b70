"""`triton-mme models --stack`: the stack's Contributor Insights reports and the callers' latency, from
CloudWatch through botocore's Stubber (no AWS)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from triton_mme.cli import main, parser
from triton_mme.core.model_metrics import INSIGHT_RULES
from triton_mme.observability import cloudwatch as figures_from_cloudwatch
from triton_mme.observability.commands import since_seconds
from triton_mme_cdk.stack import ENDPOINT_NAME_OUTPUT

ENDPOINT = "triton-mme"
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
HOT, COLD = "resnet50-onnx-0123456789abcdef.tar.gz", "roberta-onnx-fedcba9876543210.tar.gz"
# Per rule: contributors (model, aggregate), as Contributor Insights reports them.
REPORTS = {
    "requests": [(HOT, 900.0), (COLD, 12.0)],
    "cold-loads": [(HOT, 1.0), (COLD, 6.0)],
    "evictions": [(COLD, 5.0)],
    "failed-loads": [(COLD, 2.0)],
}


def _contributor(model: str, value: float) -> dict[str, Any]:
    stamp = NOW - dt.timedelta(minutes=10)
    return {
        "Keys": [model],
        "ApproximateAggregateValue": value,
        "Datapoints": [{"Timestamp": stamp, "ApproximateValue": value}],
    }


def stubbed(*, with_output: bool = True) -> tuple[Any, Any, list[Stubber]]:
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    cfn, cw = Stubber(cloudformation), Stubber(cloudwatch)
    outputs = [{"OutputKey": ENDPOINT_NAME_OUTPUT, "OutputValue": ENDPOINT}] if with_output else []
    cfn.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {"StackName": "S", "CreationTime": NOW, "StackStatus": "CREATE_COMPLETE", "Outputs": outputs}
            ]
        },
        {"StackName": "S"},
    )
    for rule in INSIGHT_RULES:
        cw.add_response(
            "get_insight_rule_report",
            {"Contributors": [_contributor(m, v) for m, v in REPORTS[rule]]},
            {
                "RuleName": f"{ENDPOINT}-models-{rule}",
                "StartTime": NOW - dt.timedelta(hours=1),
                "EndTime": NOW,
                "Period": 300,
                "MaxContributorCount": 100,
                "OrderBy": "Sum",
            },
        )
    dimensions = [{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "TargetModel", "Value": HOT}]
    cw.add_response(
        "list_metrics",
        {"Metrics": [{"Namespace": "TritonMme/Callers", "MetricName": "Latency", "Dimensions": dimensions}]},
        {
            "Namespace": "TritonMme/Callers",
            "MetricName": "Latency",
            "Dimensions": [{"Name": "EndpointName", "Value": ENDPOINT}],
        },
    )
    cw.add_response(
        "get_metric_data",
        {
            "MetricDataResults": [
                {"Id": "p50_0", "Values": [41.5]},
                {"Id": "p99_0", "Values": [120.25]},
            ]
        },
        {"MetricDataQueries": ANY, "StartTime": NOW - dt.timedelta(hours=1), "EndTime": NOW},
    )
    return cloudformation, cloudwatch, [cfn, cw]


def test_one_line_per_model_from_the_rules_and_the_callers() -> None:
    cloudformation, cloudwatch, stubs = stubbed()
    with stubs[0], stubs[1]:
        rows = figures_from_cloudwatch.stack_figures(
            "S", 3600, cloudformation=cloudformation, cloudwatch=cloudwatch, now=NOW
        )
        for stub in stubs:
            stub.assert_no_pending_responses()
    by_model = {r.model: r for r in rows}
    hot, cold = by_model[HOT], by_model[COLD]
    assert (hot.requests, hot.cold_loads, hot.evictions, hot.failed_loads) == (900, 1, 0, 0)
    assert (cold.requests, cold.cold_loads, cold.evictions, cold.failed_loads) == (12, 6, 5, 2)
    assert (hot.p50_ms, hot.p99_ms) == (41.5, 120.25)
    assert cold.p50_ms is None, "nobody published latency for it"
    assert hot.last_load == "2026-12-01 11:50"


def test_the_command_prints_the_busiest_model_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cloudformation, cloudwatch, stubs = stubbed()
    args = parser().parse_args(["models", "--stack", "S"])
    real = figures_from_cloudwatch.stack_figures

    def at_noon(*a: Any, **k: Any) -> Any:
        return real(*a, **{**k, "now": NOW})

    monkeypatch.setattr(figures_from_cloudwatch, "stack_figures", at_noon)
    with stubs[0], stubs[1]:
        assert args.handler(args, cloudformation=cloudformation, cloudwatch=cloudwatch) == 0
    header, first, second = capsys.readouterr().out.splitlines()
    assert header.split()[0] == "TargetModel"
    assert first.split()[:5] == [HOT, "900", "1", "0", "0"]
    assert second.split()[:5] == [COLD, "12", "6", "5", "2"]
    assert first.split()[-2:] == ["41.5", "120.2"]


def test_a_stack_without_the_endpoint_output_is_one_line() -> None:
    cloudformation, cloudwatch, stubs = stubbed(with_output=False)
    with stubs[0], pytest.raises(figures_from_cloudwatch.StackError, match="no EndpointName output"):
        figures_from_cloudwatch.stack_figures("S", 3600, cloudformation=cloudformation, cloudwatch=cloudwatch)


def test_the_output_name_is_the_stacks() -> None:
    assert figures_from_cloudwatch.ENDPOINT_NAME_OUTPUT == ENDPOINT_NAME_OUTPUT


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("1h", 3600), ("7d", 604800)])
def test_since_takes_minutes_hours_days(text: str, seconds: int) -> None:
    assert since_seconds(text) == seconds


@pytest.mark.parametrize("text", ["0h", "16d", "1w", "h", "-1h"])
def test_since_refuses_others(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"e\.g\. 30m, 1h or 7d"):
        since_seconds(text)


def test_records_with_a_stack_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--stack", "S", "--records", "x.jsonl"]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: --records goes with --local; a stack's callers publish to CloudWatch"
    )
