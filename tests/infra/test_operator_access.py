"""The acceptance role and the models policy allow exactly the AWS calls their commands make.

The calls are recorded from stubbed runs of each command (every client's `before-call` event, S3 on moto),
and a scan of the commands' own modules makes sure no call site escapes those runs. IAM's action for an
operation is `<service prefix>:<operation>`, except where AWS documents another (HeadObject is authorized by
s3:GetObject).
"""

from __future__ import annotations

import ast
import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from acceptance_support import (
    ALARMS,
    DEPLOYED_COMPONENTS,
    EVERY_METRIC,
    STACK,
    expect_alarms,
    expect_component,
    expect_component_endpoint,
    expect_component_endpoint_config,
    healthy_stack,
    metric_results,
    stubbed,
)
from botocore.stub import Stubber
from synth_support import KEY_ARN, VARIANTS, Synthesized

from triton_mme.acceptance.runner import AcceptanceClients, run_acceptance
from triton_mme.acceptance.verdicts import (
    check_component_endpoint_update,
    check_component_metrics,
    check_components_run,
    check_no_capacity_error,
)
from triton_mme.core.model_metrics import INSIGHT_RULES
from triton_mme.observability.cloudwatch import stack_figures
from triton_mme_cdk.stack import ACCEPTANCE_ROLE_OUTPUT, ACCEPTANCE_SETTINGS_OUTPUT, ENDPOINT_NAME_OUTPUT

REPO_ROOT = Path(__file__).resolve().parents[2]
# Each client's IAM service prefix (the Service Authorization Reference's; CloudWatch signs as "monitoring").
IAM_PREFIX = {
    "cloudformation": "cloudformation",
    "sagemaker": "sagemaker",
    "sagemaker-runtime": "sagemaker",
    "s3": "s3",
    "cloudwatch": "cloudwatch",
    "application-autoscaling": "application-autoscaling",
    "logs": "logs",
    "stepfunctions": "states",
}
# Operations IAM authorizes under another action's name (S3: "HeadObject ... requires s3:GetObject").
AUTHORIZED_AS = {"s3:HeadObject": "s3:GetObject"}
# Actions a command needs that no call names: with s3:ListBucket a missing object answers 404, not 403
# (ModelStore.read_statements).
BESIDE_THE_CALLS = {"s3:ListBucket"}
# The actions that have no resource-level permissions (triton_mme_cdk/constructs/operator_access.py).
RESOURCE_STAR = {
    "cloudwatch:GetMetricData",
    "cloudwatch:ListMetrics",
    "application-autoscaling:DescribeScalableTargets",
    "application-autoscaling:DescribeScalingPolicies",
}


class CallRecorder:
    """Every API call made through the clients it watches, as IAM actions."""

    def __init__(self) -> None:
        self.actions: set[str] = set()
        self.methods: set[str] = set()
        self.recording = True

    def watch(self, client: Any) -> Any:
        prefix = IAM_PREFIX[client.meta.service_model.service_name]
        to_method = {api: method for method, api in client.meta.method_to_api_mapping.items()}

        def record(model: Any, **_: Any) -> None:
            if self.recording:
                action = f"{prefix}:{model.name}"
                self.actions.add(AUTHORIZED_AS.get(action, action))
                self.methods.add(to_method[model.name])

        # First: a Stubber answers in the same event, and the handlers after it never run.
        client.meta.events.register_first("before-call.*.*", record, unique_id=f"record-{id(self)}")
        return client


def _watched(clients: AcceptanceClients, recorder: CallRecorder) -> AcceptanceClients:
    return AcceptanceClients(**{name: recorder.watch(client) for name, client in vars(clients).items()})


def acceptance_calls(s3: Any) -> CallRecorder:
    """A healthy run, and one where a metric never arrives (ListMetrics then names what exists)."""
    recorder = CallRecorder()
    run_acceptance(STACK, _watched(healthy_stack(s3, not_ready=0), recorder), metrics_wait_s=0)
    recorder.recording = False  # the second stack's set-up writes to the store
    missing = healthy_stack(s3, not_ready=0)
    recorder.recording = True
    cloudwatch, stub = stubbed("cloudwatch")
    stub.add_response("get_metric_data", metric_results(EVERY_METRIC - {"ModelCacheHit"}))
    stub.add_response("list_metrics", {"Metrics": []})
    expect_alarms(stub, [])
    clients = AcceptanceClients(**{**vars(missing), "cloudwatch": cloudwatch})
    report = run_acceptance(STACK, _watched(clients, recorder), metrics_wait_s=0)
    assert [check.name for check in report.failures if check.group == "metrics"][:1] == ["ModelCacheHit"]
    return recorder


