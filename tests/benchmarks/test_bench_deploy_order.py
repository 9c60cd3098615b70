"""The deploy-order figure: the longest chain of timeouts before each SageMaker resource starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.deploy_order import longest_waits, main, wait_bound_minutes


def template(model_waits_for_build: bool) -> dict[str, Any]:
    # The model build's wait condition: both stages' queueing and timeouts (5 + 30 + 5 + 15) and 5 of margin.
    build = {"Type": "AWS::CloudFormation::WaitCondition", "Properties": {"Count": 1, "Timeout": "3600"}}
    model: dict[str, Any] = {
        "Type": "AWS::SageMaker::Model",
        "Properties": {"ExecutionRoleArn": {"Ref": "Role"}},
    }
    if model_waits_for_build:
        model["DependsOn"] = ["Build"]
    return {"Resources": {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
        "Build": build,
        "Model": model,
        "Config": {"Type": "AWS::SageMaker::EndpointConfig", "Properties": {
            "ProductionVariants": [{"ModelName": {"Fn::GetAtt": ["Model", "ModelName"]}}]}},
        "Endpoint": {"Type": "AWS::SageMaker::Endpoint", "DependsOn": "Build",
                     "Properties": {"EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]}}},
    }}  # fmt: skip


def test_the_build_counts_its_wait_conditions_timeout() -> None:
    resources = template(False)["Resources"]
    assert wait_bound_minutes(resources, "Build") == 60
    assert wait_bound_minutes(resources, "Role") == 0


def test_waits_follow_depends_on_refs_and_getatts() -> None:
    after = {w.resource_type: (w.minutes, w.chain, w.waits_for_build) for w in longest_waits(template(False))}
    assert after == {
        "AWS::SageMaker::Model": (0, [], False),
        "AWS::SageMaker::EndpointConfig": (0, [], False),
        "AWS::SageMaker::Endpoint": (60, ["Build"], True),
    }
    before = {w.resource_type: (w.minutes, w.waits_for_build) for w in longest_waits(template(True))}
    assert before["AWS::SageMaker::EndpointConfig"] == (60, True)


def test_the_command_writes_both_results(tmp_path: Path) -> None:
    path = tmp_path / "t.template.json"
    path.write_text(json.dumps(template(True)))
    assert main([f"before={path}", "--out", str(tmp_path / "order")]) == 0
    assert "| before | AWS::SageMaker::Model | 60 min | Build | yes |" in (tmp_path / "order.md").read_text()
    assert json.loads((tmp_path / "order.json").read_text())["before"][0]["minutes"] == 60
    assert main([str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")]) == 1
