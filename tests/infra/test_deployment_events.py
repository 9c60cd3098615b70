"""The deployment-event record in a bare stack: the rule matches this endpoint's deployment events and
writes them to its own log group, which EventBridge may write to."""

from __future__ import annotations

import json

from aws_cdk import aws_events as aws_events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Template
from synth_support import bare_stack, with_nag

from triton_mme_cdk.constructs.endpoint.deployment_events import (
    DEPLOYMENT_EVENT_SOURCE,
    DEPLOYMENT_EVENT_TYPE,
    DeploymentEvents,
)


def events_template(endpoint_name: str = "my-endpoint") -> tuple[Template, DeploymentEvents]:
    stack = bare_stack()
    events = DeploymentEvents(
        stack, "Events", endpoint_name=endpoint_name, retention=logs.RetentionDays.TWO_WEEKS
    )
    return with_nag(stack), events  # with_nag raises on any unacknowledged finding


def test_the_rule_matches_only_this_endpoints_deployment_events() -> None:
    template, _ = events_template("my-endpoint")
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": [DEPLOYMENT_EVENT_SOURCE],
                "detail-type": [DEPLOYMENT_EVENT_TYPE],
                "detail": {"EndpointName": ["my-endpoint"]},
            },
            "State": "ENABLED",
        },
    )
    assert DEPLOYMENT_EVENT_TYPE == "SageMaker Endpoint Deployment State Change"


def rule_target_arn(template: Template) -> object:
    ((_, rule),) = template.find_resources("AWS::Events::Rule").items()
    ((target,),) = [rule["Properties"]["Targets"]]
    return target["Arn"]


def test_events_go_to_the_log_group_with_its_retention() -> None:
    template, events = events_template()
    ((group_id, group),) = template.find_resources("AWS::Logs::LogGroup").items()
    assert group["Properties"]["RetentionInDays"] == 14
    arn = rule_target_arn(template)
    # The group's ARN without the ":*" its Arn attribute ends in.
    assert arn != {"Fn::GetAtt": [group_id, "Arn"]}
    assert arn == {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":logs:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":log-group:",
                {"Ref": group_id},
            ],
        ]
    }
    assert events.log_group_name is not None


def test_the_target_arn_is_the_one_cdks_own_log_group_target_writes() -> None:
    template, _ = events_template()
    ((group_id, _),) = template.find_resources("AWS::Logs::LogGroup").items()
    stack = bare_stack()
    group = logs.LogGroup(stack, "Logs")
    rule = aws_events.Rule(stack, "Rule", event_pattern=aws_events.EventPattern(source=["aws.sagemaker"]))
    rule.add_target(targets.CloudWatchLogGroup(group))
    theirs = Template.from_stack(stack)
    their_group = group.node.default_child
    assert isinstance(their_group, logs.CfnLogGroup)
    their_group_id = stack.get_logical_id(their_group)
    expected = json.loads(json.dumps(rule_target_arn(theirs)).replace(their_group_id, group_id))
    assert rule_target_arn(template) == expected


def test_only_eventbridge_may_write_and_only_to_this_group() -> None:
    template, _ = events_template()
    ((group_id, _),) = template.find_resources("AWS::Logs::LogGroup").items()
    ((_, policy),) = template.find_resources("AWS::Logs::ResourcePolicy").items()
    document = policy["Properties"]["PolicyDocument"]["Fn::Join"][1]
    text = "".join(part for part in document if isinstance(part, str))
    assert '"Principal":{"Service":"events.amazonaws.com"}' in text
    assert '"Action":["logs:CreateLogStream","logs:PutLogEvents"]' in text
    assert {"Fn::GetAtt": [group_id, "Arn"]} in document
    assert template.find_resources("AWS::Lambda::Function") == {}, "no custom resource for the policy"