def component_calls() -> CallRecorder:
    """The first-deploy verdicts on the inference component endpoint (a hybrid catalog's acceptance run)."""
    recorder = CallRecorder()
    sagemaker, sagemaker_stub = stubbed("sagemaker")
    cloudwatch, cloudwatch_stub = stubbed("cloudwatch")
    runtime, runtime_stub = stubbed("sagemaker-runtime")
    sagemaker, cloudwatch, runtime = (recorder.watch(c) for c in (sagemaker, cloudwatch, runtime))
    components = [c.name for c in DEPLOYED_COMPONENTS.components.values()]
    expect_component_endpoint(sagemaker_stub)
    expect_component_endpoint_config(sagemaker_stub)
    for name in components:
        expect_component(sagemaker_stub, name)
    for _ in components:
        cloudwatch_stub.add_response("list_metrics", {"Metrics": []})
    expect_component_endpoint(sagemaker_stub)
    expect_component(sagemaker_stub, components[0], copies=0)
    runtime_stub.add_client_error("invoke_endpoint", service_error_code="ValidationError")
    check_components_run(sagemaker, DEPLOYED_COMPONENTS)
    check_component_metrics(cloudwatch, DEPLOYED_COMPONENTS)
    check_component_endpoint_update(sagemaker, DEPLOYED_COMPONENTS)
    check_no_capacity_error(sagemaker, runtime, DEPLOYED_COMPONENTS)
    for stub in (sagemaker_stub, cloudwatch_stub, runtime_stub):
        stub.assert_no_pending_responses()
    return recorder


def models_calls() -> CallRecorder:
    recorder = CallRecorder()
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    cfn, cw = Stubber(recorder.watch(cloudformation)), Stubber(recorder.watch(cloudwatch))
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    output = {"OutputKey": ENDPOINT_NAME_OUTPUT, "OutputValue": "e"}
    stack = {"StackName": "S", "CreationTime": now, "StackStatus": "CREATE_COMPLETE", "Outputs": [output]}
    cfn.add_response("describe_stacks", {"Stacks": [stack]})
    for _ in INSIGHT_RULES:
        cw.add_response("get_insight_rule_report", {"Contributors": []})
    model = [{"Name": "EndpointName", "Value": "e"}, {"Name": "TargetModel", "Value": "m.tar.gz"}]
    cw.add_response("list_metrics", {"Metrics": [{"Namespace": "n", "MetricName": "l", "Dimensions": model}]})
    cw.add_response("get_metric_data", {"MetricDataResults": []})
    with cfn, cw:
        stack_figures("S", 3600, cloudformation=cloudformation, cloudwatch=cloudwatch, now=now)
    return recorder


def call_sites(*paths: Path) -> set[str]:
    """The boto3 methods the modules call by name (`client.describe_stacks(...)`, `get_paginator("x")`)."""
    known = {
        method
        for service in IAM_PREFIX
        for method in boto3.client(service, region_name="us-east-1").meta.method_to_api_mapping
    }
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "get_paginator" and isinstance(node.args[0], ast.Constant):
                found.add(str(node.args[0].value))
            elif node.func.attr in known and not _a_constant(node.func.value):
                found.add(node.func.attr)
    return found


def _a_constant(receiver: ast.expr) -> bool:
    """`PATTERN.search(...)`: a module constant, not a client."""
    return isinstance(receiver, ast.Name) and receiver.id.isupper()


def policy_statements(synthesized: Synthesized, policy: Any) -> list[dict[str, Any]]:
    logical_id = synthesized.stack.get_logical_id(policy.node.default_child)
    statements = synthesized.resources[logical_id]["Properties"]["PolicyDocument"]["Statement"]
    assert all(statement["Effect"] == "Allow" for statement in statements)
    return list(statements)


def allowed_actions(statements: list[dict[str, Any]]) -> set[str]:
    actions: set[str] = set()
    for statement in statements:
        action = statement["Action"]
        actions |= {action} if isinstance(action, str) else set(action)
    return actions


def star_actions(statements: list[dict[str, Any]]) -> set[str]:
    return allowed_actions([s for s in statements if s["Resource"] == "*" or "*" in s["Resource"]])


def test_every_call_site_of_the_commands_is_in_the_recorded_runs(s3: Any) -> None:
    package = REPO_ROOT / "triton_mme"
    # The acceptance package, and the client modules it calls AWS through (the manifest, InvokeEndpoint).
    used = [package / "client" / "manifest_source.py", package / "client" / "transport.py"]
    acceptance = call_sites(*sorted((package / "acceptance").glob("*.py")), *used)
    assert acceptance and acceptance <= acceptance_calls(s3).methods | component_calls().methods
    models = call_sites(REPO_ROOT / "triton_mme" / "observability" / "cloudwatch.py")
    assert models and models <= models_calls().methods


def test_the_acceptance_policy_allows_exactly_the_calls_acceptance_makes(
    s3: Any, default_synth: Synthesized
) -> None:
    statements = policy_statements(default_synth, default_synth.stack.mme.operators.acceptance_policy)
    assert allowed_actions(statements) == acceptance_calls(s3).actions | BESIDE_THE_CALLS
    assert star_actions(statements) <= RESOURCE_STAR


