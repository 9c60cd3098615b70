"""The endpoint's log retention in a bare stack: the group SageMaker writes to gets the retention."""

from __future__ import annotations

import json

import pytest
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Match, Template
from synth_support import bare_stack, checkov_skips, function_logging, template_logical_id, with_nag

from triton_mme_cdk.constructs.endpoint.endpoint_logs import EndpointLogs


def logs_template(retention: logs.RetentionDays) -> tuple[Template, EndpointLogs]:
    stack = bare_stack()
    endpoint = sagemaker.CfnEndpoint(stack, "Endpoint", endpoint_config_name="config")
    endpoint.override_logical_id("Endpoint")
    endpoint_logs = EndpointLogs(
        stack, "Logs", endpoint_name=endpoint.attr_endpoint_name, retention=retention
    )
    return with_nag(stack), endpoint_logs  # with_nag raises on any unacknowledged finding


@pytest.mark.parametrize(
    ("retention", "days"), [(logs.RetentionDays.ONE_MONTH, 30), (logs.RetentionDays.ONE_YEAR, 365)]
)
def test_the_endpoints_log_group_gets_the_retention(retention: logs.RetentionDays, days: int) -> None:
    template, endpoint_logs = logs_template(retention)
    group = {"Fn::Join": ["", ["/aws/sagemaker/Endpoints/", {"Fn::GetAtt": ["Endpoint", "EndpointName"]}]]}
    template.has_resource_properties("Custom::LogRetention", {"LogGroupName": group, "RetentionInDays": days})
    assert endpoint_logs.retention.node.scope is endpoint_logs
    assert template.find_resources("AWS::Logs::LogGroup") == {}, "SageMaker creates the group, not the stack"


def _join(*parts: object) -> dict[str, object]:
    return {"Fn::Join": ["", list(parts)]}


def _log_group_arn(name_prefix: str, name_token: object) -> dict[str, object]:
    """A log group's ARN in this stack, as CloudFormation gets it (CDK joins adjacent strings)."""
    account = [
        "arn:",
        {"Ref": "AWS::Partition"},
        ":logs:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
    ]
    return _join(*account, f":log-group:{name_prefix}", name_token)


def test_the_retention_function_sets_only_this_groups_retention_and_writes_only_its_own_log() -> None:
    """CDK's default role lets the function set the retention of any group and, through
    AWSLambdaBasicExecutionRole, write any group; this one gets exactly what its handler calls: the endpoint's
    group created and its retention set, its own /aws/lambda/<name> group created and kept one day, and
    that group's streams written."""
    template, endpoint_logs = logs_template(logs.RetentionDays.ONE_MONTH)
    ((function_id, function),) = function_logging(template).items()
    assert function.managed_policies == []
    assert function.log_group is None  # Lambda's default group, /aws/lambda/<name>, which the handler creates
    assert set(checkov_skips(template, function_id)) == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117"}
    endpoint_group = _log_group_arn("/aws/sagemaker/Endpoints/", {"Fn::GetAtt": ["Endpoint", "EndpointName"]})
    own_group = _log_group_arn("/aws/lambda/", {"Ref": function_id})
    policy_id = template_logical_id(endpoint_logs.policy)
    template.has_resource(
        "AWS::IAM::Policy",
        {
            "Properties": {
                "Roles": [{"Ref": template_logical_id(endpoint_logs.role)}],
                "PolicyDocument": {
                    "Statement": [
                        {
                            "Action": [
                                "logs:CreateLogGroup",
                                "logs:DeleteRetentionPolicy",
                                "logs:PutRetentionPolicy",
                            ],
                            "Effect": "Allow",
                            "Resource": endpoint_group,
                        },
                        {
                            "Action": ["logs:CreateLogGroup", "logs:PutRetentionPolicy"],
                            "Effect": "Allow",
                            "Resource": own_group,
                        },
                        {
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Effect": "Allow",
                            "Resource": _join(*own_group["Fn::Join"][1], ":log-stream:*"),
                        },
                    ],
                    "Version": "2012-10-17",
                },
            }
        },
    )
    assert len(template.find_resources("AWS::IAM::Policy")) == 1, "CDK's own '*' policy is not added"
    # The handler runs only once the policy exists: the function itself does not wait for it.
    template.has_resource("Custom::LogRetention", {"DependsOn": Match.array_with([policy_id])})


def test_a_second_endpoints_group_is_set_by_the_same_function_with_its_role_allowed_it() -> None:
    """CDK's retention function is one per stack and runs with the role it was first given: a second
    EndpointLogs would get a role the function never uses, so the second group goes through add_endpoint."""
    stack = bare_stack()
    endpoint_logs = EndpointLogs(
        stack, "Logs", endpoint_name="models", retention=logs.RetentionDays.ONE_MONTH
    )
    added = endpoint_logs.add_endpoint(
        "Dedicated", endpoint_name="models-ic", retention=logs.RetentionDays.ONE_WEEK
    )
    template = with_nag(stack)
    template.has_resource_properties(
        "Custom::LogRetention", {"LogGroupName": "/aws/sagemaker/Endpoints/models-ic", "RetentionInDays": 7}
    )
    assert len(function_logging(template)) == 1
    policy = template.to_json()["Resources"][template_logical_id(endpoint_logs.policy)]
    granted = {
        json.dumps(statement["Resource"]): statement["Action"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    }
    (second,) = [
        resource for resource in granted if ":log-group:/aws/sagemaker/Endpoints/models-ic" in resource
    ]
    assert granted[second] == ["logs:CreateLogGroup", "logs:DeleteRetentionPolicy", "logs:PutRetentionPolicy"]
    template.has_resource(
        "Custom::LogRetention",
        {"DependsOn": Match.array_with([template_logical_id(endpoint_logs.policy)])},
    )
    assert added.node.scope is endpoint_logs
