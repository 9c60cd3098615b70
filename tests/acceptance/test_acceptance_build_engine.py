"""The build engine's first-deploy verdicts, read from a stubbed execution history (botocore's Stubber)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.stub import Stubber

from triton_mme.acceptance.build_engine import build_engine_verdicts

MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:Engine"
RUN = "arn:aws:states:eu-west-1:123456789012:execution:Engine:run"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def history(resource: str, exits: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"timestamp": NOW, "type": "TaskScheduled", "id": 1, "taskScheduledEventDetails": {
            "resourceType": "codebuild", "resource": resource, "region": "eu-west-1", "parameters": "{}"}},
    ]  # fmt: skip
    for index, (name, output) in enumerate(exits.items(), start=2):
        events.append({"timestamp": NOW, "type": "TaskStateExited", "id": index,
                       "stateExitedEventDetails": {"name": name, "output": json.dumps(output)}})  # fmt: skip
    return events


def verdicts(resource: str | None, exits: dict[str, Any]) -> list[str]:
    client = boto3.client(
        "stepfunctions", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:
        executions = [] if resource is None else [
            {"executionArn": RUN, "stateMachineArn": MACHINE, "name": "r", "status": "SUCCEEDED",
             "startDate": NOW}
        ]  # fmt: skip
        expected = {"stateMachineArn": MACHINE, "statusFilter": "SUCCEEDED", "maxResults": 1}
        stubber.add_response("list_executions", {"executions": executions}, expected)
        if resource is not None:
            stubber.add_response("get_execution_history", {"events": history(resource, exits)})
        return [check.line() for check in build_engine_verdicts(client, MACHINE)]


def test_a_batch_settles_the_verdict() -> None:
    lines = verdicts("arn:aws:states:::codebuild:startBuildBatch.sync", {"ModelBuild": {}})
    assert [line.split(":")[0] for line in lines] == ["PASS first-deploy/batch-on-gpu"]


def test_a_single_build_leaves_the_batch_undecided() -> None:
    (line,) = verdicts("arn:aws:states:::codebuild:startBuild.sync", {"ModelBuild": {}})
    assert line.startswith("CANNOT TELL first-deploy/batch-on-gpu") and "buildRunners=1" in line


def test_no_execution_yet_cannot_tell() -> None:
    assert all(line.startswith("CANNOT TELL") for line in verdicts(None, {}))


def test_the_run_reads_the_verdicts_from_the_stacks_state_machine_and_skips_them_without_one(s3: Any) -> None:
    """`triton-mme acceptance` takes the machine from the settings output; a stack deployed before it names
    none, and the run then asks Step Functions nothing."""
    from acceptance_support import STACK, expect_stack, healthy_stack, stubbed

    from triton_mme.acceptance.runner import run_acceptance

    report = run_acceptance(STACK, healthy_stack(s3, not_ready=0), metrics_wait_s=0)
    lines = [c.line() for c in report.checks if c.name == "batch-on-gpu"]
    assert [line.split(":")[0] for line in lines] == ["PASS first-deploy/batch-on-gpu"]
    older = healthy_stack(s3, not_ready=0)
    cloudformation, stub = stubbed("cloudformation")
    expect_stack(stub, buildStateMachineArn=None)
    stepfunctions, _ = stubbed("stepfunctions")
    clients = dataclasses.replace(older, cloudformation=cloudformation, stepfunctions=stepfunctions)
    report = run_acceptance(STACK, clients, metrics_wait_s=0)
    assert "batch-on-gpu" not in {check.name for check in report.checks}
    assert not report.failures  # a call to the unanswering stub would have failed a group in one line


def test_a_fingerprint_built_before_decides_neither() -> None:
    lines = verdicts("arn:aws:states:::aws-sdk:s3:headObject", {"BuiltBefore": {}})
    assert [line.split(":")[0] for line in lines] == ["CANNOT TELL first-deploy/batch-on-gpu"]
