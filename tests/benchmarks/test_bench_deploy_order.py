"""The deploy-order figure: the longest chain of timeouts before each SageMaker resource starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.deploy_order import longest_waits, main, wait_bound_minutes


def template(model_waits_for_build: bool) -> dict[str, Any]:
    build_project = {
        "Type": "AWS::CodeBuild::Project",
        "Properties": {"TimeoutInMinutes": 30, "QueuedTimeoutInMinutes": 5},
    }
    check_project = {
        "Type": "AWS::CodeBuild::Project",
        "Properties": {"TimeoutInMinutes": 15, "QueuedTimeoutInMinutes": 5},
    }
    build = {
        "Type": "Custom::ModelBuild",
        "Properties": {
            "ServiceTimeout": 3600,
            "Stages": [
                {"Name": "model build", "Project": {"Ref": "BuildProject"}},
                {"Name": "serving check", "Project": {"Ref": "CheckProject"}},
            ],
        },
    }
    model: dict[str, Any] = {
        "Type": "AWS::SageMaker::Model",
        "Properties": {"ExecutionRoleArn": {"Ref": "Role"}},
    }
    if model_waits_for_build:
        model["DependsOn"] = ["Build"]
    return {"Resources": {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
        "BuildProject": build_project,
        "CheckProject": check_project,
        "Build": build,
        "Model": model,
        "Config": {"Type": "AWS::SageMaker::EndpointConfig", "Properties": {
            "ProductionVariants": [{"ModelName": {"Fn::GetAtt": ["Model", "ModelName"]}}]}},
        "Endpoint": {"Type": "AWS::SageMaker::Endpoint", "DependsOn": "Build",
                     "Properties": {"EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]}}},
    }}  # fmt: skip


def test_the_build_counts_its_stages_when_they_end_before_its_service_timeout() -> None:
    resources = template(False)["Resources"]
    assert wait_bound_minutes(resources, "Build") == 55
    assert wait_bound_minutes(resources, "Role") == 0


def test_waits_follow_depends_on_refs_and_getatts() -> None:
    after = {w.resource_type: (w.minutes, w.chain, w.waits_for_build) for w in longest_waits(template(False))}
    assert after == {
        "AWS::SageMaker::Model": (0, [], False),
        "AWS::SageMaker::EndpointConfig": (0, [], False),
        "AWS::SageMaker::Endpoint": (55, ["Build"], True),
    }
    before = {w.resource_type: (w.minutes, w.waits_for_build) for w in longest_waits(template(True))}
    assert before["AWS::SageMaker::EndpointConfig"] == (55, True)


def test_the_command_writes_both_results(tmp_path: Path) -> None:
    path = tmp_path / "t.template.json"
    path.write_text(json.dumps(template(True)))
    assert main([f"before={path}", "--out", str(tmp_path / "order")]) == 0
    assert "| before | AWS::SageMaker::Model | 55 min | Build | yes |" in (tmp_path / "order.md").read_text()
    assert json.loads((tmp_path / "order.json").read_text())["before"][0]["minutes"] == 55
    assert main([str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")]) == 1
