"""The model build engine's state machine (model_build_engine.py): the build stage, then the serving check
(which publishes the build's manifest), then the signal, on Step Functions' optimised CodeBuild integrations
("The Run a Job (.sync) integration pattern is supported" for StartBuild and StartBuildBatch: Step Functions
Developer Guide, connect-codebuild), each stage with its budget, retry and catch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from triton_mme_cdk.constructs.build.build_spec import FINGERPRINT_VARIABLE, RUN_VARIABLE
from triton_mme_cdk.constructs.functions.handler_function import function_log_group
from triton_mme_cdk.constructs.scanners.checkov import skip_function_checks
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources

# CodeBuild's own queue and build timeouts end a build first, with its own status; a task's timeout, a minute
# later, is the backstop. Stopping a `.sync` job is documented for an aborted execution ("Step Functions will
# make a best-effort attempt to cancel the task": connect-to-resource, "Run a Job (.sync)"), not for a
# task's timeout. CDK grants codebuild:StopBuild (and StopBuildBatch) to the state machine for that cancel.
BACKSTOP_MINUTES = 1
# StopBuild then StartBuild at once under ConcurrentBuildLimit 1 (a cancelled deploy, then the next) can be
# refused while the stopped build finishes. The name follows Step Functions' `<Service>.<Exception>`; that
# the CodeBuild integration raises exactly it is assumed (docs/deploy.md, "First-deploy verdicts").
REFUSED_START = "CodeBuild.AccountLimitExceededException"
RETRY: dict[str, Any] = {"interval": Duration.seconds(20), "max_attempts": 2, "backoff_rate": 2.0}


@dataclass(frozen=True)
class BuildStage:
    """A CodeBuild project the engine runs, its log group, and its budget in minutes (queueing and every
    level of a batch counted: BuildRunnerSettings.build_stage_minutes, check_stage_minutes)."""

    name: str
    project: codebuild.IProject
    log_group: logs.ILogGroup
    minutes: int
    batch: bool = False


def build_state_machine(
    scope: Construct,
    build: BuildStage,
    check: BuildStage,
    *,
    bucket: str,
    builds: str,
    signal: lambda_.Function,
    log_retention: logs.RetentionDays,
) -> sfn.StateMachine:
    """The engine's state machine, its states added to `scope` (the engine): BuiltBefore, then the build
    stage, the serving check and SignalSuccess; any failure goes to its stage's report, which signals FAILURE
    with what was caught. `builds` is the ARN pattern of build manifests in `bucket`; `signal` the engine's
    function."""

    def invoke(name: str, payload: dict[str, Any]) -> tasks.LambdaInvoke:
        task = sfn.TaskInput.from_object({"Handle.$": "$.Handle", **payload})
        return tasks.LambdaInvoke(
            scope, name, lambda_function=signal, payload=task, payload_response_only=True
        )

    failed = sfn.Fail(
        scope, "Failed", error="ModelBuildFailed", cause="the wait condition was signalled FAILURE"
    )
    # Both stages, one build or a batch, get only the fingerprint and this run: each build shard records the
    # candidate it staged under them, where the check finds it (triton_mme/store/stages.py).
    values = {
        FINGERPRINT_VARIABLE: sfn.JsonPath.string_at("$.Fingerprint"),
        RUN_VARIABLE: sfn.JsonPath.execution_name,
    }
    variables = {name: codebuild.BuildEnvironmentVariable(value=value) for name, value in values.items()}

    def run(stage: BuildStage) -> sfn.TaskStateBase:
        start = tasks.CodeBuildStartBuildBatch if stage.batch else tasks.CodeBuildStartBuild
        state = stage.name.title().replace(" ", "")  # ModelBuild, ServingCheck
        task = start(
            scope,
            state,
            project=stage.project,
            integration_pattern=sfn.IntegrationPattern.RUN_JOB,
            environment_variables_override=variables,
            task_timeout=sfn.Timeout.duration(Duration.minutes(stage.minutes + BACKSTOP_MINUTES)),
            result_path=sfn.JsonPath.DISCARD,
        )
        task.add_retry(errors=[REFUSED_START], **RETRY)
        report = {"Stage": stage.name, "Minutes": stage.minutes, "Failure.$": "$.Failure"}
        task.add_catch(invoke(f"Report{state}Failure", report).next(failed), result_path="$.Failure")
        return task

    built = run(build)
    passed = invoke("SignalSuccess", {})
    built.next(run(check)).next(passed)
    # The check publishes the build's manifest last: there already, the fingerprint was built before.
    built_before = tasks.CallAwsService(
        scope,
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
        scope,
        [f"{signal.function_arn}:*", builds, "*"],
        reason="The state machine invokes its function (any version) and reads build manifests; X-Ray "
        "tracing and log delivery (logs:*LogDelivery) have no resource-level permissions.",
    )
    skip_function_checks(
        signal,
        calls="CloudFormation, CodeBuild, CloudWatch Logs, S3 for the handle's pre-signed URL",
        invoked="The build state machine invokes it once per execution, to signal.",
        failures="the state machine retries it; were every try to fail, the wait condition times out "
        "and CloudFormation rolls the deployment back.",
        environment=True,
    )
    return sfn.StateMachine(
        scope,
        "StateMachine",
        definition_body=sfn.DefinitionBody.from_chainable(built_before),
        tracing_enabled=True,
        logs=sfn.LogOptions(
            destination=function_log_group(scope, "StateMachineLogs", log_retention),
            level=sfn.LogLevel.ALL,
        ),
    )
