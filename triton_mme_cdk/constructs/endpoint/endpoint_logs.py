from __future__ import annotations

from aws_cdk import ArnFormat, CfnResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from triton_mme_cdk.constructs.scanners.checkov import skip_function_checks
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources

# SageMaker writes each endpoint's container logs to /aws/sagemaker/Endpoints/<endpoint name>.
ENDPOINT_LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints"


def endpoint_log_group_name(endpoint_name: str) -> str:
    """The log group SageMaker writes the container logs of endpoint `endpoint_name` to."""
    return f"{ENDPOINT_LOG_GROUP_PREFIX}/{endpoint_name}"


class EndpointLogs(Construct):
    """A retention period for the log group SageMaker writes an endpoint's container logs to.

    SageMaker creates the group itself when the endpoint's first instance starts, and the group outlives the
    stack (its logs expire with the retention), so a later stack of the same endpoint name would find it: the
    stack cannot own it. CDK's LogRetention custom resource runs after the endpoint and creates the group if
    it is missing, then sets the retention either way.

    The custom resource's function (one per stack, CDK's) runs with `role`, which may set the retention of
    this group only, and write only the function's own log group, /aws/lambda/<its name>, which the handler
    also creates and keeps one day, rather than CDK's default role (any group's retention, and the managed
    AWSLambdaBasicExecutionRole).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, endpoint_name: str, retention: logs.RetentionDays
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group_name = endpoint_log_group_name(endpoint_name)
        self.role = iam.Role(self, "RetentionRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        # CDK adds logs:PutRetentionPolicy and logs:DeleteRetentionPolicy on "*" to the role it is given; the
        # role without policy updates takes none, and the policy below grants what the handler calls.
        self.retention = logs.LogRetention(
            self,
            "Retention",
            log_group_name=self.log_group_name,
            retention=retention,
            role=self.role.without_policy_updates(),
        )
        function = self._retention_function()
        self.policy = self._grant_retention(function)
        self.retention.node.add_dependency(self.policy)

    def add_endpoint(
        self, construct_id: str, *, endpoint_name: str, retention: logs.RetentionDays
    ) -> logs.LogRetention:
        """The same for another endpoint's group (the inference component endpoint's), through the same
        function and role: CDK's function is one per stack and runs with the role it was first given."""
        group = _group_arn(self, endpoint_log_group_name(endpoint_name))
        self.policy.add_statements(
            iam.PolicyStatement(
                actions=["logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy"],
                resources=[group],
            )
        )
        added = logs.LogRetention(
            self,
            construct_id,
            log_group_name=endpoint_log_group_name(endpoint_name),
            retention=retention,
            role=self.role.without_policy_updates(),
        )
        added.node.add_dependency(self.policy)
        return added

    def _retention_function(self) -> CfnResource:
        # LogRetention runs one function per stack, created beside the stack's other top-level constructs.
        stack = Stack.of(self)
        singleton = next(child for child in stack.node.children if child.node.id.startswith("LogRetention"))
        function = singleton.node.default_child
        if not (isinstance(function, CfnResource) and function.cfn_resource_type == "AWS::Lambda::Function"):
            raise TypeError(f"CDK's log-retention function is not where EndpointLogs expects it: {singleton}")
        # CDK makes the function depend on its role, which the role ARN already implies.
        function.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
        skip_function_checks(
            function,
            calls="CloudWatch Logs to set the retention, S3 for CloudFormation's pre-signed response URL",
            invoked="CloudFormation invokes it once per request of one deployment.",
            failures="it answers CloudFormation's request itself, and a failure fails the deployment, which "
            "rolls back; a queued copy of a finished deployment's request would have nothing to replay it.",
        )
        return function

    def _grant_retention(self, function: CfnResource) -> iam.Policy:
        """What CDK's handler calls (aws-logs log-retention-handler): on Create and Update, CreateLogGroup
        (an existing group is fine) and PutRetentionPolicy, or DeleteRetentionPolicy for a retention of
        INFINITE, on the endpoint's group; on Create, CreateLogGroup and PutRetentionPolicy on its own."""
        endpoint_group = _group_arn(self, self.log_group_name)
        own_group = _group_arn(self, f"/aws/lambda/{function.ref}")
        own_streams = f"{own_group}:log-stream:*"
        policy = iam.Policy(
            self,
            "RetentionPolicy",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(
                    actions=["logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy"],
                    resources=[endpoint_group],
                ),
                iam.PolicyStatement(
                    actions=["logs:CreateLogGroup", "logs:PutRetentionPolicy"], resources=[own_group]
                ),
                iam.PolicyStatement(
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[own_streams]
                ),
            ],
        )
        acknowledge_wildcard_resources(
            policy,
            [own_streams],
            reason="The log-retention function writes the streams of its own log group, which Lambda names "
            "when it starts an instance.",
        )
        return policy


def _group_arn(scope: Construct, name: str) -> str:
    return Stack.of(scope).format_arn(
        service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
    )
