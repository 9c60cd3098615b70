"""The per-model rankings of the endpoint's model events: the Contributor Insights rules' bodies (top-N
TargetModels by cold loads, evictions, failed loads and requests) and the dashboard widgets that show them
(docs/observability.md)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from triton_mme.core.model_metrics import (
    CALLER_LATENCY,
    CALLER_NAMESPACE,
    ENDPOINT_DIMENSION,
    MODEL_DIMENSION,
)

TOP_MODELS = 10


class TopModelsWidget(cloudwatch.ConcreteWidget):
    """A dashboard graph of a Contributor Insights rule's top contributors (CDK has no such widget)."""

    def __init__(self, *, title: str, rule_name: str, width: int = 6, height: int = 6) -> None:
        super().__init__(width, height)
        self._title, self._rule_name, self._xy = title, rule_name, (0, 0)

    def position(self, x: float, y: float) -> None:
        self._xy = (int(x), int(y))

    def to_json(self) -> list[Any]:
        properties = {
            "title": self._title,
            "region": Aws.REGION,
            "view": "timeSeries",
            "stacked": False,
            "insightRule": {"maxContributorCount": TOP_MODELS, "orderBy": "Sum", "ruleName": self._rule_name},
        }
        x, y = self._xy
        return [
            {
                "type": "metric",
                "width": self.width,
                "height": self.height,
                "x": x,
                "y": y,
                "properties": properties,
            }
        ]


def insight_rule_body(log_group_name: str, event: str) -> dict[str, Any]:
    """A rule ranking the models of `log_group_name`'s JSON model events by how many `event`s they had (by
    their summed counts for requests)."""
    counted = {"ValueOf": "$.count"} if event == "requests" else {}
    return {
        "Schema": {"Name": "CloudWatchLogRule", "Version": 1},
        "LogGroupNames": [log_group_name],
        "LogFormat": "JSON",
        "Contribution": {
            "Keys": ["$.model"],
            **counted,
            "Filters": [{"Match": "$.event", "In": [event]}],
        },
        "AggregateOn": "Sum" if counted else "Count",
    }


def top_model_widgets(endpoint_name: str, rule_names: dict[str, str]) -> list[cloudwatch.IWidget]:
    """Top models by cold loads, evictions and failed loads (`rule_names`: the rules' names by rule), and by
    the p99 latency callers published for `endpoint_name`."""
    titles = {
        "cold-loads": "Top models: cold loads",
        "evictions": "Top models: evictions",
        "failed-loads": "Top models: failed loads",
    }
    widgets: list[cloudwatch.IWidget] = [
        TopModelsWidget(title=title, rule_name=rule_names[rule]) for rule, title in titles.items()
    ]
    search = (
        f"{{{CALLER_NAMESPACE},{ENDPOINT_DIMENSION},{MODEL_DIMENSION}}} "
        f'{ENDPOINT_DIMENSION}="{endpoint_name}" MetricName="{CALLER_LATENCY}"'
    )
    caller_p99 = cloudwatch.MathExpression(
        expression=f"SORT(SEARCH('{search}', 'p99', 60), MAX, DESC, {TOP_MODELS})",
        using_metrics={},
        label="p99",
        period=Duration.minutes(1),
    )
    widgets.append(
        cloudwatch.GraphWidget(title="Top models: caller p99 (ms)", left=[caller_p99], width=6, height=6)
    )
    return widgets