def test_the_models_policy_allows_exactly_the_calls_models_stack_makes(default_synth: Synthesized) -> None:
    statements = policy_statements(default_synth, default_synth.stack.mme.operators.models_policy)
    assert allowed_actions(statements) == models_calls().actions
    assert star_actions(statements) <= RESOURCE_STAR
    (rules,) = [s["Resource"] for s in statements if s["Action"] == "cloudwatch:GetInsightRuleReport"]
    assert len(rules) == len(INSIGHT_RULES)


def test_a_customer_key_adds_only_its_decrypt(synth_with: Any, default_synth: Synthesized, s3: Any) -> None:
    encrypted = synth_with(kms_key_arn=KEY_ARN)
    statements = policy_statements(encrypted, encrypted.stack.mme.operators.acceptance_policy)
    assert allowed_actions(statements) == acceptance_calls(s3).actions | BESIDE_THE_CALLS | {"kms:Decrypt"}
    (decrypt,) = [s for s in statements if s["Action"] == "kms:Decrypt"]
    assert decrypt["Resource"] == KEY_ARN


def test_the_acceptance_role_holds_only_its_policy_for_one_hour_sessions(default_synth: Synthesized) -> None:
    operators = default_synth.stack.mme.operators
    role_id = default_synth.stack.get_logical_id(operators.acceptance_role.node.default_child)
    role = default_synth.resources[role_id]["Properties"]
    policy_id = default_synth.stack.get_logical_id(operators.acceptance_policy.node.default_child)
    assert role["ManagedPolicyArns"] == [{"Ref": policy_id}]
    assert role["MaxSessionDuration"] == 3600
    # What the deploy role may assume, written before the role exists (docs/first-deploy.md).
    assert role["Path"] == f"/{default_synth.stack.stack_name}/"
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Action"] == "sts:AssumeRole" and "AWS" in trust["Principal"]
    inline = [
        r
        for r in default_synth.resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"].get("Roles", [])
    ]
    assert inline == []
    outputs = default_synth.template.to_json()["Outputs"]
    assert outputs[ACCEPTANCE_ROLE_OUTPUT]["Value"] == {"Fn::GetAtt": [role_id, "Arn"]}


def test_invocations_and_event_reads_are_confined_to_this_endpoint(default_synth: Synthesized) -> None:
    operators, stack = default_synth.stack.mme.operators, default_synth.stack
    statements = policy_statements(default_synth, operators.acceptance_policy)
    (invoke,) = [s for s in statements if "sagemaker:InvokeEndpoint" in s["Action"]]
    assert invoke["Resource"] == stack.resolve(stack.mme.endpoint.endpoint_arn)
    (events,) = [s for s in statements if s["Action"] == "logs:FilterLogEvents"]
    assert events["Resource"] == stack.resolve(stack.mme.deployment_events.log_group.log_group_arn)
    (alarms,) = [s for s in statements if s["Action"] == "cloudwatch:DescribeAlarms"]
    assert len(alarms["Resource"]) == len(stack.mme.monitoring.alarms) >= len(ALARMS)


def test_build_engine_reads_are_confined_to_this_stacks_state_machine(default_synth: Synthesized) -> None:
    """The build engine's verdicts list that machine's executions and read their histories, nothing else."""
    stack = default_synth.stack
    statements = policy_statements(default_synth, stack.mme.operators.acceptance_policy)
    machine = stack.resolve(stack.mme.build.state_machine.state_machine_arn)
    (listed,) = [s for s in statements if s["Action"] == "states:ListExecutions"]
    assert listed["Resource"] == machine
    (history,) = [s for s in statements if s["Action"] == "states:GetExecutionHistory"]
    assert ":execution:" in json.dumps(history["Resource"]) and history["Resource"]["Fn::Join"][1][-1] == ":*"
    outputs = default_synth.template.to_json()["Outputs"]
    assert outputs["BuildStateMachineArn"]["Value"] == machine
    assert "buildStateMachineArn" in json.dumps(outputs[ACCEPTANCE_SETTINGS_OUTPUT]["Value"])


@pytest.mark.parametrize("page", ["acceptance.md", "first-deploy.md"])
def test_the_docs_name_the_role_the_acceptance_needs(page: str) -> None:
    assert ACCEPTANCE_ROLE_OUTPUT in (REPO_ROOT / "docs" / page).read_text()


def test_with_dedicated_models_the_acceptance_role_may_make_the_component_verdicts_calls(
    s3: Any, synth_with: Any
) -> None:
    hybrid = synth_with(**VARIANTS["hybrid-placement"])
    role = hybrid.stack.get_logical_id(hybrid.stack.mme.operators.acceptance_role.node.default_child)
    attached = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for resource in hybrid.resources.values()
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]
    ]
    managed = policy_statements(hybrid, hybrid.stack.mme.operators.acceptance_policy)
    granted = allowed_actions([*managed, *(s for statements in attached for s in statements)])
    needed = component_calls().actions | acceptance_calls(s3).actions
    assert needed <= granted, needed - granted
