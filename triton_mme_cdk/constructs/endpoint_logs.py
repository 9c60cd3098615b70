from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from aws_cdk import aws_logs as logs
from constructs import Construct

# SageMaker writes each endpoint's container logs to /aws/sagemaker/Endpoints/<endpoint name>.
ENDPOINT_LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints"


def endpoint_log_group_name(endpoint_name: str) -> str:
    """The log group SageMaker writes the container logs of endpoint `endpoint_name` to."""
    return f"{ENDPOINT_LOG_GROUP_PREFIX}/{endpoint_name}"


class EndpointLogs(Construct):
    """A retention period for the log group SageMaker writes an endpoint's container logs to.

    SageMaker creates the group itself when the endpoint's first instance starts, and the endpoint's name is
    known only once CloudFormation has created it, so the group cannot be created beforehand. CDK's
    LogRetention custom resource runs after the endpoint and creates the group if it is missing, then sets
    the retention either way. The group is kept when the stack is deleted; its logs expire with the
    retention.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, endpoint_name: str, retention: logs.RetentionDays
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group_name = endpoint_log_group_name(endpoint_name)
        self.retention = logs.LogRetention(
            self, "Retention", log_group_name=self.log_group_name, retention=retention
        )
        self._acknowledge_retention_function()

    def _acknowledge_retention_function(self) -> None:
        # LogRetention runs one function per stack, created beside the stack's other top-level constructs.
        stack = Stack.of(self)
        function = next(child for child in stack.node.children if child.node.id.startswith("LogRetention"))
        # CDK makes the function depend on its role, which the role ARN already implies.
        for resource in function.node.find_all():
            if isinstance(resource, CfnResource) and resource.cfn_resource_type == "AWS::Lambda::Function":
                resource.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
        for finding, reason in (
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "CDK's log-retention function writes only its own logs through the basic execution policy.",
            ),
            (
                "AwsSolutions-IAM5[Resource::*]",
                "CDK's log-retention function sets the retention of log groups named at deploy time "
                "(logs:PutRetentionPolicy, logs:DeleteRetentionPolicy); its policy is CDK's own.",
            ),
        ):
            Validations.of(function).acknowledge(Acknowledgment(id=finding, reason=reason))
