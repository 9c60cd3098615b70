"""An execution role for one Lambda function that may write only the log group given to that function."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct


def function_role(scope: Construct, construct_id: str, *, log_group: logs.ILogGroup) -> iam.Role:
    """A role Lambda may assume, writing only to `log_group` (logs:CreateLogStream and logs:PutLogEvents on
    it). It replaces the role aws_lambda.Function creates, whose managed AWSLambdaBasicExecutionRole lets a
    function create and write any log group of the account."""
    role = iam.Role(scope, construct_id, assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group.grant_write(role)
    return role
