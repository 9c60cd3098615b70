"""Reading a synthesized CloudWatch dashboard body back as widgets."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Template


def render(value: Any) -> str:
    """A dashboard body part as text: tokens become `Logical.Attribute` or the referenced name."""
    if isinstance(value, str):
        return value
    if "Fn::GetAtt" in value:
        return ".".join(value["Fn::GetAtt"])
    return str(value["Ref"])


def dashboard_widgets(template: Template) -> list[dict[str, Any]]:
    [dashboard] = template.find_resources("AWS::CloudWatch::Dashboard").values()
    separator, parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"]
    widgets: list[dict[str, Any]] = json.loads(separator.join(render(part) for part in parts))["widgets"]
    return widgets


def widget(template: Template, title: str) -> dict[str, Any]:
    [found] = [w for w in dashboard_widgets(template) if w["properties"].get("title") == title]
    return found
