"""A custom resource provider that waits: on-event and is-complete handlers from one folder of plain Python,
polled by custom_resources.Provider's waiter, every function logging to its own group and allowed no other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Acknowledgment, CfnResource, Duration, RemovalPolicy, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from triton_mme_cdk.constructs.checkov import (
    LOG_DELIVERY_REASON,
    LOG_GROUP_KEY_REASON,
    skip_checks,
    skip_function_checks,
)
from triton_mme_cdk.constructs.function_role import function_role
from triton_mme_cdk.constructs.nag import acknowledge_wildcard_resources

# CDK makes each function and the waiter depend on its role, which the role ARN already implies.
REDUNDANT_ROLE_DEPENDENCY = ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine")
HANDLER_TIMEOUT = Duration.seconds(30)
# How a custom resource's function answers CloudFormation: a PUT to the request's pre-signed S3 URL.
RESPONSE_URL = "S3 for CloudFormation's pre-signed response URL"


@dataclass(frozen=True)
class WaitingHandlers:
    provider: cr.Provider
    on_event: lambda_.Function
    is_complete: lambda_.Function


def waiting_provider(
    scope: Construct,
    *,
    handler_dir: Path,
    on_event_statements: list[iam.PolicyStatement],
    is_complete_statements: list[iam.PolicyStatement],
    query_interval: Duration,
    total_timeout: Duration,
    log_retention: logs.RetentionDays,
    handler_calls: str,
) -> WaitingHandlers:
    """Add to `scope` the functions `handler.on_event` and `handler.is_complete` of `handler_dir`, each with
    its own grants, and the Provider that polls the second every `query_interval` for `total_timeout`.
    `handler_calls` names the AWS APIs the handlers call (the reason they need no VPC)."""
    code = lambda_.Code.from_asset(str(handler_dir), exclude=["__pycache__", "*.pyc"])
    functions = {}
    for name, entry, statements in (
        ("OnEvent", "on_event", on_event_statements),
        ("IsComplete", "is_complete", is_complete_statements),
    ):
        log_group = function_log_group(scope, f"{name}Logs", log_retention)
        functions[name] = lambda_.Function(
            scope,
            name,
            runtime=lambda_.Runtime.PYTHON_3_14,
            code=code,
            handler=f"handler.{entry}",
            timeout=HANDLER_TIMEOUT,
            role=function_role(scope, f"{name}Role", log_group=log_group),
            initial_policy=statements,
            log_group=log_group,
        )
    # The framework's three functions share one log group; on-event and the waiter's two get their own roles,
    # as they would by default, each writing only that group.
    framework_logs = function_log_group(scope, "ProviderLogs", log_retention)
    provider = cr.Provider(
        scope,
        "Provider",
        on_event_handler=functions["OnEvent"],
        is_complete_handler=functions["IsComplete"],
        query_interval=query_interval,
        total_timeout=total_timeout,
        log_group=framework_logs,
        framework_on_event_role=function_role(scope, "ProviderOnEventRole", log_group=framework_logs),
        framework_complete_and_timeout_role=function_role(
            scope, "ProviderWaiterRole", log_group=framework_logs
        ),
        disable_waiter_state_machine_logging=False,
        waiter_state_machine_log_options=cr.LogOptions(
            destination=function_log_group(scope, "WaiterLogs", log_retention), level=sfn.LogLevel.ALL
        ),
    )
    _acknowledge_framework_findings(scope, provider, list(functions.values()))
    _justify_checkov_findings(scope, provider, list(functions.values()), handler_calls)
    ignore_redundant_role_dependencies(scope)
    return WaitingHandlers(provider, functions["OnEvent"], functions["IsComplete"])


def ignore_redundant_role_dependencies(scope: Construct) -> None:
    """Tell cfn-lint that the functions' and state machines' DependsOn on their roles is CDK's (W3005)."""
    for child in scope.node.find_all():
        if isinstance(child, CfnResource) and child.cfn_resource_type in REDUNDANT_ROLE_DEPENDENCY:
            child.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})


def function_log_group(scope: Construct, construct_id: str, retention: logs.RetentionDays) -> logs.LogGroup:
    group = logs.LogGroup(scope, construct_id, retention=retention, removal_policy=RemovalPolicy.DESTROY)
    skip_checks(group, {"CKV_AWS_158": LOG_GROUP_KEY_REASON})
    return group


def _acknowledge_framework_findings(
    scope: Construct, provider: cr.Provider, handlers: list[lambda_.Function]
) -> None:
    framework = [provider.node.find_child(f"framework-{name}") for name in ("isComplete", "onTimeout")]
    functions = [*handlers, *(f for f in framework if isinstance(f, lambda_.Function))]
    acknowledge_wildcard_resources(
        scope,
        [f"{function.function_arn}:*" for function in functions],
        reason="The provider framework invokes the handlers and its own functions, any version of each.",
    )
    acknowledge_wildcard_resources(
        scope,
        ["*"],
        reason="The waiter's log delivery (logs:*LogDelivery, ...) has no resource-level permissions.",
    )
    Validations.of(scope).acknowledge(
        Acknowledgment(
            id="AwsSolutions-SF2",
            reason="The provider framework's waiter does not expose X-Ray tracing; it only polls.",
        )
    )


def _justify_checkov_findings(
    scope: Construct, provider: cr.Provider, handlers: list[lambda_.Function], handler_calls: str
) -> None:
    reported = (
        "its error reaches CloudFormation, which fails the deployment and rolls it back; a queued copy of a "
        "request of a finished deployment would have nothing to replay it."
    )
    for handler in handlers:
        skip_function_checks(
            handler,
            calls=handler_calls,
            invoked="The provider framework invokes it once per request of one deployment, then once per "
            "poll while the request waits.",
            failures=f"the provider framework invokes it synchronously and {reported}",
        )
    framework = {
        name: provider.node.find_child(f"framework-{name}") for name in ("onEvent", "isComplete", "onTimeout")
    }
    skip_function_checks(
        framework["onEvent"],
        calls=f"Lambda to invoke the on-event handler, Step Functions to start the waiter, {RESPONSE_URL}",
        invoked="CloudFormation invokes it once per request of one deployment.",
        failures=f"it answers CloudFormation's request itself, and if it fails {reported}",
        environment=True,
    )
    for name, calls in (
        ("isComplete", f"Lambda to invoke the is-complete handler, {RESPONSE_URL}"),
        ("onTimeout", RESPONSE_URL),
    ):
        skip_function_checks(
            framework[name],
            calls=calls,
            invoked="The waiter state machine invokes it, one execution per waiting request.",
            failures=f"the waiter invokes it synchronously as a task and retries it; {reported}",
            environment=True,
        )
    waiter_policy = (
        provider.node.find_child("waiter-state-machine")
        .node.find_child("Role")
        .node.find_child("DefaultPolicy")
    )
    skip_checks(waiter_policy, {"CKV_AWS_111": LOG_DELIVERY_REASON})
