"""Follows the model build past CloudFormation's hour for a custom resource, up to a wait condition's 12.

A Step Functions loop polls the build trigger's own is-complete handler with the run the trigger started,
every `poll_interval`, and when the stages end signals the run's wait condition through a small function:
SUCCESS, or FAILURE with the error line is-complete raised. The endpoint waits on the wait condition
(ModelBuildTrigger.done), so a build of many hours holds `cdk deploy` as a short one does. Why a state
machine and not an EventBridge rule on CodeBuild's state changes: the is-complete handler already starts
the next stage, stops a run past its time and reads the failed stage's error line; polling it needs no
second copy of that logic, and a lost event cannot leave the deployment waiting for 12 hours.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from triton_mme_cdk.constructs.checkov import skip_function_checks
from triton_mme_cdk.constructs.function_role import function_role
from triton_mme_cdk.constructs.nag import acknowledge_wildcard_resources
from triton_mme_cdk.constructs.waiting_provider import (
    HANDLER_TIMEOUT,
    function_log_group,
    ignore_redundant_role_dependencies,
)


class BuildFollower(Construct):
    """`self.state_machine` takes `{"ResourceProperties", "Data", "SignalUrl"}` (the trigger's on-event
    starts it) and runs at most `timeout`; `self.signal` is the function that signals the wait condition."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        is_complete: lambda_.IFunction,
        handler_dir: Path,
        poll_interval: Duration,
        timeout: Duration,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        signal_logs = function_log_group(self, "SignalLogs", log_retention)
        self.signal = lambda_.Function(
            self,
            "Signal",
            runtime=lambda_.Runtime.PYTHON_3_14,
            code=lambda_.Code.from_asset(str(handler_dir), exclude=["__pycache__", "*.pyc"]),
            handler="handler.signal",
            timeout=HANDLER_TIMEOUT,
            role=function_role(self, "SignalRole", log_group=signal_logs),
            log_group=signal_logs,
        )
        skip_function_checks(
            self.signal,
            calls="S3, for the wait condition handle's pre-signed URL",
            invoked="The follower invokes it once per deployment that builds.",
            failures="the follower invokes it as a task and retries it; were every try to fail, the wait "
            "condition times out and CloudFormation rolls the deployment back.",
        )

        def signalling(name: str, status: str, error: bool) -> tasks.LambdaInvoke:
            payload = {"SignalUrl": sfn.JsonPath.string_at("$.SignalUrl"), "Status": status}
            if error:
                payload["Error"] = sfn.JsonPath.object_at("$.Error")
            step = tasks.LambdaInvoke(
                self, name, lambda_function=self.signal, payload=sfn.TaskInput.from_object(payload)
            )
            step.add_retry(errors=["States.ALL"], max_attempts=3, interval=Duration.seconds(10))
            return step

        follow = tasks.LambdaInvoke(
            self,
            "Follow",
            lambda_function=is_complete,
            payload=sfn.TaskInput.from_object(
                {
                    "RequestType": "Create",
                    "ResourceProperties": sfn.JsonPath.object_at("$.ResourceProperties"),
                    "Data": sfn.JsonPath.object_at("$.Data"),
                }
            ),
            result_selector={"IsComplete": sfn.JsonPath.string_at("$.Payload.IsComplete")},
            result_path="$.Outcome",
        )
        follow.add_catch(signalling("SignalFailure", "FAILURE", error=True), result_path="$.Error")
        wait = sfn.Wait(self, "Poll", time=sfn.WaitTime.duration(poll_interval))
        ended = sfn.Choice(self, "Ended").when(
            sfn.Condition.boolean_equals("$.Outcome.IsComplete", True),
            signalling("SignalSuccess", "SUCCESS", error=False),
        )
        acknowledge_wildcard_resources(
            self,
            [f"{self.signal.function_arn}:*", f"{is_complete.function_arn}:*"],
            reason="The follower invokes its two functions, any version of each (Step Functions' Lambda task "
            "grant).",
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(wait.next(follow).next(ended.otherwise(wait))),
            timeout=timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=function_log_group(self, "StateMachineLogs", log_retention),
                level=sfn.LogLevel.ALL,
            ),
        )
        ignore_redundant_role_dependencies(self)
