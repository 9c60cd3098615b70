"""The build engine's template and its small functions: one state machine, one wait per fingerprint, and the
lifecycle cases (rollback, return to an earlier fingerprint, a timeout-only change, a cancelled deploy)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from botocore.stub import Stubber
from synth_support import Synthesized, bare_stack

from triton_mme_cdk.constructs.build.build_state_machine import BuildStage
from triton_mme_cdk.constructs.build.model_build_engine import ModelBuildEngine
from triton_mme_cdk.constructs.build.model_build_engine_handler import handler

A, B = "a" * 64, "b" * 64
ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:Engine"
# The old trigger's own actions (on-event and is-complete, one runner): codebuild:StartBuild, StopBuild,
# BatchGetBuilds, ListBuildsForProject and logs:FilterLogEvents; with batches four more.
OLD_TRIGGER_ACTIONS = 5


def engine(fingerprint: str, build_minutes: int = 35) -> dict[str, Any]:
    stack = bare_stack()
    stages = [
        BuildStage(name, codebuild.Project(stack, f"P{name}", build_spec=codebuild.BuildSpec.from_object({})),
                   logs.LogGroup(stack, f"L{name}"), minutes)
        for name, minutes in (("model build", build_minutes), ("serving check", 20))
    ]  # fmt: skip
    ModelBuildEngine(stack, "Engine", build=stages[0], check=stages[1], fingerprint=fingerprint,
                     bucket=s3.Bucket(stack, "Store"), build_manifest_key=f"manifests/builds/{fingerprint}/m",
                     log_retention=logs.RetentionDays.ONE_DAY)  # fmt: skip
    return dict(Template.from_stack(stack).to_json()["Resources"])


def per_fingerprint(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    kinds = (
        "Custom::ModelBuild",
        "AWS::CloudFormation::WaitCondition",
        "AWS::CloudFormation::WaitConditionHandle",
    )
    return {k: r for k, r in resources.items() if r["Type"] in kinds}


def test_each_fingerprint_and_budget_has_its_own_run_wait_and_handle_and_nothing_else_changes() -> None:
    first, second, again, longer = engine(A), engine(B), engine(A), engine(A, build_minutes=300)
    ids = {name: set(per_fingerprint(r)) for name, r in (("A", first), ("B", second), ("longer", longer))}
    assert all(len(found) == 3 for found in ids.values())
    # Rollback from B to A, or a later return to A: B's three resources are created and deleted, A's are
    # exactly as they were, so CloudFormation sends them no Update (no signal to an old handle, no re-run).
    assert not ids["A"] & ids["B"] and per_fingerprint(again) == per_fingerprint(first)
    # A timeout-only change is a new wait condition: its Timeout is never updated in place.
    assert not ids["A"] & ids["longer"]
    (wait,) = [r for r in per_fingerprint(longer).values() if r["Type"].endswith("WaitCondition")]
    assert wait["Properties"]["Timeout"] == str((300 + 20 + 5) * 60)
    # What is shared is the one state machine, updated in place like any other resource.
    machines = [k for k, r in first.items() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert len(machines) == 1 and machines[0] in second


def test_the_handles_url_is_in_no_property_the_project_writes() -> None:
    resources = engine(A)
    (handle_id,) = [k for k, r in resources.items() if r["Type"].endswith("WaitConditionHandle")]
    (run,) = [r for r in resources.values() if r["Type"] == "Custom::ModelBuild"]
    # Its logical id, as plain text: CloudFormation never resolves the URL into the run's properties (which
    # the provider framework logs), the execution input or the definition.
    assert run["Properties"]["Handle"] == handle_id
    references = [k for k, r in resources.items() if f'{{"Ref": "{handle_id}"}}' in json.dumps(r)]
    assert [resources[k]["Type"] for k in references] == ["AWS::CloudFormation::WaitCondition"]


def test_the_trigger_may_only_start_and_stop_this_state_machines_executions() -> None:
    resources = engine(A)
    (policy,) = [r for k, r in resources.items() if k.startswith("EngineTriggerRoleDefaultPolicy")]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    granted = {
        a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert granted - {"logs:CreateLogStream", "logs:PutLogEvents"} == {
        "states:StartExecution",
        "states:StopExecution",
    }
    assert len(granted) - 2 < OLD_TRIGGER_ACTIONS
    functions = [
        r["Properties"]["Handler"] for r in resources.values() if r["Type"] == "AWS::Lambda::Function"
    ]
    assert "handler.is_complete" not in functions and "handler.on_event" in functions


def test_default_and_long_builds_share_one_shape(synth_with: Callable[..., Synthesized]) -> None:
    def shape(synth: Synthesized) -> tuple[list[str], list[str]]:
        engine_resources = {k: r for k, r in synth.resources.items() if k.startswith("ModelBuildEngine")}
        (machine,) = [r for r in engine_resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
        states = sorted(
            set(__import__("re").findall(r'\\"(\w+)\\":\{\\"(?:Next|End|Type)', json.dumps(machine)))
        )
        return sorted(r["Type"] for r in engine_resources.values()), states

    default, long = shape(synth_with()), shape(synth_with(build_timeout_minutes=300))
    assert default == long
    assert default[0].count("AWS::StepFunctions::StateMachine") == 1
    assert default[0].count("AWS::CloudFormation::WaitCondition") == 1
    assert "startBuild.sync" in json.dumps(synth_with().resources)


def test_the_stack_waits_one_way_only(synth_with: Callable[..., Synthesized]) -> None:
    """Across the whole stack, default and fanned out: one state machine (the engine; no provider waiter),
    no is-complete handler, one wait condition (the manifest promotion answers once, after the endpoint)."""
    for synth in (synth_with(), synth_with(build_runners=2)):
        types = [r["Type"] for r in synth.resources.values()]
        assert types.count("AWS::StepFunctions::StateMachine") == 1
        assert types.count("AWS::CloudFormation::WaitCondition") == 1
        handlers = [r["Properties"].get("Handler", "") for r in synth.resources.values()
                    if r["Type"] == "AWS::Lambda::Function"]  # fmt: skip
        assert handlers and not [h for h in handlers if h.endswith("is_complete") or "isComplete" in h]


# ----- the functions, with botocore's Stubber ------------------------------------------------------------


def create(request_id: str = "11111111-2222-3333-4444-555555555555") -> dict[str, Any]:
    properties = {"StateMachine": ARN, "Fingerprint": A, "Handle": "Handle1", "BuildManifestKey": "k"}
    return {"RequestType": "Create", "RequestId": request_id, "ResourceProperties": properties}


def test_create_starts_one_execution_named_from_the_fingerprint_and_request(stepfunctions: Stubber) -> None:
    name = f"{A[:43]}-11111111-2222-3333-4444-555555555555"
    run = {"Fingerprint": A, "Handle": "Handle1", "BuildManifestKey": "k"}
    expected = {"stateMachineArn": ARN, "name": name, "input": json.dumps(run)}
    started = {"executionArn": f"{ARN}:{name}", "startDate": "2026-01-01T00:00:00Z"}
    stepfunctions.add_response("start_execution", started, expected)
    # A retried request: Step Functions refuses the name; the same run is answered, nothing is started.
    stepfunctions.add_client_error("start_execution", "ExecutionAlreadyExists", expected_params=expected)
    first, retried = handler.on_event(create()), handler.on_event(create())
    assert (
        first == retried == {"PhysicalResourceId": f"{ARN.replace(':stateMachine:', ':execution:')}:{name}"}
    )
    assert len(name) <= 80


def test_delete_stops_the_execution_and_never_fails_a_rollback(stepfunctions: Stubber) -> None:
    arn = f"{ARN.replace(':stateMachine:', ':execution:')}:run"
    stepfunctions.add_response(
        "stop_execution",
        {"stopDate": "2026-01-01T00:00:00Z"},
        {"executionArn": arn, "cause": "its deployment moved on"},
    )
    stepfunctions.add_client_error("stop_execution", "ExecutionDoesNotExist")
    for _ in range(2):
        assert handler.on_event({"RequestType": "Delete", "PhysicalResourceId": arn}) == {
            "PhysicalResourceId": arn
        }
    # A Create that failed before it started anything: nothing to stop.
    assert handler.on_event({"RequestType": "Delete", "PhysicalResourceId": "request-id"})[
        "PhysicalResourceId"
    ]
    assert handler.on_event({"RequestType": "Update", "PhysicalResourceId": arn}) == {
        "PhysicalResourceId": arn
    }


def test_a_failed_batch_names_its_first_failed_shard_and_its_error_line(
    codebuild: Stubber, logs: Stubber
) -> None:
    cause = {"BuildBatch": {"BuildGroups": [
        {"Identifier": "shard_0", "CurrentBuildSummary": {"Arn": "arn:x:build/p:0", "BuildStatus": "SUCCEEDED"}},  # noqa: E501
        {"Identifier": "shard_1", "CurrentBuildSummary": {"Arn": "arn:x:build/p:1", "BuildStatus": "FAILED"}},
    ]}}  # fmt: skip
    build = {
        "id": "p:1",
        "buildStatus": "FAILED",
        "logs": {"groupName": "g", "streamName": "s", "deepLink": "https://l"},
    }
    codebuild.add_response("batch_get_builds", {"builds": [build]}, {"ids": ["p:1"]})
    logs.add_response("filter_log_events", {"events": [], "nextToken": "t"})
    logs.add_response(
        "filter_log_events", {"events": [{"message": "error: vision-c0033/onnx: export failed\nmore"}]}
    )
    event = {
        "Stage": "model build",
        "Minutes": 40,
        "Failure": {"Error": "States.TaskFailed", "Cause": json.dumps(cause)},
    }
    assert (
        handler.failure_reason(event)
        == "model build p:1 failed: vision-c0033/onnx: export failed; logs: https://l"
    )


def test_the_signal_never_prints_or_returns_the_handles_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], handler_client: Callable[[str], Any]
) -> None:
    url = "https://cloudformation-waitcondition-eu-west-1.s3.amazonaws.com/arn?X-Amz-Signature=secret"
    monkeypatch.setenv("STACK_ID", "arn:aws:cloudformation:eu-west-1:123456789012:stack/S/1")
    cloudformation = Stubber(handler_client("cloudformation"))
    cloudformation.activate()
    detail = {"LogicalResourceId": "Handle1", "ResourceType": "H", "PhysicalResourceId": url,
              "ResourceStatus": "CREATE_COMPLETE", "LastUpdatedTimestamp": "2026-01-01"}  # fmt: skip
    for _ in range(2):
        cloudformation.add_response("describe_stack_resource", {"StackResourceDetail": detail},
                                    {"StackName": "arn:aws:cloudformation:eu-west-1:123456789012:stack/S/1",
                                     "LogicalResourceId": "Handle1"})  # fmt: skip
    sent: list[Any] = []

    def answer(request: Any, timeout: float) -> io.BytesIO:
        sent.append(request)
        if len(sent) == 2:
            raise OSError(f"cannot reach {request.full_url}")
        return io.BytesIO(b"")

    monkeypatch.setattr(handler.urllib.request, "urlopen", answer)
    assert handler.signal({"Handle": "Handle1"})["Status"] == "SUCCESS"
    assert sent[0].full_url == url and sent[0].get_method() == "PUT"
    assert json.loads(sent[0].data)["Status"] == "SUCCESS"
    with pytest.raises(RuntimeError) as failed:
        handler.signal({"Handle": "Handle1"})
    assert "secret" not in str(failed.value) and "secret" not in capsys.readouterr().out
