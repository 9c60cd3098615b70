"""The deploy's model build engine: one Step Functions state machine per stack runs the build stage, then the
serving check (which publishes the build's manifest), then signals the fingerprint's wait condition, with Step
Functions' optimised CodeBuild integrations ("The Run a Job (.sync) integration pattern is supported" for
StartBuild and StartBuildBatch: Step Functions Developer Guide, connect-codebuild).

Each fingerprint (with its budget) has its own wait condition, handle and `Custom::ModelBuild` run, under
logical ids of their own: the run's Create starts one execution and its Delete stops it; nothing of another
fingerprint is ever updated or signalled (docs/deploy.md, "The build engine").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, CfnWaitCondition, CfnWaitConditionHandle, CustomResource, Duration, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.build.build_spec import CANDIDATE_VARIABLE, FINGERPRINT_VARIABLE
from triton_mme_cdk.constructs.scanners.checkov import skip_function_checks
from triton_mme_cdk.constructs.functions.handler_function import function_log_group, handler_function, on_event_provider
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.constructs.build.serving_check_spec import SHARD_CANDIDATES_VARIABLE
from triton_mme_cdk.settings import BUILD_DEADLINE_MARGIN_MINUTES

HANDLER_DIR = Path(__file__).parent / "model_build_engine_handler"
# CodeBuild's own queue and build timeouts end a build first, with its own status; a task's timeout, a minute
# later, is the backstop. Stopping a `.sync` job is documented for an aborted execution ("Step Functions will
# make a best-effort attempt to cancel the task": connect-to-resource, "Run a Job (.sync)"), not for a
# task's timeout. CDK grants codebuild:StopBuild (and StopBuildBatch) to the state machine for that cancel.
BACKSTOP_MINUTES = 1
# StopBuild then StartBuild at once under ConcurrentBuildLimit 1 (a cancelled deploy, then the next) can be
# refused while the stopped build finishes. The name follows Step Functions' `<Service>.<Exception>`; that
# the CodeBuild integration raises exactly it is a first-deploy verdict (acceptance, build_engine_verdicts).
REFUSED_START = "CodeBuild.AccountLimitExceededException"
RETRY: dict[str, Any] = {"interval": Duration.seconds(20), "max_attempts": 2, "backoff_rate": 2.0}
KEY_LENGTH = 16


@dataclass(frozen=True)
class BuildStage:
    """A CodeBuild project the engine runs, its log group, and its budget in minutes (queueing and every
    level of a batch counted: BuildRunnerSettings.build_stage_minutes, check_stage_minutes)."""

    name: str
    project: codebuild.IProject
    log_group: logs.ILogGroup
    minutes: int
    batch: bool = False


class ModelBuildEngine(Construct):
    """Runs `build`, then `check`, once per `fingerprint`; `self.done` is that fingerprint's wait condition.

    The state machine (`self.state_machine`) signals it SUCCESS once the check published
    `build_manifest_key` in `bucket` (at once when it is there already: a return to a fingerprint built
    before), or FAILURE with the failed stage's first `error:` line. Its timeout (`self.wait_minutes`) is both
    budgets plus BUILD_DEADLINE_MARGIN_MINUTES, which holds both stages' start retries and backstops.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        build: BuildStage,
        check: BuildStage,
        fingerprint: str,
        bucket: s3.IBucket,
        build_manifest_key: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.wait_minutes = build.minutes + check.minutes + BUILD_DEADLINE_MARGIN_MINUTES
        if self.wait_minutes > PLATFORM.limits.wait_condition_timeout_minutes.value:
            raise ValueError(
                f"build stages of {build.minutes} and {check.minutes} minutes: allowed together at most "
                f"{PLATFORM.limits.wait_condition_timeout_minutes.value - BUILD_DEADLINE_MARGIN_MINUTES} (a wait condition's limit)"
            )
        stack, self._retention = Stack.of(self), log_retention
        step = self._function(
            "Signal",
            "step",
            {"STACK_ID": stack.stack_id},
            # The handle's URL is its physical id; a failed build's line is in its own log.
            (["cloudformation:DescribeStackResource"], [stack.stack_id]),
            (["codebuild:BatchGetBuilds"], [build.project.project_arn, check.project.project_arn]),
            (["logs:FilterLogEvents"], [build.log_group.log_group_arn, check.log_group.log_group_arn]),
        )
        builds = bucket.arn_for_objects(build_manifest_key.rsplit("/", 2)[0] + "/*")
        self.state_machine = self._state_machine(build, check, bucket.bucket_name, builds, step)
        # A wait condition's properties cannot be updated ("Updates aren't supported", CloudFormation User
        # Guide): another fingerprint or budget is another logical id, with its own handle, run and wait.
        key = hashlib.sha256(f"{fingerprint}:{self.wait_minutes}".encode()).hexdigest()[:KEY_LENGTH]
        handle = CfnWaitConditionHandle(self, f"Handle{key}")
        self.resource = CustomResource(
            self,
            f"Run{key}",
            service_token=self._trigger(),
            resource_type="Custom::ModelBuild",
            properties={
                "StateMachine": self.state_machine.state_machine_arn,
                "Fingerprint": fingerprint,
                # The handle's logical id, never its URL: the signal reads the URL from CloudFormation.
                "Handle": stack.resolve(handle.logical_id),
                "BuildManifestKey": build_manifest_key,
            },
        )
        self.resource.node.add_dependency(handle)
        self.done = CfnWaitCondition(
            self, f"Done{key}", handle=handle.ref, count=1, timeout=str(self.wait_minutes * 60)
        )
        self.done.node.add_dependency(self.resource)

    def _function(
        self, name: str, entry: str, environment: dict[str, str], *grants: tuple[list[str], list[str]]
    ) -> lambda_.Function:
        function = handler_function(
            self, name, handler_dir=HANDLER_DIR, entry=entry, log_retention=self._retention,
            environment=environment,
        )  # fmt: skip
        for actions, resources in grants:
            function.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=resources))
        return function

    def _state_machine(
        self, build: BuildStage, check: BuildStage, bucket: str, builds: str, step: lambda_.Function
    ) -> sfn.StateMachine:
        def invoke(name: str, payload: dict[str, Any], **options: Any) -> tasks.LambdaInvoke:
            task = sfn.TaskInput.from_object(payload)
            return tasks.LambdaInvoke(
                self, name, lambda_function=step, payload=task, payload_response_only=True, **options
            )

        failed = sfn.Fail(
            self, "Failed", error="ModelBuildFailed", cause="the wait condition was signalled FAILURE"
        )

        def report(stage: BuildStage) -> sfn.IChainable:
            payload: dict[str, Any] = {"Entry": "signal", "Handle.$": "$.Handle", "Status": "FAILURE"}
            payload |= {"Stage": stage.name, "Minutes": stage.minutes, "Failure.$": "$.Failure"}
            return invoke(f"Report{_id(stage)}Failure", payload).next(failed)

        reports = {stage.name: report(stage) for stage in (build, check)}

        def run(stage: BuildStage, variables: dict[str, str], **options: Any) -> sfn.TaskStateBase:
            start = tasks.CodeBuildStartBuildBatch if stage.batch else tasks.CodeBuildStartBuild
            overrides = {name: codebuild.BuildEnvironmentVariable(value=v) for name, v in variables.items()}
            task = start(
                self,
                _id(stage),
                project=stage.project,
                integration_pattern=sfn.IntegrationPattern.RUN_JOB,
                environment_variables_override=overrides,
                task_timeout=sfn.Timeout.duration(Duration.minutes(stage.minutes + BACKSTOP_MINUTES)),
                **options,
            )
            task.add_retry(errors=[REFUSED_START], **RETRY)
            task.add_catch(reports[stage.name], result_path="$.Failure")
            return task

        fingerprint = {FINGERPRINT_VARIABLE: sfn.JsonPath.string_at("$.Fingerprint")}
        if build.batch:
            groups = {"Groups.$": "$.BuildBatch.BuildGroups"}
            built = run(build, fingerprint, result_selector=groups, result_path="$.Built")
            # Every shard's exported digest, comma-separated in shard order, for the check's shards.
            handed = invoke(
                "ShardCandidates",
                {"Entry": "candidates", "Groups.$": "$.Built.Groups"},
                result_path="$.Candidates",
            )
            handed.add_catch(reports[build.name], result_path="$.Failure")
            built.next(handed)
            candidate = {SHARD_CANDIDATES_VARIABLE: sfn.JsonPath.string_at("$.Candidates")}
        else:
            # The build stage exports one variable: its candidate's digest (build_spec.py).
            selector = {
                "Candidate.$": "States.ArrayGetItem($.Build.ExportedEnvironmentVariables[*].Value, 0)"
            }
            built = handed = run(build, fingerprint, result_selector=selector, result_path="$.Built")
            candidate = {CANDIDATE_VARIABLE: sfn.JsonPath.string_at("$.Built.Candidate")}
        checked = run(check, {**fingerprint, **candidate}, result_path=sfn.JsonPath.DISCARD)
        passed = invoke("SignalSuccess", {"Entry": "signal", "Handle.$": "$.Handle", "Status": "SUCCESS"})
        handed.next(checked).next(passed)
        # The check publishes the build's manifest last: there already, the fingerprint was built before.
        built_before = tasks.CallAwsService(
            self,
            "BuiltBefore",
            service="s3",
            action="headObject",
            parameters={"Bucket": bucket, "Key.$": "$.BuildManifestKey"},
            iam_resources=[builds],
            iam_action="s3:GetObject",
            result_path=sfn.JsonPath.DISCARD,
        )
        built_before.add_catch(built, result_path=sfn.JsonPath.DISCARD).next(passed)
        acknowledge_wildcard_resources(
            self,
            [f"{step.function_arn}:*", builds, "*"],
            reason="The state machine invokes its function (any version) and reads build manifests; X-Ray "
            "tracing and log delivery (logs:*LogDelivery) have no resource-level permissions.",
        )
        skip_function_checks(
            step,
            calls="CloudFormation, CodeBuild, CloudWatch Logs, S3 for the handle's pre-signed URL",
            invoked="The build state machine invokes it at most three times per fingerprint.",
            failures="the state machine retries it; were every try to fail, the wait condition times out "
            "and CloudFormation rolls the deployment back.",
            environment=True,
        )
        return sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(built_before),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=function_log_group(self, "StateMachineLogs", self._retention),
                level=sfn.LogLevel.ALL,
            ),
        )

    def _trigger(self) -> str:
        """The service token of the stack's runs' on-event function (no is-complete): start, or stop, one
        execution."""
        machine = self.state_machine
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        on_event = self._function(
            "Trigger",
            "on_event",
            {},
            (["states:StartExecution"], [machine.state_machine_arn]),
            (["states:StopExecution"], [executions]),
        )
        acknowledge_wildcard_resources(
            self, [executions], reason="The trigger stops only this machine's executions."
        )
        calls = "Step Functions to start or stop an execution"
        return on_event_provider(self, on_event, log_retention=self._retention, calls=calls).service_token


def _id(stage: BuildStage) -> str:
    return stage.name.title().replace(" ", "")
