"""A record of how SageMaker updated the endpoint: its deployment events, kept in a log group.

DescribeEndpoint says only which DeploymentConfig an update asked for (LastDeploymentConfig) and, while an
update runs, its current stage (PendingDeploymentSummary); once the endpoint is InService again nothing in
the API says whether the canary or linear steps ran. An endpoint that a guardrail excludes is updated all at
once without an error, and only the "SageMaker Endpoint Deployment State Change" events show it (SageMaker
developer guide, "Events that Amazon SageMaker AI sends to Amazon EventBridge": each event carries the
pending deployment's VariantStatus, e.g. Status `Baking` with "Baking for 600 seconds ... on canary capacity
of 1 instance(s)."). `triton-mme acceptance` reads them back (docs/acceptance.md).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from triton_mme_cdk.constructs.scanners.checkov import LOG_GROUP_KEY_REASON, skip_checks

DEPLOYMENT_EVENT_SOURCE = "aws.sagemaker"
DEPLOYMENT_EVENT_TYPE = "SageMaker Endpoint Deployment State Change"
# The account-level CloudWatch Logs resource policies this construct adds (`self.policy`), which preflight
# counts against the account's limit; tests/infra/test_preflight.py counts them in the stack's template.
ACCOUNT_LOGS_RESOURCE_POLICIES = 1


class DeploymentEvents(Construct):
    """An EventBridge rule that writes the endpoint's deployment events to `self.log_group`.

    `endpoint_name` is the endpoint's fixed name (the rule matches the events' `detail.EndpointName`), so the
    rule exists before the endpoint and records its first update too. `retention` (required) bounds how long
    the events stay. The log group's resource policy lets EventBridge write to this group only, from this
    group only (an L1 target and an AWS::Logs::ResourcePolicy, as CDK's log-group target writes it, without
    the custom resource and function that target adds for the same policy). No aws:SourceArn condition:
    whether EventBridge's delivery to CloudWatch Logs carries one is not documented, and a condition it
    does not meet would drop every event silently.

    The target is the log group's ARN without the `:*` that its `Arn` attribute ends in, built as
    aws-cdk-lib's own CloudWatch Logs target builds it (aws-events-targets `log-group.ts`: `formatArn` with
    `COLON_RESOURCE_NAME`); a rule whose target keeps the suffix is accepted at deploy time, and its events
    are reported never to reach the group. The resource policy names the attribute's form, as CDK's does.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, endpoint_name: str, retention: logs.RetentionDays
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self, "Logs", retention=retention, removal_policy=RemovalPolicy.DESTROY
        )
        skip_checks(self.log_group, {"CKV_AWS_158": LOG_GROUP_KEY_REASON})
        self.target_arn = Stack.of(self).format_arn(
            service="logs",
            resource="log-group",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
            resource_name=self.log_group.log_group_name,
        )
        self.rule = events.CfnRule(
            self,
            "Rule",
            description=f"Deployment events of SageMaker endpoint {endpoint_name}, for acceptance checks",
            event_pattern={
                "source": [DEPLOYMENT_EVENT_SOURCE],
                "detail-type": [DEPLOYMENT_EVENT_TYPE],
                "detail": {"EndpointName": [endpoint_name]},
            },
            state="ENABLED",
            targets=[events.CfnRule.TargetProperty(id="DeploymentEventLog", arn=self.target_arn)],
        )
        self.policy = logs.ResourcePolicy(
            self,
            "Policy",
            policy_statements=[
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("events.amazonaws.com")],
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[self.log_group.log_group_arn],
                )
            ],
        )
        self.log_group_name = self.log_group.log_group_name
