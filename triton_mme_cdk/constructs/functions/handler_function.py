"""Functions from a folder of plain Python that runs in AWS, each logging to its own group and allowed no
other, and the on-event-only custom resource provider (no is-complete polling) that serves one of them."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CfnResource, Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from triton_mme_cdk.constructs.functions.function_role import function_role
from triton_mme_cdk.constructs.scanners.checkov import LOG_GROUP_KEY_REASON, skip_checks, skip_function_checks
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources

# CDK makes each function and state machine depend on its role, which the role ARN already implies.
REDUNDANT_ROLE_DEPENDENCY = ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine")
HANDLER_TIMEOUT = Duration.seconds(30)


def handler_function(
    scope: Construct,
    construct_id: str,
    *,
    handler_dir: Path,
    entry: str,
    log_retention: logs.RetentionDays,
    environment: dict[str, str] | None = None,
    timeout: Duration = HANDLER_TIMEOUT,
) -> lambda_.Function:
    """`handler.<entry>` of `handler_dir`, with a role that may write only its own log group."""
    group = function_log_group(scope, f"{construct_id}Logs", log_retention)
    return lambda_.Function(
        scope,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_14,
        code=lambda_.Code.from_asset(str(handler_dir), exclude=["__pycache__", "*.pyc"]),
        handler=f"handler.{entry}",
        timeout=timeout,
        role=function_role(scope, f"{construct_id}Role", log_group=group),
        log_group=group,
        environment=environment,
    )


def on_event_provider(
    scope: Construct,
    on_event: lambda_.Function,
    *,
    log_retention: logs.RetentionDays,
    calls: str,
    environment: bool = False,
) -> cr.Provider:
    """The Provider that answers CloudFormation with what `on_event` returns; `calls` names the AWS APIs the
    handler calls (the reason it needs no VPC), `environment` whether it has variables (default: none)."""
    framework_logs = function_log_group(scope, "ProviderLogs", log_retention)
    provider = cr.Provider(
        scope,
        "Provider",
        on_event_handler=on_event,
        log_group=framework_logs,
        framework_on_event_role=function_role(scope, "ProviderRole", log_group=framework_logs),
    )
    acknowledge_wildcard_resources(
        scope,
        [f"{on_event.function_arn}:*"],
        reason="The provider framework invokes the handler, any version of it.",
    )
    failures = "its error reaches CloudFormation, which fails the deployment and rolls it back."
    skip_function_checks(
        on_event,
        calls=calls,
        invoked="The provider framework invokes it once per request of one deployment.",
        failures=f"the provider framework invokes it synchronously and {failures}",
        environment=environment,
    )
    skip_function_checks(
        provider.node.find_child("framework-onEvent"),
        calls="Lambda to invoke the on-event handler, S3 for CloudFormation's pre-signed response URL",
        invoked="CloudFormation invokes it once per request of one deployment.",
        failures=f"it answers CloudFormation's request itself, and if it fails {failures}",
        environment=True,
    )
    ignore_redundant_role_dependencies(scope)
    return provider


def ignore_redundant_role_dependencies(scope: Construct) -> None:
    """Tell cfn-lint that the functions' and state machines' DependsOn on their roles is CDK's (W3005)."""
    for child in scope.node.find_all():
        if isinstance(child, CfnResource) and child.cfn_resource_type in REDUNDANT_ROLE_DEPENDENCY:
            child.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})


def function_log_group(scope: Construct, construct_id: str, retention: logs.RetentionDays) -> logs.LogGroup:
    group = logs.LogGroup(scope, construct_id, retention=retention, removal_policy=RemovalPolicy.DESTROY)
    skip_checks(group, {"CKV_AWS_158": LOG_GROUP_KEY_REASON})
    return group
