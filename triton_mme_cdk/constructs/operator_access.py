"""What the commands that read a deployed stack may call: `triton-mme acceptance` and `triton-mme models
--stack`, each exactly the calls it makes (tests/infra/test_operator_access.py records them from a stubbed
run of each command and compares).

The acceptance run gets a role (`acceptance_role`) that the deploy workflow assumes for its acceptance step,
so the deploy role never holds S3 reads or InvokeEndpoint. The role trusts the account, as the CDK bootstrap
roles do: a principal may assume it only where its own policy allows sts:AssumeRole on it (the deploy role,
docs/first-deploy.md). Chained sessions last at most one hour (IAM, "Role chaining"), the role's maximum.
`models --stack` gets a managed policy (`models_policy`) for the operators' own roles.

Where an action has no resource-level permissions the statement says so and uses "*". Not confirmed in the
Service Authorization Reference here: which of cloudwatch:GetMetricData, cloudwatch:ListMetrics and
application-autoscaling:Describe* accept a resource (they are taken to accept none), and whether
cloudwatch:DescribeAlarms is checked per alarm (it is scoped to the stack's alarms, as the hosting role's
grant for SageMaker's rollback monitoring is; a refusal fails the acceptance's alarm check in one line).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from triton_mme.core.model_metrics import INSIGHT_RULES, insight_rule_name
from triton_mme_cdk.constructs.endpoint.deployment_events import DeploymentEvents
from triton_mme_cdk.constructs.endpoint.triton_endpoint import TritonEndpoint
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.constructs.store.model_store import ModelStore

# A chained role session (the workflow's deploy role assuming this one) lasts at most an hour.
ACCEPTANCE_SESSION = Duration.hours(1)
NO_RESOURCE_LEVEL = "*"


class OperatorAccess(Construct):
    """`acceptance_role` (with `acceptance_policy`) and `models_policy`, for one endpoint of one stack.

    `endpoint`, `store`, `deployment_events`, `alarms` (the stack's alarms, as the acceptance output names
    them) and `build_state_machine` (whose executions the build engine's verdicts read) are required;
    `encryption_key` (default none) adds kms:Decrypt on the key of the model bucket.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        endpoint: TritonEndpoint,
        store: ModelStore,
        deployment_events: DeploymentEvents,
        alarms: Sequence[cloudwatch.IAlarm],
        build_state_machine: sfn.IStateMachine,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        this_stack = stack.format_arn(
            service="cloudformation", resource="stack", resource_name=f"{stack.stack_name}/*"
        )
        describe_stack = iam.PolicyStatement(
            actions=["cloudformation:DescribeStacks"], resources=[this_stack]
        )
        # The endpoint's config and model names are generated, and after a rollback or an update outside the
        # stack the endpoint serves another config: Describe on any of the account's, in this region.
        configs, models = (
            stack.format_arn(service="sagemaker", resource=kind, resource_name="*")
            for kind in ("endpoint-config", "model")
        )
        no_resource_level = [
            # GetMetricData (the metrics arrive) and ListMetrics (the dimensions a missing one is known by).
            iam.PolicyStatement(
                actions=["cloudwatch:GetMetricData", "cloudwatch:ListMetrics"], resources=[NO_RESOURCE_LEVEL]
            ),
            iam.PolicyStatement(
                actions=[
                    "application-autoscaling:DescribeScalableTargets",
                    "application-autoscaling:DescribeScalingPolicies",
                ],
                resources=[NO_RESOURCE_LEVEL],
            ),
        ]
        # The build engine's verdicts read the newest successful execution's history (build_engine.py).
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{build_state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        log_groups = Stack.of(self).format_arn(
            service="logs", resource="log-group", resource_name="*", arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        statements = [
            describe_stack,
            iam.PolicyStatement(
                actions=["sagemaker:DescribeEndpoint", "sagemaker:InvokeEndpoint"],
                resources=[endpoint.endpoint_arn],
            ),
            iam.PolicyStatement(
                actions=["sagemaker:DescribeEndpointConfig", "sagemaker:DescribeModel"],
                resources=[configs, models],
            ),
            # The manifests, serving reports, golden data and archives (HeadObject is s3:GetObject), and
            # ListBucket so that a missing object reads 404 rather than 403.
            *store.read_statements(),
            iam.PolicyStatement(
                actions=["logs:FilterLogEvents"], resources=[deployment_events.log_group.log_group_arn]
            ),
            # The strategy check reads the event group's creation time (DescribeLogGroups with its name as
            # prefix). Whether the action can be limited to one group is not confirmed: it is allowed on the
            # region's log groups, whose names and settings it only lists.
            iam.PolicyStatement(
                actions=["logs:DescribeLogGroups"],
                resources=[
                    Stack.of(self).format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name="*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            ),
            iam.PolicyStatement(
                actions=["cloudwatch:DescribeAlarms"], resources=[alarm.alarm_arn for alarm in alarms]
            ),
            iam.PolicyStatement(
                actions=["states:ListExecutions"], resources=[build_state_machine.state_machine_arn]
            ),
            iam.PolicyStatement(actions=["states:GetExecutionHistory"], resources=[executions]),
            *no_resource_level,
        ]
        if encryption_key is not None:
            decrypt = iam.PolicyStatement(actions=["kms:Decrypt"], resources=[encryption_key.key_arn])
            statements.append(decrypt)
        self.acceptance_policy = iam.ManagedPolicy(
            self,
            "AcceptancePolicy",
            description="What `triton-mme acceptance` calls on this stack (docs/acceptance.md)",
            statements=statements,
        )
        self.acceptance_role = iam.Role(
            self,
            "AcceptanceRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Assumed by the deploy workflow's acceptance step (docs/first-deploy.md)",
            max_session_duration=ACCEPTANCE_SESSION,
            managed_policies=[self.acceptance_policy],
            # The deploy role's sts:AssumeRole names `role/<stack name>/*` before the first deploy; a
            # generated role name starts with the stack's name only while both fit in IAM's 64 characters.
            path=f"/{stack.stack_name}/",
        )
        rules = [
            stack.format_arn(
                service="cloudwatch",
                resource="insight-rule",
                resource_name=insight_rule_name(endpoint.name, rule),
            )
            for rule in INSIGHT_RULES
        ]
        self.models_policy = iam.ManagedPolicy(
            self,
            "ModelsPolicy",
            description="What `triton-mme models --stack` calls on this stack (docs/observability.md)",
            statements=[
                describe_stack,
                iam.PolicyStatement(actions=["cloudwatch:GetInsightRuleReport"], resources=rules),
                no_resource_level[0],
            ],
        )
        store_objects = [statement.resources for statement in store.read_statements()]
        acknowledge_wildcard_resources(
            self.acceptance_policy,
            [this_stack, configs, models, *store_objects[0], executions, log_groups, NO_RESOURCE_LEVEL],
            reason="Read-only and confined: this stack (its id is not known before it exists), the account's "
            "endpoint configs and models in this region (generated names; after a rollback the endpoint "
            "serves another), the store's model and manifest prefixes, the build state machine's "
            "executions (named per run), the region's log groups for "
            "DescribeLogGroups alone (which lists names and settings; scoping it to one group is not "
            "confirmed), and '*' only for CloudWatch metric reads and Application Auto Scaling's Describe "
            "calls, which have no resource-level permissions.",
        )
        acknowledge_wildcard_resources(
            self.models_policy,
            [this_stack, NO_RESOURCE_LEVEL],
            reason="Read-only: this stack (its id is not known before it exists), and '*' only for "
            "CloudWatch metric reads, which have no resource-level permissions.",
        )
